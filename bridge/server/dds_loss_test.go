//go:build cgo && cyclonedds

package server

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/internal/interop"
)

// TestDDSInputLossCounted: samples a route's DDS reader refuses (a
// BEST_EFFORT burst into a KEEP_ALL max_samples 8 reader whose consumer is
// stalled) show up in picobridge_dds_samples_dropped_total with reason
// dds_sample_rejected, equal to the reader's count, in /routez's Dropped,
// and in one warning per route and reason.
func TestDDSInputLossCounted(t *testing.T) {
	s := startTestServer(t, "zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: 127.0.0.1:0\n") // not the default 9464: other processes on the host may hold it
	var logs interop.SyncBuffer
	s.log = slog.New(slog.NewTextHandler(&logs, nil))

	cfg := ddspath.Config{DomainID: 220 + uint32(rand.IntN(10))}
	a, err := ddspath.Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	bp, err := ddspath.Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = bp.Close() })

	topic := fmt.Sprintf("rt/loss_%d_%d", os.Getpid(), rand.Uint32())
	const typ = "std_msgs::msg::dds_::String_"
	rd, err := bp.NewReader(topic, typ, ddspath.QoS{Reliability: ddspath.BestEffort, History: ddspath.KeepAll, MaxSamples: 8},
		ddspath.WithQueue(1, ddspath.Block))
	require.NoError(t, err)
	w, err := a.NewWriter(topic, typ, ddspath.QoS{Reliability: ddspath.BestEffort, History: ddspath.KeepLast, Depth: 1})
	require.NoError(t, err)
	eventually(t, "match", func() bool { return w.Matched() == 1 && rd.Matched() == 1 })
	for i := range 50 {
		require.NoError(t, w.Write([]byte{0, 1, 0, 0, byte(i), 0, 0, 0}, time.Time{}))
	}
	eventually(t, "rejected", func() bool { return rd.Stats().Rejected > 0 })

	b := &ddsBridge{s: s, out: map[string]*outRoute{}}
	r := &outRoute{route: bridge.Route{Topic: "/loss", Key: "loss"}, reader: rd}
	b.out[topic] = r
	b.pollLoss(r)
	b.pollLoss(r) // no double counting, no second warning
	rej := rd.Stats().Rejected
	require.Equal(t, float64(rej), testutil.ToFloat64(s.stats.dropped.WithLabelValues(dirToZenoh, "/loss", reasonDDSSampleRejected)))
	require.Equal(t, 0.0, testutil.ToFloat64(s.stats.dropped.WithLabelValues(dirToZenoh, "/loss", reasonDDSSampleLost)))
	require.GreaterOrEqual(t, r.loss.total(), rej)
	require.Equal(t, 1, strings.Count(logs.String(), "reason=dds_sample_rejected"), logs.String())
	require.Contains(t, logs.String(), "topic=/loss")
	st := b.status()
	require.Len(t, st, 1)
	require.Equal(t, r.loss.total(), st[0].Dropped)

	// After Close the reader keeps its counts; a last poll adds nothing new.
	require.NoError(t, rd.Close())
	b.pollLoss(r)
	require.Equal(t, float64(rej), testutil.ToFloat64(s.stats.dropped.WithLabelValues(dirToZenoh, "/loss", reasonDDSSampleRejected)))
}
