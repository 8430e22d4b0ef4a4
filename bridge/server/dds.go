package server

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/zenohpath"
)

// ddsBridge creates and removes routes as DDS discovery reports remote
// publications (→ a reader, DDS → Zenoh) and subscriptions (→ a writer,
// Zenoh → DDS).
type ddsBridge struct {
	s      *Server
	p      *ddspath.Participant
	events chan ddspath.Endpoint
	tokens chan ddspath.Endpoint // virtual endpoints of rmw_zenoh tokens (graphin.go)
	graph  *zenohpath.Subscriber // the liveliness subscriber feeding tokens
	wg     sync.WaitGroup

	svc  *services
	done <-chan struct{} // the gateway stops

	node *ddspath.NodeAnnouncer // ros_discovery_info (nodeinfo.go); nil when not announced
	hlc  *hlc                   // timestamps of TRANSIENT_LOCAL routes' puts (advhistory.go)

	mu  sync.Mutex
	out map[string]*outRoute // by DDS topic
	in  map[string]*inRoute  // by DDS topic
}

type outRoute struct {
	route   bridge.Route
	qos     ddspath.QoS
	reader  *ddspath.Reader
	writers endpointSet // the remote DDS writers (guarded by ddsBridge.mu)
	samples atomic.Uint64
	errors  atomic.Uint64
	loss    lossTracker
	tok     *zenohpath.LivelinessToken // rmw_zenoh MP token (graph.go)
	hist    *historyCache              // TRANSIENT_LOCAL writers: retained samples (history.go)
	histQbl *zenohpath.Queryable       // answers gets on the key with them
	// the AdvancedPublisher's queryable and token on <key>/@adv/pub/<zid>/uhlc/_ (advhistory.go)
	histAdvQbl *zenohpath.Queryable
	histTok    *zenohpath.LivelinessToken
}

type inRoute struct {
	route   bridge.Route
	qos     ddspath.QoS
	writer  *ddspath.Writer
	sub     *zenohpath.Subscriber
	tok     *zenohpath.LivelinessToken // rmw_zenoh MS token (graph.go)
	readers endpointSet                // the remote DDS readers (guarded by ddsBridge.mu)
	samples atomic.Uint64
	errors  atomic.Uint64
	// TRANSIENT_LOCAL readers (history.go): the newest timestamp written
	// per source, and the liveliness subscriber detecting late
	// AdvancedPublishers; nil otherwise.
	clock    *sourceClock
	histLive *zenohpath.Subscriber
}

func startDDS(ctx context.Context, s *Server, cfg ddspath.Config) (*ddsBridge, error) {
	p, err := ddspath.Open(cfg)
	if err != nil {
		return nil, err
	}
	b := &ddsBridge{s: s, p: p, events: make(chan ddspath.Endpoint, 1024), tokens: make(chan ddspath.Endpoint, 1024),
		out: map[string]*outRoute{}, in: map[string]*inRoute{}}
	b.node = announceNode(s, p)
	b.hlc = newHLC(s.data.ZID())
	b.svc = newServices(b, ctx.Done())
	b.done = ctx.Done()
	b.wg.Add(4)
	go func() {
		defer b.wg.Done()
		b.svc.run(ctx.Done())
	}()
	go func() {
		defer b.wg.Done()
		b.pollLossLoop(ctx)
	}()
	go func() {
		defer b.wg.Done()
		defer close(b.events)
		err := p.WatchEndpoints(ctx, func(e ddspath.Endpoint) {
			select {
			case b.events <- e:
			case <-ctx.Done():
			}
		})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, ddspath.ErrClosed) {
			s.log.Error("DDS discovery stopped", "err", err)
		}
	}()
	go func() {
		defer b.wg.Done()
		for {
			select {
			case e, ok := <-b.events:
				if !ok {
					return
				}
				b.handle(e)
			case e := <-b.tokens:
				b.handle(e)
			}
		}
	}()
	if b.graph, err = b.watchGraph(b.tokens); err != nil {
		s.log.Warn("rmw_zenoh graph not watched: device entities get no DDS endpoints", "err", err)
	}
	s.log.Info("DDS participant open", "domain", cfg.DomainID, "guid", p.GUID().String())
	return b, nil
}

