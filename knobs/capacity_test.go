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
		BatchSize:          1024,
		Fragmentation:      true,
		MaxMessageBytes:    2048,
		SlotBytes:          1024,
		LargeSlotBytes:     16384,
		LargeSlots:         2,
		RingDepth:          4,
		DrainInterval:      100 * time.Millisecond,
		FlushInterval:      100 * time.Millisecond, // max(flush_ms 50, window 100) on a per-fd platform
		PerFdTxCeiling:     true,
		ExpressRateCeiling: 9, // ~9 msg/s at 100 ms (tx-tuning.md)
		Lease:              10 * time.Second,
		KeepAlive:          10 * time.Second / 3,
	}, roundCeiling(c))
	require.Equal(t, 1024, c.MaxSampleBytes(false))
	require.Equal(t, 2048, c.MaxSampleBytes(true)) // large slot, capped by frag_max_size
	require.InDelta(t, 40.0, c.BatchedRateCeiling(), 1e-9)
}

func TestCapacityPOSIX(t *testing.T) {
	c := knobs.CapacityOf(resolve(t, "posix", "", ""))
	require.Equal(t, 65535, c.BatchSize)
	require.Equal(t, 65535, c.MaxMessageBytes)
	require.Equal(t, 50*time.Millisecond, c.FlushInterval) // no per-fd lock: the device's own cadence
	require.Zero(t, c.ExpressRateCeiling)
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
	require.Equal(t, 5*time.Millisecond, c.DrainInterval)
	require.Equal(t, 50*time.Millisecond, c.FlushInterval)
	require.InDelta(t, 180.0, c.ExpressRateCeiling, 1e-9)
	require.InDelta(t, 320.0, c.BatchedRateCeiling(), 1e-9)
	require.Equal(t, 1024, c.MaxSampleBytes(true)) // no large slots
}

func roundCeiling(c knobs.Capacity) knobs.Capacity {
	c.ExpressRateCeiling = float64(int(c.ExpressRateCeiling*1000+0.5)) / 1000
	return c
}
