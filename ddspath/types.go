package ddspath

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/picobridge/picobridge/ddspath/ros2"
)

// Sentinel errors. Cyclone result codes map onto them through *Error.Is.
var (
	// ErrUnavailable is returned by every constructor when the binary was
	// built without cgo or without the "cyclonedds" build tag.
	ErrUnavailable = errors.New("ddspath: built without Cyclone DDS (needs cgo and -tags cyclonedds)")
	// ErrClosed is returned by operations on a closed participant, reader or writer.
	ErrClosed = errors.New("ddspath: closed")
	// ErrTimeout is returned by Write when a RELIABLE writer stayed blocked
	// longer than QoS.MaxBlocking (DDS_RETCODE_TIMEOUT), and by waits.
	ErrTimeout = errors.New("ddspath: timeout")
	// ErrDomainConfig is returned by Open when the domain id is already in
	// use in this process with a different Cyclone configuration.
	ErrDomainConfig = errors.New("ddspath: domain already open with another configuration")
)

// Cyclone DDS result codes (dds/ddsrt/retcode.h, 0.10.2).
const (
	retOK                 = 0
	retError              = -1
	retUnsupported        = -2
	retBadParameter       = -3
	retPreconditionNotMet = -4
	retOutOfResources     = -5
	retAlreadyDeleted     = -9
	retTimeout            = -10
	retNoData             = -11
	retIllegalOperation   = -12
)

// Error is a failed Cyclone call: the operation and its DDS return code.
type Error struct {
	Op   string // e.g. "dds_write_ts"
	Code int    // DDS_RETCODE_* (negative)
	Msg  string // dds_strretcode
}

func (e *Error) Error() string {
	return fmt.Sprintf("ddspath: %s: %s (%d)", e.Op, e.Msg, e.Code)
}

// Is makes errors.Is(err, ErrTimeout) and errors.Is(err, ErrClosed) work for
// the matching DDS return codes.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrTimeout:
		return e.Code == retTimeout
	case ErrClosed:
		return e.Code == retAlreadyDeleted
	}
	return false
}

// Reliability is the DDS RELIABILITY QoS kind.
type Reliability int

const (
	BestEffort Reliability = iota
	Reliable
)

func (r Reliability) String() string {
	if r == Reliable {
		return "RELIABLE"
	}
	return "BEST_EFFORT"
}

// Durability is the DDS DURABILITY QoS kind (only the two ROS 2 uses).
type Durability int

const (
	Volatile Durability = iota
	TransientLocal
	// Transient and Persistent are only reported by discovery.
	Transient
	Persistent
)

func (d Durability) String() string {
	switch d {
	case TransientLocal:
		return "TRANSIENT_LOCAL"
	case Transient:
		return "TRANSIENT"
	case Persistent:
		return "PERSISTENT"
	}
	return "VOLATILE"
}

// History is the DDS HISTORY QoS kind.
type History int

const (
	KeepLast History = iota
	KeepAll
)

func (h History) String() string {
	if h == KeepAll {
		return "KEEP_ALL"
	}
	return "KEEP_LAST"
}

// Unlimited is DDS_LENGTH_UNLIMITED for QoS.MaxSamples.
const Unlimited int32 = -1

// QoS is the subset of DDS QoS a raw bridge needs. The zero value is
// BEST_EFFORT, VOLATILE, KEEP_LAST with depth 1 after Normalize.
type QoS struct {
	Reliability Reliability
	// MaxBlocking is the reliability max_blocking_time: how long a RELIABLE
	// KEEP_ALL writer may block on a full writer history cache before Write
	// returns ErrTimeout. 0 means the DDS default, 100 ms; a negative value
	// means infinite (what rmw_cyclonedds uses).
	MaxBlocking time.Duration
	History     History
	// Depth is the KEEP_LAST depth (ignored for KEEP_ALL); 0 means 1.
	Depth int32
	// MaxSamples is resource_limits.max_samples (and max_samples_per_instance);
	// 0 or Unlimited means unlimited. Cyclone 0.10.2 enforces it on readers
	// only (dds-cyclone.md §4).
	MaxSamples int32
	Durability Durability
	// UserData is the USER_DATA QoS, e.g. "typehash=RIHS01_<64 hex>;".
	UserData []byte
	// IgnoreLocal drops samples from writers of the same participant
	// (DDS_IGNORELOCAL_PARTICIPANT); used to avoid bridge loops.
	IgnoreLocal bool
}

