package ros2

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// LivelinessPrefix is the first chunk of every rmw_zenoh graph liveliness token
// (zenoh-wire.md §16.2); it is verbatim, so `*` and `**` do not match it.
const LivelinessPrefix = "@ros2_lv"

// EntityKind is the kind chunk of an rmw_zenoh liveliness token.
type EntityKind string

// Entity kinds (zenoh-wire.md §16.2).
const (
	EntityNode          EntityKind = "NN"
	EntityPublisher     EntityKind = "MP"
	EntitySubscription  EntityKind = "MS"
	EntityServiceServer EntityKind = "SS"
	EntityServiceClient EntityKind = "SC"
)

// rmw enum values used in the rmw_zenoh QoS chunk (rmw/types.h).
const (
	RMWReliabilityReliable   = 1
	RMWReliabilityBestEffort = 2
	RMWDurabilityTransient   = 1
	RMWDurabilityVolatile    = 2
	RMWHistoryKeepLast       = 1
	RMWHistoryKeepAll        = 2
	RMWLivelinessAutomatic   = 1
	RMWLivelinessManualTopic = 3
)

// ZenohDefaultDepth is rmw_zenoh's default history depth: a QoS chunk with an empty depth
// field means 42.
const ZenohDefaultDepth = 42

// ZenohQoS is the QoS carried in an rmw_zenoh liveliness token. Durations of 0 mean
// infinite (the default, written as empty fields).
type ZenohQoS struct {
	Reliability     int // RMWReliability*
	Durability      int // RMWDurability*
	History         int // RMWHistory*
	Depth           int
	Deadline        time.Duration
	Lifespan        time.Duration
	Liveliness      int // RMWLiveliness*
	LivelinessLease time.Duration
}

// DefaultZenohQoS is rmw_zenoh's default: RELIABLE, VOLATILE, KEEP_LAST 42, infinite
// deadline, lifespan and lease, AUTOMATIC liveliness. It renders as "::,:,:,:,,".
func DefaultZenohQoS() ZenohQoS {
	return ZenohQoS{
		Reliability: RMWReliabilityReliable, Durability: RMWDurabilityVolatile,
		History: RMWHistoryKeepLast, Depth: ZenohDefaultDepth, Liveliness: RMWLivelinessAutomatic,
	}
}

func qosInt(v, def int) string {
	if v == def {
		return ""
	}
	return strconv.Itoa(v)
}

