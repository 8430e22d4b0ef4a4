package routing

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// OAMLinkState is the network OAM id of a link-state list
// (OAM_LINKSTATE, zenoh-mesh-auth.md §1.1).
const OAMLinkState uint16 = 0x0001

// LinkStateQoS is the QoS ext Rust writes on link-state OAMs: priority
// Control, congestion control Block (§1.1).
var LinkStateQoS = wire.NewQoS(wire.PriorityControl, wire.CongestionBlock, false)

// Option bits of one LinkState (§1.2). Unknown bits are ignored on decode.
const (
	optZID      = 0x01 // P: zid present
	optWhatAmI  = 0x02 // W: whatami present
	optLocators = 0x04 // L: locators present
	optWeights  = 0x08 // H: link weights present (since 1.4)
	optGateway  = 0x10 // G: node is a region gateway (since 1.9)
)

// MaxPSID is the largest node index accepted: NodeId exts are u16 (§2.6),
// so no larger index can ever be referred to.
const MaxPSID = 0xffff

// LinkState is one node of a LinkStateList as the sender describes it, in
// the sender's numbering (§1.2, §1.3).
type LinkState struct {
	// PSID is the node's index in the sender's graph (0 = the sender).
	PSID uint64
	// SN is the node's own state counter; a receiver keeps only a higher one.
	SN uint64
	// ZID is the node's id when HasZID (the first time a sender describes a
	// node on a link; later updates may leave it out).
	HasZID bool
	ZID    wire.ZID
	// WhatAmI is the node's role when HasWhatAmI (absent = router).
	HasWhatAmI bool
	WhatAmI    wire.WhatAmI
	// Locators, when HasLocators: the node's locators as it announces them.
	HasLocators bool
	Locators    []string
	// Links are the neighbours the node claims, as PSIDs of the sender.
	Links []uint64
	// Weights, when non-nil, has one weight per link (0 = not set).
	Weights []uint16
	// Gateway is the G bit (a south-region gateway, Rust ≥ 1.9).
	Gateway bool
}

// whatamiByte is the raw byte of a role in a link-state (router 0x01,
// peer 0x02, client 0x04; zenoh-mesh-auth.md §1.2).
func whatamiByte(w wire.WhatAmI) byte { return 1 << (w & 3) }

func whatamiOf(b byte) (wire.WhatAmI, bool) {
	switch b {
	case 0x01:
		return wire.WhatAmIRouter, true
	case 0x02:
		return wire.WhatAmIPeer, true
	case 0x04:
		return wire.WhatAmIClient, true
	}
	return 0, false
}

// AppendLinkStateList appends the encoding of list (count, then each
// LinkState, §1.2) to b. Weights are written only when len(Weights) equals
// len(Links).
func AppendLinkStateList(b []byte, list []LinkState) []byte {
	b = wire.AppendVLE(b, uint64(len(list)))
	for i := range list {
		s := &list[i]
		var opt uint64
		if s.HasZID {
			opt |= optZID
		}
		if s.HasWhatAmI {
			opt |= optWhatAmI
		}
		if s.HasLocators {
			opt |= optLocators
		}
		weights := s.Weights != nil && len(s.Weights) == len(s.Links)
		if weights {
			opt |= optWeights
		}
		if s.Gateway {
			opt |= optGateway
		}
		b = wire.AppendVLE(b, opt)
		b = wire.AppendVLE(b, s.PSID)
		b = wire.AppendVLE(b, s.SN)
		if s.HasZID {
			z := s.ZID.Bytes()
			b = wire.AppendVLE(b, uint64(len(z)))
			b = append(b, z...)
		}
		if s.HasWhatAmI {
			b = append(b, whatamiByte(s.WhatAmI))
		}
		if s.HasLocators {
			b = wire.AppendVLE(b, uint64(len(s.Locators)))
			for _, l := range s.Locators {
				b = wire.AppendVLE(b, uint64(len(l)))
				b = append(b, l...)
			}
		}
		b = wire.AppendVLE(b, uint64(len(s.Links)))
		for _, l := range s.Links {
			b = wire.AppendVLE(b, l)
		}
		if weights {
			for _, w := range s.Weights {
				b = wire.AppendVLE(b, uint64(w))
			}
		}
	}
	return b
}

// ErrLinkState is wrapped by every decoding error of ParseLinkStateList.
var ErrLinkState = errors.New("routing: malformed link-state")

type lsReader struct {
	b []byte
	i int
}

func (r *lsReader) fail(what string, err error) error {
	if err == nil {
		return fmt.Errorf("%w: %s at byte %d", ErrLinkState, what, r.i)
	}
	return fmt.Errorf("%w: %s at byte %d: %v", ErrLinkState, what, r.i, err)
}

