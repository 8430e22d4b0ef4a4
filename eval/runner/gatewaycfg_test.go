package runner

import (
	"encoding/json"
	"testing"
	"time"

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

// The supervisor's mode changes of a run, from /devicez, timed from the start of
// publication.
func TestSupervisorChanges(t *testing.T) {
	var dz devicezDoc
	require.NoError(t, json.Unmarshal([]byte(`{"supervisor":{"mode":"NORMAL","transitions":[
		{"at":"2026-12-03T14:42:05Z","from":"NORMAL","to":"EMERGENCY","reason":"lag 1.2s ≥ 1s"},
		{"at":"2026-12-03T14:42:09.5Z","from":"EMERGENCY","to":"DEGRADED","reason":"3 calm evaluations"}]}}`), &dz))
	start := time.Date(2026, 12, 3, 14, 42, 0, 0, time.UTC).UnixNano()
	require.Equal(t, "NORMAL→EMERGENCY at +5.0 s (lag 1.2s ≥ 1s), EMERGENCY→DEGRADED at +9.5 s (3 calm evaluations)", supervisorChanges(dz, start))
	require.Equal(t, "no mode change", supervisorChanges(devicezDoc{}, start))
}
