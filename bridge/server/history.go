package server

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/keyexpr"
)

// TRANSIENT_LOCAL topics (docs/services.md#transient_local), both ways.
//
// Zenoh → DDS: a route whose DDS reader is TRANSIENT_LOCAL first asks Zenoh
// for the history on its key (queryHistory: what zenoh-bridge-ros2dds's
// route_subscriber.rs asks with an AdvancedSubscriber's history) and
// writes it to its TRANSIENT_LOCAL DDS writer, which keeps it for DDS late
// joiners.
//
// DDS → Zenoh: a route whose DDS writer is TRANSIENT_LOCAL keeps each
// writer's last depth samples (at most depth ×
// routes.transient_local_cache_multiplier). A late joiner gets them:
//
//   - a device, when it declares a subscriber that includes the route's
//     key: replayed to that device only, through its batched lane at its
//     rate and link budget (bridge.Device.Replay), so the replay never
//     delays the express lane's critical traffic (rmw_zenoh#710);
//   - any Zenoh client, by a get on the route's key: the route declares a
//     queryable there that answers with the retained samples, oldest first
//     (what zenoh-ext's PublicationCache does; zenoh-bridge-ros2dds ≤ 1.5).

// historyCache is a route's retained samples: each DDS writer's last
// depth samples, at most depth × multiplier in all
// (routes.transient_local_cache_multiplier; zenoh-bridge-ros2dds sizes its
// route's publication cache depth × multiplier, "in case there are several
// Writers served by this route"). Here one writer keeps its own depth, as
// a DDS late joiner of it gets, and the multiplier bounds the route when
// many writers share it; when the route is full the oldest sample of any
// writer goes first.
type historyCache struct {
	mu    sync.Mutex
	depth int
	mult  int
	items []historyItem // oldest first
}

type historyItem struct {
	writer uint64 // the DDS writer (ddspath.Sample.PublicationHandle)
	p      []byte
}

func newHistoryCache(depth int32, mult int) *historyCache {
	return &historyCache{depth: max(int(depth), 1), mult: max(mult, 1)}
}

func (h *historyCache) add(writer uint64, p []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.items = append(h.items, historyItem{writer, p})
	n, first := 0, -1
	for i := len(h.items) - 1; i >= 0; i-- {
		if h.items[i].writer == writer {
			n++
			first = i
		}
	}
	if n > h.depth {
		h.items = append(h.items[:first], h.items[first+1:]...)
	}
	if len(h.items) > h.depth*h.mult {
		h.items = append(h.items[:0], h.items[1:]...)
	}
}

// grow raises the depth (another writer with a deeper history joined).
func (h *historyCache) grow(depth int32) {
	h.mu.Lock()
	h.depth = max(h.depth, int(depth))
	h.mu.Unlock()
}

// snapshot is the retained samples, oldest first; the newest max when
// max > 0.
func (h *historyCache) snapshot(max int) [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	items := h.items
	if max > 0 && len(items) > max {
		items = items[len(items)-max:]
	}
	out := make([][]byte, len(items))
	for i, it := range items {
		out[i] = it.p
	}
	return out
}

// historyQueryMarker is the attachment of the gateway's own history queries
// (Zenoh → DDS, below): its history queryables do not answer them, so a
// topic bridged both ways never writes DDS samples back into DDS.
var historyQueryMarker = []byte("picobridge/history-query")

// maxParam is the _max=N selector parameter of a history query (zenoh-ext's
// history queries carry it): the newest N samples; 0 when absent or bad.
func maxParam(params string) int {
	for _, kv := range strings.Split(params, ";") {
		if v, ok := strings.CutPrefix(kv, "_max="); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

type historyMetrics struct {
	replayed *prometheus.CounterVec
}

func newHistoryMetrics(reg prometheus.Registerer) *historyMetrics {
	m := &historyMetrics{replayed: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "picobridge", Subsystem: "dds", Name: "history_replayed_total",
		Help: "Retained samples of TRANSIENT_LOCAL routes handed to late joiners, by how (device: through its batched lane; query: a Zenoh get on the route's key; dds: fetched from Zenoh for a Zenoh → DDS route and written to DDS).",
	}, []string{"to"})}
	m.replayed.WithLabelValues("device")
	m.replayed.WithLabelValues("query")
	m.replayed.WithLabelValues("dds")
	reg.MustRegister(m.replayed)
	return m
}

