package keyexpr

import "strings"

// MaxStackChunks is the number of chunks of the right-hand expression up to which [Intersects]
// and [Includes] work entirely on the stack. Longer expressions still work, with a few small
// allocations. ROS 2 data keys have 4 to 8 chunks and liveliness tokens about 13
// (zenoh-wire.md §16).
const MaxStackChunks = 32

// kind classifies one chunk.
type kind uint8

const (
	kLiteral  kind = iota // no wildcard, not verbatim
	kVerbatim             // starts with '@': matched only by an identical chunk
	kStar                 // "*"
	kDouble               // "**"
	kGlob                 // non-verbatim chunk containing "$*"
)

func kindOf(c string) kind {
	switch {
	case c == "*":
		return kStar
	case c == "**":
		return kDouble
	case len(c) > 0 && c[0] == '@':
		return kVerbatim
	case strings.IndexByte(c, '$') >= 0:
		return kGlob
	}
	return kLiteral
}

// Intersects reports whether some key matches both a and b (zenoh-wire.md §11.2): "a/*"
// intersects "*/b"; "@x/**" and "**" do not. Answers equal those of Rust's
// keyexpr::intersects (zenoh-keyexpr intersect/classical.rs) and zenoh-pico's
// z_keyexpr_intersects on canonical inputs, with one exception where we follow Rust: pico
// reads "$*" inside a verbatim chunk as a wildcard ("@a$*" intersects "@ab" in pico only).
//
//   - "**" matches zero or more chunks, "*" exactly one, but neither matches a verbatim '@'
//     chunk; verbatim chunks intersect only identical chunks.
//   - two chunks with "$*" intersect when their literal prefixes are compatible (one a prefix
//     of the other) and so are their literal suffixes; a "$*" chunk and a literal chunk
//     intersect when the pattern matches the literal.
//
// a and b should be valid, canonical key expressions (see [ValidateCanonical]); on other input
// the answer is unspecified, but Intersects never panics. Its cost is proportional to
// len(a)·chunks(b) + chunks(a)·len(b) at worst (never exponential), linear when one side is a
// concrete key or neither has "**", and it does not allocate when the wildcard side (or b)
// has at most [MaxStackChunks] chunks.
func Intersects(a, b string) bool {
	if a == b {
		return true
	}
	wa, wb := strings.IndexByte(a, '*') >= 0, strings.IndexByte(b, '*') >= 0
	if !wa && !wb {
		return false // two different concrete keys
	}
	da, db := wa && strings.Contains(a, "**"), wb && strings.Contains(b, "**")
	if !da && !db {
		return intersectsFixed(a, b)
	}
	switch {
	case !wa: // concrete a against pattern b: the common routing case
		return matchConcreteString(b, a)
	case !wb:
		return matchConcreteString(a, b)
	}
	var buf chunkBuf
	return intersectsDP(a, buf.split(b))
}

// Includes reports whether a includes b: every key matched by b is matched by a
// (zenoh-wire.md §11.3). "a/**" includes "a/b/*"; "a/*" does not include "a/**". Answers equal
// those of Rust's keyexpr::includes (zenoh-keyexpr include.rs, LTRIncluder) and zenoh-pico's
// z_keyexpr_includes on canonical inputs (same exception as [Intersects]):
//
//   - a "**" of a absorbs any sequence of b's chunks ("*", "**" and "$*" chunks included) except
//     verbatim ones; a "**" of b is included only by a "**" of a.
//   - a "*" of a includes any single non-verbatim chunk of b; a literal includes only itself.
//   - a "$*" chunk of a includes a chunk of b when a's pattern matches b's chunk read literally
//     (so "a$*" includes "ab$*", not "$*b").
//
// Because a "**" of b is included only by a "**" of a, Includes answers false for a few pairs
// whose sets are in fact included, exactly as Zenoh does: Includes("*/**", "**") and
// Includes("*/**", "**/a"). It is exact when b has no "**", and never answers true wrongly.
// a and b should be valid, canonical key expressions; on other input the answer is
// unspecified, but Includes never panics. Same cost and allocation behaviour as [Intersects].
func Includes(a, b string) bool {
	if a == b {
		return true
	}
	if strings.IndexByte(a, '*') < 0 {
		return false // a concrete key includes only itself
	}
	da := strings.Contains(a, "**")
	if !da {
		if strings.Contains(b, "**") {
			return false // only a "**" includes a "**"
		}
		return includesFixed(a, b)
	}
	if strings.IndexByte(b, '*') < 0 {
		return matchConcreteString(a, b)
	}
	var buf chunkBuf
	return includesDP(a, buf.split(b))
}

