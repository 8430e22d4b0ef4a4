package routing

// Link weights and edge costs (zenoh-mesh-auth.md §1.6): the weights we set
// (SetLinkWeights) and the neighbours announce, the cost of an edge
// (EdgeCost: the larger weight times Rust's tie-break factor, SipHash-1-3
// over the two zids), and the per-link view the admin space shows
// (LinkInfo).

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// DefaultWeight is the cost of an edge whose ends set no weight (§1.6).
const DefaultWeight = 100

// weight is the cost of edge i–j (zenoh-mesh-auth.md §1.6; update_edge in
// zenoh's network.rs): EdgeCost of the weights each end set towards the
// other, from their link-states (ours from the configuration).
func (n *Network) weight(i, j int) float64 {
	a, b := n.nodes[i], n.nodes[j]
	return EdgeCost(a.zid, b.zid, a.weights[b.zid], b.weights[a.zid])
}

// EdgeCost is the cost of the edge between routers a and b when a set
// weight wa towards b and b set wb towards a (0 = unset), as Rust ≥ 1.4
// computes it (zenoh-mesh-auth.md §1.6; update_edge in network.rs):
// DefaultWeight (100) when neither is set, the one set when only one is,
// the larger when both are; times tieFactor(a, b), a factor in [1, 1.01]
// that only breaks ties between equal-cost paths. The result is a float
// cost (Rust's f64); the admin space shows it truncated to u16 (§5).
func EdgeCost(a, b wire.ZID, wa, wb uint16) float64 {
	return float64(effectiveWeight(wa, wb)) * tieFactor(a, b)
}

// effectiveWeight is §1.6's rule before the tie factor.
func effectiveWeight(wa, wb uint16) uint16 {
	switch {
	case wa == 0 && wb == 0:
		return DefaultWeight
	case wa == 0:
		return wb
	case wb == 0:
		return wa
	}
	return max(wa, wb)
}

// EdgeWeight is the cost of the edge between us and neighbour z and
// whether the edge exists (both ends claim it).
func (n *Network) EdgeWeight(z wire.ZID) (float64, bool) {
	l, ok := n.LinkInfo(z)
	return l.Cost, ok
}

// LinkInfo is the weight view of the edge to one neighbour router, as
// zenohd's admin space reports it per session (links_info, §5).
type LinkInfo struct {
	// SrcWeight is our weight towards the neighbour, DstWeight its weight
	// towards us (from its link-state); 0 = unset.
	SrcWeight, DstWeight uint16
	// Cost is the edge cost (EdgeCost, §1.6).
	Cost float64
}

// ActualWeight is the cost as zenohd's admin space shows it: the float
// truncated to u16, saturating at 65535 (Rust's `as u16`).
func (l LinkInfo) ActualWeight() uint16 {
	if l.Cost >= 0xffff {
		return 0xffff
	}
	return uint16(l.Cost)
}

// LinkInfo describes the edge between us and neighbour z; false when
// there is no edge (both ends must claim it).
func (n *Network) LinkInfo(z wire.ZID) (LinkInfo, bool) {
	j, ok := n.idx[z]
	if !ok || !n.edge(0, j) {
		return LinkInfo{}, false
	}
	self, nb := n.nodes[0], n.nodes[j]
	return LinkInfo{SrcWeight: self.weights[z], DstWeight: nb.weights[self.zid], Cost: n.weight(0, j)}, true
}

// SetLinkWeights replaces our configured link weights, by neighbour
// router (zenohd's routing.router.linkstate.transport_weights: weights
// 1..65535; a zero or absent entry is unset; §1.6). Weights of links
// already open change at once: when one does, our sn goes up and every
// link gets our new state (update_link_weights in zenoh's network.rs).
// It returns what to send; the map is copied.
func (n *Network) SetLinkWeights(w map[wire.ZID]uint16) Out {
	cfg := map[wire.ZID]uint16{}
	for z, v := range w {
		if v != 0 {
			cfg[z] = v
		}
	}
	n.config = cfg
	self := n.nodes[0]
	changed := false
	for _, z := range self.links {
		if self.weights[z] == cfg[z] {
			continue
		}
		changed = true
		if cfg[z] == 0 {
			delete(self.weights, z)
		} else {
			self.weights[z] = cfg[z]
		}
	}
	if !changed {
		return nil
	}
	self.sn++
	out := Out{}
	for lid := range n.links {
		out[lid] = n.states([]int{0})
	}
	n.ComputeTrees()
	return out
}

// tieFactor is Rust's tie-breaking multiplier of an edge's cost
// (zenoh-mesh-auth.md §1.6; update_edge in zenoh's network.rs): 1 + 0.01 ×
// h / (2³²−1), with h the low 32 bits of SipHash-1-3 (keys 0, 0: Rust's
// DefaultHasher) over the 16 little-endian bytes of the smaller zid then
// those of the larger. "Smaller" is ZenohIdProto's derived Ord: uhlc's ID
// is a [u8; 16] of the little-endian bytes, so zids compare byte by byte
// from the first wire byte (the least significant), not as u128 numbers.
// Computing the same costs as the Rust routers makes every router of a
// mesh pick the same tree among equal-hop paths; with the u128 order half
// of the pairs got another factor, and Go and Rust routers disagreed on
// trees: data was dropped (a Rust router not on its own tree's path) or
// looped (a Go router sent it back up its tree).
func tieFactor(a, b wire.ZID) float64 {
	la, lb := zid16(a), zid16(b)
	if zidLess(lb, la) {
		la, lb = lb, la
	}
	var msg [32]byte
	copy(msg[:16], la[:])
	copy(msg[16:], lb[:])
	h := uint32(sip13(msg[:]))
	return 1 + 0.01*(float64(h)/float64(^uint32(0)))
}

// zid16 is the zid as Rust's to_le_bytes (wire bytes, zero-padded).
func zid16(z wire.ZID) [16]byte {
	var b [16]byte
	copy(b[:], z.Bytes())
	return b
}

// zidLess is ZenohIdProto's Ord: the 16 little-endian bytes compared
// lexicographically.
func zidLess(a, b [16]byte) bool {
	return bytes.Compare(a[:], b[:]) < 0
}

// sip13 is SipHash-1-3 with the all-zero key (Rust's std DefaultHasher,
// whose Hasher.write streams the bytes).
func sip13(m []byte) uint64 {
	v0, v1 := uint64(0x736f6d6570736575), uint64(0x646f72616e646f6d)
	v2, v3 := uint64(0x6c7967656e657261), uint64(0x7465646279746573)
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13)
		v1 ^= v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16)
		v3 ^= v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21)
		v3 ^= v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17)
		v1 ^= v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	n := len(m)
	for len(m) >= 8 {
		w := binary.LittleEndian.Uint64(m)
		v3 ^= w
		round()
		v0 ^= w
		m = m[8:]
	}
	last := uint64(n&0xff) << 56
	for i, c := range m {
		last |= uint64(c) << (8 * i)
	}
	v3 ^= last
	round()
	v0 ^= last
	v2 ^= 0xff
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}
