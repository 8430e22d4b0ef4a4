package server

import (
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// devices follows the faces of the router's listeners and attaches the
// ones identified as devices to the gateway (zenohpath.FaceObserver).
type devices struct {
	s *Server

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

func (d *devices) FaceOpened(f zenohpath.Face) {
	df := &devFace{face: f}
	d.mu.Lock()
	d.byFace[f.ID()] = df
	d.mu.Unlock()
	zid := f.ZID().String()
	for _, dc := range d.s.cfg.Devices.List {
		if dc.ZID != "" && strings.EqualFold(strings.TrimPrefix(strings.ToLower(dc.ZID), "0x"), zid) {
			d.attach(df, "")
			return
		}
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
			if name, kind, ok := bridge.ParseProbeKey(k); ok && kind == bridge.ProbePing {
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
		df.dev.Detach()
		d.s.stats.devices.Dec()
	}
}

// attach makes the face a device. Calls for one face come from its
// session's receive goroutine, so df needs no lock of its own; d.mu makes
// dev visible to isDevice.
func (d *devices) attach(df *devFace, name string) {
	dev, err := d.s.gw.Attach(bridge.DeviceIdentity{ZID: df.face.ZID().String(), Name: name}, faceSink{df.face})
	if err != nil {
		d.s.log.Warn("device not attached", "zid", df.face.ZID().String(), "name", name, "err", err)
		return
	}
	d.mu.Lock()
	df.dev = dev
	d.mu.Unlock()
	d.s.stats.devices.Inc()
	d.sync(df, df.face.Subscriptions())
}

func (d *devices) sync(df *devFace, subs []string) {
	for _, k := range subs {
		if !slices.Contains(df.subs, k) {
			df.dev.DeclareSubscriber(k)
		}
	}
	for _, k := range df.subs {
		if !slices.Contains(subs, k) {
			df.dev.UndeclareSubscriber(k)
		}
	}
	df.subs = subs
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

func sinkErr(err error) error {
	if errors.Is(err, zenohpath.ErrFaceQueueFull) {
		return bridge.ErrCongested
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

// SendProbe: best effort, express, RealTime.
func (k faceSink) SendProbe(key string, payload []byte) error {
	return sinkErr(k.f.Send(push(key, payload, qosExpress),
		zenohpath.SendOptions{Express: true, Priority: wire.PriorityRealTime}))
}
