package runner

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// --gateway-cfg settings are named in a run's notes, as picobridge run --cfg takes them.
func TestGatewayCfgNote(t *testing.T) {
	require.Equal(t, "", gatewayCfgNote(nil))
	require.Equal(t, ", --cfg policy.express.realtime:fifo --cfg policy.batched.rate_hz:20",
		gatewayCfgNote([]string{"policy.express.realtime:fifo", "policy.batched.rate_hz:20"}))
}

// The gateway's DDS-input losses in a run's notes: nonzero series of
// picobridge_dds_samples_dropped_total, topic and reason, sorted.
func TestDDSInputDrops(t *testing.T) {
	m := `# HELP picobridge_dds_samples_dropped_total Samples lost at a route's DDS input.
# TYPE picobridge_dds_samples_dropped_total counter
picobridge_dds_samples_dropped_total{direction="dds_to_zenoh",reason="queue_full",topic="/scan"} 67
picobridge_dds_samples_dropped_total{direction="dds_to_zenoh",reason="dds_seq_gap",topic="/scan"} 3
picobridge_dds_samples_dropped_total{direction="dds_to_zenoh",reason="dds_sample_lost",topic="/scan"} 0
picobridge_dds_sample_errors_total{direction="dds_to_zenoh"} 5
`
	require.Equal(t, "/scan dds_seq_gap 3, /scan queue_full 67", ddsInputDrops(m))
	require.Equal(t, "none", ddsInputDrops(""))
}
