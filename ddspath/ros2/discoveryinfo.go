package ros2

import (
	"errors"
	"fmt"
	"strings"
)

// The ROS 2 graph on DDS: every rmw_dds_common-based RMW (rmw_cyclonedds_cpp,
// rmw_fastrtps_cpp, rmw_connextdds) publishes, per DDS participant, which
// nodes live in it and which DDS readers and writers each node owns, on the
// DDS topic "ros_discovery_info" (no "rt/" prefix: rmw creates it with
// avoid_ros_namespace_conventions). ROS tools (`ros2 node list`, `ros2 topic
// info -v`) and zenoh-bridge-ros2dds (zenoh-plugin-ros2dds ros_discovery.rs,
// discovered_entities.rs) attach an endpoint to a node only through it; the
// bridge routes only endpoints some node claims.
//
// QoS (rmw_cyclonedds_cpp rmw_node.cpp, Humble, where the participant's
// discovery publisher and subscription are made): RELIABLE, TRANSIENT_LOCAL,
// KEEP_LAST 1 for the writer; the reader KEEP_ALL and ignoring its own
// participant. Each message carries the whole state of the participant.

// DiscoveryInfoTopic is the DDS topic name of the ROS 2 graph messages.
const DiscoveryInfoTopic = "ros_discovery_info"

// ParticipantEntitiesInfoType is the ROS 2 type of DiscoveryInfoTopic.
const ParticipantEntitiesInfoType = "rmw_dds_common/msg/ParticipantEntitiesInfo"

// ParticipantEntitiesInfoDDSType is the DDS type name of DiscoveryInfoTopic
// (TypeToDDS of ParticipantEntitiesInfoType).
const ParticipantEntitiesInfoDDSType = "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_"

// MaxNodeInfoString is the bound of node_namespace and node_name in
// rmw_dds_common/msg/NodeEntitiesInfo ("string<=256"), in bytes.
const MaxNodeInfoString = 256

// GidSize is the serialized size of rmw_dds_common/msg/Gid, in bytes. It
// changed between distros: "char[24] data" up to Humble, "char[16] data"
// from Iron (rmw_dds_common commit 5ab4f59 "Change Gid.msg to be 16 bytes").
// A reader expecting the other size misreads every message, so the gateway
// must be told which one its DDS peers use (zenoh-plugin-ros2dds decides the
// same from ROS_DISTRO, and assumes iron when it is unset).
type GidSize int

const (
	// GidSizeHumble is the Gid of Foxy, Galactic and Humble: the 16 GUID
	// bytes then 8 zero bytes (rmw_cyclonedds_cpp convert_guid_to_gid zeroes
	// the 24-byte rmw_gid_t and copies the GUID into its start).
	GidSizeHumble GidSize = 24
	// GidSizeIron is the Gid of Iron and later: the 16 GUID bytes.
	GidSizeIron GidSize = 16
)

// DefaultROSDistro is the distro assumed by default: Humble, whose DDS is the
// Cyclone DDS 0.10 this gateway links.
const DefaultROSDistro = "humble"

// ErrInvalidDistro is returned for a ROS distro name GidSizeForDistro does
// not know.
var ErrInvalidDistro = errors.New("unknown ROS 2 distro")

// ErrGidSize is returned (with the decode error) when a ros_discovery_info
// message does not decode with the expected Gid size but does with the other
// one: the peers run another distro than configured.
var ErrGidSize = errors.New("ros_discovery_info Gid size mismatch")

// rosDistros are the distros GidSizeForDistro accepts, oldest first.
var rosDistros = []struct {
	name string
	size GidSize
}{
	{"foxy", GidSizeHumble}, {"galactic", GidSizeHumble}, {"humble", GidSizeHumble},
	{"iron", GidSizeIron}, {"jazzy", GidSizeIron}, {"kilted", GidSizeIron}, {"rolling", GidSizeIron},
}

// ROSDistros returns the distro names GidSizeForDistro accepts, oldest first.
func ROSDistros() []string {
	out := make([]string, len(rosDistros))
	for i, d := range rosDistros {
		out[i] = d.name
	}
	return out
}

// GidSizeForDistro returns the Gid size of a ROS 2 distro given by its
// lower-case name (as in ROS_DISTRO). An unknown name gives an error matching
// ErrInvalidDistro that lists the allowed names.
func GidSizeForDistro(distro string) (GidSize, error) {
	for _, d := range rosDistros {
		if d.name == distro {
			return d.size, nil
		}
	}
	return 0, fmt.Errorf("%w %q: want one of %s", ErrInvalidDistro, distro, strings.Join(ROSDistros(), ", "))
}

