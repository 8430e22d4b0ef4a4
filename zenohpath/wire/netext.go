package wire

import (
	"math"
	"time"
)

// NetExt holds the extensions that several network messages share
// (zenoh-wire.md §8.2). It is embedded in Push, Request, Response,
// ResponseFinal, Declare, Interest and NetworkOAM; each Has* flag says
// whether the extension is present (absent QoS means DefaultQoS).
type NetExt struct {
	HasQoS       bool
	QoS          QoS // ext 0x21 (Z64), §8.1
	HasTimestamp bool
	Timestamp    Timestamp // ext 0x42 (ZBuf), §1.4
	HasNodeID    bool
	NodeID       uint16 // ext 0x33 (Z64, mandatory): router↔router only, never send to pico
}

// EffectiveQoS returns QoS, or DefaultQoS when the extension is absent
// (how both implementations decode a missing extension, §8.1).
func (x NetExt) EffectiveQoS() QoS {
	if x.HasQoS {
		return x.QoS
	}
	return DefaultQoS
}

func (x *NetExt) extLen() int {
	n := 0
	if x.HasQoS {
		n += z64Len(uint64(x.QoS))
	}
	if x.HasTimestamp {
		n += zbufLen(x.Timestamp.Len())
	}
	if x.HasNodeID {
		n += z64Len(uint64(x.NodeID))
	}
	return n
}

func (x *NetExt) write(w *extWriter) {
	if x.HasQoS {
		w.z64(ExtQoS, uint64(x.QoS))
	}
	if x.HasTimestamp {
		w.hdr(ExtTimestamp)
		w.b = AppendVLE(w.b, uint64(x.Timestamp.Len()))
		w.b = x.Timestamp.Append(w.b)
	}
	if x.HasNodeID {
		w.z64(ExtNodeID, uint64(x.NodeID))
	}
}

// take interprets e if it is one of the common extensions.
func (x *NetExt) take(r reader, e Ext, start int) (bool, error) {
	var err error
	switch e.Header {
	case ExtQoS:
		x.HasQoS = true
		x.QoS, err = r.qosExt(e, start)
	case ExtTimestamp:
		x.HasTimestamp = true
		x.Timestamp, err = r.timestampExt(e, start)
	case ExtNodeID:
		if e.Value > math.MaxUint16 {
			return true, newErr(r.msg, "node_id", start, ErrTooLarge)
		}
		x.HasNodeID = true
		x.NodeID = uint16(e.Value)
	default:
		return false, nil
	}
	return true, err
}

func durationMs(r *reader, v uint64, start int, field string) (time.Duration, error) {
	if v > uint64(math.MaxInt64/int64(time.Millisecond)) {
		return 0, newErr(r.msg, field, start, ErrTooLarge)
	}
	return time.Duration(v) * time.Millisecond, nil
}
