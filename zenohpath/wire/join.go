package wire

import (
	"math"
	"time"
)

// Join announces a node on a multicast group (zenoh-wire.md §4.8):
//
//	 7 6 5 4 3 2 1 0
//	+-+-+-+---------+
//	|Z|S|T|  JOIN   |  T: lease in seconds; S: size params
//	+-+-+-+---------+
//	|    version    |
//	+---------------+
//	|zidlen-1|X|X|wai|
//	~      zid      ~
//	+---------------+
//	|  resolution   |  if S
//	|  batch_size   |  if S: u16le (default 8192)
//	+---------------+
//	%     lease     %
//	%  next_sn_re   %  reliable
//	%  next_sn_be   %  best effort
//	~    [exts]     ~  0x51 QoS (ZBuf, M), 0x52 Shm (ZBuf, M), 0x27 Patch
type Join struct {
	Version          byte
	WhatAmI          WhatAmI
	ZID              ZID
	HasSize          bool
	Resolution       uint8
	BatchSize        uint16
	Lease            time.Duration
	NextSNReliable   uint64
	NextSNBestEffort uint64
	Patch            uint64 // ext 0x27, 0 = absent
	Exts             []Ext  // QoS 0x51 and Shm 0x52 (known, kept raw) and unknown non-mandatory
}

// TransportID implements TransportMessage.
func (*Join) TransportID() TransportID { return IDJoin }

// Len implements TransportMessage.
func (m Join) Len() int {
	v, _ := leaseWire(m.Lease)
	n := 2 + zidNibbleLen(m.ZID) + VLELen(v) + VLELen(m.NextSNReliable) + VLELen(m.NextSNBestEffort) + extsLen(m.Exts)
	if m.HasSize {
		n += 3
	}
	if m.Patch != 0 {
		n += z64Len(m.Patch)
	}
	return n
}

// Append implements TransportMessage.
func (m Join) Append(b []byte) []byte {
	v, secs := leaseWire(m.Lease)
	p := len(b)
	b = append(b, byte(IDJoin)|boolByte(secs, FlagJoinSeconds)|boolByte(m.HasSize, FlagJoinSize), m.Version)
	b = appendZIDNibble(b, m.ZID, byte(m.WhatAmI)&0x03)
	if m.HasSize {
		b = append(b, m.Resolution, byte(m.BatchSize), byte(m.BatchSize>>8))
	}
	b = AppendVLE(b, v)
	b = AppendVLE(b, m.NextSNReliable)
	b = AppendVLE(b, m.NextSNBestEffort)
	w := newExtWriter(b)
	w.rawBelow(m.Exts, ExtPatch, true)
	if m.Patch != 0 {
		w.z64(ExtPatch, m.Patch)
	}
	w.rawBelow(m.Exts, ExtPatch, false)
	return finishHeader(&w, p)
}

func (x *Join) decode(r *reader, h byte) error {
	*x = Join{Exts: x.Exts[:0], Resolution: DefaultResolution, BatchSize: DefaultBatchMulticast}
	var err error
	if x.Version, err = r.u8("version"); err != nil {
		return err
	}
	var low byte
	if x.ZID, low, err = r.zidNibble("zid"); err != nil {
		return err
	}
	x.WhatAmI = WhatAmI(low & 0x03)
	if x.HasSize = h&FlagJoinSize != 0; x.HasSize {
		if x.Resolution, err = r.u8("resolution"); err != nil {
			return err
		}
		if x.BatchSize, err = r.u16le("batch_size"); err != nil {
			return err
		}
	}
	start := r.i
	v, err := r.vle("lease")
	if err != nil {
		return err
	}
	unit := time.Millisecond
	if h&FlagJoinSeconds != 0 {
		unit = time.Second
	}
	if v > uint64(math.MaxInt64/int64(unit)) {
		return newErr(r.msg, "lease", start, ErrTooLarge)
	}
	x.Lease = time.Duration(v) * unit
	if x.NextSNReliable, err = r.vle("next_sn_reliable"); err != nil {
		return err
	}
	if x.NextSNBestEffort, err = r.vle("next_sn_best_effort"); err != nil {
		return err
	}
	err = r.extChain(&x.Exts, h&FlagZ != 0, x.ext)
	return err
}

// ext takes JOIN's extensions: Patch; QoS and Shm are kept raw (mandatory
// or not) for the caller.
func (x *Join) ext(_ reader, e Ext, _ int) (ok bool, err error) {
	switch e.Header {
	case ExtPatch:
		x.Patch = e.Value
	case ExtJoinQoS, ExtJoinShm:
		x.Exts = append(x.Exts, e)
	default:
		return false, nil
	}
	return true, nil
}

// ParseJoin decodes a Join; b starts after the header byte h.
func ParseJoin(b []byte, h byte) (Join, int, error) {
	return parse(b, "JOIN", func(m *Join, r *reader) error { return m.decode(r, h) })
}
