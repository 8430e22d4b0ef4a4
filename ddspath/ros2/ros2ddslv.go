package ros2

import (
	"fmt"
	"strconv"
	"strings"
)

// zenoh-bridge-ros2dds (zenoh-plugin-ros2dds 1.10.2, src/liveliness_mgt.rs)
// announces each bridge and each of its routes with a liveliness token, and
// a bridge creates the DDS endpoints of a remote route (a DDS writer for a
// remote publisher, a DDS service server for a remote service server…) only
// when it sees that route's token:
//
//	bridge:  @/<zid>/@ros2_lv
//	topic:   @/<zid>/@ros2_lv/MP|MS/<key>/<type>/<qos>
//	service: @/<zid>/@ros2_lv/SS|SC/<key>/<type>
//	action:  @/<zid>/@ros2_lv/AS|AC/<key>/<type>
//
// <key> is the route's Zenoh key expression and <type> the ROS 2 type
// ("std_msgs/msg/String", "example_interfaces/srv/AddTwoInts",
// "example_interfaces/action/Fibonacci"), each with every '/' replaced by
// '§' (U+00A7). An action is one AS/AC token: the services and topics of
// its "_action/…" names get none. <qos> is
// "[K]:<reliability>:<durability>:<history>,<depth>[:<user_data>]" with
// Cyclone's enum values (qos_to_key_expr), each field empty when the
// endpoint did not carry that policy; "K" marks a keyed topic (ROS topics
// are keyless); the user data (ROS 2 Iron and newer: "typehash=RIHS01_…;")
// is only there when the sender's ROS_DISTRO is Iron or newer.

// ROS2DDSLivelinessChunk is the chunk after the bridge's ZID in every
// zenoh-bridge-ros2dds token.
const ROS2DDSLivelinessChunk = "@ros2_lv"

// ROS2DDSSlash replaces '/' inside the key and type chunks of a
// zenoh-bridge-ros2dds token (their SLASH_REPLACEMSNT_CHAR).
const ROS2DDSSlash = "§"

// ROS2DDSKind is the route kind chunk of a zenoh-bridge-ros2dds token.
type ROS2DDSKind string

// Route kinds (zenoh-plugin-ros2dds liveliness_mgt.rs).
const (
	ROS2DDSPublisher     ROS2DDSKind = "MP" // the bridge publishes the topic on Zenoh (a DDS writer is bridged)
	ROS2DDSSubscriber    ROS2DDSKind = "MS" // the bridge subscribes on Zenoh (a DDS reader is bridged)
	ROS2DDSServiceServer ROS2DDSKind = "SS" // a DDS service server is bridged (a queryable)
	ROS2DDSServiceClient ROS2DDSKind = "SC" // a DDS service client is bridged (gets)
	ROS2DDSActionServer  ROS2DDSKind = "AS" // a DDS action server is bridged
	ROS2DDSActionClient  ROS2DDSKind = "AC" // a DDS action client is bridged
)

// Cyclone DDS enum values in the QoS chunk (dds_reliability_kind_t,
// dds_durability_kind_t, dds_history_kind_t).
const (
	DDSBestEffort     = 0
	DDSReliable       = 1
	DDSVolatile       = 0
	DDSTransientLocal = 1
	DDSKeepLast       = 0
	DDSKeepAll        = 1
)

// ROS2DDSQoS is the QoS chunk of an MP/MS token. A policy the endpoint did
// not carry is absent (Has* false) and renders as an empty field.
type ROS2DDSQoS struct {
	Keyed          bool
	HasReliability bool
	Reliability    int // DDSBestEffort or DDSReliable
	HasDurability  bool
	Durability     int // DDSVolatile, DDSTransientLocal (2, 3: transient, persistent)
	HasHistory     bool
	History        int // DDSKeepLast or DDSKeepAll
	Depth          int
	UserData       string // "" or e.g. "typehash=RIHS01_…;"
}

