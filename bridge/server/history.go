package server

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
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
	ts     *zenohpath.Timestamp // the Zenoh timestamp it was published with (nil: none)
}

func newHistoryCache(depth int32, mult int) *historyCache {
	return &historyCache{depth: max(int(depth), 1), mult: max(mult, 1)}
}

func (h *historyCache) add(writer uint64, p []byte) { h.addTS(writer, p, nil) }

// addTS retains p of writer with the timestamp it was published with.
func (h *historyCache) addTS(writer uint64, p []byte, ts *zenohpath.Timestamp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.items = append(h.items, historyItem{writer, p, ts})
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
	items := h.items2(max)
	out := make([][]byte, len(items))
	for i, it := range items {
		out[i] = it.p
	}
	return out
}

// items2 is snapshot with each sample's writer and timestamp.
func (h *historyCache) items2(max int) []historyItem {
	h.mu.Lock()
	defer h.mu.Unlock()
	items := h.items
	if max > 0 && len(items) > max {
		items = items[len(items)-max:]
	}
	return append([]historyItem(nil), items...)
}

// historyQueryMarker is the attachment of the gateway's own history queries
// (Zenoh → DDS, below): its history queryables do not answer them, so a
// topic bridged both ways never writes DDS samples back into DDS.
// The marker names the gateway's session: another gateway's history query
// is answered (a marker without the ZID made two gateways ignore each
// other's late joiners).
func historyQueryMarker(zid wire.ZID) []byte {
	return []byte("picobridge/history-query/" + zid.String())
}

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
		Help: "Retained samples of TRANSIENT_LOCAL routes handed to late joiners, by how (device: through its batched lane; query: a Zenoh get on the route's key or its AdvancedPublisher key <key>/@adv/pub/<zid>/uhlc/_, each reply counted; dds: fetched from Zenoh for a Zenoh → DDS route and written to DDS).",
	}, []string{"to"})}
	m.replayed.WithLabelValues("device")
	m.replayed.WithLabelValues("query")
	m.replayed.WithLabelValues("dds")
	reg.MustRegister(m.replayed)
	return m
}

// declareHistory gives a TRANSIENT_LOCAL route its cache, and makes the
// route what both generations of zenoh-bridge-ros2dds query for history:
//
//   - a queryable on the route's key (zenoh-ext PublicationCache style,
//     zenoh-bridge-ros2dds ≤ 1.5 and picobridge before the @adv layout);
//   - an AdvancedPublisher with a cache (zenoh-bridge-ros2dds ≥ 1.6,
//     advhistory.go): a queryable and a liveliness token on
//     `<key>/@adv/pub/<zid>/uhlc/_`, answering on `<key>` with the
//     samples' timestamps.
//
// Both answer the newest _max retained samples, oldest first; the
// gateway's own history queries (historyQueryMarker) get nothing.
func (b *ddsBridge) declareHistory(r *outRoute, depth int32) error {
	r.hist = newHistoryCache(depth, b.s.gw.Routes().TransientLocalCacheMultiplier())
	key := r.route.Key
	own := historyQueryMarker(b.s.data.ZID())
	answer := func(q *zenohpath.Query) {
		if bytes.Equal(q.Attachment(), own) {
			return // our own Zenoh → DDS route's query
		}
		if snBounded(q.Parameters()) {
			return // a retransmission range: our samples carry no sequence numbers
		}
		items := r.hist.items2(maxParam(q.Parameters()))
		for _, it := range items {
			_ = q.Reply(key, it.p, &zenohpath.ReplyOptions{Timestamp: it.ts})
		}
		b.s.histStats.replayed.WithLabelValues("query").Add(float64(len(items)))
	}
	qbl, err := b.s.data.DeclareQueryable(key, answer, nil)
	if err != nil {
		return err
	}
	adv := advPubKey(key, b.s.data.ZID())
	aqbl, err := b.s.data.DeclareQueryable(adv, answer, nil)
	if err != nil {
		_ = qbl.Undeclare()
		return err
	}
	tok, err := b.s.data.Liveliness().DeclareToken(adv)
	if err != nil {
		_ = qbl.Undeclare()
		_ = aqbl.Undeclare()
		return err
	}
	r.histQbl, r.histAdvQbl, r.histTok = qbl, aqbl, tok
	return nil
}

