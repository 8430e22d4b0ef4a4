package testlane

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Dir is the direction of a batch through the lane's tap.
type Dir int

// Directions.
const (
	FromDevice Dir = iota // device → router
	ToDevice              // router → device
)

func (d Dir) String() string {
	if d == ToDevice {
		return "router→device"
	}
	return "device→router"
}

// Entity kinds a device declares.
const (
	KindSubscriber = "subscriber"
	KindPublisher  = "publisher"
	KindQueryable  = "queryable"
	KindToken      = "token"
)

// maxDataTimes bounds the send timestamps kept per session.
const maxDataTimes = 1 << 16

// maxReassembly bounds what the tap reassembles to look into a fragmented
// message, bytes; a longer train is still counted and sized.
const maxReassembly = 16 << 20

// SessionObs is what the tap saw of one session of the device: its
// handshake, every batch's size and content kind, its declarations and
// publications. Times are wall-clock instants of the tap's reads.
type SessionObs struct {
	Conn     int       // connection number through the tap, from 0
	Accepted time.Time // TCP accept
	// Handshake. Proposed is the device's INIT batch size (65535 when it
	// sent no S flag); RouterBatch the router's INIT ACK; Negotiated their
	// minimum. Lease is the device's OPEN lease.
	ZID         string
	WhatAmI     string
	Proposed    int
	RouterBatch int
	Negotiated  int
	Lease       time.Duration
	Patch       uint64
	Opened      time.Time // OPEN ACK passed; zero when the session never opened
	Ended       time.Time // link closed; zero while open
	EndReason   string

	// Device → router after OPEN.
	DevBatches   int
	LastDev      time.Time
	MaxSilence   time.Duration // longest gap between two device batches (or OPEN and the first)
	SilenceAt    time.Time     // when that gap ended
	DataTimes    []time.Time   // device batches carrying a PUSH or FRAGMENT (capped)
	DataBatches  int
	PartialData  int // data batches smaller than half the negotiated size
	MaxPerBatch  int // most PUSHes in one device batch
	MaxPerAt     time.Time
	KeepAlives   int
	Pushes       map[string]int // PUSH count per key (device → router)
	PushBytes    map[string]int
	UnknownScope int // PUSHes whose wire expression the tap could not resolve

	// Both directions: the largest batch (prefix included) and the first
	// batch over the negotiated size.
	MaxBatch     [2]int
	OverBatch    [2]int // size of the first batch over Negotiated; 0 = none
	OverBatchAt  [2]time.Time
	Fragments    [2]int // FRAGMENT messages
	Trains       [2]int // fragmented messages completed
	LargestTrain [2]int // bytes
	TrainFrags   [2]int // fragments of the largest train

	Declared    map[string]map[string]bool // kind → keys (device → router)
	DecodeError string                     // the first decode error, with its direction
	// Announced is the device's knob announcement (docs/probe.md), if it
	// published one on @picobridge/probe/<name>/knobs; AnnounceErr says
	// why one did not decode.
	Announced   *knobs.Announcement
	AnnounceKey string
	AnnounceErr string
	// DevTimes are the read times of the device's batches after OPEN (capped).
	DevTimes []time.Time
	// ToDevTimes are the times of the router's batches to the device after
	// OPEN (capped): each arrival ends the device's blocking recv, which
	// lets one of its waiting sends go before the socket window ends
	// (anchors.md §2.6).
	ToDevTimes []time.Time
	Close      string // a CLOSE the device sent (reason)

	// parsers and key tables, owned by the tap's pumps (one per direction)
	parser [2]wire.Parser
	reasm  [2]*wire.Reassembler
	train  [2]int
	keys   [2]map[uint16]string // ids the sender (device, router) declared
}

// Recorder collects the sessions the tap saw. Safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	sessions []*SessionObs
	changed  chan struct{}
	now      func() time.Time
}

// NewRecorder returns an empty recorder; now is the clock (nil = time.Now).
func NewRecorder(now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	return &Recorder{changed: make(chan struct{}), now: now}
}

func (r *Recorder) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change.
func (r *Recorder) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Sessions returns copies of the sessions, in accept order.
func (r *Recorder) Sessions() []SessionObs {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]SessionObs, 0, len(r.sessions))
	for _, s := range r.sessions {
		c := *s
		c.DataTimes = append([]time.Time(nil), s.DataTimes...)
		c.DevTimes = append([]time.Time(nil), s.DevTimes...)
		c.ToDevTimes = append([]time.Time(nil), s.ToDevTimes...)
		c.Pushes, c.PushBytes = cloneCounts(s.Pushes), cloneCounts(s.PushBytes)
		c.Declared = map[string]map[string]bool{}
		for k, v := range s.Declared {
			m := map[string]bool{}
			for key := range v {
				m[key] = true
			}
			c.Declared[k] = m
		}
		c.parser, c.reasm, c.keys = [2]wire.Parser{}, [2]*wire.Reassembler{}, [2]map[uint16]string{}
		out = append(out, c)
	}
	return out
}

