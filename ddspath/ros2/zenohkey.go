package ros2

import (
	"fmt"
	"strconv"
	"strings"
)

// TypeHashNotSupported is the type-hash chunk used by ROS 2 Humble peers of rmw_zenoh,
// which predate REP-2016 type hashes (zenoh-wire.md §16.1).
const TypeHashNotSupported = "TypeHashNotSupported"

// TypeHashPrefix starts every REP-2016 version-1 type hash: "RIHS01_" + 64 lowercase hex.
const TypeHashPrefix = "RIHS01_"

// ValidateTypeHash accepts "RIHS01_<64 lowercase hex digits>" or TypeHashNotSupported.
func ValidateTypeHash(h string) error {
	if h == TypeHashNotSupported {
		return nil
	}
	hex, ok := strings.CutPrefix(h, TypeHashPrefix)
	if !ok || len(hex) != 64 {
		return fmt.Errorf("%w: type hash %q: want %s<64 lowercase hex> or %s", ErrInvalidType, h, TypeHashPrefix, TypeHashNotSupported)
	}
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		if !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) {
			return fmt.Errorf("%w: type hash %q: %q is not a lowercase hex digit", ErrInvalidType, h, c)
		}
	}
	return nil
}

// TypeHashFromUserData extracts the "typehash=RIHS01_…;" entry that ROS 2 Iron and newer
// put in DDS endpoint USER_DATA (dds-cyclone.md §1). It returns false when there is none.
func TypeHashFromUserData(userData []byte) (string, bool) {
	for _, kv := range strings.Split(string(userData), ";") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.TrimSpace(k) == "typehash" {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// ZenohKey is the decoded form of an rmw_zenoh data key expression
// "<domain>/<topic without leading '/'>/<DDS type>/<type hash>" (zenoh-wire.md §16.1).
type ZenohKey struct {
	Domain   uint32
	Topic    string // fully qualified ROS 2 name, with its leading '/'
	Type     string // ROS 2 type name, e.g. "std_msgs/msg/String"
	TypeHash string // "RIHS01_…" or TypeHashNotSupported
}

// String renders the key expression; it does not validate (use ZenohKeyExpr for that).
func (k ZenohKey) String() string {
	dds := k.Type
	if t, err := ParseTypeName(k.Type); err == nil {
		dds = t.DDS()
	}
	return strconv.FormatUint(uint64(k.Domain), 10) + "/" + strings.TrimPrefix(k.Topic, "/") + "/" + dds + "/" + k.TypeHash
}

// ZenohKeyExpr builds the rmw_zenoh data key expression for a topic or service, e.g.
// ZenohKeyExpr(0, "/chatter", "std_msgs/msg/String", "RIHS01_df66…") =
// "0/chatter/std_msgs::msg::dds_::String_/RIHS01_df66…". For a service pass the service
// type ("example_interfaces/srv/AddTwoInts"). An empty typeHash means TypeHashNotSupported.
func ZenohKeyExpr(domain uint32, topic, rosType, typeHash string) (string, error) {
	if err := ValidateTopicName(topic); err != nil {
		return "", err
	}
	t, err := ParseTypeName(rosType)
	if err != nil {
		return "", err
	}
	if typeHash == "" {
		typeHash = TypeHashNotSupported
	}
	if err := ValidateTypeHash(typeHash); err != nil {
		return "", err
	}
	return strconv.FormatUint(uint64(domain), 10) + topic + "/" + t.DDS() + "/" + typeHash, nil
}

// ParseZenohKeyExpr decodes an rmw_zenoh data key expression (the inverse of
// ZenohKeyExpr). The topic is every chunk between the domain and the type.
func ParseZenohKeyExpr(key string) (ZenohKey, error) {
	chunks := strings.Split(key, "/")
	if len(chunks) < 4 {
		return ZenohKey{}, fmt.Errorf("%w: rmw_zenoh key %q: want <domain>/<topic>/<type>/<hash>", ErrNotROS, key)
	}
	dom, err := strconv.ParseUint(chunks[0], 10, 32)
	if err != nil {
		return ZenohKey{}, fmt.Errorf("%w: rmw_zenoh key %q: domain %q is not a number", ErrNotROS, key, chunks[0])
	}
	n := len(chunks)
	t, err := ParseDDSTypeName(chunks[n-2])
	if err != nil {
		return ZenohKey{}, fmt.Errorf("rmw_zenoh key %q: %w", key, err)
	}
	if err := ValidateTypeHash(chunks[n-1]); err != nil {
		return ZenohKey{}, fmt.Errorf("rmw_zenoh key %q: %w", key, err)
	}
	topic := "/" + strings.Join(chunks[1:n-2], "/")
	if err := ValidateTopicName(topic); err != nil {
		return ZenohKey{}, err
	}
	return ZenohKey{Domain: uint32(dom), Topic: topic, Type: t.String(), TypeHash: chunks[n-1]}, nil
}

// MangleLiveliness prepares one field (enclave, namespace, node name, topic, type, hash)
// for an rmw_zenoh liveliness token: every '/' becomes '%' and an empty field becomes "%"
// (zenoh-wire.md §16.2): "/robot1/chatter" -> "%robot1%chatter".
func MangleLiveliness(s string) string {
	if s == "" {
		return "%"
	}
	return strings.ReplaceAll(s, "/", "%")
}

// DemangleLiveliness is the inverse of MangleLiveliness: "%" gives "" and every other '%'
// becomes '/'. (An empty field and the root namespace "/" both mangle to "%"; callers that
// parse a namespace map "" back to "/".)
func DemangleLiveliness(s string) string {
	if s == "%" {
		return ""
	}
	return strings.ReplaceAll(s, "%", "/")
}
