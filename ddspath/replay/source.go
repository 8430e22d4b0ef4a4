package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/picobridge/picobridge/ddspath/rosbag"
)

// Item is one message of a Source.
type Item struct {
	// At is when the item is due, counted from the start of the replay.
	At    time.Duration
	Topic string
	// CDR is the serialized message; the engine owns it after Next returns (it may rewrite
	// the header stamp in place).
	CDR []byte
	// Stamp asks the engine to set the header stamp to the send time even when stamp
	// rewriting is off (synthetic messages have no meaningful stamp of their own).
	Stamp bool
}

// Source is a stream of Items in non-decreasing At order.
type Source interface {
	// Topics lists the topics the source will produce.
	Topics() []TopicInfo
	// Next returns the next item, or io.EOF when the source is finished.
	Next(ctx context.Context) (Item, error)
	// Endless reports whether the source never ends (looping, fixed-rate, synthetic without
	// a count). The engine stops when every finite source has ended; with endless sources
	// only, it runs until its context is cancelled or Options.Duration is reached.
	Endless() bool
	Close() error
}

// BagOptions configure NewBagSource.
type BagOptions struct {
	// Topics to replay; empty means all.
	Topics []string
	// Speed multiplies the recorded pace: 2 replays twice as fast. 0 means 1; negative,
	// NaN and infinite values are refused.
	Speed float64
	// Loop restarts from the first message after the last, forever. The pause between
	// loops is the average gap between the selected messages.
	Loop bool
}

// BagSource replays a bag at its recorded timing (scaled by Speed): the first selected
// message is due at 0 and each later one at (its timestamp - the first's) / Speed.
type BagSource struct {
	bag    *rosbag.Bag
	read   rosbag.ReadOptions
	speed  float64
	loop   bool
	topics []TopicInfo

	cur      *rosbag.Cursor
	first    int64 // timestamp of the first selected message, ns
	span     time.Duration
	gap      time.Duration
	offset   time.Duration // added to every At: loops completed × (span + gap)
	total    int64
	consumed int64
}

// NewBagSource returns a Source over bag. The bag stays owned by the caller.
func NewBagSource(bag *rosbag.Bag, opt BagOptions) (*BagSource, error) {
	speed, err := checkSpeed(opt.Speed)
	if err != nil {
		return nil, err
	}
	s := &BagSource{bag: bag, read: rosbag.ReadOptions{Topics: opt.Topics}, speed: speed, loop: opt.Loop}
	selected := map[string]bool{}
	for _, n := range opt.Topics {
		selected[n] = true
	}
	var start, end time.Time
	for _, t := range bag.Topics() {
		if len(selected) > 0 && !selected[t.Name] {
			continue
		}
		s.topics = append(s.topics, TopicInfo{Name: t.Name, Type: t.Type, QoS: t.OfferedQoS})
		if t.MessageCount == 0 {
			continue
		}
		if s.total == 0 || t.Start.Before(start) {
			start = t.Start
		}
		if s.total == 0 || t.End.After(end) {
			end = t.End
		}
		s.total += t.MessageCount
	}
	if len(selected) > 0 && len(s.topics) != len(selected) {
		for n := range selected {
			if _, ok := bag.Topic(n); !ok {
				return nil, fmt.Errorf("%w: %q", rosbag.ErrUnknownTopic, n)
			}
		}
	}
	s.first = start.UnixNano()
	s.span = s.scale(end.Sub(start))
	if s.total > 1 {
		s.gap = s.span / time.Duration(s.total-1)
	}
	return s, nil
}

func checkSpeed(v float64) (float64, error) {
	switch {
	case v == 0:
		return 1, nil
	case v < 0 || math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("replay: speed %v must be a positive number", v)
	}
	return v, nil
}

func (s *BagSource) scale(d time.Duration) time.Duration {
	if s.speed == 1 {
		return d
	}
	return time.Duration(float64(d) / s.speed)
}

