//go:build cgo && cyclonedds

package ddspath

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestKeepAllBackpressureTimesOut: a RELIABLE KEEP_ALL writer facing a full
// KEEP_ALL reader (max_samples 8, consumer stalled by a Block queue of 1)
// gets ErrTimeout after max_blocking_time instead of blocking forever, and
// counts it; once the consumer drains, writes succeed again.
func TestKeepAllBackpressureTimesOut(t *testing.T) {
	a, b := openPair(t)
	topic := uniqueTopic(t, "bp")
	r, err := b.NewReader(topic, laserType, QoS{Reliability: Reliable, History: KeepAll, MaxSamples: 8}, WithQueue(1, Block))
	require.NoError(t, err)
	w, err := a.NewWriter(topic, laserType, QoS{Reliability: Reliable, History: KeepAll, MaxBlocking: 20 * time.Millisecond})
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "match", func() bool { return w.Matched() == 1 })

	var timeouts int
	start := time.Now()
	for i := range 200 {
		err := w.Write(cdrSample(1024, uint32(i)), time.Time{})
		if err != nil {
			require.ErrorIs(t, err, ErrTimeout)
			timeouts++
			if timeouts == 3 {
				break
			}
		}
	}
	require.Equal(t, 3, timeouts, "writer never pushed back")
	require.Equal(t, uint64(3), w.Stats().Timeouts)
	require.Less(t, time.Since(start), 5*time.Second*timeScale())

	// Drain: the consumer catches up and the writer can write again.
	go func() {
		for range r.C() {
		}
	}()
	waitFor(t, 5*time.Second, "write after drain", func() bool { return w.Write(cdrSample(64, 999), time.Time{}) == nil })
}
