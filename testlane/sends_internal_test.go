package testlane

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/knobs"
)

// The sends check counts one send per socket window plus one per batch
// the router sent the device meanwhile: each arrival ends the device's
// blocking recv, releasing a waiting send (anchors.md §2.6). The same 30
// sends in 1 s at a 100 ms window fail alone and pass beside a 30 Hz
// stream to the device.
func TestCheckSendsCountsArrivals(t *testing.T) {
	cat, err := firmware.Catalog()
	require.NoError(t, err)
	env, err := knobs.ParseEnvFile("lane.env", []byte("CONFIG_NROS_ZENOH_TX_BATCH=n\nCONFIG_NROS_ZENOH_TX_SPLIT_LOCK=n\n"))
	require.NoError(t, err)
	r, err := cat.Resolve(knobs.Options{Platform: "zephyr", Board: "native_sim", Env: env})
	require.NoError(t, err)
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	s := SessionObs{Opened: t0, DataBatches: 30, MaxPerBatch: 1}
	for i := range 30 {
		s.DataTimes = append(s.DataTimes, t0.Add(time.Duration(i)*time.Second/29))
	}
	f := &facts{exp: &Expectations{SendsTolerance: 0.1}, r: r, capa: knobs.CapacityOf(r), sessions: []SessionObs{s}, start: t0}
	res := f.checkSends()
	require.Equal(t, Fail, res.Status, res.Observed)
	require.Contains(t, res.Observed, "the socket window allows 12 (0 of them released by batches to the device)")

	for i := range 30 {
		s.ToDevTimes = append(s.ToDevTimes, t0.Add(time.Duration(i)*time.Second/30+time.Millisecond))
	}
	f.sessions = []SessionObs{s}
	res = f.checkSends()
	require.Equal(t, Pass, res.Status, res.Summary)
	require.Contains(t, res.Observed, "the socket window allows 42 (30 of them released by batches to the device)")
}
