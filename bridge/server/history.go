package server

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/keyexpr"
)

// TRANSIENT_LOCAL topics (docs/services.md#transient_local): a DDS → Zenoh
// route whose DDS writer is TRANSIENT_LOCAL keeps the writer's last depth
// samples. A late joiner gets them:
//
//   - a device, when it declares a subscriber that includes the route's
//     key: replayed to that device only, through its batched lane at its
//     rate and link budget (bridge.Device.Replay), so the replay never
//     delays the express lane's critical traffic (rmw_zenoh#710);
//   - any Zenoh client, by a get on the route's key: the route declares a
//     queryable there that answers with the retained samples, oldest first
//     (what zenoh-ext's PublicationCache does; zenoh-bridge-ros2dds ≤ 1.5).

// historyCache is a bounded ring of the last depth samples of a route.
type historyCache struct {
	mu    sync.Mutex
	depth int
	items [][]byte
}

func newHistoryCache(depth int32) *historyCache {
	return &historyCache{depth: max(int(depth), 1)}
}

func (h *historyCache) add(p []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.items) >= h.depth {
		copy(h.items, h.items[1:])
		h.items = h.items[:len(h.items)-1]
	}
	h.items = append(h.items, p)
}

// grow raises the depth (another writer with a deeper history joined).
func (h *historyCache) grow(depth int32) {
	h.mu.Lock()
	h.depth = max(h.depth, int(depth))
	h.mu.Unlock()
}

func (h *historyCache) snapshot() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.items...)
}

type historyMetrics struct {
	replayed *prometheus.CounterVec
}

func newHistoryMetrics(reg prometheus.Registerer) *historyMetrics {
	m := &historyMetrics{replayed: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "picobridge", Subsystem: "dds", Name: "history_replayed_total",
		Help: "Retained samples of TRANSIENT_LOCAL routes handed to late joiners, by how (device: through its batched lane; query: a Zenoh get on the route's key).",
	}, []string{"to"})}
	m.replayed.WithLabelValues("device")
	m.replayed.WithLabelValues("query")
	reg.MustRegister(m.replayed)
	return m
}

// declareHistory gives a TRANSIENT_LOCAL route its cache and queryable.
func (b *ddsBridge) declareHistory(r *outRoute, depth int32) error {
	r.hist = newHistoryCache(depth)
	key := r.route.Key
	qbl, err := b.s.data.DeclareQueryable(key, func(q *zenohpath.Query) {
		items := r.hist.snapshot()
		for _, p := range items {
			_ = q.Reply(key, p, nil)
		}
		b.s.histStats.replayed.WithLabelValues("query").Add(float64(len(items)))
	}, nil)
	if err != nil {
		return err
	}
	r.histQbl = qbl
	return nil
}

// replayTo starts replaying, to dev, the history of every TRANSIENT_LOCAL
// route whose key the new subscription sub includes.
func (b *ddsBridge) replayTo(dev *bridge.Device, sub string) {
	b.mu.Lock()
	var jobs []struct {
		key   string
		items [][]byte
	}
	for _, r := range b.out {
		if r.hist == nil || !keyexpr.Includes(sub, r.route.Key) {
			continue
		}
		if items := r.hist.snapshot(); len(items) > 0 {
			jobs = append(jobs, struct {
				key   string
				items [][]byte
			}{r.route.Key, items})
		}
	}
	b.mu.Unlock()
	for _, j := range jobs {
		samples := make([]bridge.Sample, len(j.items))
		for i, p := range j.items {
			samples[i] = bridge.Sample{Key: j.key, Payload: p}
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			n := dev.Replay(samples, b.done)
			b.s.histStats.replayed.WithLabelValues("device").Add(float64(n))
			b.s.log.Info("TRANSIENT_LOCAL history replayed to a late-joining device", "device", dev.Name(), "key", j.key, "samples", n, "retained", len(samples))
		}()
	}
}
