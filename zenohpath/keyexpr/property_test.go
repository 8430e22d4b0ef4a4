package keyexpr

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"testing/quick"

	"github.com/stretchr/testify/require"
)

// This file checks Validate, Canonize, Intersects and Includes against a brute-force model of
// zenoh-wire.md §11: an expression denotes the set of concrete keys it matches, where "**"
// matches zero or more non-verbatim chunks, "*" one non-verbatim chunk, a chunk with "$*" (a
// glob) one non-verbatim chunk matching the glob, and any other chunk exactly itself.

// bruteMatch reports whether expression chunks e match concrete key chunks k.
func bruteMatch(e, k []string) bool {
	if len(e) == 0 {
		return len(k) == 0
	}
	if e[0] == "**" {
		if bruteMatch(e[1:], k) {
			return true
		}
		return len(k) > 0 && k[0][0] != '@' && bruteMatch(e, k[1:])
	}
	return len(k) > 0 && bruteChunk(e[0], k[0]) && bruteMatch(e[1:], k[1:])
}

var globRegexps = map[string]*regexp.Regexp{}

func bruteChunk(e, k string) bool {
	if e[0] == '@' || k[0] == '@' {
		return e == k
	}
	if e == "*" {
		return true
	}
	re, ok := globRegexps[e]
	if !ok {
		re = regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(e), `\$\*`, ".*") + "$")
		globRegexps[e] = re
	}
	return re.MatchString(k)
}

// allStrings returns every string over alphabet of length lo..hi.
func allStrings(alphabet []string, lo, hi int) []string {
	var out []string
	cur := []string{""}
	for n := 1; n <= hi; n++ {
		var next []string
		for _, p := range cur {
			for _, a := range alphabet {
				next = append(next, p+a)
			}
		}
		cur = next
		if n >= lo {
			out = append(out, cur...)
		}
	}
	return out
}

// allKeys returns every key of 1..n chunks taken from chunks.
func allKeys(chunks []string, n int) [][]string {
	var out [][]string
	cur := [][]string{nil}
	for i := 1; i <= n; i++ {
		var next [][]string
		for _, p := range cur {
			for _, c := range chunks {
				next = append(next, append(append([]string(nil), p...), c))
			}
		}
		cur = next
		out = append(out, cur...)
	}
	return out
}

type keySet []uint64

func (b keySet) and(o keySet) keySet {
	r := make(keySet, len(b))
	for i := range b {
		r[i] = b[i] & o[i]
	}
	return r
}

func (b keySet) zero() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

func (b keySet) subsetOf(o keySet) bool {
	for i := range b {
		if b[i]&^o[i] != 0 {
			return false
		}
	}
	return true
}

// matchSet returns the set of keys (by index) matched by expression s.
func matchSet(s string, keys [][]string) keySet {
	e := strings.Split(s, "/")
	set := make(keySet, (len(keys)+63)/64)
	for i, k := range keys {
		if bruteMatch(e, k) {
			set[i/64] |= 1 << (i % 64)
		}
	}
	return set
}

// TestChunkRelationsExhaustive compares the single-chunk relations with brute force: every
// glob of up to 3 literal letters from {a,b} against every string of length 1..6 over {a,b,c}
// (the extra letter exposes inclusions that only hold over a small alphabet).
func TestChunkRelationsExhaustive(t *testing.T) {
	var pats []string
	for _, s := range allStrings([]string{"a", "b", "$*"}, 1, 4) {
		if IsCanonical(s) && strings.Count(s, "a")+strings.Count(s, "b") <= 3 {
			pats = append(pats, s)
		}
	}
	pats = append(pats, "*")
	strs := allStrings([]string{"a", "b", "c"}, 1, 6)
	sets := make([]keySet, len(pats))
	for i, p := range pats {
		sets[i] = matchSet(p, splitAll(strs))
	}
	n := 0
	for i, a := range pats {
		for j, b := range pats {
			ka, kb := kindOf(a), kindOf(b)
			wantX := !sets[i].and(sets[j]).zero()
			require.Equal(t, wantX, chunkIntersects(a, ka, b, kb), "chunkIntersects(%q, %q)", a, b)
			wantI := sets[j].subsetOf(sets[i])
			require.Equal(t, wantI, chunkIncludes(a, ka, b, kb), "chunkIncludes(%q, %q)", a, b)
			n++
		}
	}
	t.Logf("%d patterns, %d pairs, %d strings", len(pats), n, len(strs))
}

func splitAll(ss []string) [][]string {
	out := make([][]string, len(ss))
	for i, s := range ss {
		out[i] = []string{s}
	}
	return out
}