// bytes is the serialized size; 0 (unset) is the default distro's.
func (s GidSize) bytes() int {
	if s == GidSizeIron {
		return int(GidSizeIron)
	}
	return int(GidSizeHumble)
}

// Gid is an entity's ROS GID as rmw_cyclonedds_cpp makes it: the 16-byte DDS
// GUID (12-byte prefix, 4-byte entity id) as DDS discovery reports it.
type Gid [16]byte

// NodeEntitiesInfo is rmw_dds_common/msg/NodeEntitiesInfo: one node and the
// GIDs of the DDS readers and writers it owns.
type NodeEntitiesInfo struct {
	Namespace string // node_namespace: "/" or "/a/b", at most MaxNodeInfoString bytes
	Name      string // node_name, at most MaxNodeInfoString bytes
	Readers   []Gid  // reader_gid_seq
	Writers   []Gid  // writer_gid_seq
}

// ParticipantEntitiesInfo is rmw_dds_common/msg/ParticipantEntitiesInfo, the
// message of DiscoveryInfoTopic: a participant's GID and all its nodes.
//
// Wire layout (XCDR1; alignment counts from the byte after the 4-byte
// encapsulation header; G = GidSize.bytes(), 24 or 16):
//
//	gid                      G bytes (uint8 array: no alignment)
//	node count               u32 (aligned 4)
//	per node:
//	  node_namespace         u32 length incl. NUL (aligned 4), bytes, NUL
//	  node_name              u32 length incl. NUL (aligned 4), bytes, NUL
//	  reader count           u32 (aligned 4), then count × G bytes
//	  writer count           u32 (aligned 4), then count × G bytes
//
// With G = 24 each GID is the 16 GUID bytes followed by 8 zero bytes; the
// decoder ignores those 8 bytes.
type ParticipantEntitiesInfo struct {
	// GidSize is the serialized Gid size: GidSizeHumble (also for 0) or
	// GidSizeIron.
	GidSize GidSize
	Gid     Gid
	Nodes   []NodeEntitiesInfo
}

var _ Message = (*ParticipantEntitiesInfo)(nil)

// ROSType returns ParticipantEntitiesInfoType.
func (m *ParticipantEntitiesInfo) ROSType() string { return ParticipantEntitiesInfoType }

// Validate checks what the types cannot: the Gid size is 0, 16 or 24, and
// every namespace and name is at most MaxNodeInfoString bytes (a longer one
// would be refused by typed readers).
func (m *ParticipantEntitiesInfo) Validate() error {
	if m.GidSize != 0 && m.GidSize != GidSizeHumble && m.GidSize != GidSizeIron {
		return fmt.Errorf("ros_discovery_info: Gid size %d, want %d or %d", m.GidSize, GidSizeIron, GidSizeHumble)
	}
	for i, n := range m.Nodes {
		if len(n.Namespace) > MaxNodeInfoString || len(n.Name) > MaxNodeInfoString {
			return fmt.Errorf("ros_discovery_info: node %d (%q in %q): namespace and name must be at most %d bytes", i, n.Name, n.Namespace, MaxNodeInfoString)
		}
	}
	return nil
}

// CDRLen is the serialized size with the encapsulation header.
func (m *ParticipantEntitiesInfo) CDRLen() int {
	g := m.GidSize.bytes()
	pos := g
	pos = alignUp(pos, 4) + 4
	for _, n := range m.Nodes {
		pos = strLen(pos, n.Namespace)
		pos = strLen(pos, n.Name)
		pos = alignUp(pos, 4) + 4 + len(n.Readers)*g
		pos = alignUp(pos, 4) + 4 + len(n.Writers)*g
	}
	return EncapsulationSize + pos
}

// AppendCDR appends m as a complete serialized message (encapsulation header
// included). Call Validate first for input from outside.
func (m *ParticipantEntitiesInfo) AppendCDR(b []byte, e Endianness) []byte {
	g := m.GidSize.bytes()
	enc := newEncoder(b, e)
	enc.gid(m.Gid, g)
	enc.u32(uint32(len(m.Nodes)))
	for _, n := range m.Nodes {
		enc.str(n.Namespace)
		enc.str(n.Name)
		for _, seq := range [2][]Gid{n.Readers, n.Writers} {
			enc.u32(uint32(len(seq)))
			for _, id := range seq {
				enc.gid(id, g)
			}
		}
	}
	return enc.b
}

