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

// errNotSent marks a message whose send was abandoned or whose session
// ended before it was written.
var errNotSent = errors.New("devsim: not sent")

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