// intersectsFixed handles expressions without "**": both must have the same number of chunks
// and intersect chunk by chunk.
func intersectsFixed(a, b string) bool {
	for {
		ca, ra, ma := cut(a)
		cb, rb, mb := cut(b)
		if !chunkIntersects(ca, kindOf(ca), cb, kindOf(cb)) {
			return false
		}
		if !ma || !mb {
			return ma == mb
		}
		a, b = ra, rb
	}
}

// includesFixed handles expressions without "**".
func includesFixed(a, b string) bool {
	for {
		ca, ra, ma := cut(a)
		cb, rb, mb := cut(b)
		if !chunkIncludes(ca, kindOf(ca), cb, kindOf(cb)) {
			return false
		}
		if !ma || !mb {
			return ma == mb
		}
		a, b = ra, rb
	}
}

// chunkIntersects reports whether two single chunks (neither "**") can match a common chunk.
func chunkIntersects(a string, ka kind, b string, kb kind) bool {
	if a == b {
		return true
	}
	if ka == kVerbatim || kb == kVerbatim || ka == kDouble || kb == kDouble {
		return false
	}
	if ka == kStar || kb == kStar {
		return true
	}
	switch {
	case ka == kGlob && kb == kGlob:
		return globsIntersect(a, b)
	case ka == kGlob:
		return globMatch(a, b)
	case kb == kGlob:
		return globMatch(b, a)
	}
	return false
}

// chunkIncludes reports whether chunk a (not "**") includes chunk b (not "**").
func chunkIncludes(a string, ka kind, b string, kb kind) bool {
	if a == b {
		return true
	}
	if ka == kVerbatim || kb == kVerbatim || ka == kDouble || kb == kDouble {
		return false
	}
	switch ka {
	case kStar:
		return true
	case kGlob:
		// b's chunk read literally: a's literal pieces hold neither '$' nor '*', so they can
		// only match inside b's literal pieces, and a matches every instance of b.
		return globMatch(a, b)
	}
	return false
}

// globMatch reports whether pattern p, where "$*" matches any substring, matches s.
// Leftmost-first matching of the middle pieces is optimal, so this is linear.
func globMatch(p, s string) bool {
	i := strings.Index(p, "$*")
	if i < 0 {
		return p == s
	}
	if !strings.HasPrefix(s, p[:i]) {
		return false
	}
	s, p = s[i:], p[i+2:]
	j := strings.LastIndex(p, "$*")
	suffix := p
	if j >= 0 {
		suffix, p = p[j+2:], p[:j]
	} else {
		p = ""
	}
	if !strings.HasSuffix(s, suffix) {
		return false
	}
	s = s[:len(s)-len(suffix)]
	for p != "" {
		var piece string
		if k := strings.Index(p, "$*"); k >= 0 {
			piece, p = p[:k], p[k+2:]
		} else {
			piece, p = p, ""
		}
		if piece == "" {
			continue
		}
		k := strings.Index(s, piece)
		if k < 0 {
			return false
		}
		s = s[k+len(piece):]
	}
	return true
}

// globsIntersect reports whether two patterns, each holding at least one "$*", match a common
// string. Since both have a wildcard, that holds exactly when their literal prefixes agree
// (one is a prefix of the other) and so do their literal suffixes: the string
// longer-prefix + every middle piece of a + every middle piece of b + longer-suffix is then
// matched by both.
func globsIntersect(a, b string) bool {
	ia, ib := strings.Index(a, "$*"), strings.Index(b, "$*")
	if ia < 0 || ib < 0 {
		return a == b // not reached for valid input
	}
	pa, pb := a[:ia], b[:ib]
	if !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa) {
		return false
	}
	sa, sb := a[strings.LastIndex(a, "$*")+2:], b[strings.LastIndex(b, "$*")+2:]
	return strings.HasSuffix(sa, sb) || strings.HasSuffix(sb, sa)
}

// chunkBuf holds the chunks of one expression for random access, on the stack up to
// MaxStackChunks chunks.
type chunkBuf struct {
	endBuf  [MaxStackChunks]int
	kindBuf [MaxStackChunks]kind
}

// chunkList is an expression split into chunks.
type chunkList struct {
	s    string
	ends []int // ends[j] is the end offset (exclusive) of chunk j
	kind []kind
}

