package keyexpr

import (
	"math/bits"
	"strings"
)

// Matcher is a canonical key expression compiled for matching many keys, as a router does
// with each subscription or queryable against the key of every PUSH or REQUEST
// (zenoh-wire.md §12.3). The expression is split into chunks once, its leading literal
// chunks are checked with a single prefix comparison, and the key is then scanned once while
// tracking every position the expression can be at, as one machine word (expressions of 64
// chunks or more fall back to [Intersects]). Matching does not allocate. A Matcher is
// immutable and safe for concurrent use.
type Matcher struct {
	ke     KeyExpr
	list   chunkList
	prefix string // leading literal or verbatim chunks, joined with '/'
	skip   int    // number of chunks in prefix
	tail   bool   // the expression is prefix + "/**" (or just "**")
}

// Compile returns a Matcher for the canonical key expression s; the error is that of [New].
func Compile(s string) (*Matcher, error) {
	k, err := New(s)
	if err != nil {
		return nil, err
	}
	return NewMatcher(k), nil
}

// NewMatcher returns a Matcher for k. The zero KeyExpr matches nothing.
func NewMatcher(k KeyExpr) *Matcher {
	m := &Matcher{ke: k}
	if k.s == "" {
		return m
	}
	var buf chunkBuf
	l := buf.split(k.s)
	// Copy off the stack buffer.
	m.list = chunkList{s: l.s, ends: append([]int(nil), l.ends...), kind: append([]kind(nil), l.kind...)}
	for m.skip < len(m.list.kind) && (m.list.kind[m.skip] == kLiteral || m.list.kind[m.skip] == kVerbatim) {
		m.skip++
	}
	if m.skip > 0 {
		m.prefix = k.s[:m.list.ends[m.skip-1]]
	}
	m.tail = m.skip == len(m.list.kind)-1 && m.list.kind[m.skip] == kDouble
	return m
}

// KeyExpr returns the compiled expression.
func (m *Matcher) KeyExpr() KeyExpr { return m.ke }

// String returns the compiled expression.
func (m *Matcher) String() string { return m.ke.s }

// Matches reports whether the concrete key (a key expression without wildcards, such as the
// key of a PUT) belongs to the set of m: Includes(m, key), which for a concrete key is also
// Intersects(m, key). For a key with wildcards it returns Intersects(m, key).
func (m *Matcher) Matches(key string) bool {
	if m.ke.s == "" {
		return false
	}
	if strings.IndexByte(key, '*') >= 0 {
		return Intersects(m.ke.s, key)
	}
	return m.matchConcrete(key)
}

// Intersects is [Intersects](m, s), faster when s is a concrete key.
func (m *Matcher) Intersects(s string) bool {
	if m.ke.s == "" {
		return false
	}
	if strings.IndexByte(s, '*') >= 0 {
		return Intersects(m.ke.s, s)
	}
	return m.matchConcrete(s)
}

// Includes is [Includes](m, s), faster when s is a concrete key.
func (m *Matcher) Includes(s string) bool {
	if m.ke.s == "" {
		return false
	}
	if strings.IndexByte(s, '*') >= 0 {
		return Includes(m.ke.s, s)
	}
	return m.matchConcrete(s)
}

func (m *Matcher) matchConcrete(key string) bool {
	if m.skip == len(m.list.kind) {
		return key == m.ke.s // no wildcard at all
	}
	if m.tail {
		if m.skip == 0 {
			return matchAnyTail(key)
		}
		return matchPrefixTail(m.prefix, key)
	}
	if len(m.list.kind) >= 64 {
		return matchConcrete(&m.list, 0, key)
	}
	if m.skip > 0 {
		if !strings.HasPrefix(key, m.prefix) {
			return false
		}
		key = key[len(m.prefix):]
		if key != "" {
			if key[0] != '/' {
				return false
			}
			key = key[1:]
			if key == "" {
				return false // trailing '/': not a key
			}
		}
	}
	return matchConcrete(&m.list, m.skip, key)
}

// matchConcreteString reports whether the concrete key matches pattern.
func matchConcreteString(pattern, key string) bool {
	if pattern == "**" {
		return matchAnyTail(key)
	}
	if p, ok := strings.CutSuffix(pattern, "/**"); ok && strings.IndexByte(p, '*') < 0 {
		return matchPrefixTail(p, key)
	}
	var buf chunkBuf
	l := buf.split(pattern)
	return matchConcrete(&l, 0, key)
}

// matchPrefixTail reports whether key matches prefix + "/**" where prefix has no wildcard:
// the most common subscription shape ("0/scan/**", "@ros2_lv/0/**").
func matchPrefixTail(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return false
	}
	if rest == "" {
		return true // "**" matches zero chunks
	}
	return rest[0] == '/' && matchAnyTail(rest[1:])
}

// matchAnyTail reports whether "**" matches the non-empty concrete key rest: no chunk of it is
// verbatim.
func matchAnyTail(rest string) bool {
	if rest == "" || rest[0] == '@' {
		return false
	}
	// Look for "/@" through the rare '@' (faster than strings.Contains on keys full of '/').
	for off := 0; ; off++ {
		i := strings.IndexByte(rest[off:], '@')
		if i < 0 {
			return true
		}
		off += i // >= 1: rest[0] is not '@'
		if rest[off-1] == '/' {
			return false
		}
	}
}

// matchConcrete reports whether the concrete key rest, possibly empty, matches chunks
// from..n of the pattern l. It tracks the set of reachable pattern positions in one word;
// patterns of 64 chunks or more go to intersectsDP (then from must be 0).
func matchConcrete(l *chunkList, from int, rest string) bool {
	n := len(l.kind)
	if n >= 64 {
		var buf chunkBuf
		return intersectsDP(rest, buf.split(l.s))
	}
	var double uint64
	for i, k := range l.kind {
		if k == kDouble {
			double |= 1 << i
		}
	}
	cur := uint64(1) << from
	for more := rest != ""; more; {
		cur |= (cur & double) << 1 // "**" matches nothing (canonical: never "**/**")
		var kc string
		kc, rest, more = cut(rest)
		if kc == "" {
			return false // not a valid key
		}
		verbatim := kc[0] == '@'
		var next uint64
		for c := cur; c != 0; c &= c - 1 {
			i := bits.TrailingZeros64(c)
			if i == n {
				continue
			}
			switch l.kind[i] {
			case kDouble:
				if !verbatim {
					next |= 1 << i
				}
			case kStar:
				if !verbatim {
					next |= 1 << (i + 1)
				}
			case kGlob:
				if !verbatim && globMatch(l.at(i), kc) {
					next |= 1 << (i + 1)
				}
			default:
				if l.at(i) == kc {
					next |= 1 << (i + 1)
				}
			}
		}
		cur = next
		if cur == 0 {
			return false
		}
	}
	cur |= (cur & double) << 1
	return cur&(1<<n) != 0
}
