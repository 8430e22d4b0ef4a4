package server

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/zenohpath"
)

// The ROS graph from the Zenoh side (routes.key_style: rmw_zenoh): the
// liveliness tokens of other rmw_zenoh / nano-ros entities
// (`@ros2_lv/<domain>/<zid>/<nid>/<eid>/<kind>/…`, ros2-services.md §4.2,
// decoded by ros2.ParseLivelinessToken) make the gateway create the DDS
// endpoints a DDS peer expects of them, so that `ros2 topic list` or
// `wait_for_service` on DDS sees a device's entities before any DDS peer
// uses them:
//
//	token           gateway's DDS endpoints (the route that owns them)
//	MP publisher    writer rt/<topic>                  (Zenoh → DDS topic route)
//	MS subscription reader rt/<topic>                  (DDS → Zenoh topic route)
//	SS server       reader rq/<name>Request + writer rr/<name>Reply (svcClient)
//	SC client       writer rq/<name>Request + reader rr/<name>Reply (svcServer)
//
// Each token is turned into virtual DDS discovery events (an endpoint with
// a GUID of vendor graphVendor, derived from the token key) fed to the same
// handlers as real discovery: a route lives while a real DDS endpoint or a
// token wants it, and its endpoints go when the last of them goes (token
// undeclared, or its session gone). The gateway's own tokens (its ZID) and
// tokens that do not parse are ignored (counted: picobridge_graph_tokens_total).

// graphVendor marks the GUIDs of virtual endpoints made from tokens: no DDS
// vendor id starts with 0x7a (real ones are 0x01xx).
var graphVendor = [2]byte{0x7a, 0x6c}

// fromToken reports whether g is a virtual endpoint made from a token.
func fromToken(g ddspath.GUID) bool { return g.Vendor() == graphVendor }

// Results of picobridge_graph_tokens_total{result}.
const (
	tokenBridged = "bridged" // turned into DDS endpoints
	tokenOwn     = "own"     // the gateway's own token
	tokenNode    = "node"    // NN: no DDS endpoint
	tokenBad     = "malformed"
	tokenType    = "bad_type" // a type the DDS side cannot name
	tokenRemoved = "removed"
)

// tokenEndpoints turns one entity token into the virtual DDS discovery
// events of the endpoints it calls for (alive as given). Errors: a node
// token or a type that has no DDS name.
func tokenEndpoints(key string, tok ros2.LivelinessToken, alive bool) ([]ddspath.Endpoint, error) {
	t, err := ros2.ParseTypeName(tok.Type)
	if err != nil {
		return nil, err
	}
	q := ddsQoS(tok.QoS)
	hash := tok.TypeHash
	if hash == ros2.TypeHashNotSupported {
		hash = ""
	}
	ep := func(n byte, kind ddspath.EndpointKind, topic, typeName string) ddspath.Endpoint {
		return ddspath.Endpoint{Kind: kind, GUID: tokenGUID(key, n), Participant: tokenGUID(key, 0), Alive: alive,
			Topic: topic, TypeName: typeName, QoS: q, TypeHash: hash}
	}
	switch tok.Kind {
	case ros2.EntityPublisher, ros2.EntitySubscription:
		dt, err := ros2.TopicToDDS(tok.Topic)
		if err != nil {
			return nil, err
		}
		kind := ddspath.Subscription // a Zenoh publisher is served by a DDS writer, made for a DDS reader
		if tok.Kind == ros2.EntitySubscription {
			kind = ddspath.Publication
		}
		return []ddspath.Endpoint{ep(1, kind, dt, t.DDS())}, nil
	case ros2.EntityServiceServer, ros2.EntityServiceClient:
		if t.Kind != ros2.InterfaceSrv && t.Kind != ros2.InterfaceAction {
			return nil, fmt.Errorf("%s token %q: type %q is not a service type", tok.Kind, key, tok.Type)
		}
		rq, rr, err := ros2.ServiceToDDS(tok.Topic)
		if err != nil {
			return nil, err
		}
		base := strings.TrimSuffix(t.DDS(), "_")
		req, resp := base+"_Request_", base+"_Response_"
		if tok.Kind == ros2.EntityServiceServer { // served for DDS clients: their endpoints
			return []ddspath.Endpoint{ep(1, ddspath.Publication, rq, req), ep(2, ddspath.Subscription, rr, resp)}, nil
		}
		return []ddspath.Endpoint{ep(1, ddspath.Subscription, rq, req), ep(2, ddspath.Publication, rr, resp)}, nil
	}
	return nil, fmt.Errorf("token %q: kind %s has no DDS endpoint", key, tok.Kind)
}

