package server

import (
	"fmt"
	"strings"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/zenohpath"
)

// zenoh-bridge-ros2dds's route tokens (routes.key_style: plain;
// ros2.ROS2DDSToken, zenoh-plugin-ros2dds 1.10.2 liveliness_mgt.rs and
// route_*.rs). Outgoing, one token per route:
//
//	route of the gateway                        token
//	DDS → Zenoh topic (a DDS writer bridged)    MP <key> <type> <qos>
//	Zenoh → DDS topic (a DDS reader bridged)    MS <key> <type> <qos>
//	DDS server → queryable                      SS <key> <srv type>
//	queryable → DDS clients                     SC <key> <srv type>
//	…/_action/send_goal server, client          AS, AC <action key> <action type>
//
// and nothing for the other services and topics of an action (cancel_goal,
// get_result, feedback, status): as theirs, an action is announced once.
// Incoming, each token of another bridge becomes the virtual DDS endpoints
// of its remote peer (ros2dds's routes_mgr on_ros_announcement_event):
//
//	MP    a reader rt/<name>      → the gateway's Zenoh → DDS route (a DDS writer on our domain)
//	MS    a writer rt/<name>      → a DDS → Zenoh route (a DDS reader)
//	SS    a client of the service → the gateway serves DDS clients from the queryable
//	SC    a server of the service → a request writer and reply reader
//	AS/AC the three services and two topics of the action, as SS/SC and MP/MS
//
// <name> is the key with dds.namespace's prefix taken off (as their
// key_expr_to_ros2_name).

// Action name suffixes (ros2dds ros2_utils.rs KE_SUFFIX_ACTION_*).
const (
	actSendGoal   = "/_action/send_goal"
	actCancelGoal = "/_action/cancel_goal"
	actGetResult  = "/_action/get_result"
	actFeedback   = "/_action/feedback"
	actStatus     = "/_action/status"
)

// Generic action types (rcl_action; ros2dds ROS2_ACTION_*).
const (
	cancelGoalDDS = "action_msgs::srv::dds_::CancelGoal_"
	statusDDS     = "action_msgs::msg::dds_::GoalStatusArray_"
)

func newROS2DDSGraph(s *Server) *graph {
	g := &graph{s: s.data, ros2dds: true, zid: s.router.ZID().String(), ns: s.cfg.DDS.Namespace}
	var err error
	g.nodeTk, err = g.s.Liveliness().DeclareToken(ros2.ROS2DDSBridgeKey(g.zid))
	if err != nil {
		s.log.Warn("zenoh-bridge-ros2dds bridge token not declared", "err", err)
	}
	return g
}

// tokenQoS is the QoS a topic route's token carries: zenoh-bridge-ros2dds
// announces the discovered DDS endpoint's (route_publisher.rs
// announce_route(discovered_writer_qos), route_subscriber.rs likewise),
// rmw_zenoh tokens the route's own (nil receiver: the route's).
func (g *graph) tokenQoS(route, discovered ddspath.QoS) ddspath.QoS {
	if g != nil && g.ros2dds {
		return discovered
	}
	return route
}

// ros2ddsQoS is the QoS chunk of a route's token as the plugin writes it for
// a Cyclone endpoint (measured against 1.10.2: ":1::0,200" for a RELIABLE
// VOLATILE KEEP_LAST 200 writer or reader): keyless (ROS topics have no
// key), reliability and history always written, durability only when not
// VOLATILE (Cyclone's discovery data omits the default).
func ros2ddsQoS(q ddspath.QoS, hash string) ros2.ROS2DDSQoS {
	r := ros2.ROS2DDSQoS{HasReliability: true, Reliability: ros2.DDSReliable,
		HasHistory: true, History: ros2.DDSKeepLast, Depth: int(q.Normalize().Depth)}
	if q.Reliability == ddspath.BestEffort {
		r.Reliability = ros2.DDSBestEffort
	}
	if q.Durability == ddspath.TransientLocal {
		r.HasDurability, r.Durability = true, ros2.DDSTransientLocal
	}
	if q.History == ddspath.KeepAll {
		r.History, r.Depth = ros2.DDSKeepAll, 0
	}
	if hash != "" && hash != ros2.TypeHashNotSupported {
		r.UserData = "typehash=" + hash + ";" // what ROS 2 Iron+ puts in USER_DATA
	}
	return r
}