// close stops discovery, closes every route and the participant.
func (b *ddsBridge) close() {
	b.mu.Lock()
	subs := make([]*zenohpath.Subscriber, 0, len(b.in))
	for _, r := range b.in {
		subs = append(subs, r.sub)
	}
	b.mu.Unlock()
	if b.graph != nil {
		_ = b.graph.Undeclare()
	}
	for _, sub := range subs {
		_ = sub.Undeclare()
	}
	b.svc.close()   // pending Zenoh queries get an error reply
	_ = b.p.Close() // ends WatchEndpoints and every reader's channel
	b.wg.Wait()
	b.svc.wait()
}

// allowed is the route table's decision for a discovered DDS publisher
// (pub) or subscriber of topic: routes.allow/deny of its kind, and
// auto_bridge unless allow names it.
func (b *ddsBridge) allowed(pub bool, topic string) bool {
	rt := b.s.gw.Routes()
	return rt.AllowedTopic(pub, topic) && (rt.AutoBridge() || rt.AllowSet())
}

// allowedService is allowed for a service server (server) or client.
func (b *ddsBridge) allowedService(server bool, name string) bool {
	rt := b.s.gw.Routes()
	return rt.AllowedService(server, name) && (rt.AutoBridge() || rt.AllowSet())
}

func (b *ddsBridge) handle(e ddspath.Endpoint) {
	topic, kind, err := ros2.ParseDDSTopic(e.Topic)
	if err != nil {
		return // not a ROS topic
	}
	if kind != ros2.KindTopic {
		b.svc.handle(e, topic, kind) // services.go
		return
	}
	rosType, err := ros2.TypeFromDDS(e.TypeName)
	if err != nil {
		rosType = e.TypeName
	}
	log := b.s.log.With("topic", topic, "type", rosType)
	switch e.Kind {
	case ddspath.Publication:
		if !e.Alive {
			r := removeEndpoint(b, b.out, e.Topic, e.GUID, dirToZenoh)
			if r == nil {
				return
			}
			_ = r.reader.Close()
			undeclareToken(r.tok)
			r.undeclareHistory()
			b.pollLoss(r) // the closed reader keeps its last counts
			log.Info("route DDS → Zenoh removed (no DDS writer left)", "key", r.route.Key, "samples", r.samples.Load(), "dropped", r.loss.total())
			return
		}
		b.mu.Lock()
		r := b.out[e.Topic]
		if r == nil {
			b.mu.Unlock()
			if !b.allowed(true, topic) {
				log.Debug("DDS publication not bridged (routes allow/deny)")
				return
			}
			route, _ := b.s.gw.Routes().Resolve(topic, rosType, e.TypeHash)
			r, err = b.newOut(e, route)
			if err != nil {
				log.Warn("DDS → Zenoh route not created", "err", err)
				return
			}
			r.tok = b.s.graph.announce(ros2.EntityPublisher, topic, r.route.Key, rosType, e.TypeHash, b.s.graph.tokenQoS(r.qos, e.QoS))
			b.mu.Lock()
			b.out[e.Topic] = r
			b.s.stats.routes.WithLabelValues(dirToZenoh).Inc()
			log.Info("route DDS → Zenoh", "key", r.route.Key, "criticality", string(r.route.Criticality), "qos", r.qos.String())
		}
		r.writers.add(e.GUID)
		if r.hist != nil {
			r.hist.grow(e.QoS.Depth)
		}
		b.mu.Unlock()
	case ddspath.Subscription:
		if !e.Alive {
			r := removeEndpoint(b, b.in, e.Topic, e.GUID, dirToDDS)
			if r == nil {
				return
			}
			_ = r.sub.Undeclare()
			if r.histLive != nil {
				_ = r.histLive.Undeclare()
			}
			undeclareToken(r.tok)
			_ = r.writer.Close()
			log.Info("route Zenoh → DDS removed (no DDS reader left)", "key", r.route.Key, "samples", r.samples.Load())
			return
		}
		b.mu.Lock()
		r := b.in[e.Topic]
		if r == nil {
			b.mu.Unlock()
			if !b.allowed(false, topic) {
				log.Debug("DDS subscription not bridged (routes allow/deny)")
				return
			}
			route, _ := b.s.gw.Routes().Resolve(topic, rosType, e.TypeHash)
			r, err = b.newIn(e, route)
			if err != nil {
				log.Warn("Zenoh → DDS route not created", "err", err)
				return
			}
			r.tok = b.s.graph.announce(ros2.EntitySubscription, topic, r.route.Key, rosType, e.TypeHash, b.s.graph.tokenQoS(r.qos, e.QoS))
			b.mu.Lock()
			b.in[e.Topic] = r
			b.s.stats.routes.WithLabelValues(dirToDDS).Inc()
			log.Info("route Zenoh → DDS", "key", r.route.Key, "qos", r.qos.String())
		}
		r.readers.add(e.GUID)
		b.mu.Unlock()
	}
}