func cloneCounts(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// open starts a session for a new connection.
func (r *Recorder) open(conn int) *SessionObs {
	s := &SessionObs{Conn: conn, Accepted: r.now(), Pushes: map[string]int{}, PushBytes: map[string]int{},
		Declared: map[string]map[string]bool{}}
	for d := range 2 {
		s.reasm[d] = &wire.Reassembler{Max: maxReassembly}
		s.keys[d] = map[uint16]string{}
	}
	r.mu.Lock()
	r.sessions = append(r.sessions, s)
	r.notify()
	r.mu.Unlock()
	return s
}

// end records the end of a session's link.
func (r *Recorder) end(s *SessionObs, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.Ended.IsZero() {
		s.Ended, s.EndReason = r.now(), reason
		for d := range 2 {
			s.reasm[d].Release()
		}
		r.notify()
	}
}

// resumed tells the recorder that reads from the device resume after a
// stall the lane injected: the stall is not the device's silence.
// FirstAfter is the first device batch read at or after t; zero if none.
func (s *SessionObs) FirstAfter(t time.Time) time.Time {
	for _, at := range s.DevTimes {
		if !at.Before(t) {
			return at
		}
	}
	return time.Time{}
}

func (r *Recorder) resumed(s *SessionObs) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !s.LastDev.IsZero() {
		s.LastDev = r.now()
	}
}

// batchInfo is what one batch held, for the tap's fault logic.
type batchInfo struct {
	midFragment bool // a FRAGMENT with More set
}

// batch records one batch (content without the length prefix) that passed
// in direction d. Called by that direction's pump only.
func (r *Recorder) batch(s *SessionObs, d Dir, content []byte) batchInfo {
	at := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify()
	var info batchInfo
	size := len(content) + wire.StreamPrefixLen
	s.MaxBatch[d] = max(s.MaxBatch[d], size)
	if s.Negotiated > 0 && size > s.Negotiated && s.OverBatch[d] == 0 {
		s.OverBatch[d], s.OverBatchAt[d] = size, at
	}
	opened := !s.Opened.IsZero()
	if d == FromDevice && opened {
		s.DevBatches++
		if !s.LastDev.IsZero() {
			if gap := at.Sub(s.LastDev); gap > s.MaxSilence {
				s.MaxSilence, s.SilenceAt = gap, at
			}
		}
		s.LastDev = at
		if len(s.DevTimes) < maxDataTimes {
			s.DevTimes = append(s.DevTimes, at)
		}
	}
	if d == ToDevice && opened && len(s.ToDevTimes) < maxDataTimes {
		s.ToDevTimes = append(s.ToDevTimes, at)
	}
	pushes, data := 0, false
	err := s.parser[d].WalkBatch(content, func(t wire.TransportMessage, n wire.NetworkMessage) error {
		if n != nil {
			if _, ok := n.(*wire.Push); ok {
				pushes++
				data = true
			}
			r.network(s, d, n, false)
			return nil
		}
		switch m := t.(type) {
		case *wire.InitSyn:
			if d == FromDevice {
				s.ZID, s.WhatAmI, s.Proposed, s.Patch = m.ZID.String(), m.WhatAmI.String(), int(m.BatchSize), m.Patch
			}
		case *wire.InitAck:
			if d == ToDevice {
				s.RouterBatch = int(m.BatchSize)
				s.Negotiated = min(s.Proposed, s.RouterBatch)
				if s.Proposed == 0 {
					s.Negotiated = s.RouterBatch
				}
			}
		case *wire.OpenSyn:
			if d == FromDevice {
				s.Lease = m.Lease
			}
		case *wire.OpenAck:
			if d == ToDevice {
				s.Opened = at
				s.LastDev = at
			}
		case *wire.KeepAlive:
			if d == FromDevice {
				s.KeepAlives++
			}
		case *wire.Close:
			if d == FromDevice {
				s.Close = m.Reason.String()
			}
		case *wire.Fragment:
			s.Fragments[d]++
			data = true
			if m.More {
				info.midFragment = true
			}
			r.fragment(s, d, m)
		}
		return nil
	})
	if err != nil && s.DecodeError == "" {
		s.DecodeError = fmt.Sprintf("%s batch of %d B: %v", d, size, err)
	}
	if d == FromDevice && opened {
		if pushes > s.MaxPerBatch {
			s.MaxPerBatch, s.MaxPerAt = pushes, at
		}
		if data {
			s.DataBatches++
			if size < s.Negotiated/2 {
				s.PartialData++
			}
			if len(s.DataTimes) < maxDataTimes {
				s.DataTimes = append(s.DataTimes, at)
			}
		}
	}
	return info
}