func qosDur(d time.Duration) string {
	if d <= 0 {
		return ","
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "," + strconv.FormatInt(int64(d%time.Second), 10)
}

// String renders "R:D:H,DEPTH:DLs,DLns:LSs,LSns:LV,LVs,LVns" with every field left empty
// when it equals the rmw_zenoh default (zenoh-wire.md §16.2): depth 10 and the rest default
// gives "::,10:,:,:,,".
func (q ZenohQoS) String() string {
	def := DefaultZenohQoS()
	lease := qosDur(q.LivelinessLease)
	return qosInt(q.Reliability, def.Reliability) + ":" +
		qosInt(q.Durability, def.Durability) + ":" +
		qosInt(q.History, def.History) + "," + qosInt(q.Depth, def.Depth) + ":" +
		qosDur(q.Deadline) + ":" +
		qosDur(q.Lifespan) + ":" +
		qosInt(q.Liveliness, def.Liveliness) + "," + lease
}

// ParseZenohQoS parses the QoS chunk of a liveliness token; empty fields take the defaults
// and explicit values are accepted even when they equal the defaults ("2:2:1,1:,:,:,,").
func ParseZenohQoS(s string) (ZenohQoS, error) {
	q := DefaultZenohQoS()
	parts := strings.Split(s, ":")
	if len(parts) != 6 {
		return q, fmt.Errorf("%w: rmw_zenoh QoS %q: want 6 ':'-separated fields", ErrNotROS, s)
	}
	bad := func(what string) (ZenohQoS, error) {
		return DefaultZenohQoS(), fmt.Errorf("%w: rmw_zenoh QoS %q: bad %s", ErrNotROS, s, what)
	}
	num := func(f string, dst *int) bool {
		if f == "" {
			return true
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 {
			return false
		}
		*dst = v
		return true
	}
	dur := func(f string, dst *time.Duration) bool {
		sec, nsec, ok := strings.Cut(f, ",")
		if !ok {
			return false
		}
		if sec == "" && nsec == "" {
			return true
		}
		s, err1 := strconv.ParseInt(sec, 10, 64)
		n, err2 := strconv.ParseInt(nsec, 10, 64)
		if err1 != nil || err2 != nil || s < 0 || n < 0 || s > int64(1<<62)/int64(time.Second) || n >= 1e9 {
			return false
		}
		*dst = time.Duration(s)*time.Second + time.Duration(n)
		return true
	}
	if !num(parts[0], &q.Reliability) {
		return bad("reliability")
	}
	if !num(parts[1], &q.Durability) {
		return bad("durability")
	}
	h, depth, ok := strings.Cut(parts[2], ",")
	if !ok || !num(h, &q.History) || !num(depth, &q.Depth) {
		return bad("history,depth")
	}
	if !dur(parts[3], &q.Deadline) {
		return bad("deadline")
	}
	if !dur(parts[4], &q.Lifespan) {
		return bad("lifespan")
	}
	lv, lease, ok := strings.Cut(parts[5], ",")
	if !ok || !num(lv, &q.Liveliness) || !dur(lease, &q.LivelinessLease) {
		return bad("liveliness")
	}
	return q, nil
}

// LivelinessToken is an rmw_zenoh graph token (zenoh-wire.md §16.2):
//
//	node:   @ros2_lv/<domain>/<zid>/<nid>/<nid>/NN/<enclave>/<namespace>/<node>
//	entity: @ros2_lv/<domain>/<zid>/<nid>/<eid>/<kind>/<enclave>/<namespace>/<node>/<topic>/<type>/<hash>/<qos>
//
// with '/' replaced by '%' in every name field (MangleLiveliness).
type LivelinessToken struct {
	Domain    uint32
	ZID       string // session id as text (opaque chunk)
	NodeID    uint64
	EntityID  uint64 // equals NodeID for a node token
	Kind      EntityKind
	Enclave   string // e.g. "/" or ""
	Namespace string // "/" or "/robot1"
	Node      string
	// Entity fields (empty for EntityNode).
	Topic    string // fully qualified, "/chatter"
	Type     string // ROS 2 type, "std_msgs/msg/String" (srv type for SS/SC)
	TypeHash string // "RIHS01_…" or TypeHashNotSupported
	QoS      ZenohQoS
}

func mangleNS(s string) string {
	if s == "/" {
		return "%"
	}
	return MangleLiveliness(s)
}

// Key renders the token's key expression. It validates names and the type.
func (l LivelinessToken) Key() (string, error) {
	if l.ZID == "" || strings.ContainsAny(l.ZID, "/*$#?") {
		return "", fmt.Errorf("%w: liveliness token: bad zid %q", ErrNotROS, l.ZID)
	}
	if err := ValidateNamespace(l.Namespace); err != nil {
		return "", err
	}
	if err := ValidateNodeName(l.Node); err != nil {
		return "", err
	}
	eid := l.EntityID
	if l.Kind == EntityNode {
		eid = l.NodeID
	}
	b := strings.Builder{}
	fmt.Fprintf(&b, "%s/%d/%s/%d/%d/%s/%s/%s/%s", LivelinessPrefix, l.Domain, l.ZID, l.NodeID, eid, l.Kind,
		mangleNS(l.Enclave), mangleNS(l.Namespace), l.Node)
	switch l.Kind {
	case EntityNode:
		return b.String(), nil
	case EntityPublisher, EntitySubscription, EntityServiceServer, EntityServiceClient:
	default:
		return "", fmt.Errorf("%w: liveliness token: unknown kind %q", ErrNotROS, l.Kind)
	}
	if err := ValidateTopicName(l.Topic); err != nil {
		return "", err
	}
	t, err := ParseTypeName(l.Type)
	if err != nil {
		return "", err
	}
	hash := l.TypeHash
	if hash == "" {
		hash = TypeHashNotSupported
	}
	if err := ValidateTypeHash(hash); err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "/%s/%s/%s/%s", MangleLiveliness(l.Topic), t.DDS(), hash, l.QoS)
	return b.String(), nil
}

// ParseLivelinessToken decodes a token key expression.
func ParseLivelinessToken(key string) (LivelinessToken, error) {
	c := strings.Split(key, "/")
	bad := func(why string) (LivelinessToken, error) {
		return LivelinessToken{}, fmt.Errorf("%w: liveliness token %q: %s", ErrNotROS, key, why)
	}
	if len(c) < 9 || c[0] != LivelinessPrefix {
		return bad("want " + LivelinessPrefix + "/<domain>/<zid>/<nid>/<eid>/<kind>/<enclave>/<ns>/<node>[/...]")
	}
	for _, chunk := range c {
		if chunk == "" {
			return bad("empty chunk")
		}
	}
	dom, err := strconv.ParseUint(c[1], 10, 32)
	if err != nil {
		return bad("domain")
	}
	nid, err1 := strconv.ParseUint(c[3], 10, 64)
	eid, err2 := strconv.ParseUint(c[4], 10, 64)
	if err1 != nil || err2 != nil {
		return bad("node or entity id")
	}
	l := LivelinessToken{
		Domain: uint32(dom), ZID: c[2], NodeID: nid, EntityID: eid, Kind: EntityKind(c[5]),
		Enclave: demangleNS(c[6]), Namespace: demangleNS(c[7]), Node: c[8],
	}
	if l.Kind == EntityNode {
		if len(c) != 9 {
			return bad("node token has extra chunks")
		}
		if nid != eid {
			return bad("node token's entity id must equal its node id")
		}
		if _, err := l.Key(); err != nil {
			return LivelinessToken{}, err
		}
		return l, nil
	}
	if len(c) != 13 {
		return bad("entity token wants 13 chunks")
	}
	switch l.Kind {
	case EntityPublisher, EntitySubscription, EntityServiceServer, EntityServiceClient:
	default:
		return bad("unknown kind " + c[5])
	}
	l.Topic = DemangleLiveliness(c[9])
	if err := ValidateTopicName(l.Topic); err != nil {
		return LivelinessToken{}, err
	}
	t, err := ParseDDSTypeName(c[10])
	if err != nil {
		return LivelinessToken{}, err
	}
	l.Type = t.String()
	if err := ValidateTypeHash(c[11]); err != nil {
		return LivelinessToken{}, err
	}
	l.TypeHash = c[11]
	if l.QoS, err = ParseZenohQoS(c[12]); err != nil {
		return LivelinessToken{}, err
	}
	if _, err := l.Key(); err != nil { // zid, namespace and node name rules
		return LivelinessToken{}, err
	}
	return l, nil
}

func demangleNS(s string) string {
	if s == "%" {
		return "/"
	}
	return DemangleLiveliness(s)
}
