//go:build cgo && cyclonedds

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay"
	"github.com/picobridge/picobridge/ddspath/ros2"
)

func init() { newReplaySink = newDDSReplaySink }

// replayMatchWait bounds how long Declare waits for a topic's writer to
// match a reader (a running picobridge, a ROS node) before the replay
// clock starts, so that the first messages are not published to nobody.
const replayMatchWait = 3 * time.Second

// ddsReplaySink writes the replay to DDS: one raw-CDR writer per topic.
type ddsReplaySink struct {
	p       *ddspath.Participant
	mu      sync.Mutex
	writers map[string]*ddspath.Writer
}

func newDDSReplaySink(_ context.Context, opts bagReplayOptions) (replay.Sink, io.Closer, error) {
	p, err := ddspath.Open(ddspath.Config{DomainID: opts.Domain})
	if err != nil {
		return nil, nil, fmt.Errorf("bag replay: DDS domain %d: %w", opts.Domain, err)
	}
	if opts.Node != "" {
		if err := announceReplayNode(p, opts); err != nil {
			_ = p.Close()
			return nil, nil, err
		}
	}
	s := &ddsReplaySink{p: p, writers: map[string]*ddspath.Writer{}}
	return s, s, nil
}

func (s *ddsReplaySink) Declare(t replay.TopicInfo) error {
	topic, err := ros2.TopicToDDS(t.Name)
	if err != nil {
		return err
	}
	typ, err := ros2.TypeToDDS(t.Type)
	if err != nil {
		return err
	}
	wq := t.WriterQoS()
	q := ddspath.QoS{Reliability: ddspath.BestEffort, History: ddspath.KeepLast, Depth: int32(wq.Depth)}
	if wq.Reliable {
		q.Reliability = ddspath.Reliable
	}
	if wq.TransientLocal {
		q.Durability = ddspath.TransientLocal
	}
	w, err := s.p.NewWriter(topic, typ, q)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.writers[t.Name] = w
	s.mu.Unlock()
	// Give discovery a chance: a VOLATILE reader drops what a writer sends
	// before it matched (docs/dds.md).
	deadline := time.Now().Add(replayMatchWait)
	for w.Matched() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if w.Matched() > 0 {
		// Reader-side matching lags the writer's: a reader drops what
		// comes before it knows the writer. 200 ms lost the first of 29
		// /scan samples once in the suite at load 4
		// (TestE2EBagReplayToPythonClient).
		time.Sleep(500 * time.Millisecond)
	}
	return nil
}

func (s *ddsReplaySink) Write(topic string, cdr []byte, sourceTime time.Time) error {
	s.mu.Lock()
	w := s.writers[topic]
	s.mu.Unlock()
	if w == nil {
		return errors.New("bag replay: topic not declared: " + topic)
	}
	return w.Write(cdr, sourceTime)
}

// announceReplayNode makes the replay's participant the ROS node opts.Node
// on ros_discovery_info, owning the writers Declare creates: without it
// zenoh-bridge-ros2dds discovers them but routes nothing (it routes only
// endpoints a node claims), and `ros2 node list` does not show the replay.
func announceReplayNode(p *ddspath.Participant, opts bagReplayOptions) error {
	ns, name, err := splitNodeName(opts.Node)
	if err != nil {
		return fmt.Errorf("bag replay: --node %q: %w", opts.Node, err)
	}
	size, err := ros2.GidSizeForDistro(opts.ROSDistro)
	if err != nil {
		return fmt.Errorf("bag replay: --ros-distro: %w", err)
	}
	if _, err := p.AnnounceNode(ddspath.NodeConfig{Namespace: ns, Name: name, GidSize: size}); err != nil {
		return fmt.Errorf("bag replay: ros_discovery_info: %w", err)
	}
	return nil
}

// Close waits briefly for reliable readers to acknowledge, then closes the participant.
func (s *ddsReplaySink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.mu.Lock()
	ws := make([]*ddspath.Writer, 0, len(s.writers))
	for _, w := range s.writers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		if w.QoS().Reliability == ddspath.Reliable {
			_ = w.WaitForAcks(ctx)
		}
	}
	return s.p.Close()
}
