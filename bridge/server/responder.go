package server

import (
	"time"

	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath"
)

// ProbeResponder is the device side of the probe protocol for Go devices
// (docs/probe.md): it subscribes to the device's ping key, which announces
// the device's name to the gateway, and answers each ping on the pong key
// with probe.Respond.
type ProbeResponder struct {
	sub *zenohpath.Subscriber
	pub *zenohpath.Publisher
}

// DeclareProbeResponder starts a responder for device name on session s.
func DeclareProbeResponder(s *zenohpath.Session, name string) (*ProbeResponder, error) {
	pub, err := s.DeclarePublisher(probe.PongKey(name), zenohpath.PublisherOptions{
		Express: true, Priority: zenohpath.PriorityRealTime, Reliability: zenohpath.ReliabilityBestEffort})
	if err != nil {
		return nil, err
	}
	epoch := time.Now()
	r := &ProbeResponder{pub: pub}
	r.sub, err = s.DeclareSubscriber(probe.PingKey(name), func(smp zenohpath.Sample) {
		recv := uint64(time.Since(epoch))
		pong, err := probe.Respond(smp.Payload(), recv, uint64(time.Since(epoch)))
		if err == nil {
			_ = pub.Put(pong, nil)
		}
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Close stops answering (the gateway then counts the device's probes as lost).
func (r *ProbeResponder) Close() error { return r.sub.Undeclare() }