func (r *lsReader) vle(what string) (uint64, error) {
	v, n, err := wire.ParseVLE(r.b[r.i:])
	if err != nil {
		return 0, r.fail(what, err)
	}
	r.i += n
	return v, nil
}

// count reads a VLE count of items of at least min bytes each, refusing a
// count that the remaining bytes cannot hold (no allocation from a lie).
func (r *lsReader) count(what string, min int) (int, error) {
	v, err := r.vle(what)
	if err != nil {
		return 0, err
	}
	if min > 0 && v > uint64((len(r.b)-r.i)/min) {
		return 0, r.fail(what+" larger than the bytes left", nil)
	}
	return int(v), nil
}

func (r *lsReader) bytes(what string) ([]byte, error) {
	n, err := r.count(what, 1)
	if err != nil {
		return nil, err
	}
	out := r.b[r.i : r.i+n]
	r.i += n
	return out, nil
}

// ParseLinkStateList decodes a LinkStateList (the payload of a link-state
// OAM, §1.2). It refuses: a truncated input or a count larger than the
// bytes left, a whatami byte
// outside {1, 2, 4}, an invalid or all-zero ZID, a PSID or link above MaxPSID, a weight
// above 65535, a locator that is not UTF-8. Unknown option bits are
// ignored (§1.2). Errors wrap ErrLinkState. The result does not alias b.
func ParseLinkStateList(b []byte) ([]LinkState, error) {
	r := &lsReader{b: b}
	n, err := r.count("count", 3)
	if err != nil {
		return nil, err
	}
	out := make([]LinkState, 0, n)
	for range n {
		var s LinkState
		opt, err := r.vle("options")
		if err != nil {
			return nil, err
		}
		if s.PSID, err = r.vle("psid"); err != nil {
			return nil, err
		}
		if s.PSID > MaxPSID {
			return nil, r.fail(fmt.Sprintf("psid %d above %d", s.PSID, MaxPSID), nil)
		}
		if s.SN, err = r.vle("sn"); err != nil {
			return nil, err
		}
		if opt&optZID != 0 {
			z, err := r.bytes("zid")
			if err != nil {
				return nil, err
			}
			if s.ZID, err = wire.NewZID(z); err != nil {
				return nil, r.fail("zid", err)
			}
			if allZero(z) {
				return nil, r.fail("all-zero zid", nil)
			}
			s.HasZID = true
		}
		if opt&optWhatAmI != 0 {
			if r.i >= len(r.b) {
				return nil, r.fail("whatami", nil)
			}
			w, ok := whatamiOf(r.b[r.i])
			if !ok {
				return nil, r.fail(fmt.Sprintf("whatami %#x", r.b[r.i]), nil)
			}
			r.i++
			s.HasWhatAmI, s.WhatAmI = true, w
		}
		if opt&optLocators != 0 {
			nl, err := r.count("locator count", 1)
			if err != nil {
				return nil, err
			}
			s.HasLocators = true
			s.Locators = make([]string, 0, nl)
			for range nl {
				l, err := r.bytes("locator")
				if err != nil {
					return nil, err
				}
				if !utf8.Valid(l) {
					return nil, r.fail("locator not UTF-8", nil)
				}
				s.Locators = append(s.Locators, string(l))
			}
		}
		nl, err := r.count("link count", 1)
		if err != nil {
			return nil, err
		}
		s.Links = make([]uint64, 0, nl)
		for range nl {
			l, err := r.vle("link")
			if err != nil {
				return nil, err
			}
			if l > MaxPSID {
				return nil, r.fail(fmt.Sprintf("link psid %d above %d", l, MaxPSID), nil)
			}
			s.Links = append(s.Links, l)
		}
		if opt&optWeights != 0 {
			s.Weights = make([]uint16, 0, nl)
			for range nl {
				w, err := r.vle("weight")
				if err != nil {
					return nil, err
				}
				if w > 0xffff {
					return nil, r.fail(fmt.Sprintf("weight %d above 65535", w), nil)
				}
				s.Weights = append(s.Weights, uint16(w))
			}
		}
		s.Gateway = opt&optGateway != 0
		out = append(out, s)
	}
	return out, nil // trailing bytes are ignored, as Rust's reader does
}

// NewLinkStateOAM wraps an encoded list in the network OAM Rust sends
// (header 0xDF: ZBuf body, QoS ext Control+Block; §1.1).
func NewLinkStateOAM(list []LinkState) *wire.NetworkOAM {
	return &wire.NetworkOAM{
		ID:     OAMLinkState,
		NetExt: wire.NetExt{HasQoS: true, QoS: LinkStateQoS},
		Body:   wire.OAMBody{Enc: wire.ExtEncZBuf, Body: AppendLinkStateList(nil, list)},
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
