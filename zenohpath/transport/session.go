package transport

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Handler receives what a session delivers. Both methods are called from
// the session's read goroutine, one call at a time.
type Handler interface {
	// HandleNetwork is called for every network message received (from a
	// FRAME, or reassembled from FRAGMENTs), in order. m and every byte
	// slice inside it are valid only during the call (the parser reuses
	// them): copy what you keep. Strings are safe to keep. The handler may
	// call s.Send and s.Close. It should not block for long: while it
	// runs, nothing else is read from this link.
	HandleNetwork(s *Session, m wire.NetworkMessage)
	// HandleClose is called exactly once, after the session closed and
	// its write goroutine exited. err is a *CloseError.
	HandleClose(s *Session, err error)
}

// BatchEndHandler is an optional interface of a Handler: HandleBatchEnd is
// called on the read goroutine after every message of one received batch
// was handled (also for a batch that carried no network message, e.g. a
// KEEP_ALIVE), before the next batch is read. A device simulator uses it
// as the moment its read task returns to recv (firmware/devsim).
type BatchEndHandler interface {
	HandleBatchEnd(s *Session)
}

// HandlerFuncs adapts functions to a Handler (and a BatchEndHandler); nil
// fields are no-ops.
type HandlerFuncs struct {
	Network  func(s *Session, m wire.NetworkMessage)
	Close    func(s *Session, err error)
	BatchEnd func(s *Session)
}

// HandleBatchEnd implements BatchEndHandler.
func (h HandlerFuncs) HandleBatchEnd(s *Session) {
	if h.BatchEnd != nil {
		h.BatchEnd(s)
	}
}

// HandleNetwork implements Handler.
func (h HandlerFuncs) HandleNetwork(s *Session, m wire.NetworkMessage) {
	if h.Network != nil {
		h.Network(s, m)
	}
}

// HandleClose implements Handler.
func (h HandlerFuncs) HandleClose(s *Session, err error) {
	if h.Close != nil {
		h.Close(s, err)
	}
}

var sessionIDs atomic.Uint64

const (
	// minKeepAlive bounds the keep-alive period from below (a peer could
	// announce a lease of a few ms).
	minKeepAlive = 10 * time.Millisecond
	// closeGrace bounds how long closing may spend flushing and writing
	// CLOSE to a peer that does not read; then the link is closed anyway.
	closeGrace = time.Second
)

// Session is one open Zenoh unicast transport session over one link, after
// INIT/OPEN. Sessions accepted by a Listener and dialled ones behave the
// same. All methods are safe for concurrent use.
type Session struct {
	id     uint64
	cfg    Config
	l      link
	h      Handler
	p      params
	log    *slog.Logger
	m      *Metrics
	remote net.Addr

	mask       uint64
	maxContent int           // batch content bytes we may send (negotiated − prefix on streams)
	kaPeriod   time.Duration // KEEP_ALIVE after this much TX silence
	rxLease    time.Duration // expire after this much RX silence (peer's lease)

	tx      txState       // TX queues and writer (pipeline.go, tx.go)
	closing chan struct{} // closed when the session starts closing
	done    chan struct{} // closed after HandleClose returned
	wdone   chan struct{} // closed when the write goroutine exited

	closeMu    sync.Mutex
	closeErr   *CloseError
	sendClose  bool        // write a CLOSE before closing the link
	forceClose *time.Timer // closes the link closeGrace after shutdown

	// read goroutine only
	parser *wire.Parser // from parserPool while a batch is decoded (rxpath.go)
	rxLast [2]uint64
	reasm  [2]wire.Reassembler
	walkFn func(wire.TransportMessage, wire.NetworkMessage) error

	// write goroutine only
	txSN [2]uint64

	stats      stats
	dropLogged atomic.Uint32 // drop reasons already logged, one bit each
	// onEnd is called (by the read goroutine) after HandleClose; used by
	// the Listener to forget the session.
	onEnd func(*Session)
}

type stats struct {
	rxBytes, txBytes, rxBatches, txBatches, rxMsgs, txMsgs, keepAlivesTx, keepAlivesRx atomic.Uint64
	drops                                                                              [numDropReasons]atomic.Uint64
}