// tokenGUID derives a stable virtual GUID from the token key.
func tokenGUID(key string, n byte) ddspath.GUID {
	h := sha256.Sum256([]byte(key))
	var g ddspath.GUID
	copy(g[:], h[:])
	g[0], g[1] = graphVendor[0], graphVendor[1]
	g[15] = n
	return g
}

// ddsQoS maps rmw_zenoh's token QoS to the DDS QoS the virtual endpoint
// announces (the routes then match it as they match a real one).
func ddsQoS(z ros2.ZenohQoS) ddspath.QoS {
	q := ddspath.ROSDefaultQoS()
	if z.Reliability == ros2.RMWReliabilityBestEffort {
		q.Reliability = ddspath.BestEffort
	}
	if z.Durability == ros2.RMWDurabilityTransient {
		q.Durability = ddspath.TransientLocal
	}
	if z.History == ros2.RMWHistoryKeepAll {
		q.History = ddspath.KeepAll
	} else if z.Depth > 0 {
		q.Depth = int32(min(z.Depth, 1<<20))
	}
	return q
}

// watchGraph subscribes to the rmw_zenoh graph of the gateway's domain and
// feeds the tokens' virtual endpoints to events. nil when not rmw_zenoh.
func (b *ddsBridge) watchGraph(events chan<- ddspath.Endpoint) (*zenohpath.Subscriber, error) {
	g := b.s.graph
	if g == nil {
		return nil, nil
	}
	if g.ros2dds {
		return b.watchROS2DDS(g, events) // graph_ros2dds.go
	}
	return g.s.Liveliness().DeclareSubscriber(fmt.Sprintf("%s/%d/**", ros2.LivelinessPrefix, g.domain), func(smp zenohpath.Sample) {
		key := smp.KeyExpr()
		alive := smp.Kind() == zenohpath.SampleKindPut
		tok, err := ros2.ParseLivelinessToken(key)
		switch {
		case err != nil:
			b.s.stats.graphTokens.WithLabelValues(tokenBad).Inc()
			b.s.log.Debug("rmw_zenoh token not understood", "key", key, "err", err)
			return
		case tok.ZID == g.zid:
			b.s.stats.graphTokens.WithLabelValues(tokenOwn).Inc()
			return
		case tok.Kind == ros2.EntityNode:
			b.s.stats.graphTokens.WithLabelValues(tokenNode).Inc()
			return
		}
		eps, err := tokenEndpoints(key, tok, alive)
		b.feedTokenEndpoints(events, "rmw_zenoh entity", key, eps, err, alive,
			"kind", string(tok.Kind), "name", tok.Topic, "type", tok.Type, "zid", tok.ZID)
	}, &zenohpath.LivelinessSubscriberOptions{History: true})
}

// feedTokenEndpoints accounts for a graph token (rmw_zenoh or
// zenoh-bridge-ros2dds; what names it in logs) turned into the virtual DDS
// endpoints eps, or refused with err (picobridge_graph_tokens_total), and
// feeds eps to events until the bridge stops; info are the log attributes
// of a token that appeared.
func (b *ddsBridge) feedTokenEndpoints(events chan<- ddspath.Endpoint, what, key string, eps []ddspath.Endpoint, err error, alive bool, info ...any) {
	if err != nil {
		b.s.stats.graphTokens.WithLabelValues(tokenType).Inc()
		b.s.log.Warn(what+" not bridged to DDS", "key", key, "err", err)
		return
	}
	if alive {
		b.s.stats.graphTokens.WithLabelValues(tokenBridged).Inc()
		b.s.log.Info(what+" → DDS endpoints", info...)
	} else {
		b.s.stats.graphTokens.WithLabelValues(tokenRemoved).Inc()
	}
	for _, e := range eps {
		select {
		case events <- e:
		case <-b.done:
			return
		}
	}
}