// declareHistory gives a TRANSIENT_LOCAL route its cache and queryable.
func (b *ddsBridge) declareHistory(r *outRoute, depth int32) error {
	r.hist = newHistoryCache(depth, b.s.gw.Routes().TransientLocalCacheMultiplier())
	key := r.route.Key
	qbl, err := b.s.data.DeclareQueryable(key, func(q *zenohpath.Query) {
		if bytes.Equal(q.Attachment(), historyQueryMarker) {
			return // our own Zenoh → DDS route's query
		}
		items := r.hist.snapshot(maxParam(q.Parameters()))
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
		if items := r.hist.snapshot(0); len(items) > 0 {
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

// historyGate holds a TRANSIENT_LOCAL Zenoh → DDS route's live samples
// while its history query runs, so that the DDS writer gets the history
// first, then what was published meanwhile.
type historyGate struct {
	mu      sync.Mutex
	pending bool
	held    []zenohpath.Sample
}

// hold keeps smp (a copy) while the query runs; false: write it now.
func (g *historyGate) hold(smp zenohpath.Sample) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.pending {
		return false
	}
	g.held = append(g.held, smp) // its bytes are ours (zenohpath.Sample)
	return true
}

// queryHistory asks Zenoh for the newest depth samples on r's key (every
// queryable: zenoh-ext publication caches, other gateways' history, our
// own excepted), within services.queries_timeout.transient_local
// (zenoh-bridge-ros2dds: queries_timeout.transient_local_subscribers),
// writes them to r's DDS writer oldest first, then the live samples held
// meanwhile except those the replies already carried (same timestamp, or
// same payload when untimestamped).
func (b *ddsBridge) queryHistory(r *inRoute, g *historyGate) {
	s := b.s
	timeout := s.cfg.Services.QueriesTimeout.HistoryTimeout(r.route.Topic)
	sel := r.route.Key + "?_max=" + strconv.Itoa(int(r.qos.Depth))
	replies, err := s.data.Get(sel, &zenohpath.GetOptions{Target: zenohpath.QueryTargetAll, Timeout: timeout, Attachment: historyQueryMarker})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		seenTS := map[zenohpath.Timestamp]bool{}
		seenP := map[string]bool{}
		n := 0
		if err == nil {
			for rep := range recvUntil(replies, b.done) {
				smp, ok := rep.Ok()
				if !ok || smp.Kind() != zenohpath.SampleKindPut {
					continue
				}
				if ts, ok := smp.Timestamp(); ok {
					seenTS[ts] = true
				} else {
					seenP[string(smp.Payload())] = true
				}
				b.writeIn(r, smp.Payload())
				n++
			}
		} else {
			s.log.Warn("TRANSIENT_LOCAL history query not sent", "topic", r.route.Topic, "key", r.route.Key, "err", err)
		}
		s.histStats.replayed.WithLabelValues("dds").Add(float64(n))
		select {
		case <-b.done:
			return // the gateway stops: the writer is closing
		default:
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, smp := range g.held {
			if ts, ok := smp.Timestamp(); ok && seenTS[ts] {
				continue
			}
			if seenP[string(smp.Payload())] {
				continue
			}
			b.writeIn(r, smp.Payload())
		}
		g.held, g.pending = nil, false
		s.log.Info("TRANSIENT_LOCAL history fetched from Zenoh for a DDS late joiner", "topic", r.route.Topic, "key", r.route.Key, "samples", n)
	}()
}

// recvUntil yields the replies until the channel closes or done does (a
// history query must not hold the gateway's shutdown for its timeout).
func recvUntil(replies <-chan zenohpath.Reply, done <-chan struct{}) func(func(zenohpath.Reply) bool) {
	return func(yield func(zenohpath.Reply) bool) {
		for {
			select {
			case rep, ok := <-replies:
				if !ok || !yield(rep) {
					return
				}
			case <-done:
				return
			}
		}
	}
}
