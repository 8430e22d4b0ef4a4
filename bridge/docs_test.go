package bridge_test

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/probe"
)

// The docs paste the default configuration and list every metric and drop
// reason; this keeps them from drifting.
func TestDocsMatchCode(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return string(b)
	}
	require.Contains(t, read("../docs/bridge.md"), "```yaml\n"+string(bridge.DefaultYAML)+"```", "docs/bridge.md pastes bridge/default.yaml verbatim")
	metrics := read("../docs/metrics.md")
	for _, n := range []string{bridge.MetricBuildInfo, bridge.MetricDeviceClass, bridge.MetricDeviceRTT, bridge.MetricDeviceLoss,
		bridge.MetricDeviceProbes, bridge.MetricDeviceTransitions, bridge.MetricDeviceAttached, bridge.MetricForwarded,
		bridge.MetricDropped, bridge.MetricQueueDepth, bridge.MetricFlushes, bridge.MetricSinkErrors,
		bridge.MetricSupervisorMode, bridge.MetricSupervisorTransition, bridge.MetricQueueOccupancy} {
		require.Contains(t, metrics, "| `"+n+"` |")
	}
	// every family the collector really exports is documented, with its labels
	reg := prometheus.NewPedanticRegistry()
	g := newGateway(t, testConfig(t, twoDevices), reg)
	_, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, &fakeSink{})
	require.NoError(t, err)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		row := "| `" + mf.GetName() + "` |"
		require.Contains(t, metrics, row)
		line := metrics[strings.Index(metrics, row):]
		line = line[:strings.IndexByte(line, '\n')]
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			require.Contains(t, line, "`"+lp.GetName()+"`", "%s label %s", mf.GetName(), lp.GetName())
		}
	}
	for _, r := range bridge.DropReasons() {
		require.Contains(t, metrics, "`"+r.String()+"`")
		require.Contains(t, read("../docs/bridge.md"), "`"+r.String()+"`")
	}
	doc := read("../docs/probe.md")
	require.Contains(t, doc, probe.PingKey("<device>"))
	require.Contains(t, doc, probe.PongSubscription)
	require.True(t, strings.Contains(doc, "32 bytes") && probe.Size == 32)
}
