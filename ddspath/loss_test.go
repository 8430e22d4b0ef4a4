//go:build cgo && cyclonedds

package ddspath

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReaderCountsRejected: a BEST_EFFORT burst into a KEEP_ALL reader with
// max_samples 8 whose consumer is stalled (Block queue of 1): what the cache
// refuses is counted as Rejected, and once drained every sample written is
// either received or rejected (written = received + Rejected + Lost +
// Dropped, exactly).
func TestReaderCountsRejected(t *testing.T) {
	a, b := openPair(t)
	topic := uniqueTopic(t, "rej")
	r, err := b.NewReader(topic, laserType, QoS{Reliability: BestEffort, History: KeepAll, MaxSamples: 8}, WithQueue(1, Block))
	require.NoError(t, err)
	w, err := a.NewWriter(topic, laserType, QoS{Reliability: BestEffort, History: KeepLast, Depth: 1})
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "match", func() bool { return w.Matched() == 1 && r.Matched() == 1 })

	const n = 100
	for i := range n {
		require.NoError(t, w.Write(cdrSample(64, uint32(i)), time.Time{}))
	}
	waitFor(t, 5*time.Second, "rejections counted", func() bool { return r.Stats().Rejected > 0 })

	var got uint64
	account := func() bool {
		for {
			select {
			case <-r.C():
				got++
			default:
				st := r.Stats()
				return st.Received == got && got+st.Rejected+st.Lost+st.Dropped == n
			}
		}
	}
	waitFor(t, 5*time.Second, "written = received + rejected + lost + dropped", account)
	st := r.Stats()
	t.Logf("written %d received %d rejected %d lost %d dropped %d", n, st.Received, st.Rejected, st.Lost, st.Dropped)
	require.Less(t, st.Received, uint64(n))
	require.Equal(t, uint64(n), st.Received+st.Rejected+st.Lost+st.Dropped)

	// Close keeps the last reading.
	require.NoError(t, r.Close())
	require.Equal(t, st.Rejected, r.Stats().Rejected)
}

// TestReaderStatsConcurrentClose: Stats may be called while the reader is
// being closed (and from its handler) without racing dds_delete.
func TestReaderStatsConcurrentClose(t *testing.T) {
	_, b := openPair(t)
	topic := uniqueTopic(t, "rejc")
	r, err := b.NewReader(topic, laserType, QoS{Reliability: Reliable}, WithListener(), WithHandler(func(*Sample) {}))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			_ = r.Stats()
		}
	}()
	require.NoError(t, r.Close())
	<-done
	require.Equal(t, ReaderStats{}, r.Stats())
}