// String renders the chunk, e.g. ":1:0:0,10" for a keyless RELIABLE
// VOLATILE KEEP_LAST 10 endpoint, ":::" when no policy is set.
func (q ROS2DDSQoS) String() string {
	var b strings.Builder
	if q.Keyed {
		b.WriteByte('K')
	}
	b.WriteByte(':')
	if q.HasReliability {
		b.WriteString(strconv.Itoa(q.Reliability))
	}
	b.WriteByte(':')
	if q.HasDurability {
		b.WriteString(strconv.Itoa(q.Durability))
	}
	b.WriteByte(':')
	if q.HasHistory {
		b.WriteString(strconv.Itoa(q.History) + "," + strconv.Itoa(q.Depth))
	}
	if q.UserData != "" {
		b.WriteString(":" + q.UserData)
	}
	return b.String()
}

// ParseROS2DDSQoS parses the QoS chunk (key_expr_to_qos): at least 4
// ':'-separated fields; a 5th is the user data (which may itself hold ':').
func ParseROS2DDSQoS(s string) (ROS2DDSQoS, error) {
	var q ROS2DDSQoS
	f := strings.SplitN(s, ":", 5)
	if len(f) < 4 {
		return q, fmt.Errorf("%w: ros2dds QoS %q: want at least 4 ':'-separated fields", ErrNotROS, s)
	}
	switch f[0] {
	case "":
	case "K":
		q.Keyed = true
	default:
		return q, fmt.Errorf("%w: ros2dds QoS %q: first field must be empty or K", ErrNotROS, s)
	}
	num := func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 0 && n < 1<<31
	}
	var ok bool
	if f[1] != "" {
		if q.Reliability, ok = num(f[1]); !ok {
			return ROS2DDSQoS{}, fmt.Errorf("%w: ros2dds QoS %q: bad reliability", ErrNotROS, s)
		}
		q.HasReliability = true
	}
	if f[2] != "" {
		if q.Durability, ok = num(f[2]); !ok {
			return ROS2DDSQoS{}, fmt.Errorf("%w: ros2dds QoS %q: bad durability", ErrNotROS, s)
		}
		q.HasDurability = true
	}
	if f[3] != "" {
		k, d, cut := strings.Cut(f[3], ",")
		var okd bool
		q.History, ok = num(k)
		if d != "" && d[0] == '-' { // KEEP_ALL depth may be written as -1
			q.Depth, okd = 0, d == "-1"
		} else {
			q.Depth, okd = num(d)
		}
		if !cut || !ok || !okd {
			return ROS2DDSQoS{}, fmt.Errorf("%w: ros2dds QoS %q: bad history,depth", ErrNotROS, s)
		}
		q.HasHistory = true
	}
	if len(f) == 5 {
		q.UserData = f[4]
	}
	return q, nil
}

// ROS2DDSToken is one zenoh-bridge-ros2dds liveliness token. Kind "" is the
// bridge's own token (@/<zid>/@ros2_lv).
type ROS2DDSToken struct {
	ZID   string // the bridge's Zenoh id as text
	Kind  ROS2DDSKind
	Route string // the route's Zenoh key expression, "chatter", "bot1/add_two_ints"
	Type  string // ROS 2 type: "std_msgs/msg/String", ".../srv/…", ".../action/…"
	QoS   ROS2DDSQoS
}

// ROS2DDSLivelinessAll is the key expression of every token of every
// bridge (ke_liveliness_all).
const ROS2DDSLivelinessAll = "@/*/" + ROS2DDSLivelinessChunk + "/**"

// ROS2DDSBridgeKey is the bridge token of zid: "@/<zid>/@ros2_lv".
func ROS2DDSBridgeKey(zid string) string { return "@/" + zid + "/" + ROS2DDSLivelinessChunk }

func validChunk(s string) bool {
	return s != "" && !strings.ContainsAny(s, "/*$#?") && s != "**"
}

