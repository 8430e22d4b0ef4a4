package server

import (
	"sync/atomic"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/zenohpath"
)

// The ROS graph toward rmw_zenoh (routes.key_style: rmw_zenoh): the gateway
// is one ROS node (dds.nodename in dds.namespace) whose liveliness tokens
// announce what it bridges, so rmw_zenoh tools and clients see it
// (ros2-services.md §4.2; rmw_zenoh's liveliness_utils.cpp):
//
//   - NN for the node;
//   - MP for a DDS → Zenoh topic route (the gateway publishes on Zenoh),
//     MS for a Zenoh → DDS topic route (it subscribes on Zenoh);
//   - SS for a DDS server bridged to a queryable (an rmw_zenoh client's
//     wait_for_service is a lookup of SS tokens by name and type),
//     SC for a Zenoh queryable bridged to DDS clients.
//
// Tokens of other nodes (nano-ros devices, rmw_zenoh nodes) create the
// matching DDS endpoints (graphin.go).
//
// With routes.key_style: plain the gateway speaks zenoh-bridge-ros2dds's
// tokens instead (graph_ros2dds.go): the bridge token @/<zid>/@ros2_lv while
// it runs, and one token per route in their format, so that a
// zenoh-bridge-ros2dds on the same Zenoh network creates the DDS endpoints
// of the gateway's routes on its own domain, as it does for another bridge
// of its kind.

// graph declares the gateway's liveliness tokens: rmw_zenoh's
// (routes.key_style: rmw_zenoh) or zenoh-bridge-ros2dds's (plain).
type graph struct {
	s       *zenohpath.Session
	ros2dds bool // zenoh-bridge-ros2dds tokens (plain key style)
	domain  uint32
	zid     string
	ns      string
	node    string
	nextID  atomic.Uint64 // entity ids after the node's 0
	nodeTk  *zenohpath.LivelinessToken
}

func newGraph(s *Server) *graph {
	if s.cfg.Routes.KeyStyle != bridge.KeyRmwZenoh {
		return newROS2DDSGraph(s)
	}
	g := &graph{s: s.data, domain: uint32(s.cfg.DDS.Domain), zid: s.router.ZID().String(), ns: s.cfg.DDS.Namespace, node: s.cfg.DDS.Nodename}
	key, err := ros2.LivelinessToken{Domain: g.domain, ZID: g.zid, Kind: ros2.EntityNode, Enclave: "/", Namespace: g.ns, Node: g.node}.Key()
	if err == nil {
		g.nodeTk, err = g.s.Liveliness().DeclareToken(key)
	}
	if err != nil {
		s.log.Warn("rmw_zenoh node token not declared", "err", err)
	}
	return g
}

// zenohQoS maps a DDS QoS to rmw_zenoh's token QoS.
func zenohQoS(q ddspath.QoS) ros2.ZenohQoS {
	z := ros2.DefaultZenohQoS()
	if q.Reliability == ddspath.BestEffort {
		z.Reliability = ros2.RMWReliabilityBestEffort
	}
	if q.Durability == ddspath.TransientLocal {
		z.Durability = ros2.RMWDurabilityTransient
	}
	if q.History == ddspath.KeepAll {
		z.History = ros2.RMWHistoryKeepAll
	} else {
		z.Depth = int(q.Normalize().Depth)
	}
	return z
}

// announce declares one entity token for the route of ROS name name on
// Zenoh key key; the result's Undeclare removes it (nil receiver safe: g nil
// or a token that could not be built or has no counterpart → nil).
func (g *graph) announce(kind ros2.EntityKind, name, key, rosType, hash string, q ddspath.QoS) *zenohpath.LivelinessToken {
	if g == nil {
		return nil
	}
	if g.ros2dds {
		return g.announceROS2DDS(kind, name, key, rosType, hash, q)
	}
	key, err := ros2.LivelinessToken{Domain: g.domain, ZID: g.zid, NodeID: 0, EntityID: g.nextID.Add(1), Kind: kind,
		Enclave: "/", Namespace: g.ns, Node: g.node, Topic: name, Type: rosType, TypeHash: hash, QoS: zenohQoS(q)}.Key()
	if err != nil {
		return nil
	}
	t, err := g.s.Liveliness().DeclareToken(key)
	if err != nil {
		return nil
	}
	return t
}

func undeclareToken(t *zenohpath.LivelinessToken) {
	if t != nil {
		_ = t.Undeclare()
	}
}
