package server

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// devices follows the faces of the router's listeners and attaches the
// ones identified as devices to the gateway (zenohpath.FaceObserver).
type devices struct {
	s *Server
	// pace bounds the diverts' waits for express room per sample
	pace expressPacer

	mu     sync.RWMutex
	byFace map[uint64]*devFace
}

type devFace struct {
	face zenohpath.Face
	dev  *bridge.Device // nil: a plain Zenoh session
	subs []string       // subscriptions given to dev
}

func newDevices(s *Server) *devices { return &devices{s: s, byFace: map[uint64]*devFace{}} }

// isDevice reports whether the face is served by the lanes (then plain
// routing of bridge samples skips it).
func (d *devices) isDevice(faceID uint64) bool {
	d.mu.RLock()
	df := d.byFace[faceID]
	d.mu.RUnlock()
	return df != nil && df.dev != nil
}

// queryableDevices lists the devices with a queryable intersecting key:
// the devices a get on key reaches (services toward devices obey their
// lanes' rules, services.go).
func (d *devices) queryableDevices(key string) []*bridge.Device {
	d.mu.RLock()
	faces := make([]*devFace, 0, len(d.byFace))
	for _, df := range d.byFace {
		if df.dev != nil {
			faces = append(faces, df)
		}
	}
	d.mu.RUnlock()
	var out []*bridge.Device
	for _, df := range faces {
		for _, k := range df.face.Queryables() {
			if keyexpr.Intersects(k, key) {
				out = append(out, df.dev)
				break
			}
		}
	}
	return out
}

func (d *devices) FaceOpened(f zenohpath.Face) {
	df := &devFace{face: f}
	d.mu.Lock()
	d.byFace[f.ID()] = df
	d.mu.Unlock()
	zid := strings.TrimLeft(f.ZID().String(), "0")
	for _, dc := range d.s.cfg.Devices.List {
		if dc.ZID != "" && strings.TrimLeft(strings.TrimPrefix(strings.ToLower(dc.ZID), "0x"), "0") == zid {
			d.attach(df, "")
			return
		}
	}
	// An authenticated name (usrpwd user, mTLS certificate CN or SAN)
	// names the device (docs/security.md).
	for _, n := range f.Identity().Names() {
		if dc := d.s.cfg.Device(n); dc != nil {
			d.attach(df, dc.Name)
			return
		}
	}
	if d.s.opts.AttachAllClients && f.WhatAmI() == wire.WhatAmIClient {
		d.attach(df, "")
	}
}

func (d *devices) SubscriptionsChanged(f zenohpath.Face) {
	d.mu.RLock()
	df := d.byFace[f.ID()]
	d.mu.RUnlock()
	if df == nil {
		return
	}
	subs := f.Subscriptions()
	if df.dev == nil {
		for _, k := range subs {
			if name, kind, ok := probe.ParseKey(k); ok && kind == probe.Ping {
				d.attach(df, name)
				break
			}
		}
		if df.dev == nil {
			return
		}
	}
	d.sync(df, subs)
}

func (d *devices) FaceClosed(f zenohpath.Face) {
	d.mu.Lock()
	df := d.byFace[f.ID()]
	delete(d.byFace, f.ID())
	d.mu.Unlock()
	if df != nil && df.dev != nil {
		df.face.SetDivert(nil)
		df.dev.Detach()
		d.s.stats.devices.Dec()
	}
}

// attach makes the face a device. Calls for one face come from its
// session's receive goroutine, so df needs no lock of its own; d.mu makes
// dev visible to isDevice.
func (d *devices) attach(df *devFace, name string) {
	dev, err := d.s.gw.Attach(bridge.DeviceIdentity{ZID: zidHex(df.face.ZID()), Name: name}, newDeviceSink(df.face))
	if err != nil {
		d.s.log.Warn("device not attached", "zid", df.face.ZID().String(), "name", name, "err", err)
		return
	}
	d.mu.Lock()
	df.dev = dev
	d.mu.Unlock()
	d.s.stats.devices.Inc()
	df.face.SetDivert(laneDivert(d.s.gw, dev, &d.pace))
	d.sync(df, df.face.Subscriptions())
}

// laneDivert is a device face's divert function: what the router routes to
// the device from other faces (upstream Zenoh, other devices, clients)
// goes through its lanes too, with the criticality of the ROS name its key
// maps back to. The router calls it from the sending face's receive
// goroutine, for each sample of a received batch back to back, and for one
// sample each device face in turn; before a sample of a critical route it
// gives the device's express lane time to make room
// (Device.WaitExpressRoom), as the DDS ingress does, so that a burst longer
// than the lane's depth, delivered faster than the lane is scheduled, is
// not cut to the depth while the device keeps up. The waits of one sample's
// fan-out share expressDrainWait (pace): the ingress never stalls longer
// per sample, so a gateway that cannot keep up drops in its lanes, counted,
// rather than back up its upstream link. A stalled, slow or link-paced
// device is not waited for; what a device cannot take is dropped, counted
// as congestion.
func laneDivert(gw *bridge.Gateway, dev *bridge.Device, pace *expressPacer) zenohpath.DivertFunc {
	return func(key string, payload []byte) bool {
		if strings.HasPrefix(key, "@") {
			return false // verbatim keys (probes, admin) stay plain
		}
		route := gw.RouteForKey(key)
		if route.Criticality == bridge.Critical {
			if left := pace.left(payload, time.Now()); left > 0 {
				dev.WaitExpressRoom(key, left)
			}
		}
		dev.Offer(bridge.Sample{Key: key, Payload: bytes.Clone(payload)}, route.Criticality)
		return true
	}
}

