package ros2

import (
	"fmt"
	"strings"
)

// DDS topic prefixes used by the ROS 2 DDS rmw layers (rmw_dds_common, rmw_cyclonedds
// namespace_prefix.hpp): topics "rt", service requests "rq", service replies "rr".
const (
	TopicPrefix          = "rt"
	ServiceRequestPrefix = "rq"
	ServiceReplyPrefix   = "rr"

	// ServiceRequestSuffix and ServiceReplySuffix are appended to a service's DDS topic
	// names: /add_two_ints -> rq/add_two_intsRequest, rr/add_two_intsReply.
	ServiceRequestSuffix = "Request"
	ServiceReplySuffix   = "Reply"
)

// MaxTopicNameLength is the longest fully qualified topic or service name, in bytes:
// 255 (implementation limit) minus 8 reserved for the DDS prefixes
// (rmw/validate_full_topic_name.h, RMW_TOPIC_MAX_NAME_LENGTH).
const MaxTopicNameLength = 255 - 8

// MaxNodeNameLength is the longest node name, in bytes (rmw/validate_node_name.h).
const MaxNodeNameLength = 255

// TopicKind tells what a DDS topic name carries.
type TopicKind int

// Kinds of DDS topic names.
const (
	KindTopic          TopicKind = iota + 1 // rt/<name>
	KindServiceRequest                      // rq/<name>Request
	KindServiceReply                        // rr/<name>Reply
)

func (k TopicKind) String() string {
	switch k {
	case KindTopic:
		return "topic"
	case KindServiceRequest:
		return "service request"
	case KindServiceReply:
		return "service reply"
	}
	return fmt.Sprintf("TopicKind(%d)", int(k))
}

func nameErr(name string, i int, reason string) error {
	return &NameError{Name: name, Index: i, Reason: reason}
}

// ValidateTopicName checks a fully qualified topic or service name against the rules of
// rmw_validate_full_topic_name: not empty, starts with '/', does not end with '/', only
// [A-Za-z0-9_/], no "//", no token starting with a digit, at most MaxTopicNameLength bytes.
// Relative names ("scan", "~/scan") and substitutions ("{node}") must be expanded first
// (ExpandTopicName).
func ValidateTopicName(name string) error {
	if name == "" {
		return nameErr(name, -1, "empty")
	}
	if name[0] != '/' {
		return nameErr(name, 0, "not absolute (must start with '/')")
	}
	if name == "/" {
		return nameErr(name, 0, "the root namespace is not a topic name")
	}
	if name[len(name)-1] == '/' {
		return nameErr(name, len(name)-1, "ends with '/'")
	}
	if err := validateTokens(name); err != nil {
		return err
	}
	if len(name) > MaxTopicNameLength {
		return nameErr(name, MaxTopicNameLength, fmt.Sprintf("longer than %d bytes", MaxTopicNameLength))
	}
	return nil
}

// validateTokens checks characters, repeated slashes and tokens starting with a digit.
func validateTokens(name string) error {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '/':
			if i > 0 && name[i-1] == '/' {
				return nameErr(name, i, "repeated '/'")
			}
		case c >= '0' && c <= '9':
			if i == 0 || name[i-1] == '/' {
				return nameErr(name, i, "token starts with a digit")
			}
		case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		default:
			return nameErr(name, i, fmt.Sprintf("character %q not allowed (only A-Z a-z 0-9 _ /)", c))
		}
	}
	return nil
}

// ValidateNamespace checks a node namespace: "/" or a valid fully qualified name.
func ValidateNamespace(ns string) error {
	if ns == "/" {
		return nil
	}
	return ValidateTopicName(ns)
}

// ValidateNodeName checks a node name: not empty, only [A-Za-z0-9_], not starting with a
// digit, at most MaxNodeNameLength bytes (rmw_validate_node_name).
func ValidateNodeName(node string) error {
	if node == "" {
		return nameErr(node, -1, "empty node name")
	}
	for i := 0; i < len(node); i++ {
		c := node[i]
		switch {
		case c >= '0' && c <= '9':
			if i == 0 {
				return nameErr(node, 0, "node name starts with a digit")
			}
		case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		default:
			return nameErr(node, i, fmt.Sprintf("character %q not allowed in a node name", c))
		}
	}
	if len(node) > MaxNodeNameLength {
		return nameErr(node, MaxNodeNameLength, fmt.Sprintf("node name longer than %d bytes", MaxNodeNameLength))
	}
	return nil
}

