package runner

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/eval/measure"
	"github.com/picobridge/picobridge/firmware/responder"
)

// The zenoh-pico device series end to end: exp3 with real zenoh-pico devices (rxtx under
// the zephyrfd shim) behind `picobridge run` on a clean link. Both devices must be
// attached and classified by the gateway (their probe responders answer) and each must
// receive every attempted /scan exactly once, reported per sample through rxtx's
// "r <stamp> <recv>" lines. Needs $ZENOH_PICO_DIR and $PICOBRIDGE_BIN (as TestSmokeQuick).
func TestPicoDeviceSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts DDS, picobridge and zenoh-pico processes")
	}
	if _, err := responder.PicoFromEnv(); err != nil {
		t.Skipf("SKIP: set %s=<zenoh-pico build dir> to run the zenoh-pico device series (%v)", responder.DirEnv, err)
	}
	if os.Getenv("PICOBRIDGE_BIN") == "" {
		t.Skip("SKIP: set PICOBRIDGE_BIN to a built picobridge (building it here would not fit the time budget)")
	}
	if _, err := os.Stat(DefaultBag); err != nil {
		t.Skipf("bag %s missing: %v", DefaultBag, err)
	}
	cfg := Config{Out: t.TempDir(), Duration: 3 * time.Second, Levels: []string{"clean"}, Log: t.Logf,
		Only: []string{"exp3"}, Devices: []string{DevicesPico}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	results, err := Run(ctx, cfg)
	require.NoError(t, err)
	require.Len(t, results, 1) // the toggle run is a level of its own
	r := results[0]
	require.Equal(t, "exp3-picobridge-pico-clean", r.Run)
	require.Empty(t, r.Missing)
	require.NoError(t, r.Err)
	require.True(t, slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "real zenoh-pico: firmware/rxtx") }), r.Notes)
	for _, dev := range []string{"crit", "slow"} {
		require.True(t, slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "device "+dev+": class ") }),
			"the gateway attached and classified %s: %v", dev, r.Notes)
	}
	by := measure.ByConsumer(r.Samples)
	require.GreaterOrEqual(t, len(r.Attempts), 80)
	for _, c := range []string{Critical, Impaired} {
		d := measure.CheckDelivery(r.Published, by[c])
		require.Equal(t, len(r.Attempts), d.Unique, c)
		require.Zero(t, d.Duplicates, c)
	}
}