// Key renders the token's key expression, e.g. ROS2DDSToken{ZID: "1f",
// Kind: MP, Route: "bot1/chatter", Type: "std_msgs/msg/String", QoS: reliable
// volatile keep-last 10} gives "@/1f/@ros2_lv/MP/bot1§chatter/std_msgs§msg§String/:1:0:0,10".
// Errors: a bad ZID, kind, empty key or type, or a chunk that is not a key
// expression chunk (ErrNotROS).
func (t ROS2DDSToken) Key() (string, error) {
	if !validChunk(t.ZID) {
		return "", fmt.Errorf("%w: ros2dds token: bad zid %q", ErrNotROS, t.ZID)
	}
	if t.Kind == "" {
		return ROS2DDSBridgeKey(t.ZID), nil
	}
	key := strings.ReplaceAll(strings.Trim(t.Route, "/"), "/", ROS2DDSSlash)
	typ := strings.ReplaceAll(t.Type, "/", ROS2DDSSlash)
	if !validChunk(key) || !validChunk(typ) {
		return "", fmt.Errorf("%w: ros2dds token: bad key %q or type %q", ErrNotROS, t.Route, t.Type)
	}
	base := ROS2DDSBridgeKey(t.ZID) + "/" + string(t.Kind) + "/" + key + "/" + typ
	switch t.Kind {
	case ROS2DDSPublisher, ROS2DDSSubscriber:
		qos := t.QoS.String()
		if strings.ContainsAny(qos, "/*$#?") {
			return "", fmt.Errorf("%w: ros2dds token: user data %q cannot be in a key expression", ErrNotROS, t.QoS.UserData)
		}
		return base + "/" + qos, nil
	case ROS2DDSServiceServer, ROS2DDSServiceClient, ROS2DDSActionServer, ROS2DDSActionClient:
		return base, nil
	}
	return "", fmt.Errorf("%w: ros2dds token: unknown kind %q", ErrNotROS, t.Kind)
}

// ParseROS2DDSToken decodes a zenoh-bridge-ros2dds token key expression (the
// inverse of Key). Errors wrap ErrNotROS: not "@/<zid>/@ros2_lv[/…]", an
// unknown kind, a wrong number of chunks, a bad QoS chunk.
func ParseROS2DDSToken(key string) (ROS2DDSToken, error) {
	bad := func(why string) (ROS2DDSToken, error) {
		return ROS2DDSToken{}, fmt.Errorf("%w: ros2dds token %q: %s", ErrNotROS, key, why)
	}
	rest, ok := strings.CutPrefix(key, "@/")
	if !ok {
		return bad("does not start with @/")
	}
	c := strings.Split(rest, "/")
	if len(c) < 2 || c[1] != ROS2DDSLivelinessChunk || !validChunk(c[0]) {
		return bad("not @/<zid>/" + ROS2DDSLivelinessChunk)
	}
	t := ROS2DDSToken{ZID: c[0]}
	if len(c) == 2 {
		return t, nil
	}
	t.Kind = ROS2DDSKind(c[2])
	want := 5
	switch t.Kind {
	case ROS2DDSPublisher, ROS2DDSSubscriber:
		want = 6
	case ROS2DDSServiceServer, ROS2DDSServiceClient, ROS2DDSActionServer, ROS2DDSActionClient:
	default:
		return bad("unknown kind " + c[2])
	}
	if len(c) != want {
		return bad(fmt.Sprintf("%s wants %d chunks, has %d", t.Kind, want, len(c)))
	}
	t.Route = strings.ReplaceAll(c[3], ROS2DDSSlash, "/")
	t.Type = strings.ReplaceAll(c[4], ROS2DDSSlash, "/")
	if want == 6 {
		q, err := ParseROS2DDSQoS(c[5])
		if err != nil {
			return ROS2DDSToken{}, err
		}
		t.QoS = q
	}
	return t, nil
}
