package wire

// Priority of a message (zenoh-wire.md §8.1): 0 Control (highest) … 7
// Background (lowest); 5 Data is the default.
type Priority uint8

// Priorities (zenoh-wire.md §8.1).
const (
	PriorityControl         Priority = 0
	PriorityRealTime        Priority = 1
	PriorityInteractiveHigh Priority = 2
	PriorityInteractiveLow  Priority = 3
	PriorityDataHigh        Priority = 4
	PriorityData            Priority = 5 // default
	PriorityDataLow         Priority = 6
	PriorityBackground      Priority = 7
)

var priorityNames = [8]string{"Control", "RealTime", "InteractiveHigh", "InteractiveLow", "DataHigh", "Data", "DataLow", "Background"}

func (p Priority) String() string {
	if p < 8 {
		return priorityNames[p]
	}
	return "Priority(" + itoa(uint64(p)) + ")"
}

// CongestionControl says what a sender's queue does when full (advisory).
type CongestionControl uint8

// Congestion control modes (zenoh-wire.md §8.1, bit D).
const (
	CongestionDrop  CongestionControl = 0
	CongestionBlock CongestionControl = 1
)

// QoS is the network QoS byte, the value of ext 0x21 (Z64) on PUSH,
// REQUEST, RESPONSE, RESPONSE_FINAL, DECLARE, INTEREST and OAM
// (zenoh-wire.md §8.1):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+-+-+-----+
//	|0|r|F|E|D|prio |  prio 0..7 · D 0x08 congestion BLOCK (0 = DROP)
//	+-+-+-+-+-+-----+  E 0x10 express · F 0x20 BlockFirst (unstable Rust)
//
// Both implementations omit the extension when the value is DefaultQoS
// (0x05: Data, Drop, not express) and decode a missing extension as 0x05.
type QoS uint8

// QoS bits.
const (
	QoSPriorityMask QoS = 0x07
	QoSBlock        QoS = 0x08
	QoSExpress      QoS = 0x10
	QoSBlockFirst   QoS = 0x20
	DefaultQoS      QoS = 0x05 // Data, Drop, not express
	DeclareQoS      QoS = 0x08 // Rust's default for Declare/Interest/OAM: Control, Block
	RequestQoS      QoS = 0x0d // Rust's and pico's default for Request: Data, Block
)

// NewQoS builds a QoS byte.
func NewQoS(p Priority, cc CongestionControl, express bool) QoS {
	q := QoS(p) & QoSPriorityMask
	if cc == CongestionBlock {
		q |= QoSBlock
	}
	if express {
		q |= QoSExpress
	}
	return q
}

// Priority returns the priority bits.
func (q QoS) Priority() Priority { return Priority(q & QoSPriorityMask) }

// CongestionControl returns Block when the D bit is set.
func (q QoS) CongestionControl() CongestionControl {
	if q&QoSBlock != 0 {
		return CongestionBlock
	}
	return CongestionDrop
}

// Express reports the E bit: do not batch, send now.
func (q QoS) Express() bool { return q&QoSExpress != 0 }

func (q QoS) String() string {
	s := "prio " + itoa(uint64(q.Priority()))
	if q.CongestionControl() == CongestionBlock {
		s += ",block"
	} else {
		s += ",drop"
	}
	if q.Express() {
		s += ",express"
	}
	return s
}

func (r *reader) qosExt(e Ext, start int) (QoS, error) {
	if e.Value > 0xff {
		return 0, newErr(r.msg, "qos", start, ErrTooLarge)
	}
	return QoS(e.Value), nil
}
