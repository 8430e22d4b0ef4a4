//go:build cgo && cyclonedds

package ddssink

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay"
	"github.com/picobridge/picobridge/ddspath/ros2"
)

// Sink is a replay.Sink writing each topic through its own ddspath writer. Declare and
// Write may be called from any goroutine (the engine uses one); Stats, WaitMatched,
// WaitForAcks and Writer may run concurrently with them.
type Sink struct {
	p     *ddspath.Participant
	ownP  bool // Close closes p (Open)
	opt   Options
	mu    sync.RWMutex
	outs  map[string]*output // by ROS 2 topic name
	close sync.Once
	err   error
	done  atomic.Bool
}

type output struct {
	info     replay.TopicInfo
	ddsTopic string
	ddsType  string
	w        *ddspath.Writer
	written  atomic.Uint64
	bytes    atomic.Uint64
	timeouts atomic.Uint64
	errs     atomic.Uint64
}

// New returns a Sink creating its writers on p. p stays owned by the caller and must
// outlive the Sink (closing p closes the writers too).
func New(p *ddspath.Participant, opt Options) (*Sink, error) {
	if p == nil {
		return nil, errors.New("ddssink: nil participant")
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	return &Sink{p: p, opt: opt, outs: map[string]*output{}}, nil
}

// Open opens a participant with cfg and returns a Sink on it that owns it: Close also
// closes the participant.
func Open(cfg ddspath.Config, opt Options) (*Sink, error) {
	if err := opt.validate(); err != nil {
		return nil, err
	}
	p, err := ddspath.Open(cfg)
	if err != nil {
		return nil, err
	}
	s, err := New(p, opt)
	if err != nil {
		p.Close()
		return nil, err
	}
	s.ownP = true
	return s, nil
}

// Participant returns the participant the writers are created on.
func (s *Sink) Participant() *ddspath.Participant { return s.p }

// Declare implements replay.Sink: it creates the topic's writer (DDS name and type per the
// ROS 2 conventions, QoS per Options.QoS / RecordedQoS) and, with Options.WaitMatched,
// waits for readers. Declaring a topic again with the same type does nothing; with another
// type it is an error.
func (s *Sink) Declare(t replay.TopicInfo) error {
	if s.done.Load() {
		return ddspath.ErrClosed
	}
	ddsTopic, err := ros2.TopicToDDS(t.Name)
	if err != nil {
		return fmt.Errorf("ddssink: topic %q: %w", t.Name, err)
	}
	ddsType, err := ros2.TypeToDDS(t.Type)
	if err != nil {
		return fmt.Errorf("ddssink: topic %s type %q: %w", t.Name, t.Type, err)
	}
	s.mu.Lock()
	if s.done.Load() { // checked under mu: Close swaps outs under mu after setting done
		s.mu.Unlock()
		return ddspath.ErrClosed
	}
	if o, ok := s.outs[t.Name]; ok {
		s.mu.Unlock()
		if o.info.Type != t.Type {
			return fmt.Errorf("ddssink: topic %s declared with type %s, now %s", t.Name, o.info.Type, t.Type)
		}
		return nil
	}
	w, err := s.p.NewWriter(ddsTopic, ddsType, s.opt.qos(t))
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("ddssink: writer for %s: %w", t.Name, err)
	}
	s.outs[t.Name] = &output{info: t, ddsTopic: ddsTopic, ddsType: ddsType, w: w}
	s.mu.Unlock()

	if s.opt.WaitMatched > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), s.opt.matchTimeout())
		defer cancel()
		if err := waitMatched(ctx, w, s.opt.WaitMatched); err != nil {
			return fmt.Errorf("ddssink: %s: %d of %d readers matched after %v: %w",
				ddsTopic, w.Matched(), s.opt.WaitMatched, s.opt.matchTimeout(), err)
		}
	}
	return nil
}