// Topics implements Source.
func (s *BagSource) Topics() []TopicInfo { return s.topics }

// Endless implements Source: true when looping over a non-empty selection.
func (s *BagSource) Endless() bool { return s.loop && s.total > 0 }

// Next implements Source.
func (s *BagSource) Next(ctx context.Context) (Item, error) {
	for attempt := 0; attempt < 2; attempt++ {
		if s.cur == nil {
			if s.total == 0 {
				return Item{}, io.EOF
			}
			c, err := s.bag.Messages(ctx, s.read)
			if err != nil {
				return Item{}, err
			}
			s.cur = c
		}
		if s.cur.Next() {
			m := s.cur.Message()
			s.consumed++
			return Item{
				At:    s.offset + s.scale(time.Duration(m.Timestamp-s.first)),
				Topic: m.Topic.Name,
				CDR:   m.Data,
			}, nil
		}
		err := s.cur.Err()
		s.cur.Close()
		s.cur = nil
		if err != nil {
			return Item{}, err
		}
		if !s.loop {
			return Item{}, io.EOF
		}
		s.offset += s.span + s.gap
	}
	return Item{}, errors.New("replay: bag source produced no message after reopening")
}

// Close implements Source; it closes the cursor, not the bag.
func (s *BagSource) Close() error {
	if s.cur != nil {
		err := s.cur.Close()
		s.cur = nil
		return err
	}
	return nil
}

// FixedRateSource cycles through one topic of a bag at a fixed rate, forever: item i is due
// at i/Hz, whatever the recorded timing. It ignores the replay speed.
type FixedRateSource struct {
	bag    *rosbag.Bag
	topic  rosbag.Topic
	period float64 // seconds
	cur    *rosbag.Cursor
	i      int64
}

// NewFixedRateSource returns a FixedRateSource for topic at hz messages per second.
func NewFixedRateSource(bag *rosbag.Bag, topic string, hz float64) (*FixedRateSource, error) {
	t, ok := bag.Topic(topic)
	if !ok {
		return nil, fmt.Errorf("%w: %q", rosbag.ErrUnknownTopic, topic)
	}
	if !(hz > 0) || math.IsInf(hz, 0) {
		return nil, fmt.Errorf("replay: fixed rate %v Hz for %s must be a positive number", hz, topic)
	}
	if t.MessageCount == 0 {
		return nil, fmt.Errorf("replay: topic %s has no messages to repeat", topic)
	}
	return &FixedRateSource{bag: bag, topic: t, period: 1 / hz}, nil
}

// Topics implements Source.
func (s *FixedRateSource) Topics() []TopicInfo {
	return []TopicInfo{{Name: s.topic.Name, Type: s.topic.Type, QoS: s.topic.OfferedQoS}}
}

// Endless implements Source: always true.
func (s *FixedRateSource) Endless() bool { return true }

// Next implements Source.
func (s *FixedRateSource) Next(ctx context.Context) (Item, error) {
	for attempt := 0; attempt < 2; attempt++ {
		if s.cur == nil {
			c, err := s.bag.Messages(ctx, rosbag.ReadOptions{Topics: []string{s.topic.Name}})
			if err != nil {
				return Item{}, err
			}
			s.cur = c
		}
		if s.cur.Next() {
			m := s.cur.Message()
			at := time.Duration(math.Round(float64(s.i) * s.period * float64(time.Second)))
			s.i++
			return Item{At: at, Topic: s.topic.Name, CDR: m.Data}, nil
		}
		err := s.cur.Err()
		s.cur.Close()
		s.cur = nil
		if err != nil {
			return Item{}, err
		}
	}
	return Item{}, fmt.Errorf("replay: topic %s yielded no message", s.topic.Name)
}

// Close implements Source.
func (s *FixedRateSource) Close() error {
	if s.cur != nil {
		err := s.cur.Close()
		s.cur = nil
		return err
	}
	return nil
}