// DefaultMaxBlocking is the DDS specification default max_blocking_time.
const DefaultMaxBlocking = 100 * time.Millisecond

// ROSDefaultQoS is the ROS 2 default profile: RELIABLE, VOLATILE, KEEP_LAST 10.
func ROSDefaultQoS() QoS {
	return QoS{Reliability: Reliable, History: KeepLast, Depth: 10, Durability: Volatile}
}

// SensorDataQoS is the ROS 2 sensor-data profile: BEST_EFFORT, VOLATILE, KEEP_LAST 5.
func SensorDataQoS() QoS {
	return QoS{Reliability: BestEffort, History: KeepLast, Depth: 5, Durability: Volatile}
}

// Normalize fills defaults: Depth 1, MaxBlocking 100 ms, MaxSamples unlimited.
func (q QoS) Normalize() QoS {
	if q.Depth <= 0 {
		q.Depth = 1
	}
	if q.MaxBlocking == 0 {
		q.MaxBlocking = DefaultMaxBlocking
	}
	if q.MaxSamples <= 0 {
		q.MaxSamples = Unlimited
	}
	return q
}

func (q QoS) String() string {
	var b strings.Builder
	b.WriteString(q.Reliability.String())
	if q.Reliability == Reliable {
		fmt.Fprintf(&b, "(max_blocking=%v)", q.MaxBlocking)
	}
	b.WriteString(" " + q.Durability.String() + " " + q.History.String())
	if q.History == KeepLast {
		fmt.Fprintf(&b, " %d", q.Depth)
	}
	if q.MaxSamples > 0 {
		fmt.Fprintf(&b, " max_samples=%d", q.MaxSamples)
	}
	return b.String()
}

// GUID is a DDS entity GUID (12-byte prefix + 4-byte entity id).
type GUID [16]byte

func (g GUID) String() string { return hex.EncodeToString(g[:]) }

// Sample is one received sample.
type Sample struct {
	Topic    string
	TypeName string
	// CDR is a Go-owned copy of the serialized sample, 4-byte encapsulation
	// header included (00 01 00 00 for XCDR1 little endian).
	CDR []byte
	// SourceTimestamp is the writer's source timestamp (writer clock).
	SourceTimestamp time.Time
	// ReceivedAt is when ddspath took the sample from the reader cache.
	ReceivedAt time.Time
	// PublicationHandle is the instance handle of the remote writer
	// (Reader.WriterGUID maps it to a GUID).
	PublicationHandle uint64
}

// EndpointKind says whether a discovered endpoint is a writer or a reader.
type EndpointKind int

const (
	Publication EndpointKind = iota
	Subscription
)

func (k EndpointKind) String() string {
	if k == Subscription {
		return "subscription"
	}
	return "publication"
}

// Endpoint is a remote writer (Publication) or reader (Subscription) as
// announced by DDS discovery (SEDP), or its disappearance (Alive false).
type Endpoint struct {
	Kind        EndpointKind
	GUID        GUID
	Participant GUID
	Alive       bool
	Topic       string // DDS topic name, e.g. "rt/scan"
	TypeName    string // e.g. "sensor_msgs::msg::dds_::LaserScan_"
	// QoS as announced. History and resource limits are not part of standard
	// SEDP data: Cyclone peers send them as an extension, other vendors show
	// up as KEEP_LAST 1 / unlimited (dds-cyclone.md §7).
	QoS QoS
	// TypeHash is the ROS 2 (Iron+) "RIHS01_<hex>" from USER_DATA, or "".
	TypeHash string
}

// TypeHashFromUserData extracts the ROS 2 type hash ("RIHS01_…") from an
// endpoint USER_DATA of the form "k=v;typehash=RIHS01_…;" or returns "".
// The parsing is ros2.TypeHashFromUserData's.
func TypeHashFromUserData(ud []byte) string {
	h, _ := ros2.TypeHashFromUserData(ud)
	return h
}