// endpoints is the set of remote DDS endpoints that keep a topic route:
// the writers of a DDS → Zenoh route, the readers of a Zenoh → DDS one.
func (r *outRoute) endpoints() *endpointSet { return &r.writers }
func (r *inRoute) endpoints() *endpointSet  { return &r.readers }

// removeEndpoint forgets remote endpoint g of the route of topic in routes
// (b.out or b.in) and returns the route when g was its last endpoint: it is
// then out of routes and out of picobridge_routes{direction=dir}, for the
// caller to close. nil: no such route, or endpoints are left.
func removeEndpoint[R interface{ endpoints() *endpointSet }](b *ddsBridge, routes map[string]R, topic string, g ddspath.GUID, dir string) R {
	var none R
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := routes[topic]
	if !ok || !r.endpoints().remove(g) {
		return none
	}
	delete(routes, topic)
	b.s.stats.routes.WithLabelValues(dir).Dec()
	return r
}

// matchQoS is a QoS compatible with the remote endpoint's: same
// reliability and durability (volatile or transient local), KEEP_LAST with
// its depth, at least the ROS default 10.
func matchQoS(q ddspath.QoS) ddspath.QoS {
	out := ddspath.QoS{Reliability: q.Reliability, History: ddspath.KeepLast, Depth: max(q.Depth, 10), Durability: ddspath.Volatile}
	if q.Durability != ddspath.Volatile {
		out.Durability = ddspath.TransientLocal
	}
	return out.Normalize()
}

// writerDepth is the history of a Zenoh → DDS writer: a reliable KEEP_LAST
// writer overwrites samples its readers have not acknowledged yet, so a
// volatile one keeps more than the reader asked for (a burst from a device
// must not be lost to a slow acknowledgment); a transient-local one keeps
// the reader's depth (that is what late joiners get).
func writerDepth(q ddspath.QoS) int32 {
	if q.Durability == ddspath.Volatile {
		return max(q.Depth, 100)
	}
	return q.Depth
}

func (b *ddsBridge) newOut(e ddspath.Endpoint, route bridge.Route) (*outRoute, error) {
	q := matchQoS(e.QoS)
	q.IgnoreLocal = true // never read back what the Zenoh → DDS writers wrote
	rd, err := b.p.NewReader(e.Topic, e.TypeName, q, ddspath.WithQueue(1024, ddspath.DropOldest))
	if err != nil {
		return nil, err
	}
	r := &outRoute{route: route, qos: q, reader: rd}
	if q.Durability == ddspath.TransientLocal {
		if err := b.declareHistory(r, e.QoS.Normalize().Depth); err != nil {
			_ = rd.Close()
			return nil, err
		}
	}
	opts := b.putOptions(route, e.QoS.Reliability == ddspath.Reliable)
	b.wg.Add(1)
	if mf, ok := b.s.gw.Routes().MaxFrequency(route.Topic); ok {
		go func() {
			defer b.wg.Done()
			b.forwardCapped(r, rd, opts, mf)
		}()
		return r, nil
	}
	go func() {
		defer b.wg.Done()
		for smp := range rd.C() {
			b.forward(r, smp, opts)
		}
	}()
	return r, nil
}

// putOptions is how a DDS → Zenoh route publishes to Zenoh routers and
// clients (devices get the route's lane instead):
//
//   - priority and express: the route's routes.pub_priorities entry; else
//     1 real_time with express for a critical route, 5 data otherwise;
//   - congestion control block for a RELIABLE DDS writer when
//     routes.reliable_routes_blocking (zenoh-bridge-ros2dds
//     route_publisher.rs), except on a critical route, whose devices'
//     express lane must not wait behind a congested upstream; drop
//     otherwise;
//   - best effort for a BEST_EFFORT writer.
func (b *ddsBridge) putOptions(route bridge.Route, reliable bool) *zenohpath.PutOptions {
	opts := &zenohpath.PutOptions{Priority: zenohpath.PriorityData, CongestionControl: zenohpath.CongestionControlDrop}
	if route.Criticality == bridge.Critical {
		opts.Priority, opts.Express = zenohpath.PriorityRealTime, true
	}
	if route.Priority != 0 {
		opts.Priority, opts.Express = zenohpath.Priority(route.Priority), route.Express
	}
	if reliable && b.s.gw.Routes().ReliableBlocking() && route.Criticality != bridge.Critical {
		opts.CongestionControl = zenohpath.CongestionControlBlock
	}
	if !reliable {
		opts.Reliability = zenohpath.ReliabilityBestEffort
	}
	return opts
}

