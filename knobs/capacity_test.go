package knobs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/knobs"
)

func resolve(t *testing.T, platform, board, env string) *knobs.Resolved {
	t.Helper()
	opts := knobs.Options{Platform: platform, Board: board}
	if env != "" {
		e, err := knobs.ParseEnvFile("build.env", []byte(env))
		require.NoError(t, err)
		opts.Env = e
	}
	r, err := catalog(t).Resolve(opts)
	require.NoError(t, err)
	return r
}

func TestCapacityZephyr(t *testing.T) {
	c := knobs.CapacityOf(resolve(t, "zephyr", "native_sim", ""))
	require.Equal(t, knobs.Capacity{
		BatchSize:       1024,
		Fragmentation:   true,
		MaxMessageBytes: 2048,
		SlotBytes:       1024,
		LargeSlotBytes:  16384,
		LargeSlots:      2,
		RingDepth:       4,
		SocketWindow:    100 * time.Millisecond,
		PerFdTxCeiling:  true,
		TxBatch:         true, // Zephyr platform toml: TX batch and split lock on
		TxFlush:         50 * time.Millisecond,
		SplitLock:       true,
		Lease:           10 * time.Second,
		KeepAlive:       10 * time.Second / 3,
	}, c)
	require.Equal(t, 1024, c.MaxSampleBytes(false))
	require.Equal(t, 2048, c.MaxSampleBytes(true)) // large slot, capped by frag_max_size
	require.Equal(t, 4, c.SamplesPerBurst())
}

// TestCapacityTx checks the TX model against nano-ros tx-tuning.md's
// native_sim figures (64 B, 100 ms window): untuned ~9 msg/s, TX batch
// ~136, batch + split lock ~181 (anchors.md §2.2).
func TestCapacityTx(t *testing.T) {
	stock := knobs.CapacityOf(resolve(t, "zephyr", "native_sim", ""))
	require.InDelta(t, 181, stock.TxCapacity(64), 181*0.02)
	noSplit := knobs.CapacityOf(resolve(t, "zephyr", "native_sim", "CONFIG_NROS_ZENOH_TX_SPLIT_LOCK=n\n"))
	require.InDelta(t, 136, noSplit.TxCapacity(64), 136*0.02)
	untuned := knobs.CapacityOf(resolve(t, "zephyr", "native_sim", "CONFIG_NROS_ZENOH_TX_BATCH=n\nCONFIG_NROS_ZENOH_TX_SPLIT_LOCK=n\n"))
	require.InDelta(t, 9, untuned.TxCapacity(64), 1e-9)
	// A sample larger than a batch takes several sends.
	require.InDelta(t, 9.0/3, untuned.TxCapacity(2500), 1e-9)
	// No per-fd lock: the window does not cap TX.
	require.Zero(t, knobs.CapacityOf(resolve(t, "posix", "", "")).TxCapacity(64))
}

func TestCapacityPOSIX(t *testing.T) {
	c := knobs.CapacityOf(resolve(t, "posix", "", ""))
	require.Equal(t, 65535, c.BatchSize)
	require.Equal(t, 65535, c.MaxMessageBytes)
	require.Equal(t, 50*time.Millisecond, c.TxFlush)
	require.False(t, c.PerFdTxCeiling)
	require.Equal(t, 16384, c.MaxSampleBytes(true))
}

func TestCapacityFragmentationOff(t *testing.T) {
	c := knobs.CapacityOf(resolve(t, "freertos", "", "NROS_ZENOH_FRAGMENTATION=0\nZPICO_BATCH_UNICAST_SIZE=1500\n"))
	require.False(t, c.Fragmentation)
	require.Equal(t, 1500-knobs.StreamPrefixBytes-knobs.FrameHeaderBytes, c.MaxMessageBytes)
	require.Equal(t, 1024, c.MaxSampleBytes(false))
}

func TestCapacityTunedWindow(t *testing.T) {
	c := knobs.CapacityOf(resolve(t, "zephyr", "", "CONFIG_NROS_ZENOH_SOCKET_TIMEOUT_MS=5\nCONFIG_NROS_SUBSCRIBER_RING_DEPTH=16\nCONFIG_NROS_MAX_LARGE_SUBSCRIBERS=0\n"))
	require.Equal(t, 5*time.Millisecond, c.SocketWindow)
	require.Equal(t, 50*time.Millisecond, c.TxFlush)
	require.Equal(t, 16, c.SamplesPerBurst())
	require.Equal(t, 1024, c.MaxSampleBytes(true)) // no large slots
}