// ExpandTopicName resolves name against a node's namespace and name the way rcl does for
// the simple cases: "/abs" stays, "rel" becomes "<ns>/rel", "~" and "~/rel" become
// "<ns>/<node>" and "<ns>/<node>/rel". node may be empty unless name starts with '~'. The
// result is validated. Substitutions ("{node}", "{ns}") are not supported and rejected.
func ExpandTopicName(namespace, node, name string) (string, error) {
	if err := ValidateNamespace(namespace); err != nil {
		return "", err
	}
	if name == "" {
		return "", nameErr(name, -1, "empty")
	}
	if i := strings.IndexAny(name, "{}"); i >= 0 {
		return "", nameErr(name, i, "substitutions are not supported")
	}
	base := strings.TrimSuffix(namespace, "/")
	var full string
	switch {
	case name[0] == '/':
		full = name
	case name == "~" || strings.HasPrefix(name, "~/"):
		if err := ValidateNodeName(node); err != nil {
			return "", err
		}
		full = base + "/" + node + name[1:]
	case name[0] == '~':
		return "", nameErr(name, 1, "'~' must be followed by '/'")
	default:
		full = base + "/" + name
	}
	if err := ValidateTopicName(full); err != nil {
		return "", err
	}
	return full, nil
}

// TopicToDDS maps a fully qualified ROS 2 topic name to its DDS topic name:
// "/scan" -> "rt/scan", "/robot1/scan" -> "rt/robot1/scan".
func TopicToDDS(name string) (string, error) {
	if err := ValidateTopicName(name); err != nil {
		return "", err
	}
	return TopicPrefix + name, nil
}

// TopicFromDDS maps a DDS topic name back to the ROS 2 topic name: "rt/scan" -> "/scan".
// Names without the "rt/" prefix give ErrNotROS.
func TopicFromDDS(dds string) (string, error) {
	name, kind, err := ParseDDSTopic(dds)
	if err != nil {
		return "", err
	}
	if kind != KindTopic {
		return "", fmt.Errorf("%w: %q is a %s, not a topic", ErrNotROS, dds, kind)
	}
	return name, nil
}

// ServiceToDDS maps a fully qualified service name to its request and reply DDS topics:
// "/add_two_ints" -> ("rq/add_two_intsRequest", "rr/add_two_intsReply").
func ServiceToDDS(name string) (request, reply string, err error) {
	if err := ValidateTopicName(name); err != nil {
		return "", "", err
	}
	return ServiceRequestPrefix + name + ServiceRequestSuffix, ServiceReplyPrefix + name + ServiceReplySuffix, nil
}

// ServiceFromDDS maps a service request or reply DDS topic back to the service name and
// tells which of the two it was.
func ServiceFromDDS(dds string) (name string, kind TopicKind, err error) {
	name, kind, err = ParseDDSTopic(dds)
	if err != nil {
		return "", 0, err
	}
	if kind == KindTopic {
		return "", 0, fmt.Errorf("%w: %q is a topic, not a service", ErrNotROS, dds)
	}
	return name, kind, nil
}

// ParseDDSTopic splits any ROS 2 DDS topic name into the ROS name and its kind. The ROS
// name is validated.
func ParseDDSTopic(dds string) (name string, kind TopicKind, err error) {
	prefix, rest, ok := strings.Cut(dds, "/")
	if !ok {
		return "", 0, fmt.Errorf("%w: %q has no prefix", ErrNotROS, dds)
	}
	rest = "/" + rest
	switch prefix {
	case TopicPrefix:
		kind = KindTopic
	case ServiceRequestPrefix:
		kind = KindServiceRequest
		if !strings.HasSuffix(rest, ServiceRequestSuffix) {
			return "", 0, fmt.Errorf("%w: %q lacks the %q suffix", ErrNotROS, dds, ServiceRequestSuffix)
		}
		rest = strings.TrimSuffix(rest, ServiceRequestSuffix)
	case ServiceReplyPrefix:
		kind = KindServiceReply
		if !strings.HasSuffix(rest, ServiceReplySuffix) {
			return "", 0, fmt.Errorf("%w: %q lacks the %q suffix", ErrNotROS, dds, ServiceReplySuffix)
		}
		rest = strings.TrimSuffix(rest, ServiceReplySuffix)
	default:
		return "", 0, fmt.Errorf("%w: %q: unknown prefix %q", ErrNotROS, dds, prefix)
	}
	if err := ValidateTopicName(rest); err != nil {
		return "", 0, err
	}
	return rest, kind, nil
}