// gid appends a Gid of size bytes: the 16 GUID bytes, zero-padded.
func (e *encoder) gid(id Gid, size int) {
	e.b = append(e.b, id[:]...)
	for i := len(id); i < size; i++ {
		e.b = append(e.b, 0)
	}
}

// minNodeBytes is the fewest bytes one NodeEntitiesInfo takes: two strings of
// length 1 (4+1 each, the second aligned) and two u32 counts.
const minNodeBytes = 4 + 1 + 3 + 4 + 1 + 3 + 4 + 4

// DecodeParticipantEntitiesInfo decodes a ros_discovery_info sample whose
// GIDs are size bytes (GidSizeHumble or GidSizeIron; 0 means Humble).
// Counts are checked against the bytes left before anything is allocated;
// strings longer than MaxNodeInfoString are refused. Failures are a
// *DecodeError; when the message decodes with the other Gid size instead,
// the error also matches ErrGidSize and says which size would work.
func DecodeParticipantEntitiesInfo(cdr []byte, size GidSize) (ParticipantEntitiesInfo, error) {
	m, err := decodeParticipantEntitiesInfo(cdr, size)
	if err == nil {
		return m, nil
	}
	other := GidSizeIron
	if size == GidSizeIron {
		other = GidSizeHumble
	}
	if _, err2 := decodeParticipantEntitiesInfo(cdr, other); err2 == nil {
		return ParticipantEntitiesInfo{}, fmt.Errorf("%w: %w (it decodes with %d-byte GIDs: %s)", ErrGidSize, err, other, distrosOf(other))
	}
	return ParticipantEntitiesInfo{}, err
}

// distrosOf names the distros whose Gid has size s.
func distrosOf(s GidSize) string {
	var names []string
	for _, d := range rosDistros {
		if d.size == s {
			names = append(names, d.name)
		}
	}
	return strings.Join(names, ", ")
}

func decodeParticipantEntitiesInfo(cdr []byte, size GidSize) (ParticipantEntitiesInfo, error) {
	g := size.bytes()
	m := ParticipantEntitiesInfo{GidSize: size}
	if size == 0 {
		m.GidSize = GidSizeHumble
	}
	d := newDecoder(cdr, ParticipantEntitiesInfoType)
	m.Gid = d.gid("gid", g)
	n := d.u32("node_entities_info_seq")
	if d.err == nil && uint64(n)*minNodeBytes > uint64(d.remaining()) {
		d.fail("node_entities_info_seq", fmt.Errorf("%w: %d nodes, %d bytes left", ErrTruncated, n, d.remaining()))
	}
	if d.err == nil && n > 0 {
		m.Nodes = make([]NodeEntitiesInfo, n)
		for i := range m.Nodes {
			nd := &m.Nodes[i]
			nd.Namespace = d.boundedStr("node_namespace")
			nd.Name = d.boundedStr("node_name")
			nd.Readers = d.gidSeq("reader_gid_seq", g)
			nd.Writers = d.gidSeq("writer_gid_seq", g)
			if d.err != nil {
				break
			}
		}
	}
	if err := d.finish(); err != nil {
		return ParticipantEntitiesInfo{}, err
	}
	return m, nil
}

// gid reads a Gid of size bytes and keeps its first 16.
func (d *decoder) gid(field string, size int) Gid {
	var id Gid
	if d.err != nil {
		return id
	}
	if d.remaining() < size {
		d.fail(field, ErrTruncated)
		return id
	}
	copy(id[:], d.b[d.off:d.off+len(id)])
	d.off += size
	return id
}

// gidSeq reads a sequence of Gids; an empty one decodes as nil.
func (d *decoder) gidSeq(field string, size int) []Gid {
	n := d.u32(field)
	if d.err != nil || n == 0 {
		return nil
	}
	if uint64(n)*uint64(size) > uint64(d.remaining()) {
		d.fail(field, fmt.Errorf("%w: %d GIDs of %d bytes, %d bytes left", ErrTruncated, n, size, d.remaining()))
		return nil
	}
	out := make([]Gid, n)
	for i := range out {
		out[i] = d.gid(field, size)
	}
	return out
}

// boundedStr reads a string<=MaxNodeInfoString.
func (d *decoder) boundedStr(field string) string {
	at := d.off
	s := d.str(field)
	if d.err == nil && len(s) > MaxNodeInfoString {
		d.off = at
		d.fail(field, fmt.Errorf("%w: %d bytes, bound %d", ErrMalformed, len(s), MaxNodeInfoString))
		return ""
	}
	return s
}