func (cb *chunkBuf) split(s string) chunkList {
	l := chunkList{s: s, ends: cb.endBuf[:0], kind: cb.kindBuf[:0]}
	start := 0
	for {
		end := strings.IndexByte(s[start:], '/')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		l.ends = append(l.ends, end)
		l.kind = append(l.kind, kindOf(s[start:end]))
		if end == len(s) {
			return l
		}
		start = end + 1
	}
}

func (l *chunkList) at(j int) string {
	start := 0
	if j > 0 {
		start = l.ends[j-1] + 1
	}
	return l.s[start:l.ends[j]]
}

// bitset is a set of chunk indices of the right-hand expression.
type bitset []uint64

func (s bitset) has(j int) bool { return s[j>>6]&(1<<(j&63)) != 0 }
func (s bitset) set(j int)      { s[j>>6] |= 1 << (j & 63) }
func (s bitset) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// newBitsets returns two zeroed sets able to hold indices 0..m, backed by stack when small.
func newBitsets(m int, b1, b2 *[MaxStackChunks/64 + 1]uint64) (bitset, bitset) {
	w := m/64 + 1
	if w <= len(b1) {
		return b1[:w], b2[:w]
	}
	return make(bitset, w), make(bitset, w)
}

// intersectsDP decides Intersects by dynamic programming over states (i, j): "chunks i.. of a
// and j.. of b remain". It walks a's chunks in order, keeping the set cur of reachable j.
// Moves: a "**" of either side may match nothing or absorb one non-verbatim chunk of the other
// side (possibly a wildcard, since "**" can produce whatever that chunk produces); two other
// chunks advance together when they intersect. a and b intersect iff (len(a), len(b)) is
// reachable.
func intersectsDP(a string, bl chunkList) bool {
	m := len(bl.ends)
	var b1, b2 [MaxStackChunks/64 + 1]uint64
	cur, next := newBitsets(m, &b1, &b2)
	cur.set(0)
	for rest := a; ; {
		ca, r, more := cut(rest)
		ka := kindOf(ca)
		// Moves within row i: b's "**" matches nothing, or a's "**" absorbs b[j].
		for j := 0; j < m; j++ {
			if cur.has(j) {
				if kb := bl.kind[j]; kb == kDouble || (ka == kDouble && kb != kVerbatim) {
					cur.set(j + 1)
				}
			}
		}
		// Moves to row i+1.
		if ka == kDouble {
			copy(next, cur) // a's "**" is done
		} else {
			clear(next)
		}
		for j := 0; j < m; j++ {
			if !cur.has(j) {
				continue
			}
			switch kb := bl.kind[j]; {
			case kb == kDouble:
				if ka != kVerbatim {
					next.set(j) // b's "**" absorbs a[i]
				}
			case ka != kDouble:
				if chunkIntersects(ca, ka, bl.at(j), kb) {
					next.set(j + 1)
				}
			}
		}
		cur, next = next, cur
		if cur.empty() {
			return false
		}
		if !more {
			break
		}
		rest = r
	}
	for j := 0; j < m; j++ {
		if cur.has(j) && bl.kind[j] == kDouble {
			cur.set(j + 1)
		}
	}
	return cur.has(m)
}

// includesDP decides Includes like intersectsDP, with one-sided moves: a's "**" matches
// nothing or absorbs one non-verbatim chunk of b (whatever its kind); any other chunk of a must
// include the next chunk of b, which must not be "**".
func includesDP(a string, bl chunkList) bool {
	m := len(bl.ends)
	var b1, b2 [MaxStackChunks/64 + 1]uint64
	cur, next := newBitsets(m, &b1, &b2)
	cur.set(0)
	for rest := a; ; {
		ca, r, more := cut(rest)
		if ka := kindOf(ca); ka == kDouble {
			for j := 0; j < m; j++ {
				if cur.has(j) && bl.kind[j] != kVerbatim {
					cur.set(j + 1)
				}
			}
		} else {
			clear(next)
			for j := 0; j < m; j++ {
				if cur.has(j) && bl.kind[j] != kDouble && chunkIncludes(ca, ka, bl.at(j), bl.kind[j]) {
					next.set(j + 1)
				}
			}
			cur, next = next, cur
		}
		if cur.empty() {
			return false
		}
		if !more {
			break
		}
		rest = r
	}
	return cur.has(m)
}