// reasonMaxFrequency counts samples routes.pub_max_frequencies dropped
// (picobridge_dds_samples_dropped_total; docs/metrics.md).
const reasonMaxFrequency = "max_frequency"

// forwardCapped is the forwarding loop of a route under a
// routes.pub_max_frequencies cap (bridge.Downsampler): at most mf.Hz
// samples a second, the newest, the last of a burst sent when its slot
// opens; the others are dropped with reason max_frequency.
func (b *ddsBridge) forwardCapped(r *outRoute, rd *ddspath.Reader, opts *zenohpath.PutOptions, mf bridge.MaxFrequency) {
	ds := bridge.NewDownsampler[*ddspath.Sample](mf.Period())
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	drop := func(n int) {
		if n > 0 {
			r.loss.sum.Add(uint64(n))
			b.s.stats.dropped.WithLabelValues(dirToZenoh, r.route.Topic, reasonMaxFrequency).Add(float64(n))
		}
	}
	for {
		var due <-chan time.Time
		if at, ok := ds.Due(); ok {
			timer.Reset(time.Until(at))
			due = timer.C
		}
		select {
		case smp, ok := <-rd.C():
			if !ok {
				if _, held := ds.Due(); held {
					drop(1) // the route closed before its slot
				}
				return
			}
			send, dropped := ds.Offer(time.Now(), smp)
			drop(dropped)
			if send {
				b.forward(r, smp, opts)
			}
		case now := <-due:
			if smp, ok := ds.Flush(now); ok {
				b.forward(r, smp, opts)
			}
		}
	}
}

// expressDrainWait bounds how long a critical route's ingress waits for
// room in the devices' express lanes (bridge.Gateway.WaitExpressRoom).
const expressDrainWait = 20 * time.Millisecond

// forward publishes one DDS sample on the route's key: to plain Zenoh
// faces through the router, to devices through their lanes.
func (b *ddsBridge) forward(r *outRoute, smp *ddspath.Sample, opts *zenohpath.PutOptions) {
	s := b.s
	var ts *zenohpath.Timestamp
	if r.hist != nil {
		// A TRANSIENT_LOCAL route is an AdvancedPublisher with a cache:
		// every put carries the timestamp its cached copy will be
		// answered with, so an AdvancedSubscriber that gets a sample
		// both live and from the cache keeps one (advhistory.go).
		t := b.hlc.next()
		ts = &t
		o := *opts
		o.Timestamp = ts
		opts = &o
	}
	if _, err := s.data.PublishRemote(r.route.Key, smp.CDR, opts, s.devs.isDevice); err != nil {
		r.errors.Add(1)
		s.stats.errors.WithLabelValues(dirToZenoh).Inc()
		s.gw.ReportError()
		return
	}
	if r.route.Criticality == bridge.Critical {
		// The express lane keeps at most its depth per key: in a DDS
		// burst, give a keeping-up device's lane a moment to take one
		// (never a stalled or link-paced device: WaitExpressRoom).
		s.gw.WaitExpressRoom(r.route.Key, expressDrainWait)
	}
	s.gw.Publish(r.route, bridge.Sample{Key: r.route.Key, Payload: smp.CDR, Time: smp.ReceivedAt})
	if r.hist != nil {
		r.hist.addTS(smp.PublicationHandle, smp.CDR, ts)
	}
	r.samples.Add(1)
	s.stats.samples.WithLabelValues(dirToZenoh).Inc()
}

func (b *ddsBridge) newIn(e ddspath.Endpoint, route bridge.Route) (*inRoute, error) {
	q := matchQoS(e.QoS)
	q.Depth = writerDepth(q)
	w, err := b.p.NewWriter(e.Topic, e.TypeName, q)
	if err != nil {
		return nil, err
	}
	r := &inRoute{route: route, qos: q, writer: w}
	s := b.s
	var gate *historyGate
	if q.Durability == ddspath.TransientLocal {
		gate = &historyGate{pending: true}
		r.clock = newSourceClock()
	}
	r.sub, err = s.data.DeclareSubscriber(route.Key, func(smp zenohpath.Sample) {
		if smp.Kind() != zenohpath.SampleKindPut {
			return
		}
		if gate != nil && gate.hold(smp) {
			return
		}
		if r.clock != nil {
			r.clock.observe(smp)
		}
		b.writeIn(r, smp.Payload())
	})
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	if gate != nil {
		if err := b.watchLatePublishers(r); err != nil {
			_ = r.sub.Undeclare()
			_ = w.Close()
			return nil, err
		}
		b.queryHistory(r, gate)
	}
	return r, nil
}