// ros2ddsToken is the zenoh-bridge-ros2dds token of one route, ok false when
// the route has none (an action's other services and topics).
func ros2ddsToken(zid string, kind ros2.EntityKind, name, key, rosType, hash string, q ddspath.QoS) (ros2.ROS2DDSToken, bool) {
	t := ros2.ROS2DDSToken{ZID: zid, Route: key, Type: rosType}
	switch kind {
	case ros2.EntityPublisher, ros2.EntitySubscription:
		if strings.HasSuffix(name, actFeedback) || strings.HasSuffix(name, actStatus) {
			return t, false
		}
		t.Kind, t.QoS = ros2.ROS2DDSPublisher, ros2ddsQoS(q, hash)
		if kind == ros2.EntitySubscription {
			t.Kind = ros2.ROS2DDSSubscriber
		}
	case ros2.EntityServiceServer, ros2.EntityServiceClient:
		if strings.HasSuffix(name, actCancelGoal) || strings.HasSuffix(name, actGetResult) {
			return t, false
		}
		t.Kind = ros2.ROS2DDSServiceServer
		if kind == ros2.EntityServiceClient {
			t.Kind = ros2.ROS2DDSServiceClient
		}
		if strings.HasSuffix(name, actSendGoal) {
			k, ok1 := strings.CutSuffix(key, actSendGoal)
			typ, ok2 := strings.CutSuffix(rosType, "_SendGoal")
			if !ok1 || !ok2 {
				return t, false
			}
			t.Route, t.Type, t.Kind = k, typ, ros2.ROS2DDSActionServer
			if kind == ros2.EntityServiceClient {
				t.Kind = ros2.ROS2DDSActionClient
			}
		}
	default:
		return t, false
	}
	return t, true
}

func (g *graph) announceROS2DDS(kind ros2.EntityKind, name, key, rosType, hash string, q ddspath.QoS) *zenohpath.LivelinessToken {
	t, ok := ros2ddsToken(g.zid, kind, name, key, rosType, hash, q)
	if !ok {
		return nil
	}
	k, err := t.Key()
	if err != nil {
		return nil
	}
	tk, err := g.s.Liveliness().DeclareToken(k)
	if err != nil {
		return nil
	}
	return tk
}

// ros2ddsName is the ROS name of a route key: dds.namespace's prefix taken
// off when the key has it, then a leading '/' (ros2dds key_expr_to_ros2_name).
func ros2ddsName(ns, key string) string {
	if ns != "" && ns != "/" {
		if rest, ok := strings.CutPrefix(key, strings.TrimPrefix(ns, "/")+"/"); ok {
			return "/" + rest
		}
	}
	return "/" + key
}

// ros2ddsEndpointQoS is the DDS QoS of a virtual endpoint: ROS defaults,
// overridden by each policy the token carries.
func ros2ddsEndpointQoS(t ros2.ROS2DDSQoS) ddspath.QoS {
	q := ddspath.ROSDefaultQoS()
	if t.HasReliability && t.Reliability == ros2.DDSBestEffort {
		q.Reliability = ddspath.BestEffort
	}
	if t.HasDurability && t.Durability != ros2.DDSVolatile {
		q.Durability = ddspath.TransientLocal
	}
	if t.HasHistory {
		if t.History == ros2.DDSKeepAll {
			q.History = ddspath.KeepAll
		} else if t.Depth > 0 {
			q.Depth = int32(min(t.Depth, 1<<20))
		}
	}
	return q
}