// Stats is a snapshot of a session's counters.
type Stats struct {
	RxBytes, TxBytes       uint64 // batch content bytes (stream prefix excluded)
	RxBatches, TxBatches   uint64
	RxMessages, TxMessages uint64 // network messages delivered to the Handler / written to the link
	KeepAlivesRx           uint64
	KeepAlivesTx           uint64
	// InlineBatches counts the batches written by the sending goroutine
	// itself (the inline write of an idle session, inline.go) instead of
	// by a writer goroutine; included in TxBatches.
	InlineBatches uint64
	// WriterStarts counts the writer goroutines started (one per busy
	// spell: a writer lingers idleLinger after its last batch, then exits).
	WriterStarts uint64
	Dropped      map[string]uint64 // by reason (queue_full, sn_window, fragment_gap, ...); only non-zero entries
}

func newSession(cfg *Config, l link, p params, h Handler) *Session {
	s := &Session{
		id:      sessionIDs.Add(1),
		cfg:     *cfg,
		l:       l,
		h:       h,
		p:       p,
		m:       cfg.Metrics,
		remote:  l.remoteAddr(),
		mask:    p.snMask(),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		wdone:   make(chan struct{}),
	}
	s.maxContent = int(p.batchSize)
	if l.stream() {
		s.maxContent -= wire.StreamPrefixLen
	}
	s.rxLease = p.peerLease
	if s.rxLease <= 0 {
		s.rxLease = DefaultLease
	}
	s.kaPeriod = max(min(cfg.Lease, s.rxLease)/time.Duration(cfg.KeepAliveDivisor), minKeepAlive)
	s.rxLast = [2]uint64{snPrev(p.peerInitialSN, s.mask), snPrev(p.peerInitialSN, s.mask)}
	s.txSN = [2]uint64{p.ourInitialSN, p.ourInitialSN}
	s.reasm = newReassemblers(cfg, s.mask, p.patch >= 1)
	s.walkFn = s.onMessage
	s.log = newSessionLogger(cfg.Logger, s) // session, zid, remote added when a record is logged
	s.tx.init(s)
	if tl, ok := l.(*tcpLink); ok && cfg.TCPNotSentLowat > 0 {
		if err := setNotSentLowat(netConnOf(tl.c), cfg.TCPNotSentLowat); err != nil {
			s.log.Debug("transport: TCP_NOTSENT_LOWAT not set", "err", err)
		} else {
			s.tx.lowat.Store(int64(cfg.TCPNotSentLowat))
		}
	}
	return s
}

// start enables the writer (started on demand, tx.go) and the keep-alive
// timer; the caller runs readLoop (in its own goroutine or the current one).
func (s *Session) start() {
	s.m.opened()
	s.log.Debug("transport session open", "whatami", s.p.peerWhatAmI.String(), "batch", s.p.batchSize,
		"peer_lease", s.p.peerLease, "patch", s.p.patch, "resolution", s.p.resolution)
	s.tx.mu.Lock()
	s.tx.ka = time.AfterFunc(s.kaPeriod, s.kaFire)
	s.tx.started = true
	run := s.tx.kickLocked() // anything queued before start
	s.tx.mu.Unlock()
	if run {
		go s.tx.loop()
	}
}

// ID is a process-unique session number (for logs and tables).
func (s *Session) ID() uint64 { return s.id }

// PeerZID is the peer's Zenoh ID from INIT.
func (s *Session) PeerZID() wire.ZID { return s.p.peerZID }

// PeerWhatAmI is the peer's role from INIT.
func (s *Session) PeerWhatAmI() wire.WhatAmI { return s.p.peerWhatAmI }

// BatchSize is the negotiated batch size in bytes (stream prefix included:
// at most BatchSize()−2 content bytes per TCP batch).
func (s *Session) BatchSize() int { return int(s.p.batchSize) }

// PeerLease is the lease the peer announced in OPEN.
func (s *Session) PeerLease() time.Duration { return s.p.peerLease }

// Patch is the negotiated INIT Patch (1 = fragment First/Drop markers).
func (s *Session) Patch() uint64 { return s.p.patch }

// Resolution is the negotiated resolution byte.
func (s *Session) Resolution() uint8 { return s.p.resolution }

