//go:build cgo && cyclonedds

package ddspath

/*
#include "rawcdr.h"
*/
import "C"

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/picobridge/picobridge/ddspath/ros2"
)

// entityGUID is the GUID of a DDS entity (dds_get_guid), as DDS discovery
// reports it to peers (the key of DCPSPublication / DCPSSubscription).
func entityGUID(op string, e C.dds_entity_t) (GUID, error) {
	var g C.dds_guid_t
	if rc := C.dds_get_guid(e, &g); rc < 0 {
		return GUID{}, ddsErr(op, rc)
	}
	return GUID(C.GoBytes(unsafe.Pointer(&g.v[0]), 16)), nil
}

// GUID is the writer's DDS GUID: what peers see as the DCPSPublication key
// and what ROS 2 uses as the publisher's GID.
func (w *Writer) GUID() (GUID, error) {
	if w.closed.Load() {
		return GUID{}, ErrClosed
	}
	return entityGUID("dds_get_guid(writer)", w.wr)
}

// GUID is the reader's DDS GUID: what peers see as the DCPSSubscription key
// and what ROS 2 uses as the subscription's GID.
func (r *Reader) GUID() (GUID, error) {
	if r.closed.Load() {
		return GUID{}, ErrClosed
	}
	return entityGUID("dds_get_guid(reader)", r.rd)
}

// NodeAnnouncer publishes a participant's ros_discovery_info: one node
// owning every reader and writer of the participant. Made by
// Participant.AnnounceNode; Participant.Close closes it.
type NodeAnnouncer struct {
	p       *Participant
	cfg     NodeConfig
	w       *Writer
	wake    chan struct{} // one pending "endpoints changed"
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once

	mu   sync.Mutex // guards last
	last ros2.ParticipantEntitiesInfo
	pub  atomic.Uint64
	errs atomic.Uint64
	// guids caches each endpoint's GUID (dds_get_guid) by reader or writer;
	// only the announcer goroutine uses it.
	guids map[closer]GUID
}

// AnnounceNode makes p one ROS 2 node as ROS 2 tools and
// zenoh-plugin-ros2dds see it: it creates a writer on ros_discovery_info
// (ros2.DiscoveryInfoTopic, DiscoveryInfoQoS) and writes the participant's
// whole state, {participant GUID, [{namespace, name, reader GUIDs, writer
// GUIDs}]}, now and after every reader or writer of p is created or closed
// (the announcer's own writer excluded), as rmw does. GUIDs are sorted; a
// state equal to the last one written is not written again. A participant
// announces at most one node. Errors: invalid names (ros2.NameError), a
// second AnnounceNode, ErrClosed, writer creation.
func (p *Participant) AnnounceNode(cfg NodeConfig) (*NodeAnnouncer, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	w, err := p.NewWriter(ros2.DiscoveryInfoTopic, ros2.ParticipantEntitiesInfoDDSType, DiscoveryInfoQoS())
	if err != nil {
		return nil, err
	}
	a := &NodeAnnouncer{p: p, cfg: cfg, w: w, wake: make(chan struct{}, 1), done: make(chan struct{}),
		stopped: make(chan struct{}), guids: map[closer]GUID{}}
	p.mu.Lock()
	if p.closed || p.node != nil {
		err := ErrClosed
		if !p.closed {
			err = fmt.Errorf("ddspath: participant already announces node %s", p.node.fullName())
		}
		p.mu.Unlock()
		_ = w.Close()
		return nil, err
	}
	p.node = a
	p.owned[a] = struct{}{}
	p.mu.Unlock()
	a.poke()
	go a.loop()
	return a, nil
}

func (a *NodeAnnouncer) fullName() string {
	if a.cfg.Namespace == "/" {
		return "/" + a.cfg.Name
	}
	return a.cfg.Namespace + "/" + a.cfg.Name
}

// endpointsChangedLocked tells the node announcer, if any, that p's
// endpoints changed. Caller holds p.mu.
func (p *Participant) endpointsChangedLocked() {
	if p.node != nil {
		p.node.poke()
	}
}