// ros2ddsEndpoints turns one route token of another bridge into the virtual
// DDS discovery events of its remote peer's endpoints (alive as given).
// Errors: a type or name the DDS side cannot carry, the bridge token.
func ros2ddsEndpoints(ns, key string, tok ros2.ROS2DDSToken, alive bool) ([]ddspath.Endpoint, error) {
	if tok.Kind == "" {
		return nil, fmt.Errorf("token %q: a bridge token has no DDS endpoint", key)
	}
	t, err := ros2.ParseTypeName(tok.Type)
	if err != nil {
		return nil, err
	}
	name := ros2ddsName(ns, tok.Route)
	q := ros2ddsEndpointQoS(tok.QoS)
	hash, _ := ros2.TypeHashFromUserData([]byte(tok.QoS.UserData))
	var eps []ddspath.Endpoint
	n := byte(0)
	add := func(kind ddspath.EndpointKind, topic, typeName string, q ddspath.QoS) {
		n++
		eps = append(eps, ddspath.Endpoint{Kind: kind, GUID: tokenGUID(key, n), Participant: tokenGUID(key, 0), Alive: alive,
			Topic: topic, TypeName: typeName, QoS: q, TypeHash: hash})
	}
	// topic: a remote publisher calls for a local reader's peer (a writer of
	// ours), announced as a virtual reader; and the reverse.
	topic := func(pub bool, name, typeName string, q ddspath.QoS) error {
		dt, err := ros2.TopicToDDS(name)
		if err != nil {
			return err
		}
		kind := ddspath.Subscription
		if !pub {
			kind = ddspath.Publication
		}
		add(kind, dt, typeName, q)
		return nil
	}
	// service: a remote server calls for a client's endpoints here (the
	// gateway then serves DDS clients from its queryable); a remote client
	// for a server's.
	service := func(server bool, name, base string) error {
		rq, rr, err := ros2.ServiceToDDS(name)
		if err != nil {
			return err
		}
		base = strings.TrimSuffix(base, "_")
		sq := svcQoS(nil)
		sq.IgnoreLocal = false
		if server {
			add(ddspath.Publication, rq, base+"_Request_", sq)
			add(ddspath.Subscription, rr, base+"_Response_", sq)
		} else {
			add(ddspath.Subscription, rq, base+"_Request_", sq)
			add(ddspath.Publication, rr, base+"_Response_", sq)
		}
		return nil
	}
	switch tok.Kind {
	case ros2.ROS2DDSPublisher, ros2.ROS2DDSSubscriber:
		err = topic(tok.Kind == ros2.ROS2DDSPublisher, name, t.DDS(), q)
	case ros2.ROS2DDSServiceServer, ros2.ROS2DDSServiceClient:
		if t.Kind != ros2.InterfaceSrv {
			return nil, fmt.Errorf("%s token %q: type %q is not a service type", tok.Kind, key, tok.Type)
		}
		err = service(tok.Kind == ros2.ROS2DDSServiceServer, name, t.DDS())
	case ros2.ROS2DDSActionServer, ros2.ROS2DDSActionClient:
		if t.Kind != ros2.InterfaceAction {
			return nil, fmt.Errorf("%s token %q: type %q is not an action type", tok.Kind, key, tok.Type)
		}
		server := tok.Kind == ros2.ROS2DDSActionServer
		base := strings.TrimSuffix(t.DDS(), "_")
		fq := ddspath.ROSDefaultQoS() // feedback: rcl_action default, KEEP_LAST 10
		sq := ddspath.ROSDefaultQoS() // status: TRANSIENT_LOCAL, KEEP_LAST 1
		sq.Durability, sq.Depth = ddspath.TransientLocal, 1
		for _, e := range []error{
			service(server, name+actSendGoal, base+"_SendGoal_"),
			service(server, name+actCancelGoal, cancelGoalDDS),
			service(server, name+actGetResult, base+"_GetResult_"),
			topic(server, name+actFeedback, base+"_FeedbackMessage_", fq),
			topic(server, name+actStatus, statusDDS, sq),
		} {
			if e != nil {
				return nil, e
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return eps, nil
}

// watchROS2DDS subscribes to every zenoh-bridge-ros2dds token on the Zenoh
// network and feeds the virtual endpoints of other bridges' routes to
// events (counted in picobridge_graph_tokens_total as the rmw_zenoh ones).
func (b *ddsBridge) watchROS2DDS(g *graph, events chan<- ddspath.Endpoint) (*zenohpath.Subscriber, error) {
	return g.s.Liveliness().DeclareSubscriber(ros2.ROS2DDSLivelinessAll, func(smp zenohpath.Sample) {
		key := smp.KeyExpr()
		alive := smp.Kind() == zenohpath.SampleKindPut
		tok, err := ros2.ParseROS2DDSToken(key)
		switch {
		case err != nil:
			b.s.stats.graphTokens.WithLabelValues(tokenBad).Inc()
			b.s.log.Debug("zenoh-bridge-ros2dds token not understood", "key", key, "err", err)
			return
		case tok.ZID == g.zid:
			b.s.stats.graphTokens.WithLabelValues(tokenOwn).Inc()
			return
		case tok.Kind == "":
			b.s.stats.graphTokens.WithLabelValues(tokenNode).Inc()
			b.s.log.Info("zenoh-bridge-ros2dds bridge", "zid", tok.ZID, "alive", alive)
			return
		}
		eps, err := ros2ddsEndpoints(g.ns, key, tok, alive)
		b.feedTokenEndpoints(events, "zenoh-bridge-ros2dds route", key, eps, err, alive,
			"kind", string(tok.Kind), "key", tok.Route, "type", tok.Type, "zid", tok.ZID) // graphin.go
	}, &zenohpath.LivelinessSubscriberOptions{History: true})
}
