package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/picobridge/picobridge/ddspath/ros2"
)

// Options configure an Engine. The zero value replays on the wall clock without rewriting
// stamps.
type Options struct {
	// Clock defaults to WallClock.
	Clock Clock
	// RewriteStamps sets the header stamp of every message whose type starts with a
	// std_msgs/Header (ros2.HasHeader) to its send time, in place, before writing it.
	RewriteStamps bool
	// Duration stops the replay before the first item due at or after it; 0 means no limit.
	Duration time.Duration
	// StopOnError ends the replay at the first Sink error instead of counting it.
	StopOnError bool
}

// TopicStats counts what happened to one topic.
type TopicStats struct {
	Sent        uint64
	Errors      uint64 // Sink.Write errors
	StampErrors uint64 // messages whose stamp could not be rewritten (sent anyway)
	Bytes       uint64 // bytes handed to the sink
}

// Stats is a snapshot of an engine's counters.
type Stats struct {
	TopicStats
	Topics map[string]TopicStats
	// MaxLag is the largest delay between an item's due time and its write.
	MaxLag time.Duration
	// Elapsed is the replay clock time from start to the last write.
	Elapsed time.Duration
}

// Engine merges its sources by due time and writes each item to the sink when due.
type Engine struct {
	sink    Sink
	sources []Source
	opt     Options

	mu    sync.Mutex
	stats Stats
}

// New returns an engine; Run starts it. The engine closes the sources when Run returns.
func New(sink Sink, opt Options, sources ...Source) *Engine {
	if opt.Clock == nil {
		opt.Clock = WallClock{}
	}
	return &Engine{sink: sink, sources: sources, opt: opt, stats: Stats{Topics: map[string]TopicStats{}}}
}

// Stats returns a snapshot of the counters; it may be called while Run is running.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Topics = make(map[string]TopicStats, len(e.stats.Topics))
	for k, v := range e.stats.Topics {
		s.Topics[k] = v
	}
	return s
}

type head struct {
	src  Source
	item Item
	idx  int
}

// Run declares every topic on the sink, then replays until every finite source has ended,
// Options.Duration is reached, or ctx is done (then it returns ctx's error). Sink errors are
// counted (see Stats) unless Options.StopOnError is set.
func (e *Engine) Run(ctx context.Context) error {
	defer func() {
		for _, s := range e.sources {
			s.Close()
		}
	}()
	if len(e.sources) == 0 {
		return errors.New("replay: no sources")
	}
	types, err := e.declare()
	if err != nil {
		return err
	}

	// The replay ends when every finite source has ended; with endless sources only, it
	// runs until the context or Duration ends it.
	nFinite := 0
	for _, s := range e.sources {
		if !s.Endless() {
			nFinite++
		}
	}
	finite := nFinite
	var heads []*head
	for i, s := range e.sources {
		it, err := s.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			if !s.Endless() {
				finite--
			}
			continue
		case err != nil:
			return err
		}
		heads = append(heads, &head{src: s, item: it, idx: i})
	}
	if nFinite > 0 && finite == 0 {
		return nil
	}

	clock := e.opt.Clock
	start := clock.Now()
	for len(heads) > 0 {
		// Earliest due first; ties go to the source listed first.
		sort.SliceStable(heads, func(i, j int) bool {
			if heads[i].item.At != heads[j].item.At {
				return heads[i].item.At < heads[j].item.At
			}
			return heads[i].idx < heads[j].idx
		})
		h := heads[0]
		it := h.item
		if e.opt.Duration > 0 && it.At >= e.opt.Duration {
			return nil
		}
		due := start.Add(it.At)
		if err := clock.SleepUntil(ctx, due); err != nil {
			return err
		}
		now := clock.Now()
		if err := e.send(it, types[it.Topic], now, now.Sub(due), now.Sub(start)); err != nil {
			return err
		}

		next, err := h.src.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			heads = heads[1:]
			if !h.src.Endless() {
				finite--
				if finite == 0 {
					return nil
				}
			}
		case err != nil:
			return err
		default:
			h.item = next
		}
	}
	return nil
}

// declare announces each topic once; the same topic from two sources must agree on type.
func (e *Engine) declare() (map[string]string, error) {
	types := map[string]string{}
	for _, s := range e.sources {
		for _, t := range s.Topics() {
			if prev, ok := types[t.Name]; ok {
				if prev != t.Type {
					return nil, fmt.Errorf("replay: topic %s has type %s in one source and %s in another", t.Name, prev, t.Type)
				}
				continue
			}
			types[t.Name] = t.Type
			if err := e.sink.Declare(t); err != nil {
				return nil, fmt.Errorf("replay: declare %s: %w", t.Name, err)
			}
		}
	}
	return types, nil
}

func (e *Engine) send(it Item, typ string, now time.Time, lag, elapsed time.Duration) error {
	stampErr := false
	if it.Stamp || (e.opt.RewriteStamps && ros2.HasHeader(typ)) {
		if err := ros2.SetHeaderStamp(it.CDR, ros2.TimeOf(now)); err != nil {
			stampErr = true
		}
	}
	werr := e.sink.Write(it.Topic, it.CDR, now)

	e.mu.Lock()
	ts := e.stats.Topics[it.Topic]
	if werr != nil {
		ts.Errors++
		e.stats.Errors++
	} else {
		ts.Sent++
		ts.Bytes += uint64(len(it.CDR))
		e.stats.Sent++
		e.stats.Bytes += uint64(len(it.CDR))
	}
	if stampErr {
		ts.StampErrors++
		e.stats.StampErrors++
	}
	e.stats.Topics[it.Topic] = ts
	e.stats.MaxLag = max(e.stats.MaxLag, lag)
	e.stats.Elapsed = elapsed
	e.mu.Unlock()

	if werr != nil && e.opt.StopOnError {
		return fmt.Errorf("replay: write %s: %w", it.Topic, werr)
	}
	return nil
}
