package bridge_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

// TestReplaySurvivesLateFlushes: history replayed through the batched lane
// arrives whole and in order even when every flush takes longer than
// policy.batched.stale_after (200 ms) — a slow link or a loaded host. Replay
// offers the next sample as soon as the lane has taken the previous one, so
// that sample waits out the slow flush in the queue; dropped as stale, it
// would be lost for good (TestTransientLocalLateJoiner once saw [3 5 6 7]).
func TestReplaySurvivesLateFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGateway(t, testConfig(t, twoDevices), nil)
		sink := &fakeSink{batchWait: 300 * time.Millisecond}
		d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, sink)
		require.NoError(t, err)
		d.DeclareSubscriber("map")
		g.Run()
		var hist []bridge.Sample
		for i := range 5 {
			hist = append(hist, bridge.Sample{Key: "map", Payload: []byte{'0' + byte(i)}})
		}
		done := make(chan struct{})
		require.Equal(t, 5, d.Replay(hist, done))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		var got string
		sink.mu.Lock()
		for _, b := range sink.batches {
			for _, x := range b {
				got += x.pay
			}
		}
		sink.mu.Unlock()
		require.Equal(t, "01234", got, "every history sample once, oldest first")
		st := g.Devicez(bridge.DevicezOptions{Device: "arm"}).Devices[0]
		require.Zero(t, st.Lanes["batched"].Dropped["stale"])
		close(done)
	})
}