// RemoteAddr is the peer's link address.
func (s *Session) RemoteAddr() net.Addr { return s.remote }

// Done is closed when the session has fully ended: both goroutines exited
// and HandleClose returned.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns the *CloseError once the session is closing, else nil.
func (s *Session) Err() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closeErr == nil {
		return nil
	}
	return s.closeErr
}

// Close starts closing the session with reason: queued messages are
// flushed (bounded by the peer's lease), a CLOSE(session, reason.Wire())
// is sent and the link closed. It does not wait: use Done. Calling it
// again, or on a closed session, does nothing. It may be called from the
// Handler.
func (s *Session) Close(reason CloseReason) error {
	s.shutdown(reason, nil, true)
	return nil
}

// shutdown records the first close reason and signals both goroutines.
func (s *Session) shutdown(reason CloseReason, err error, sendClose bool) {
	s.closeMu.Lock()
	if s.closeErr != nil {
		s.closeMu.Unlock()
		return
	}
	ce := &CloseError{Reason: reason, Err: err}
	var rc remoteClose
	if errors.As(err, &rc) {
		ce.Remote, ce.Err = rc.reason, nil
	}
	s.closeErr = ce
	s.sendClose = sendClose
	close(s.closing)
	// A writer stuck in a write to a peer that stopped reading must not
	// hold the close up for a whole lease.
	s.forceClose = time.AfterFunc(closeGrace, func() { _ = s.l.close() })
	s.closeMu.Unlock()
	// The writer (started if none runs) flushes, sends CLOSE and exits.
	s.tx.mu.Lock()
	run := s.tx.kickLocked()
	s.tx.mu.Unlock()
	if run {
		go s.tx.loop()
	}
}

// Stats returns a snapshot of the session's counters.
func (s *Session) Stats() Stats {
	st := Stats{
		RxBytes: s.stats.rxBytes.Load(), TxBytes: s.stats.txBytes.Load(),
		RxBatches: s.stats.rxBatches.Load(), TxBatches: s.stats.txBatches.Load(),
		RxMessages: s.stats.rxMsgs.Load(), TxMessages: s.stats.txMsgs.Load(),
		KeepAlivesRx: s.stats.keepAlivesRx.Load(), KeepAlivesTx: s.stats.keepAlivesTx.Load(),
		InlineBatches: s.tx.inlineWrites.Load(),
		WriterStarts:  s.tx.starts.Load(),
		Dropped:       map[string]uint64{},
	}
	for i := range s.stats.drops {
		if v := s.stats.drops[i].Load(); v != 0 {
			st.Dropped[dropReason(i).String()] = v
		}
	}
	return st
}

// drop counts one drop and logs the first one of each reason in this
// session (invariant 2: counted always, logged once per cause and peer).
func (s *Session) drop(r dropReason) {
	s.stats.drops[r].Add(1)
	s.m.drop(r)
	bit := uint32(1) << r
	if old := s.dropLogged.Load(); old&bit == 0 && s.dropLogged.CompareAndSwap(old, old|bit) {
		s.log.Warn("transport: dropping messages (logged once per reason and session; see Stats and metrics)", "reason", r.String())
	}
}

// remoteClose is returned by the RX callback when a CLOSE arrives.
type remoteClose struct{ reason wire.CloseReason }

func (r remoteClose) Error() string { return "peer sent CLOSE(" + r.reason.String() + ")" }

// readLoop reads batches until the link fails or the session closes, then
// finishes the session. It runs on the caller's goroutine.
func (s *Session) readLoop() {
	be, _ := s.h.(BatchEndHandler)
loop:
	for {
		b, err := s.l.readBatch(time.Now().Add(s.rxLease))
		if err != nil {
			s.readFailed(err)
			break
		}
		s.stats.rxBytes.Add(uint64(len(b)))
		s.stats.rxBatches.Add(1)
		s.m.rx(len(b))
		if err := s.rxBatch(b); err != nil {
			var rc remoteClose
			switch {
			case errors.As(err, &rc):
				s.log.Debug("peer closed the session", "reason", rc.reason.String())
				s.shutdown(ReasonRemoteClose, rc, false)
			case errors.Is(err, errClosing):
			default:
				s.log.Warn("closing session: malformed input", "err", err)
				s.shutdown(ReasonDecodeError, err, true)
			}
			break loop
		}
		if be != nil {
			be.HandleBatchEnd(s)
		}
		select {
		case <-s.closing:
			break loop
		default:
		}
	}
	s.releaseRX()
	s.finish()
}

