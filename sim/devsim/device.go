package devsim

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Options are the process-side settings of a Device (not part of what it
// simulates).
type Options struct {
	// Endpoint is used when DeviceConfig.Endpoint is empty.
	Endpoint string
	// Responder answers probe pings; nil = ProbeResponder.
	Responder Responder
	// Logger receives the device's logs; nil = discard.
	Logger *slog.Logger
	// OnSample, when set, is called once for every sample that reached a
	// subscriber's checks, with its outcome: at delivery to the
	// application, or at the drop (the raw samples of an evaluation run).
	// It is called without the device's locks held, from the device's
	// goroutines (several at once across devices): it must be safe for
	// concurrent use and quick.
	OnSample func(SampleEvent)
}

// Sample outcomes (SampleEvent.Outcome).
const (
	OutcomeDelivered = "delivered"
	OutcomeRingFull  = "ring_full"
	OutcomeOversize  = "oversize"
	OutcomeSlot      = "slot"
)

// SampleEvent is one sample at one subscriber (Options.OnSample).
type SampleEvent struct {
	Device    string    `json:"device"`
	Key       string    `json:"key"`        // the subscription
	SampleKey string    `json:"sample_key"` // the sample's own key
	Seq       uint64    `json:"seq"`        // valid when HasSeq
	HasSeq    bool      `json:"has_seq"`
	Size      int       `json:"size"`      // payload bytes
	Stamp     time.Time `json:"stamp"`     // ROS header stamp; zero when none
	Received  time.Time `json:"received"`  // when the read task's callback put it in the ring (its batch had just been read from the socket)
	Delivered time.Time `json:"delivered"` // when the application took it; zero unless delivered
	Outcome   string    `json:"outcome"`   // OutcomeDelivered, OutcomeRingFull, OutcomeOversize, OutcomeSlot
}

// DeviceReceive is the device's own share of the latency, Delivered −
// Received (≈ 0 when the application is woken on arrival, up to the spin
// period otherwise), or 0 unless delivered.
func (e SampleEvent) DeviceReceive() time.Duration {
	if e.Delivered.IsZero() {
		return 0
	}
	return e.Delivered.Sub(e.Received)
}

// Latency is Delivered − Stamp, or 0 when either is missing.
func (e SampleEvent) Latency() time.Duration {
	if e.Stamp.IsZero() || e.Delivered.IsZero() {
		return 0
	}
	return e.Delivered.Sub(e.Stamp)
}

// Device is one simulated zenoh-pico client (docs/devsim.md). Create it
// with NewDevice, run it with Start, end it with Stop. All methods are safe
// for concurrent use.
type Device struct {
	cfg      DeviceConfig
	resolved *knobs.Resolved
	model    Model
	endpoint string
	log      *slog.Logger
	resp     Responder
	onSample func(SampleEvent)
	zid      wire.ZID
	lock     *fdLock // per_fd_tx_ceiling; nil without
	tx       *txPath
	appWake  chan struct{} // cap 1: the subscriber callback wakes the application
	pingKey  string
	pongKey  string

	started time.Time
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	runMu   sync.Mutex // Start/Stop

	pings, pongs, pingDrops atomic.Uint64

	mu           sync.Mutex // everything below
	conn         *conn
	subs         []*subscriber
	pubs         []*publisher
	pingQ        []pingJob // pings waiting for the application (PongFromApp)
	connects     uint64
	lastErr      string
	rxPrev       uint64 // batches of past sessions
	txPrev       uint64
	oversizeUnat uint64
}

type subscriber struct {
	cfg     Subscription
	slot    int
	ring    []SampleEvent // the samples waiting in the ring
	st      SubStats
	hist    histogram // latency: delivery − header stamp
	recv    histogram // device receive share: delivery − callback
	lastSeq map[string]uint64
}

type publisher struct {
	idx int
	cfg Publication
	gid [16]byte
	seq int64
	st  PubStats
}

// pingJob is a ping waiting for an application-level responder.
type pingJob struct {
	ping    []byte
	devRecv uint64
	c       *conn
}

// pingQueueDepth bounds the pings waiting for the application.
const pingQueueDepth = 16

// pendingMsg is one sample on the device's TX path (pub nil: a pong).
type pendingMsg struct {
	push     wire.Push
	size     int // push.Len(), bytes of the batch it takes
	reliable bool
	pub      *publisher
	c        *conn
}

// conn is the state of one session; a reconnect starts a fresh one.
type conn struct {
	s          *transport.Session
	stop       chan struct{} // closed by HandleClose
	routerKeys map[uint16]string
	ownKeys    map[uint16]string
	pubKeyID   []uint16
	pongKeyID  uint16
	interests  map[uint32]int // interest id → publication index
	finals     map[uint32]bool
	routerSubs map[uint32]string
	match      []map[uint32]bool // per publication: matching router subscriber ids
	inBatch    bool              // read goroutine only: a batch is being handled
	newSamples bool              // read goroutine only: this batch filled a ring
}

// NewDevice resolves the device's knobs and prepares it; nothing runs
// until Start.
func NewDevice(cfg DeviceConfig, opts Options) (*Device, error) {
	if cfg.Replicas > 1 {
		return nil, fmt.Errorf("device %q: replicas: use a Fleet", cfg.Name)
	}
	cfg = cfg.Expand()[0]
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r, err := Resolve(cfg.Platform, cfg.Board, cfg.Env, "device "+cfg.Name)
	if err != nil {
		return nil, err
	}
	d := &Device{
		cfg:      cfg,
		resolved: r,
		model:    ModelOf(r, cfg.Spin),
		endpoint: cfg.Endpoint,
		log:      opts.Logger,
		resp:     opts.Responder,
		onSample: opts.OnSample,
		pingKey:  PingKey(cfg.Name),
		pongKey:  PongKey(cfg.Name),
		appWake:  make(chan struct{}, 1),
	}
	if d.endpoint == "" {
		d.endpoint = opts.Endpoint
	}
	if d.endpoint == "" {
		return nil, fmt.Errorf("device %q: no endpoint", cfg.Name)
	}
	if _, err := transport.ParseEndpoint(d.endpoint); err != nil {
		return nil, fmt.Errorf("device %q: %w", cfg.Name, err)
	}
	if d.log == nil {
		d.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d.log = d.log.With("device", cfg.Name)
	if d.resp == nil {
		d.resp = ProbeResponder
	}
	if d.cfg.ReconnectInterval <= 0 {
		d.cfg.ReconnectInterval = DefaultReconnectInterval
	}
	if d.model.PerFdLock {
		d.lock = newFDLock(d.model.SocketWindow)
	}
	d.tx = newTxPath(d.model.TxBatch, d.model.SplitLock, d.batchContent(), d.lock, d.write)
	var zb [16]byte // Z_ZID_LENGTH: a random 16-byte ZID, kept across reconnects
	_, _ = rand.Read(zb[:])
	zb[15] |= 1 // never the zero ZID
	d.zid = wire.MustZID(zb[:])
	large := d.model.LargeSlots
	for _, s := range cfg.Subscriptions {
		sub := &subscriber{cfg: s, slot: d.model.SlotBytes, lastSeq: map[string]uint64{}}
		if s.Large && large > 0 {
			sub.slot = max(sub.slot, d.model.LargeSlotBytes)
			large--
		}
		sub.st.RingSlot = sub.slot
		d.subs = append(d.subs, sub)
	}
	for i, p := range cfg.Publications {
		if p.Size == 0 {
			p.Size = DefaultSampleSize
		}
		pub := &publisher{idx: i, cfg: p}
		copy(pub.gid[:], zb[:])
		pub.gid[0] ^= byte(i + 1)
		d.pubs = append(d.pubs, pub)
	}
	return d, nil
}

// Name is the device's name.
func (d *Device) Name() string { return d.cfg.Name }

// Model is what the device obeys.
func (d *Device) Model() Model { return d.model }

// Resolved is the device's resolved knob profile (with provenance).
func (d *Device) Resolved() *knobs.Resolved { return d.resolved }

// ZID is the device's Zenoh id.
func (d *Device) ZID() wire.ZID { return d.zid }

// Start starts the device: it connects (and reconnects after a failure),
// publishes and drains until Stop or ctx ends. Start returns at once.
func (d *Device) Start(ctx context.Context) error {
	d.runMu.Lock()
	defer d.runMu.Unlock()
	if d.cancel != nil {
		return errors.New("devsim: device already started")
	}
	ctx, d.cancel = context.WithCancel(ctx)
	d.mu.Lock()
	d.started = time.Now()
	d.mu.Unlock()
	if d.lock != nil {
		d.goRun(func() { d.lock.run(ctx) })
	}
	d.goRun(func() { d.run(ctx) })
	d.goRun(func() { d.appLoop(ctx) })
	if d.model.TxBatch && d.model.FlushThread {
		d.goRun(func() { d.tx.flushLoop(ctx, d.model.FlushInterval) })
	}
	for _, p := range d.pubs {
		d.goRun(func() { d.publishLoop(ctx, p) })
	}
	return nil
}

func (d *Device) goRun(f func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
}

// Stop ends the device: the session is closed and every goroutine of the
// device has exited when Stop returns. Safe to call more than once.
func (d *Device) Stop() {
	d.runMu.Lock()
	cancel := d.cancel
	d.runMu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	d.wg.Wait()
}

// run connects and reconnects (zenoh-pico auto-reconnect) until ctx ends.
func (d *Device) run(ctx context.Context) {
	for {
		err := d.session(ctx)
		if ctx.Err() != nil {
			return
		}
		d.mu.Lock()
		if err != nil {
			d.lastErr = err.Error()
		}
		d.mu.Unlock()
		d.log.Info("session ended, reconnecting", "err", err, "in", d.cfg.ReconnectInterval)
		t := time.NewTimer(d.cfg.ReconnectInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// session runs one session: dial, declare, serve until it ends.
func (d *Device) session(ctx context.Context) error {
	c := &conn{
		stop:       make(chan struct{}),
		routerKeys: map[uint16]string{},
		ownKeys:    map[uint16]string{},
		interests:  map[uint32]int{},
		finals:     map[uint32]bool{},
		routerSubs: map[uint32]string{},
		pubKeyID:   make([]uint16, len(d.pubs)),
		match:      make([]map[uint32]bool, len(d.pubs)),
	}
	for i := range c.match {
		c.match[i] = map[uint32]bool{}
	}
	h := transport.HandlerFuncs{
		Network:  func(s *transport.Session, m wire.NetworkMessage) { d.handle(ctx, c, s, m) },
		BatchEnd: func(*transport.Session) { d.batchEnd(c) },
		Close:    func(*transport.Session, error) { close(c.stop) },
	}
	cfg := transport.Config{
		ZID:              d.zid,
		WhatAmI:          wire.WhatAmIClient,
		BatchSize:        uint16(min(d.model.BatchSize, 65535)),
		Lease:            d.model.Lease,
		KeepAliveDivisor: max(1, int(d.model.Lease/max(d.model.Capacity.KeepAlive, time.Millisecond))),
		// Our own TX batches are handed over in one go; 1 ms lets the
		// transport put them in one link batch.
		FlushPeriod: time.Millisecond,
		// The device's frag_max_size is enforced per message in handle
		// (so drops are attributed to a key); the transport's bound only
		// protects memory.
		MaxMessageSize: max(d.model.FragMaxSize, reassemblyHardBound),
		Logger:         d.log,
	}
	s, err := transport.Dial(ctx, d.endpoint, cfg, h)
	if err != nil {
		return err
	}
	c.s = s
	d.mu.Lock()
	d.connects++
	d.conn = c
	d.declare(c)
	d.mu.Unlock()
	d.log.Info("connected", "endpoint", d.endpoint, "batch", s.BatchSize(), "router", s.PeerZID().String())

	select {
	case <-c.stop:
	case <-ctx.Done():
		_ = s.Close(transport.ReasonShutdown)
	}
	<-s.Done()
	st := s.Stats()
	d.mu.Lock()
	d.conn = nil
	d.rxPrev += st.RxBatches
	d.txPrev += st.TxBatches
	d.oversizeUnat += st.Dropped["fragment_oversize"]
	d.mu.Unlock()
	d.tx.discard(func(m pendingMsg) bool { return m.c != c })
	return s.Err()
}

// reassemblyHardBound bounds what the transport reassembles, bytes.
const reassemblyHardBound = 4 << 20

// declare sends what zenoh-pico sends when the application declares its
// entities (zenoh-wire.md §12.3, §12.4): for a subscriber the key's
// non-wildcard prefix as a DeclareKeyExpr, then DeclareSubscriber with the
// full key (scope 0); for a publisher DeclareKeyExpr of its key, then an
// aggregated CurrentFuture INTEREST (K|S|R|M|A) on that id. Called with
// d.mu held.
func (d *Device) declare(c *conn) {
	var ke uint16 = 1
	var id uint32 = 1
	send := func(m wire.NetworkMessage) {
		_ = c.s.Send(m, transport.SendOptions{Reliable: true, Express: true})
	}
	declKE := func(key string) uint16 {
		k := ke
		ke++
		c.ownKeys[k] = key
		send(&wire.Declare{Body: &wire.DeclareKeyExpr{ID: k, WireExpr: wire.WireExpr{Suffix: key}}})
		return k
	}
	declSub := func(key string) {
		if p := nonWildPrefix(key); p != "" && p != key {
			declKE(p)
		}
		send(&wire.Declare{Body: &wire.DeclareSubscriber{ID: id, WireExpr: wire.WireExpr{Suffix: key, Mapping: wire.MappingSender}}})
		id++
	}
	for _, s := range d.subs {
		declSub(s.cfg.Key)
	}
	if !d.cfg.NoProbeResponder {
		declSub(d.pingKey)
		c.pongKeyID = declKE(d.pongKey)
	}
	for i, p := range d.pubs {
		k := declKE(p.cfg.Key)
		c.pubKeyID[i] = k
		c.interests[id] = i
		send(&wire.Interest{
			Mode:     wire.InterestCurrentFuture,
			ID:       id,
			Options:  wire.InterestKeyExprs | wire.InterestSubscribers | wire.InterestRestricted | wire.InterestAggregate,
			WireExpr: wire.WireExpr{Scope: k, Mapping: wire.MappingSender},
		})
		id++
	}
	if !d.cfg.NoProbeResponder {
		// The responder announces the device's knobs once per session
		// (docs/probe.md "Knob announcement"), as the C responder does.
		send(&wire.Push{WireExpr: wire.WireExpr{Suffix: probe.KnobsKey(d.cfg.Name)},
			Body: &wire.Put{Payload: knobs.AnnouncementOf(d.resolved).Append(nil)}})
	}
}

// resolve turns a wire expression into a key (zenoh-wire.md §9.1): M=1
// (sender mapping) uses the router's ids, M=0 ours. Called with d.mu held.
func (c *conn) resolve(w wire.WireExpr) (string, bool) {
	if w.Scope == 0 {
		return w.Suffix, w.Suffix != ""
	}
	tbl := c.ownKeys
	if w.Mapping == wire.MappingSender {
		tbl = c.routerKeys
	}
	p, ok := tbl[w.Scope]
	return p + w.Suffix, ok
}

// handle is the device's read task for one network message.
func (d *Device) handle(ctx context.Context, c *conn, s *transport.Session, m wire.NetworkMessage) {
	if ctx.Err() != nil {
		return // stopping: the application is gone
	}
	if !c.inBatch {
		// The first message of a batch: the read task's recv has returned
		// (data ends it at once; receive is never paced).
		c.inBatch = true
		d.lock.arrived()
	}
	switch m := m.(type) {
	case *wire.Push:
		d.handlePush(c, s, m)
	case *wire.Declare:
		d.handleDeclare(c, m)
	case *wire.Request:
		// No queryables: every REQUEST gets its RESPONSE_FINAL (§9.3).
		_ = s.Send(&wire.ResponseFinal{ID: m.ID}, transport.SendOptions{Reliable: true, Express: true})
	}
}

// batchEnd: the read task has run the callbacks of one batch and goes back
// to recv; the application, woken by those callbacks, takes its samples.
func (d *Device) batchEnd(c *conn) {
	if !c.inBatch {
		d.lock.arrived() // a batch without network messages (KEEP_ALIVE)
	}
	c.inBatch = false
	if c.newSamples {
		c.newSamples = false
		if d.model.SpinPeriod == 0 {
			select {
			case d.appWake <- struct{}{}:
			default:
			}
		}
	}
}

func (d *Device) handlePush(c *conn, s *transport.Session, m *wire.Push) {
	now := time.Now()
	put, ok := m.Body.(*wire.Put)
	var events []SampleEvent
	var pong func()
	d.mu.Lock()
	defer func() {
		d.mu.Unlock()
		for _, e := range events {
			d.onSample(e)
		}
		if pong != nil {
			pong()
		}
	}()
	key, known := c.resolve(m.WireExpr)
	if !ok || !known {
		return
	}
	size := m.Len()
	// A message that did not fit one FRAME of the device's batch arrived
	// as fragments: zenoh-pico drops it when the reassembled size exceeds
	// Z_FRAG_MAX_SIZE (anchors.md §2.6; zenoh-wire.md §4.7).
	fragmented := size > d.model.BatchSize-knobs.StreamPrefixBytes-knobs.FrameHeaderBytes
	oversize := fragmented && size > d.model.FragMaxSize
	if key == d.pingKey && !d.cfg.NoProbeResponder {
		if oversize {
			return
		}
		d.pings.Add(1)
		ping := append([]byte(nil), put.Payload...)
		devRecv := uint64(now.Sub(d.started))
		if d.cfg.PongFrom == PongFromApp {
			// A responder in the application: the ping waits for the
			// application like any sample (ring: the pending pings).
			if len(d.pingQ) >= pingQueueDepth {
				d.pingDrops.Add(1)
				return
			}
			d.pingQ = append(d.pingQ, pingJob{ping: ping, devRecv: devRecv, c: c})
			c.newSamples = true
			return
		}
		// The pong goes out from the read task, inside the subscriber
		// callback, as the C responder does (docs/devsim.md "Probe pong"):
		// the read task is not in recv, so it does not wait for the window.
		pong = func() { d.sendPong(c, s, ping, devRecv) }
		return
	}
	var ev SampleEvent
	evReady := false
	event := func(sub *subscriber, outcome string) SampleEvent {
		if !evReady {
			ev = SampleEvent{Device: d.cfg.Name, SampleKey: key, Size: len(put.Payload), Received: now}
			ev.Stamp = sampleStamp(put.Payload)
			_, ev.Seq, ev.HasSeq = sampleSeq(put.Payload, put.Attachment)
			evReady = true
		}
		e := ev
		e.Key, e.Outcome = sub.cfg.Key, outcome
		return e
	}
	for _, sub := range d.subs {
		if !keyexpr.Intersects(sub.cfg.Key, key) {
			continue
		}
		switch {
		case oversize:
			sub.st.OversizeDrops++
			if d.onSample != nil {
				events = append(events, event(sub, OutcomeOversize))
			}
			continue
		case len(put.Payload) > sub.slot:
			sub.st.SlotDrops++
			if d.onSample != nil {
				events = append(events, event(sub, OutcomeSlot))
			}
			continue
		}
		sub.st.Received++
		if src, seq, ok := sampleSeq(put.Payload, put.Attachment); ok {
			if last, seen := sub.lastSeq[src]; seen {
				switch {
				case seq <= last:
					sub.st.OutOfOrder++
				default:
					sub.st.Gaps += seq - last - 1
					sub.lastSeq[src] = seq
				}
			} else {
				sub.lastSeq[src] = seq
			}
		}
		if len(sub.ring) >= d.model.RingDepth {
			sub.st.RingFullDrops++ // drop-newest, as zpico's SPSC ring
			if d.onSample != nil {
				events = append(events, event(sub, OutcomeRingFull))
			}
			continue
		}
		sub.ring = append(sub.ring, event(sub, OutcomeDelivered))
		c.newSamples = true
	}
}

func (d *Device) handleDeclare(c *conn, m *wire.Declare) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch b := m.Body.(type) {
	case *wire.DeclareKeyExpr:
		// pico resolves the body with sender mapping (zenoh-wire.md §9.1).
		w := b.WireExpr
		w.Mapping = wire.MappingSender
		if key, ok := c.resolve(w); ok {
			c.routerKeys[b.ID] = key
		}
	case *wire.UndeclareKeyExpr:
		delete(c.routerKeys, b.ID)
	case *wire.DeclareSubscriber:
		key, ok := c.resolve(b.WireExpr)
		if !ok {
			return
		}
		c.routerSubs[b.ID] = key
		// The write filter (zenoh-wire.md §12.4): aggregated replies carry
		// exactly the interest's key, others intersect it.
		for i, p := range d.pubs {
			if keyexpr.Intersects(p.cfg.Key, key) {
				c.match[i][b.ID] = true
			}
		}
	case *wire.UndeclareSubscriber:
		delete(c.routerSubs, b.ID)
		for i := range c.match {
			delete(c.match[i], b.ID)
		}
	case *wire.DeclareFinal:
		if m.HasInterestID {
			c.finals[m.InterestID] = true
		}
	}
}

func (c *conn) matched(i int) bool { return len(c.match[i]) > 0 }

// publishLoop publishes one publication at its rate.
func (d *Device) publishLoop(ctx context.Context, p *publisher) {
	t := time.NewTicker(p.cfg.Interval())
	defer t.Stop()
	for n := 0; p.cfg.Count == 0 || n < p.cfg.Count; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.publishOne(ctx, p)
	}
}

func (d *Device) publishOne(ctx context.Context, p *publisher) {
	now := time.Now()
	d.mu.Lock()
	p.st.Attempts++
	c := d.conn
	if c == nil || !c.matched(p.idx) {
		p.st.Filtered++ // write filter closed: pico sends nothing
		d.mu.Unlock()
		return
	}
	p.seq++
	put := &wire.Put{
		Payload:    buildSample(nil, now, d.cfg.Name, p.cfg.Size),
		Attachment: buildAttachment(nil, p.seq, now, p.gid),
	}
	push := wire.Push{WireExpr: wire.WireExpr{Scope: c.pubKeyID[p.idx], Mapping: wire.MappingSender}, Body: put}
	if p.cfg.Express {
		push.HasQoS = true
		push.QoS = wire.NewQoS(wire.PriorityData, wire.CongestionDrop, true)
	}
	d.mu.Unlock()
	// z_put returns when the sample is appended to the batch or, unbatched
	// and express, when its own send is written (txPath).
	d.tx.publish(ctx, c.stop, pendingMsg{push: push, size: push.Len(), reliable: !p.cfg.BestEffort, pub: p, c: c}, p.cfg.Express)
}

// write is the device's socket write of one send (txPath.write): the
// messages go to the session that was current when they were published.
func (d *Device) write(msgs []pendingMsg, ok, single bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range msgs {
		m := &msgs[i]
		err := errNotSent
		if ok && m.c == d.conn {
			err = m.c.s.Send(&m.push, transport.SendOptions{Reliable: m.reliable, Express: single})
		}
		switch {
		case m.pub == nil && err == nil:
			d.pongs.Add(1)
		case m.pub == nil:
			d.pingDrops.Add(1)
		case err == nil:
			m.pub.st.Sent++
		default:
			m.pub.st.TxDrops++
		}
	}
}

// batchContent is what one batch of the device carries, bytes.
func (d *Device) batchContent() int {
	return d.model.BatchSize - knobs.StreamPrefixBytes - knobs.FrameHeaderBytes
}

// appLoop is the application's executor: woken by the subscriber callbacks
// of each batch (SpinPeriod 0), or every SpinPeriod, it takes every sample
// out of every subscriber ring. Without a flush thread it also flushes the
// TX batch when it spins (every SpinPeriod, or every FlushInterval when
// woken on arrival: spin_once's timeout).
func (d *Device) appLoop(ctx context.Context) {
	var tick <-chan time.Time
	if d.model.SpinPeriod > 0 {
		t := time.NewTicker(d.model.SpinPeriod)
		defer t.Stop()
		tick = t.C
	}
	spinFlush := d.model.TxBatch && !d.model.FlushThread
	var flushTick <-chan time.Time
	if spinFlush && d.model.SpinPeriod == 0 {
		t := time.NewTicker(d.model.FlushInterval)
		defer t.Stop()
		flushTick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.appWake:
		case <-tick:
		case <-flushTick:
		}
		d.take()
		d.answerPings(ctx)
		if spinFlush {
			d.tx.flush(ctx, nil)
		}
	}
}

// take delivers every sample waiting in the rings to the application.
func (d *Device) take() {
	now := time.Now()
	var events []SampleEvent
	d.mu.Lock()
	for _, s := range d.subs {
		for _, e := range s.ring {
			s.st.Delivered++
			e.Delivered = now
			if !e.Stamp.IsZero() {
				s.hist.add(now.Sub(e.Stamp))
			}
			s.recv.add(now.Sub(e.Received))
			if d.onSample != nil {
				events = append(events, e)
			}
		}
		clear(s.ring)
		s.ring = s.ring[:0]
	}
	d.mu.Unlock()
	for _, e := range events {
		d.onSample(e)
	}
}

// errNotSent marks a message whose send was abandoned or whose session
// ended before it was written.
var errNotSent = errors.New("devsim: not sent")

// answerPings is an application-level responder (PongFromApp): each pong
// is stamped (dev_send) and then put express, waiting for the socket like
// any send of the application.
func (d *Device) answerPings(ctx context.Context) {
	d.mu.Lock()
	jobs := d.pingQ
	d.pingQ = nil
	d.mu.Unlock()
	for _, j := range jobs {
		push, err := d.pongPush(j.c, j.ping, j.devRecv)
		if err != nil {
			continue
		}
		d.tx.publish(ctx, j.c.stop, pendingMsg{push: *push, size: push.Len(), c: j.c}, true)
	}
}

// pongPush builds the pong of one ping.
func (d *Device) pongPush(c *conn, ping []byte, devRecv uint64) (*wire.Push, error) {
	pong, err := d.resp.Respond(ping, devRecv, uint64(time.Since(d.started)))
	if err != nil {
		d.log.Debug("probe: bad ping", "err", err)
		return nil, err
	}
	return &wire.Push{
		WireExpr: wire.WireExpr{Scope: c.pongKeyID, Mapping: wire.MappingSender},
		NetExt:   wire.NetExt{HasQoS: true, QoS: wire.NewQoS(wire.PriorityRealTime, wire.CongestionDrop, true)},
		Body:     &wire.Put{Payload: pong},
	}, nil
}

// sendPong answers one probe ping from the read task: one express send,
// outside the TX path's locks and without waiting for the socket window
// (the read task is not in recv while its callback runs, so the socket is
// free; docs/devsim.md "Probe pong").
func (d *Device) sendPong(c *conn, s *transport.Session, ping []byte, devRecv uint64) {
	push, err := d.pongPush(c, ping, devRecv)
	if err != nil {
		return
	}
	if s.Send(push, transport.SendOptions{Express: true}) == nil {
		d.pongs.Add(1)
	} else {
		d.pingDrops.Add(1)
	}
}

// Stats returns a snapshot of the device's counters.
func (d *Device) Stats() DeviceStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := DeviceStats{
		Name:                      d.cfg.Name,
		Platform:                  d.resolved.Platform.Name(),
		Board:                     d.cfg.Board,
		Connected:                 d.conn != nil,
		Connects:                  d.connects,
		LastError:                 d.lastErr,
		Model:                     d.model,
		Subscriptions:             map[string]SubStats{},
		Publications:              map[string]PubStats{},
		ProbePings:                d.pings.Load(),
		ProbeResponses:            d.pongs.Load(),
		RxBatches:                 d.rxPrev,
		TxBatches:                 d.txPrev,
		OversizeDropsUnattributed: d.oversizeUnat,
	}
	if d.connects > 0 {
		st.Reconnects = d.connects - 1
	}
	if !d.started.IsZero() {
		st.Uptime = time.Since(d.started)
	}
	st.Socket = d.lock.stats()
	if c := d.conn; c != nil {
		ts := c.s.Stats()
		st.RxBatches += ts.RxBatches
		st.TxBatches += ts.TxBatches
		st.OversizeDropsUnattributed += ts.Dropped["fragment_oversize"]
		if len(ts.Dropped) > 0 {
			st.TransportDrops = ts.Dropped
		}
	}
	for _, s := range d.subs {
		ss := s.st
		ss.Latency = s.hist.stats()
		ss.DeviceReceive = s.recv.stats()
		st.Subscriptions[s.cfg.Key] = ss
	}
	for _, p := range d.pubs {
		ps := p.st
		ps.Matched = d.conn != nil && d.conn.matched(p.idx)
		st.Publications[p.cfg.Key] = ps
	}
	return st
}

// cancelOnly starts stopping the device without waiting (Fleet.Stop
// cancels all devices first so they close in parallel).
func (d *Device) cancelOnly() {
	d.runMu.Lock()
	cancel := d.cancel
	d.runMu.Unlock()
	if cancel != nil {
		cancel()
	}
}