// Overflow is what a reader's bounded queue does when it is full.
type Overflow int

const (
	// DropOldest discards the oldest queued sample to make room (counted).
	DropOldest Overflow = iota
	// DropNewest discards the arriving sample (counted).
	DropNewest
	// Block stops taking from DDS until the consumer makes room; the DDS
	// reader cache then fills and its QoS decides (KEEP_LAST overwrites,
	// KEEP_ALL pushes back on reliable writers). Not allowed in listener mode.
	Block
)

func (o Overflow) String() string {
	switch o {
	case DropNewest:
		return "drop-newest"
	case Block:
		return "block"
	}
	return "drop-oldest"
}

// ReaderStats are a reader's counters.
type ReaderStats struct {
	Received uint64 // valid samples taken from DDS
	Dropped  uint64 // samples discarded by the overflow policy
	Queued   int    // samples waiting in the queue now
	// Lost is Cyclone's SAMPLE_LOST total_count. Cyclone 0.10.2 raises it
	// only for samples an instance refuses (e.g. BY_SOURCE_TIMESTAMP order),
	// not for a reliable writer's GAP; see docs/dds.md.
	Lost uint64
	// Rejected is Cyclone's SAMPLE_REJECTED total_count: samples the reader
	// cache refused for its resource limits (a reliable writer retransmits
	// them; for a best-effort one they are gone).
	Rejected uint64
	// Gaps counts writer sequence numbers skipped between two samples of
	// one remote writer taken by this reader (known only for samples
	// received from another process): samples a reliable KEEP_LAST writer
	// overwrote before we acknowledged them (its GAP), samples the reader's
	// own KEEP_LAST cache overwrote before they were taken, or best-effort
	// samples lost on the network. Cyclone 0.10.2 reports none of these.
	Gaps uint64
}

type readerOptions struct {
	queueLen int
	overflow Overflow
	listener bool
	handler  func(*Sample)
}

// ReaderOption configures NewReader.
type ReaderOption func(*readerOptions)

// DefaultQueueLen is the default bounded queue length of a reader.
const DefaultQueueLen = 256

// WithQueue sets the bounded queue length (≥ 1) and its overflow policy.
func WithQueue(n int, policy Overflow) ReaderOption {
	return func(o *readerOptions) {
		if n < 1 {
			n = 1
		}
		o.queueLen, o.overflow = n, policy
	}
}

// WithListener makes Cyclone's data-available listener (running on a
// Cyclone thread) drain the reader into the queue instead of a waitset
// goroutine. Block overflow is not allowed with it.
func WithListener() ReaderOption { return func(o *readerOptions) { o.listener = true } }

// WithHandler calls fn for each sample instead of queueing it, on the
// reception goroutine (default mode) or on a Cyclone thread (listener mode):
// fn must only copy and enqueue, never block and never close DDS entities.
// The sample is owned by fn. Reader.C then returns a closed channel.
func WithHandler(fn func(*Sample)) ReaderOption { return func(o *readerOptions) { o.handler = fn } }

func buildReaderOptions(opts []ReaderOption) (readerOptions, error) {
	o := readerOptions{queueLen: DefaultQueueLen, overflow: DropOldest}
	for _, f := range opts {
		f(&o)
	}
	if o.listener && o.overflow == Block && o.handler == nil {
		return o, fmt.Errorf("ddspath: Block overflow would block a Cyclone thread: not allowed with WithListener")
	}
	return o, nil
}

// WriterStats are a writer's counters.
type WriterStats struct {
	Written  uint64 // successful writes
	Timeouts uint64 // writes that returned ErrTimeout
	Errors   uint64 // other failed writes
}

// Vendor ids: the first two bytes of an RTPS GUID prefix (ros2-services.md §2.4).
var (
	VendorCyclone = [2]byte{0x01, 0x10}
	VendorFastDDS = [2]byte{0x01, 0x0f}
)

// Vendor is the RTPS vendor id in the GUID's prefix.
func (g GUID) Vendor() [2]byte { return [2]byte{g[0], g[1]} }