func (s *Session) readFailed(err error) {
	select {
	case <-s.closing:
		return // we closed the link
	default:
	}
	switch {
	case isTimeout(err):
		s.log.Info("lease expired", "lease", s.rxLease)
		s.shutdown(ReasonExpired, nil, true)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.Is(err, errLinkClosed):
		s.shutdown(ReasonEOF, nil, false)
	default:
		s.shutdown(ReasonLinkError, err, false)
	}
}

// finish waits for the writer, reports the close and releases resources.
func (s *Session) finish() {
	<-s.wdone
	_ = s.l.close()
	s.closeMu.Lock()
	ce := s.closeErr
	s.forceClose.Stop()
	s.closeMu.Unlock()
	s.m.closedWith(ce.Reason)
	s.log.Debug("transport session closed", "reason", ce.Reason.String(), "err", ce.Err)
	s.h.HandleClose(s, ce)
	if s.onEnd != nil {
		s.onEnd(s)
	}
	close(s.done)
}

var errClosing = errors.New("closing")

// onMessage handles one decoded item of a batch (see wire.Parser.WalkBatch).
func (s *Session) onMessage(t wire.TransportMessage, n wire.NetworkMessage) error {
	if n != nil {
		s.stats.rxMsgs.Add(1)
		s.h.HandleNetwork(s, n)
		select {
		case <-s.closing:
			return errClosing
		default:
		}
		return nil
	}
	switch m := t.(type) {
	case *wire.Frame:
		ch := channel(m.Reliable)
		if !snAccept(s.rxLast[ch], m.SN, s.mask) {
			s.drop(dropSNWindow)
			return wire.SkipFrame
		}
		s.rxLast[ch] = m.SN
	case *wire.Fragment:
		return s.onFragment(m)
	case *wire.KeepAlive:
		s.stats.keepAlivesRx.Add(1)
	case *wire.Close:
		return remoteClose{m.Reason}
	default:
		// INIT/OPEN on an open session, JOIN, transport OAM: ignored (§12.8).
	}
	return nil
}

// onFragment checks the SN and feeds the channel's reassembler. pico sends
// the fragments of a reliable message with R=0 but reliable SNs (§4.7):
// R=0 fragments are therefore not checked against (and do not move) the
// best-effort window; the reassembler still requires consecutive SNs.
func (s *Session) onFragment(f *wire.Fragment) error {
	ch := channel(f.Reliable)
	if f.Reliable {
		if !snAccept(s.rxLast[ch], f.SN, s.mask) {
			s.drop(dropSNWindow)
			return nil
		}
		s.rxLast[ch] = f.SN
	} else if f.SN&^s.mask != 0 {
		s.drop(dropSNWindow)
		return nil
	}
	r := &s.reasm[ch]
	msg, drop := r.Add(f)
	if drop != wire.FragmentKept {
		s.drop(fragDropReason[drop])
	}
	defer r.Release()
	for len(msg) > 0 {
		m, k, err := s.parser.Network(msg)
		if err != nil {
			return err
		}
		s.stats.rxMsgs.Add(1)
		s.h.HandleNetwork(s, m)
		msg = msg[k:]
		select {
		case <-s.closing:
			return errClosing
		default:
		}
	}
	return nil
}

// State is a session's lifecycle state (style.md §2.11).
type State uint8

// Session states. A session is created Open (after INIT/OPEN), becomes
// Closing when the first close reason is recorded, and Closed once its
// goroutines exited and HandleClose returned (Done is closed).
const (
	StateOpen State = iota
	StateClosing
	StateClosed
)

func (st State) String() string {
	switch st {
	case StateOpen:
		return "open"
	case StateClosing:
		return "closing"
	}
	return "closed"
}

// State returns the session's lifecycle state.
func (s *Session) State() State {
	select {
	case <-s.done:
		return StateClosed
	default:
	}
	select {
	case <-s.closing:
		return StateClosing
	default:
	}
	return StateOpen
}