// TestRelationsExhaustive compares Intersects and Includes with brute force on every canonical
// expression of up to 3 chunks over a small alphabet, against every key of up to 6 chunks over
// {a, b, ab, c, @a}: long enough to witness any intersection of two 3-chunk expressions.
func TestRelationsExhaustive(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive")
	}
	alphabet := []string{"a", "b", "@a", "*", "**", "a$*"}
	seen := map[string]bool{}
	var exprs []string
	for _, k := range allKeys(alphabet, 3) {
		c, err := Canonize(strings.Join(k, "/"))
		require.NoError(t, err)
		if !seen[c] {
			seen[c] = true
			exprs = append(exprs, c)
		}
	}
	keys := allKeys([]string{"a", "b", "ab", "c", "@a"}, 6)
	sets := make([]keySet, len(exprs))
	for i, e := range exprs {
		sets[i] = matchSet(e, keys)
	}
	for i, a := range exprs {
		for j, b := range exprs {
			want := !sets[i].and(sets[j]).zero()
			require.Equal(t, want, Intersects(a, b), "Intersects(%q, %q)", a, b)
			subset := sets[j].subsetOf(sets[i])
			got := Includes(a, b)
			if got {
				require.True(t, subset, "Includes(%q, %q) but not a subset", a, b)
			} else if !strings.Contains(b, "**") {
				// Complete when b has no "**". Like Zenoh's includer, Includes may miss an
				// inclusion where b's "**" is forced to be non-empty ("*/**" ⊇ "**/a").
				require.False(t, subset, "subset but not Includes(%q, %q)", a, b)
			}
			if subset && !sets[j].zero() && !sets[i].subsetOf(sets[j]) {
				require.NotEqual(t, a, b)
			}
			if sets[i].subsetOf(sets[j]) && sets[j].subsetOf(sets[i]) && b != "**" && a != "**" {
				require.Equal(t, a, b, "canonical forms: equal sets are equal strings")
			}
		}
	}
	t.Logf("%d expressions, %d pairs, %d keys", len(exprs), len(exprs)*len(exprs), len(keys))
}

// Random expressions for the properties below.

var genChunks = []string{
	"a", "b", "ab", "ba", "*", "**", "a$*", "$*a", "$*b$*", "a$*b", "$*", "$*$*", "@a", "@b", "a$*$*",
}

func genExpr(r *rand.Rand, maxChunks int) string {
	n := 1 + r.IntN(maxChunks)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = genChunks[r.IntN(len(genChunks))]
	}
	return strings.Join(parts, "/")
}

// genInstance returns a random concrete key matched by canonical expression e.
func genInstance(r *rand.Rand, e string) []string {
	letters := []string{"a", "b", "ab", "c", "ba"}
	word := func() string { return letters[r.IntN(len(letters))] }
	var k []string
	for _, c := range strings.Split(e, "/") {
		switch kindOf(c) {
		case kStar:
			k = append(k, word())
		case kDouble:
			for range r.IntN(3) {
				k = append(k, word())
			}
		case kGlob:
			g := c
			for strings.Contains(g, "$*") {
				fill := ""
				if r.IntN(2) == 0 {
					fill = word()
				}
				g = strings.Replace(g, "$*", fill, 1)
			}
			if g == "" {
				g = word()
			}
			k = append(k, g)
		default:
			k = append(k, c)
		}
	}
	return k
}

func TestPropertiesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := allKeys([]string{"a", "b", "ab", "ba", "c", "@a"}, 4)
	n := 3000
	if raceEnabled {
		n = 100
	}
	for range n {
		raw := genExpr(r, 5)
		require.NoError(t, Validate(raw), raw)
		a, err := Canonize(raw)
		require.NoError(t, err)
		require.True(t, IsCanonical(a), "%q -> %q", raw, a)
		again, err := Canonize(a)
		require.NoError(t, err)
		require.Equal(t, a, again, "idempotent")
		// Canonization preserves the set of matched keys.
		require.Equal(t, matchSet(raw, keys), matchSet(a, keys), "%q -> %q", raw, a)

		b, err := Canonize(genExpr(r, 5))
		require.NoError(t, err)
		x := Intersects(a, b)
		require.Equal(t, x, Intersects(b, a), "symmetric: %q %q", a, b)
		require.True(t, Includes(a, a), "reflexive: %q", a)
		inc := Includes(a, b)
		if inc {
			require.True(t, x, "Includes(%q, %q) implies Intersects", a, b)
		}
		// Brute force on a fixed key space: soundness of both answers.
		sa, sb := matchSet(a, keys), matchSet(b, keys)
		if !sa.and(sb).zero() {
			require.True(t, x, "common key but not Intersects(%q, %q)", a, b)
		}
		if inc {
			require.True(t, sb.subsetOf(sa), "Includes(%q, %q) but not a subset", a, b)
		}
		// Random instances of b.
		ea := strings.Split(a, "/")
		for range 5 {
			k := genInstance(r, b)
			require.True(t, bruteMatch(strings.Split(b, "/"), k), "instance %q of %q", k, b)
			if bruteMatch(ea, k) {
				require.True(t, x, "%q matches both %q and %q", k, a, b)
			} else {
				require.False(t, inc, "%q matches %q, not %q", k, b, a)
			}
		}
	}
}

// TestQuickSymmetry runs testing/quick over arbitrary expressions built from random choices.
func TestQuickSymmetry(t *testing.T) {
	f := func(seed1, seed2 uint64) bool {
		r := rand.New(rand.NewPCG(seed1, seed2))
		a, _ := Canonize(genExpr(r, 6))
		b, _ := Canonize(genExpr(r, 6))
		if Intersects(a, b) != Intersects(b, a) || !Includes(a, a) {
			return false
		}
		return !Includes(a, b) || Intersects(a, b)
	}
	require.NoError(t, quick.Check(f, &quick.Config{MaxCount: 5000}))
}
