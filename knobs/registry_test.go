package knobs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRegistryInvariants(t *testing.T) {
	seenEnv := map[string]string{}
	for _, k := range Registry() {
		require.Regexp(t, `^(zenoh\.[a-z]+|net|xrce)\.[a-z_]+$`, k.ID)
		require.NotEmpty(t, k.Meaning, k.ID)
		require.NotEmpty(t, k.Source, k.ID)
		require.GreaterOrEqual(t, k.Default, k.Min, k.ID)
		require.LessOrEqual(t, k.Default, k.Max, k.ID)
		if k.Type == Bool {
			require.Equal(t, int64(0), k.Min, k.ID)
			require.Equal(t, int64(1), k.Max, k.ID)
			require.Equal(t, UnitNone, k.Unit, k.ID)
		} else {
			require.NotEqual(t, UnitNone, k.Unit, k.ID)
		}
		require.Equal(t, "knobs."+k.ID, k.Table()+"."+k.Key())
		require.NotEmpty(t, k.EnvNames(EnvCanonical), "%s needs a canonical NROS_* name", k.ID)
		for _, e := range k.Env {
			require.NotContains(t, seenEnv, e.Name, "%s used by two knobs", e.Name)
			seenEnv[e.Name] = k.ID
			switch e.Kind {
			case EnvCanonical:
				require.True(t, strings.HasPrefix(e.Name, "NROS_"), e.Name)
			case EnvDeprecated:
				require.True(t, strings.HasPrefix(e.Name, "ZPICO_"), e.Name)
			case EnvKconfig:
				require.True(t, strings.HasPrefix(e.Name, "CONFIG_NROS_"), e.Name)
			}
			got, name, ok := LookupEnv(e.Name)
			require.True(t, ok)
			require.Equal(t, k.ID, got.ID)
			require.Equal(t, e, name)
		}
		got, ok := Lookup(k.ID)
		require.True(t, ok)
		require.Equal(t, k.ID, got.ID)
	}
	_, ok := Lookup("zenoh.tx.nope")
	require.False(t, ok)
	// Registry returns a copy.
	r := Registry()
	r[0].Env[0].Name = "X"
	require.Equal(t, "NROS_ZENOH_TX_BATCH", Registry()[0].Env[0].Name)
}

// The Kconfig spellings anchors.md §2.1 lists, and the one pairing that is not
// derivable from the id (KCONFIG_KNOBS in nros-zpico-build runner.rs).
func TestRegistryKconfigNames(t *testing.T) {
	for id, want := range map[string]string{
		TxBatch:              "CONFIG_NROS_ZENOH_TX_BATCH",
		TxFlushMs:            "CONFIG_NROS_ZENOH_TX_BATCH_FLUSH_MS",
		TxSplitLock:          "CONFIG_NROS_ZENOH_TX_SPLIT_LOCK",
		SocketTimeoutMs:      "CONFIG_NROS_ZENOH_SOCKET_TIMEOUT_MS",
		SubscriberRingDepth:  "CONFIG_NROS_SUBSCRIBER_RING_DEPTH",
		FragMaxSize:          "CONFIG_NROS_FRAG_MAX_SIZE",
		BatchUnicastSize:     "CONFIG_NROS_BATCH_UNICAST_SIZE",
		SubscriberBufferSize: "CONFIG_NROS_SUBSCRIBER_BUFFER_SIZE",
		SubscriberLargeSize:  "CONFIG_NROS_SUBSCRIBER_LARGE_SIZE",
		MaxLargeSubscribers:  "CONFIG_NROS_MAX_LARGE_SUBSCRIBERS",
		ReadTaskPriority:     "CONFIG_NROS_ZENOH_READ_PRIORITY",
		LeaseTaskPriority:    "CONFIG_NROS_ZENOH_LEASE_PRIORITY",
		MaxPublishers:        "CONFIG_NROS_MAX_PUBLISHERS",
		MaxLiveliness:        "CONFIG_NROS_MAX_LIVELINESS",
	} {
		k, ok := Lookup(id)
		require.True(t, ok, id)
		require.Equal(t, []string{want}, k.EnvNames(EnvKconfig), id)
	}
	// No Kconfig row (anchors.md §2.1).
	k, _ := Lookup(BatchMulticastSize)
	require.Empty(t, k.EnvNames(EnvKconfig))
	require.Equal(t, []string{"ZPICO_BATCH_MULTICAST_SIZE"}, k.EnvNames(EnvDeprecated))
}

func TestKnobFormat(t *testing.T) {
	b, _ := Lookup(TxBatch)
	require.Equal(t, "true", b.Format(1))
	require.Equal(t, "false", b.Format(0))
	require.Equal(t, "true|false", b.RangeString())
	n, _ := Lookup(BatchUnicastSize)
	require.Equal(t, "64..65535", n.RangeString())
	require.Equal(t, "knobs.zenoh.wire", n.Table())
	require.Equal(t, "batch_unicast_size", n.Key())
	require.Equal(t, "knobs.zenoh.wire.batch_unicast_size", n.TOMLKey())
}