// Write implements replay.Sink: it writes cdr (copied by ddspath before Write returns) on
// the topic's writer with sourceTime as the DDS source timestamp (zero: now).
func (s *Sink) Write(topic string, cdr []byte, sourceTime time.Time) error {
	s.mu.RLock()
	o := s.outs[topic]
	s.mu.RUnlock()
	if o == nil {
		if s.done.Load() {
			return ddspath.ErrClosed
		}
		return fmt.Errorf("%w: %s", ErrNotDeclared, topic)
	}
	if err := o.w.Write(cdr, sourceTime); err != nil {
		if errors.Is(err, ddspath.ErrTimeout) {
			o.timeouts.Add(1)
		} else {
			o.errs.Add(1)
		}
		return fmt.Errorf("ddssink: write %s: %w", o.ddsTopic, err)
	}
	o.written.Add(1)
	o.bytes.Add(uint64(len(cdr)))
	return nil
}

// Writer returns the writer of a declared topic (ROS 2 name), or nil.
func (s *Sink) Writer(topic string) *ddspath.Writer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if o := s.outs[topic]; o != nil {
		return o.w
	}
	return nil
}

// Topics returns the declared ROS 2 topic names, sorted.
func (s *Sink) Topics() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.outs))
	for n := range s.outs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s *Sink) writers() []*ddspath.Writer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ws := make([]*ddspath.Writer, 0, len(s.outs))
	for _, o := range s.outs {
		ws = append(ws, o.w)
	}
	return ws
}

func waitMatched(ctx context.Context, w *ddspath.Writer, n int) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for w.Matched() < n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// WaitMatched waits until every declared writer has matched at least n readers, or ctx is
// done (its error is returned).
func (s *Sink) WaitMatched(ctx context.Context, n int) error {
	for _, w := range s.writers() {
		if err := waitMatched(ctx, w, n); err != nil {
			return fmt.Errorf("ddssink: %s: %d of %d readers matched: %w", w.Topic(), w.Matched(), n, err)
		}
	}
	return nil
}

// WaitForAcks waits until every matched reliable reader acknowledged everything written so
// far on every writer, or ctx is done.
func (s *Sink) WaitForAcks(ctx context.Context) error {
	for _, w := range s.writers() {
		if err := w.WaitForAcks(ctx); err != nil {
			return fmt.Errorf("ddssink: %s: %w", w.Topic(), err)
		}
	}
	return nil
}

// Stats returns the per-topic counters.
func (s *Sink) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := Stats{Topics: make(map[string]TopicStats, len(s.outs))}
	for n, o := range s.outs {
		st.Topics[n] = TopicStats{
			DDSTopic: o.ddsTopic, DDSType: o.ddsType, QoS: o.w.QoS(),
			Written: o.written.Load(), Bytes: o.bytes.Load(), Timeouts: o.timeouts.Load(), Errors: o.errs.Load(),
			Matched: o.w.Matched(),
		}
	}
	return st
}

// Close waits up to Options.FlushTimeout for readers to acknowledge what was written, then
// closes the writers (and the participant when the Sink was made by Open). Later Declare and
// Write calls fail with ddspath.ErrClosed. Close is idempotent; it returns the first error.
func (s *Sink) Close() error {
	s.close.Do(func() {
		s.done.Store(true)
		var errs []error
		if d := s.opt.flushTimeout(); d > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			if err := s.WaitForAcks(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				errs = append(errs, err)
			}
			cancel()
		}
		s.mu.Lock()
		outs := s.outs
		s.outs = map[string]*output{}
		s.mu.Unlock()
		for _, o := range outs {
			if err := o.w.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if s.ownP {
			if err := s.p.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		s.err = errors.Join(errs...)
	})
	return s.err
}

func (o Options) qos(t replay.TopicInfo) ddspath.QoS {
	if o.QoS != nil {
		return o.QoS(t)
	}
	q := RecordedQoS(t, o.MaxBlocking)
	if o.KeepAll && q.Reliability == ddspath.Reliable && q.Durability == ddspath.Volatile {
		q.History = ddspath.KeepAll
	}
	return q
}

func (o Options) matchTimeout() time.Duration {
	if o.MatchTimeout > 0 {
		return o.MatchTimeout
	}
	return DefaultMatchTimeout
}

func (o Options) flushTimeout() time.Duration {
	if o.FlushTimeout == 0 {
		return DefaultFlushTimeout
	}
	return o.FlushTimeout
}

func (o Options) validate() error {
	if o.WaitMatched < 0 {
		return fmt.Errorf("ddssink: WaitMatched %d must not be negative", o.WaitMatched)
	}
	return nil
}