func (a *NodeAnnouncer) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *NodeAnnouncer) loop() {
	defer close(a.stopped)
	var retry <-chan time.Time
	for {
		select {
		case <-a.done:
			return
		case <-a.wake:
		case <-retry:
		}
		retry = nil
		if err := a.publish(); err != nil {
			a.errs.Add(1)
			retry = time.After(NodeRetryInterval)
		}
	}
}

// snapshot is the participant's current state.
func (a *NodeAnnouncer) snapshot() ros2.ParticipantEntitiesInfo {
	node := ros2.NodeEntitiesInfo{Namespace: a.cfg.Namespace, Name: a.cfg.Name}
	alive := map[closer]bool{}
	add := func(c closer, e C.dds_entity_t, op string, seq *[]ros2.Gid) {
		g, ok := a.guids[c]
		if !ok {
			var err error
			if g, err = entityGUID(op, e); err != nil {
				return // deleted meanwhile: its close pokes us again
			}
			a.guids[c] = g
		}
		alive[c] = true
		*seq = append(*seq, ros2.Gid(g))
	}
	p := a.p
	p.mu.Lock()
	for c := range p.owned {
		switch e := c.(type) {
		case *Writer:
			if e != a.w && !e.closed.Load() {
				add(e, e.wr, "dds_get_guid(writer)", &node.Writers)
			}
		case *Reader:
			if !e.closed.Load() {
				add(e, e.rd, "dds_get_guid(reader)", &node.Readers)
			}
		}
	}
	p.mu.Unlock()
	for c := range a.guids {
		if !alive[c] {
			delete(a.guids, c)
		}
	}
	for _, s := range [][]ros2.Gid{node.Readers, node.Writers} {
		sort.Slice(s, func(i, j int) bool { return bytes.Compare(s[i][:], s[j][:]) < 0 })
	}
	return ros2.ParticipantEntitiesInfo{GidSize: a.cfg.GidSize, Gid: ros2.Gid(p.GUID()), Nodes: []ros2.NodeEntitiesInfo{node}}
}

// publish writes the participant's state unless it equals the last one written.
func (a *NodeAnnouncer) publish() error {
	info := a.snapshot()
	cdr := ros2.Marshal(&info)
	a.mu.Lock()
	same := a.pub.Load() > 0 && bytes.Equal(cdr, ros2.Marshal(&a.last))
	a.mu.Unlock()
	if same {
		return nil
	}
	if err := a.w.Write(cdr, time.Time{}); err != nil {
		return err
	}
	a.mu.Lock()
	a.last = info
	a.mu.Unlock()
	a.pub.Add(1)
	return nil
}

// Info returns the last ros_discovery_info state written (zero before the first).
func (a *NodeAnnouncer) Info() ros2.ParticipantEntitiesInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// Stats returns the announcer's counters.
func (a *NodeAnnouncer) Stats() NodeStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := NodeStats{Published: a.pub.Load(), Errors: a.errs.Load()}
	if len(a.last.Nodes) == 1 {
		st.Readers, st.Writers = len(a.last.Nodes[0].Readers), len(a.last.Nodes[0].Writers)
	}
	return st
}

// WriterGUID is the GUID of the announcer's ros_discovery_info writer.
func (a *NodeAnnouncer) WriterGUID() (GUID, error) { return a.w.GUID() }

// Close stops announcing and deletes the ros_discovery_info writer (peers
// then drop the node with the writer's instance only when the participant
// goes; rmw behaves the same when a node is destroyed without its context).
// Idempotent.
func (a *NodeAnnouncer) Close() error {
	err := a.close()
	a.p.disown(a)
	return err
}

func (a *NodeAnnouncer) close() error {
	var err error
	a.once.Do(func() {
		close(a.done)
		<-a.stopped
		a.p.mu.Lock()
		if a.p.node == a {
			a.p.node = nil
		}
		a.p.mu.Unlock()
		err = a.w.Close()
	})
	return err
}