// writeIn writes one sample from Zenoh to a Zenoh → DDS route's writer.
func (b *ddsBridge) writeIn(r *inRoute, p []byte) {
	s := b.s
	if err := r.writer.Write(p, time.Time{}); err != nil {
		r.errors.Add(1)
		s.stats.errors.WithLabelValues(dirToDDS).Inc()
		return
	}
	r.samples.Add(1)
	s.stats.samples.WithLabelValues(dirToDDS).Inc()
}

func (b *ddsBridge) status() []RouteStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]RouteStatus, 0, len(b.out)+len(b.in))
	for _, r := range b.out {
		out = append(out, RouteStatus{Route: r.route, Direction: dirToZenoh, QoS: r.qos.String(),
			Endpoints: r.writers.len(), Samples: r.samples.Load(), Errors: r.errors.Load(), Dropped: r.loss.total()})
	}
	for _, r := range b.in {
		out = append(out, RouteStatus{Route: r.route, Direction: dirToDDS, QoS: r.qos.String(),
			Endpoints: r.readers.len(), Samples: r.samples.Load(), Errors: r.errors.Load()})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Direction < out[j].Direction
	})
	return out
}

// DDS-input drop reasons of picobridge_dds_samples_dropped_total (docs/metrics.md).
const (
	reasonDDSSampleLost     = "dds_sample_lost"     // Cyclone SAMPLE_LOST
	reasonDDSSampleRejected = "dds_sample_rejected" // Cyclone SAMPLE_REJECTED (reader cache limits)
	reasonDDSSeqGap         = "dds_seq_gap"         // writer sequence numbers the reader never got (Reader.Stats Gaps)
	reasonQueueFull         = "queue_full"          // the route's reader queue overflowed (DropOldest)
)

// lossPollInterval is how often the DDS → Zenoh readers' loss counters are
// read into the metrics.
const lossPollInterval = time.Second

// lossTracker turns a reader's cumulative loss counters into metric
// increments and a warning once per route and reason.
type lossTracker struct {
	mu                   sync.Mutex
	lost, rejected, gaps uint64
	dropped              uint64
	warned               map[string]bool
	sum                  atomic.Uint64
}

func (l *lossTracker) total() uint64 { return l.sum.Load() }

// pollLossLoop reads every DDS → Zenoh route's reader counters each
// lossPollInterval until ctx is done.
func (b *ddsBridge) pollLossLoop(ctx context.Context) {
	t := time.NewTicker(lossPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.mu.Lock()
		routes := make([]*outRoute, 0, len(b.out))
		for _, r := range b.out {
			routes = append(routes, r)
		}
		b.mu.Unlock()
		for _, r := range routes {
			b.pollLoss(r)
		}
	}
}

// pollLoss accounts what r's reader lost since the last poll: Cyclone's
// SAMPLE_LOST and SAMPLE_REJECTED, the writers' sequence numbers it never
// got, and the reader queue's overflow drops.
func (b *ddsBridge) pollLoss(r *outRoute) {
	st := r.reader.Stats()
	l := &r.loss
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range []struct {
		reason string
		last   *uint64
		cur    uint64
	}{
		{reasonDDSSampleLost, &l.lost, st.Lost},
		{reasonDDSSampleRejected, &l.rejected, st.Rejected},
		{reasonDDSSeqGap, &l.gaps, st.Gaps},
		{reasonQueueFull, &l.dropped, st.Dropped},
	} {
		if c.cur <= *c.last {
			continue
		}
		d := c.cur - *c.last
		*c.last = c.cur
		l.sum.Add(d)
		b.s.stats.dropped.WithLabelValues(dirToZenoh, r.route.Topic, c.reason).Add(float64(d))
		if l.warned == nil {
			l.warned = map[string]bool{}
		}
		if !l.warned[c.reason] {
			l.warned[c.reason] = true
			b.s.log.Warn("dropping samples: DDS input of route (logged once per cause and route)",
				"topic", r.route.Topic, "key", r.route.Key, "direction", dirToZenoh, "reason", c.reason, "count", c.cur)
		}
	}
}