func (d *devices) sync(df *devFace, subs []string) {
	for _, k := range subs {
		if !slices.Contains(df.subs, k) {
			df.dev.DeclareSubscriber(k)
			if d.s.dds != nil {
				d.s.dds.replayTo(df.dev, k) // TRANSIENT_LOCAL history for a late joiner (history.go)
			}
		}
	}
	for _, k := range df.subs {
		if !slices.Contains(subs, k) {
			df.dev.UndeclareSubscriber(k)
		}
	}
	df.subs = subs
}

// expressPacer shares expressDrainWait among the diverts of one sample's
// fan-out. The router hands every device face the same payload slice, so
// the sample is known by its first byte's address; a later sample that
// happens to reuse the address (a reused read buffer) within the window
// gets what is left of it, never more: it may wait less, never longer.
type expressPacer struct {
	mu       sync.Mutex
	first    *byte
	deadline time.Time
}

// left is how long the divert of the sample with payload may still wait at
// now.
func (p *expressPacer) left(payload []byte, now time.Time) time.Duration {
	if len(payload) == 0 {
		return expressDrainWait
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first != &payload[0] || now.After(p.deadline.Add(expressDrainWait)) {
		p.first, p.deadline = &payload[0], now.Add(expressDrainWait)
	}
	return p.deadline.Sub(now)
}

// zidHex is the zid as zenohd prints it, padded to whole bytes (the
// gateway wants even-length hex; String drops leading zeros).
func zidHex(z wire.ZID) string {
	h := z.String()
	if len(h)%2 == 1 {
		h = "0" + h
	}
	return h
}

// faceSink is a device's egress: the lanes send through the device's face.
type faceSink struct{ f zenohpath.Face }

var (
	qosExpress = wire.NewQoS(wire.PriorityRealTime, wire.CongestionDrop, true)
	qosBatched = wire.NewQoS(wire.PriorityData, wire.CongestionDrop, false)
)

func push(key string, payload []byte, q wire.QoS) *wire.Push {
	m := &wire.Push{WireExpr: wire.WireExpr{Suffix: key}, Body: &wire.Put{Payload: payload}}
	if q != wire.DefaultQoS {
		m.QoS, m.HasQoS = q, true
	}
	return m
}

// sinkErr maps a face's send error to the lanes' sentinels: a full queue
// is congestion; a closed session (the device left or lost its link; the
// face closes and the device detaches right after) is ErrDeviceClosed, not
// a sink error the supervisor counts (a fleet's churn is no gateway fault).
func sinkErr(err error) error {
	switch {
	case errors.Is(err, zenohpath.ErrFaceQueueFull):
		return bridge.ErrCongested
	case errors.Is(err, transport.ErrClosed), errors.Is(err, zenohpath.ErrClosed):
		return fmt.Errorf("%w: %w", bridge.ErrDeviceClosed, err)
	}
	return err
}

// SendExpress: EXPRESS, reliable, RealTime, drop.
func (k faceSink) SendExpress(s bridge.Sample) error {
	return sinkErr(k.f.Send(push(s.Key, s.Payload, qosExpress),
		zenohpath.SendOptions{Reliable: true, Express: true, Priority: wire.PriorityRealTime}))
}

// SendBatch: best effort, Data, coalesced by the transport into frames of
// the session's negotiated batch size. It stops at the first refusal (the
// whole flush is then counted as dropped).
func (k faceSink) SendBatch(samples []bridge.Sample) error {
	for _, s := range samples {
		if err := k.f.Send(push(s.Key, s.Payload, qosBatched), zenohpath.SendOptions{Priority: wire.PriorityData}); err != nil {
			return sinkErr(err)
		}
	}
	return nil
}

var (
	_ bridge.TxBacklogSource = faceSink{}
	_ bridge.TxRateSetter    = faceSink{}
)

// TxBacklogBytes is what the device's transport session still holds
// (Session.TxBacklog, all priorities): the link budget counts it as spent
// and the classifier subtracts the delay it causes from the probes.
func (k faceSink) TxBacklogBytes() int {
	s := k.f.Session()
	if s == nil {
		return 0
	}
	b, _ := s.TxBacklog().Total()
	return b
}

// Published is what the device has published through its face
// (zenohpath.Face.Published): its own TX.
func (k faceSink) Published() (samples, bytes int64) { return k.f.Published() }

// SetTxRate paces the device's transport session (Session.SetTxRate) at the
// link budget × policy.link.headroom.
func (k faceSink) SetTxRate(bytesPerSecond float64) {
	if s := k.f.Session(); s != nil {
		s.SetTxRate(bytesPerSecond)
	}
}

// SendProbe: express, RealTime, on the reliable channel like a critical
// sample (SendExpress), so it goes between the FRAGMENTs of a best-effort
// bulk message instead of waiting for the whole train (a 1 MB bulk sample
// at 8.7 MB/s held each ping 50–100 ms, which the learned link budget read
// as a link queue; issue 30). The probe measures what a critical sample
// meets.
func (k faceSink) SendProbe(key string, payload []byte) error {
	return sinkErr(k.f.Send(push(key, payload, qosExpress),
		zenohpath.SendOptions{Reliable: true, Express: true, Priority: wire.PriorityRealTime}))
}