// undeclareHistory ends what declareHistory declared.
func (r *outRoute) undeclareHistory() {
	if r.histQbl != nil {
		_ = r.histQbl.Undeclare()
	}
	if r.histAdvQbl != nil {
		_ = r.histAdvQbl.Undeclare()
	}
	if r.histTok != nil {
		_ = r.histTok.Undeclare()
	}
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

// queryHistory asks Zenoh for the newest depth samples on r's key, within
// services.queries_timeout.transient_local (zenoh-bridge-ros2dds:
// queries_timeout.transient_local_subscribers), with two gets sent at once:
//
//   - `<key>/@adv/**?_max=<depth>;_anyke`: what zenoh-ext's
//     AdvancedSubscriber with history asks (zenoh-bridge-ros2dds ≥ 1.6,
//     other picobridge gateways; advhistory.go);
//   - `<key>?_max=<depth>`: PublicationCache-style queryables on the plain
//     key (zenoh-bridge-ros2dds ≤ 1.5, zenoh-ext PublicationCache users).
//
// Every queryable but our own answers (target All). The replies of both
// are written to r's DDS writer once each (the same timestamp, or the same
// payload when untimestamped, is one sample), oldest first when all carry
// a timestamp (else as they came), then the live samples held meanwhile
// except those the replies already carried.
func (b *ddsBridge) queryHistory(r *inRoute, g *historyGate) {
	s := b.s
	timeout := s.cfg.Services.QueriesTimeout.HistoryTimeout(r.route.Topic)
	depth := int(r.qos.Depth)
	opts := &zenohpath.GetOptions{Target: zenohpath.QueryTargetAll, Consolidation: zenohpath.ConsolidationModeNone,
		Timeout: timeout, Attachment: historyQueryMarker(s.data.ZID())}
	var chans []<-chan zenohpath.Reply
	for _, sel := range []string{advHistorySelector(r.route.Key, depth), r.route.Key + "?_max=" + strconv.Itoa(depth)} {
		replies, err := s.data.Get(sel, opts)
		if err != nil {
			s.log.Warn("TRANSIENT_LOCAL history query not sent", "topic", r.route.Topic, "selector", sel, "err", err)
			continue
		}
		chans = append(chans, replies)
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		seen := newHistorySeen()
		var got []zenohpath.Sample
		for rep := range recvUntil(mergeReplies(chans, b.done), b.done) {
			if smp, ok := rep.Ok(); ok && smp.Kind() == zenohpath.SampleKindPut && seen.add(smp, false) {
				got = append(got, smp)
			}
		}
		select {
		case <-b.done:
			return // the gateway stops: the writer is closing
		default:
		}
		orderHistory(got)
		n := 0
		for _, smp := range got {
			if r.clock.admit(smp) { // a late publisher's fetch may have written it
				b.writeIn(r, smp.Payload())
				n++
			}
		}
		s.histStats.replayed.WithLabelValues("dds").Add(float64(n))
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, smp := range g.held {
			if seen.add(smp, true) && r.clock.admit(smp) {
				b.writeIn(r, smp.Payload())
			}
		}
		g.held, g.pending = nil, false
		s.log.Info("TRANSIENT_LOCAL history fetched from Zenoh for a DDS late joiner", "topic", r.route.Topic, "key", r.route.Key, "samples", n)
	}()
}

// watchLatePublishers is the AdvancedSubscriber's detect_late_publishers
// (advanced_subscriber.rs: a liveliness subscriber on `<key>/@adv/pub/**`):
// when an AdvancedPublisher's token appears after r's route (another
// gateway or zenoh-bridge-ros2dds reachable only now), its cache is asked
// for the newest depth samples (`<token key>?_max=<depth>;_anyke`), and
// those newer than what r wrote from that source are written. Our own
// token is skipped.
func (b *ddsBridge) watchLatePublishers(r *inRoute) error {
	own := b.s.data.ZID().String()
	sub, err := b.s.data.Liveliness().DeclareSubscriber(advLivelinessKey(r.route.Key), func(tok zenohpath.Sample) {
		if tok.Kind() != zenohpath.SampleKindPut || advTokenZID(r.route.Key, tok.KeyExpr()) == own {
			return
		}
		b.fetchLate(r, tok.KeyExpr())
	}, nil)
	if err != nil {
		return err
	}
	r.histLive = sub
	return nil
}

// fetchLate gets a late AdvancedPublisher's cache (its token key tok) and
// writes the samples newer than r's clock for their source.
func (b *ddsBridge) fetchLate(r *inRoute, tok string) {
	s := b.s
	sel := tok + "?_max=" + strconv.Itoa(int(r.qos.Depth)) + ";_anyke"
	replies, err := s.data.Get(sel, &zenohpath.GetOptions{Target: zenohpath.QueryTargetAll, Consolidation: zenohpath.ConsolidationModeNone,
		Timeout: s.cfg.Services.QueriesTimeout.HistoryTimeout(r.route.Topic), Attachment: historyQueryMarker(s.data.ZID())})
	if err != nil {
		s.log.Warn("TRANSIENT_LOCAL history query not sent", "topic", r.route.Topic, "selector", sel, "err", err)
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		var got []zenohpath.Sample
		for rep := range recvUntil(replies, b.done) {
			if smp, ok := rep.Ok(); ok && smp.Kind() == zenohpath.SampleKindPut {
				got = append(got, smp)
			}
		}
		orderHistory(got)
		n := 0
		for _, smp := range got {
			select {
			case <-b.done:
				return
			default:
			}
			if r.clock.admit(smp) {
				b.writeIn(r, smp.Payload())
				n++
			}
		}
		s.histStats.replayed.WithLabelValues("dds").Add(float64(n))
		s.log.Info("TRANSIENT_LOCAL history fetched from a late Zenoh publisher", "topic", r.route.Topic, "publisher", tok, "samples", n, "replies", len(got))
	}()
}

// sourceClock is the newest timestamp a TRANSIENT_LOCAL Zenoh → DDS route
// wrote per source (the timestamp's ID), as zenoh-ext's AdvancedSubscriber
// keeps last_delivered per timestamped source: a history sample not newer
// is one the route wrote already.
type sourceClock struct {
	mu   sync.Mutex
	last map[wire.ZID]uint64
}

func newSourceClock() *sourceClock { return &sourceClock{last: map[wire.ZID]uint64{}} }

// observe records a live sample's timestamp.
func (c *sourceClock) observe(smp zenohpath.Sample) {
	ts, ok := smp.Timestamp()
	if !ok {
		return
	}
	c.mu.Lock()
	c.last[ts.ZID] = max(c.last[ts.ZID], ts.Time)
	c.mu.Unlock()
}

// admit reports whether a history sample is to be written (untimestamped,
// or newer than its source's last) and records it.
func (c *sourceClock) admit(smp zenohpath.Sample) bool {
	ts, ok := smp.Timestamp()
	if !ok {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ts.Time <= c.last[ts.ZID] {
		return false
	}
	c.last[ts.ZID] = ts.Time
	return true
}

// historySeen is the samples a history fetch has written: by timestamp,
// or by payload when untimestamped.
type historySeen struct {
	ts map[zenohpath.Timestamp]bool
	p  map[string]bool
}

func newHistorySeen() *historySeen {
	return &historySeen{ts: map[zenohpath.Timestamp]bool{}, p: map[string]bool{}}
}

// add records smp; false when it was seen already (an untimestamped one
// only when byPayload: two replies may carry equal payloads).
func (h *historySeen) add(smp zenohpath.Sample, byPayload bool) bool {
	if ts, ok := smp.Timestamp(); ok {
		if h.ts[ts] {
			return false
		}
		h.ts[ts] = true
		return true
	}
	k := string(smp.Payload())
	if byPayload && h.p[k] {
		return false
	}
	h.p[k] = true
	return true
}

// orderHistory sorts replies oldest first by timestamp (time, then the
// publisher's ID) when every one carries one; otherwise they stay as they
// came (a cache answers oldest first).
func orderHistory(got []zenohpath.Sample) {
	for _, smp := range got {
		if _, ok := smp.Timestamp(); !ok {
			return
		}
	}
	sort.SliceStable(got, func(i, j int) bool {
		a, _ := got[i].Timestamp()
		b, _ := got[j].Timestamp()
		if a.Time != b.Time {
			return a.Time < b.Time
		}
		return a.ZID.String() < b.ZID.String()
	})
}

// mergeReplies is one channel of the replies of all chans, closed after
// the last one's end; every channel is drained as its replies come (a
// get's full channel would hold back the session's deliveries).
// It stops when done closes.
func mergeReplies(chans []<-chan zenohpath.Reply, done <-chan struct{}) <-chan zenohpath.Reply {
	out := make(chan zenohpath.Reply, 64)
	var wg sync.WaitGroup
	for _, c := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := range c {
				select {
				case out <- rep:
				case <-done:
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
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
