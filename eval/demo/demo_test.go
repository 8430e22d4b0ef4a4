//go:build cgo && cyclonedds

package demo_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/eval/demo"
)

// TestDemoSmoke is the CI smoke test of the demo (issue 7 item 5): the same
// scenario as `bash scripts/run.sh`, short. It asserts invariants only, no
// latency: the critical device (zephyr1) receives every /scan the replay
// wrote, in order, while esp1 sits behind the impaired link; no simulated
// device drops a sample on a full ring or as oversize.
func TestDemoSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the demo scenario for ~25 s")
	}
	bag, ok := demo.FindBag()
	if !ok {
		if os.Getenv("CI") == "true" {
			t.Fatal("bag " + demo.Bag + " not found: set PICOBRIDGE_SHARED")
		}
		t.Skip("bag " + demo.Bag + " not found: set PICOBRIDGE_SHARED to the shared/ folder")
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	res, err := demo.Run(ctx, demo.Config{
		BagDir:   bag,
		Duration: 15 * time.Second,
		// 5 Hz instead of the demo's 30: a scan is lost only if the
		// gateway's express sender is held up for more than 200 ms, which
		// a CI host running the race-detector tests in parallel can do.
		ScanHz:      5,
		PinCritical: true,
		Drain:       2 * time.Second,
		Out:         t.TempDir(),
		Progress:    &out,
	})
	t.Logf("demo output:\n%s", out.String())
	require.NotNil(t, res, "scenario did not run: %v", err)

	var crit, imp *demo.DeviceResult
	for i := range res.Devices {
		switch res.Devices[i].Name {
		case demo.CriticalDevice:
			crit = &res.Devices[i]
		case demo.ImpairedDevice:
			imp = &res.Devices[i]
		}
	}
	require.NotNil(t, crit)
	require.NotNil(t, imp)
	scan := crit.Keys[demo.ScanKey]
	t.Logf("written /scan %d /imu_data %d; %s /scan delivered %d, missing %d, out of order %d; %s /scan delivered %d; link %+v",
		res.Written[demo.ScanTopic], res.Written[demo.IMUTopic], crit.Name, scan.Delivered, scan.Missing, scan.OutOfOrder,
		imp.Name, imp.Keys[demo.ScanKey].Delivered, res.Link)
	for _, d := range res.Devices {
		t.Logf("%s: received %d expected %d ring_full %d oversize %d slot %d gateway drops %v", d.Name, d.Received, d.Expected,
			d.RingFullDrops, d.OversizeDrops, d.SlotDrops, d.GatewayDrops)
	}

	require.Positive(t, res.Written[demo.ScanTopic], "the replay wrote /scan")
	require.Equal(t, res.Written[demo.ScanTopic], scan.Expected)
	require.Equal(t, scan.Expected, scan.Delivered, "%s: every /scan", crit.Name)
	require.Zero(t, scan.Missing, "%s: every /scan", crit.Name)
	require.Zero(t, scan.OutOfOrder, "%s: /scan in order", crit.Name)
	require.Equal(t, "linkemu moderate", imp.Link, "the other device is impaired")
	require.Positive(t, res.Link.MeanAddedDelayMs, "the impaired link delayed packets")
	for _, d := range res.Devices {
		require.Zero(t, d.RingFullDrops, "%s: ring_full drops", d.Name)
		require.Zero(t, d.OversizeDrops, "%s: oversize drops", d.Name)
	}
	require.NoError(t, err)
	require.True(t, res.OK, "%v", res.Failures)
}
