package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/ddspath/rosbag"
)

// writeFunc publishes one message (header stamp already set to ts) and reports how long the
// publish call took; an error is a failed publication (Fast DDS write()=false, Cyclone
// timeout, ...).
type writeFunc func(cdr []byte, ts time.Time) (time.Duration, error)

// recordingSink is the replay sink of every experiment: it registers each message's header
// stamp with the recorder before handing it to the system under test.
type recordingSink struct {
	rec   *Recorder
	write writeFunc
}

func (s *recordingSink) Declare(replay.TopicInfo) error { return nil }

func (s *recordingSink) Write(_ string, cdr []byte, ts time.Time) error {
	st, err := ros2.HeaderStamp(cdr)
	if err != nil {
		return err
	}
	stamp := st.UnixNano()
	seq := s.rec.Sent(stamp)
	d, err := s.write(cdr, ts)
	s.rec.Written(seq, stamp, d, err != nil)
	return err
}

// replayScan publishes cfg.Topic of the bag at cfg.RateHz (looping, header stamps rewritten
// to the send time) for d through write, and returns the publication window.
func replayScan(ctx context.Context, cfg Config, rec *Recorder, d time.Duration, write writeFunc) (startNs, endNs int64, err error) {
	bag, err := rosbag.Open(cfg.Bag)
	if err != nil {
		return 0, 0, err
	}
	defer bag.Close()
	src, err := replay.NewFixedRateSource(bag, cfg.Topic, cfg.RateHz)
	if err != nil {
		return 0, 0, err
	}
	eng := replay.New(&recordingSink{rec: rec, write: write}, replay.Options{RewriteStamps: true, Duration: d}, src)
	start := time.Now()
	err = eng.Run(ctx)
	end := start.Add(d)
	if err == context.Canceled || err == context.DeadlineExceeded {
		err = nil
		end = time.Now()
	}
	return start.UnixNano(), end.UnixNano(), err
}

// cycloneWriter is an in-process Cyclone writer.
func cycloneWriter(p *ddspath.Participant, topic, typ string, q ddspath.QoS) (*ddspath.Writer, writeFunc, error) {
	w, err := p.NewWriter(topic, typ, q)
	if err != nil {
		return nil, nil, err
	}
	return w, func(cdr []byte, ts time.Time) (time.Duration, error) {
		t0 := time.Now()
		err := w.Write(cdr, ts)
		return time.Since(t0), err
	}, nil
}

// waitFor polls cond every 10 ms until it holds or timeout passes.
func waitFor(what string, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timeout waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