func (r *Recorder) fragment(s *SessionObs, d Dir, f *wire.Fragment) {
	msg, _ := s.reasm[d].Add(f)
	s.train[d]++
	if f.More {
		return
	}
	frags := s.train[d]
	s.train[d] = 0
	if msg == nil {
		return
	}
	s.Trains[d]++
	if len(msg) > s.LargestTrain[d] {
		s.LargestTrain[d], s.TrainFrags[d] = len(msg), frags
	}
	n, _, err := s.parser[d].Network(msg)
	if err != nil {
		if s.DecodeError == "" {
			s.DecodeError = fmt.Sprintf("%s fragmented message of %d B: %v", d, len(msg), err)
		}
		return
	}
	r.network(s, d, n, true)
}

// network records one network message. Called with r.mu held.
func (r *Recorder) network(s *SessionObs, d Dir, n wire.NetworkMessage, _ bool) {
	switch m := n.(type) {
	case *wire.Declare:
		if d != FromDevice {
			if b, ok := m.Body.(*wire.DeclareKeyExpr); ok {
				if key, ok := s.resolve(d, b.WireExpr, true); ok {
					s.keys[d][b.ID] = key
				}
			}
			return
		}
		switch b := m.Body.(type) {
		case *wire.DeclareKeyExpr:
			// The body resolves in the sender's own ids (zenoh-wire.md §9.1).
			if key, ok := s.resolve(d, b.WireExpr, true); ok {
				s.keys[d][b.ID] = key
				s.declare(KindPublisher, key)
			}
		case *wire.DeclareSubscriber:
			if key, ok := s.resolve(d, b.WireExpr, false); ok {
				s.declare(KindSubscriber, key)
			}
		case *wire.DeclareQueryable:
			if key, ok := s.resolve(d, b.WireExpr, false); ok {
				s.declare(KindQueryable, key)
			}
		case *wire.DeclareToken:
			if key, ok := s.resolve(d, b.WireExpr, false); ok {
				s.declare(KindToken, key)
			}
		}
	case *wire.Interest:
		if d == FromDevice && m.Options&wire.InterestRestricted != 0 {
			if key, ok := s.resolve(d, m.WireExpr, false); ok {
				s.declare(KindPublisher, key)
			}
		}
	case *wire.Push:
		if d != FromDevice {
			return
		}
		key, ok := s.resolve(d, m.WireExpr, false)
		if !ok {
			s.UnknownScope++
			return
		}
		s.declare(KindPublisher, key)
		if strings.HasPrefix(key, probe.Prefix) && strings.HasSuffix(key, "/knobs") {
			if put, ok := m.Body.(*wire.Put); ok {
				a, err := knobs.DecodeAnnouncement(put.Payload)
				s.AnnounceKey = key
				if err != nil {
					s.AnnounceErr = err.Error()
				} else {
					s.Announced = &a
				}
			}
		}
		s.Pushes[key]++
		s.PushBytes[key] += m.Len()
	}
}

func (s *SessionObs) declare(kind, key string) {
	m := s.Declared[kind]
	if m == nil {
		m = map[string]bool{}
		s.Declared[kind] = m
	}
	m[key] = true
}

// resolve turns a wire expression sent in direction d into a key
// (zenoh-wire.md §9.1): MappingSender scopes are the sender's ids, the
// others the receiver's; own forces the sender's (DeclareKeyExpr bodies).
func (s *SessionObs) resolve(d Dir, w wire.WireExpr, own bool) (string, bool) {
	if w.Scope == 0 {
		return w.Suffix, w.Suffix != ""
	}
	tbl := s.keys[d]
	if !own && w.Mapping == wire.MappingReceiver {
		tbl = s.keys[1-d]
	}
	p, ok := tbl[w.Scope]
	return p + w.Suffix, ok
}

// DeclaredKeys lists the keys of one kind, sorted.
func (s *SessionObs) DeclaredKeys(kind string) []string {
	var out []string
	for k := range s.Declared[kind] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
