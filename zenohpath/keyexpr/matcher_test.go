package keyexpr

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMatcher(t *testing.T) {
	m, err := Compile("0/scan/**")
	require.NoError(t, err)
	require.Equal(t, "0/scan/**", m.String())
	require.Equal(t, MustNew("0/scan/**"), m.KeyExpr())
	require.True(t, m.Matches(rosScan))
	require.True(t, m.Matches("0/scan"))
	require.False(t, m.Matches("0/scanner/x"))
	require.False(t, m.Matches("0/scan/"))
	require.False(t, m.Matches("0/scan/@v"))
	require.False(t, m.Matches("0"))
	require.False(t, m.Matches(""))
	require.True(t, m.Matches("0/*/x"), "wildcard key: intersects")
	require.True(t, m.Includes("0/scan/*/x"))
	require.False(t, m.Includes("0/*/x"))

	_, err = Compile("a/**/**")
	require.ErrorIs(t, err, ErrNotCanonical)
	z := NewMatcher(KeyExpr{})
	require.False(t, z.Matches("a"))
	require.False(t, z.Intersects("**"))
	require.False(t, z.Includes("a"))

	lit := NewMatcher(MustNew("a/b"))
	require.True(t, lit.Matches("a/b"))
	require.False(t, lit.Matches("a/b/c"))
	require.True(t, lit.Intersects("a/*"))
	require.False(t, lit.Includes("a/*"))
}

// TestMatcherAgrees checks that Matcher's methods give the answers of the functions on every
// table case, the Rust golden pairs and random instances.
func TestMatcherAgrees(t *testing.T) {
	check := func(a, b string) {
		m, err := Compile(a)
		require.NoError(t, err)
		require.Equal(t, Intersects(a, b), m.Intersects(b), "Intersects(%q, %q)", a, b)
		require.Equal(t, Intersects(a, b), m.Matches(b), "Matches(%q, %q)", a, b)
		require.Equal(t, Includes(a, b), m.Includes(b), "Includes(%q, %q)", a, b)
	}
	for _, tc := range intersectCases {
		check(tc.a, tc.b)
		check(tc.b, tc.a)
	}
	for _, tc := range includeCases {
		check(tc.a, tc.b)
		check(tc.b, tc.a)
	}
	data, err := os.ReadFile("testdata/rust_golden.json")
	require.NoError(t, err)
	var g rustGolden
	require.NoError(t, json.Unmarshal(data, &g))
	for _, p := range g.Pairs {
		check(p[0].(string), p[1].(string))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		a, _ := Canonize(genExpr(r, 6))
		b, _ := Canonize(genExpr(r, 6))
		check(a, strings.Join(genInstance(r, b), "/"))
		check(a, b)
	}
}

// TestLongExpressions covers the paths beyond MaxStackChunks and 64 chunks.
func TestLongExpressions(t *testing.T) {
	for _, n := range []int{MaxStackChunks - 1, MaxStackChunks, MaxStackChunks + 1, 63, 64, 65, 130, 300} {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = "c" + string(rune('a'+i%26))
		}
		key := strings.Join(parts, "/")
		pats := []string{
			key,
			"**",
			parts[0] + "/**",
			"**/" + parts[n-1],
			strings.Replace(key, parts[n/2], "*", 1),
			strings.Replace(key, parts[n/2], "**", 1),
			strings.Replace(strings.Replace(key, parts[1], "**", 1), parts[n-2], "*", 1),
			strings.Replace(key, parts[n/3], "c$*", 1),
		}
		for _, p := range pats {
			p, err := Canonize(p)
			require.NoError(t, err)
			m, err := Compile(p)
			require.NoError(t, err)
			require.True(t, Intersects(p, key), "%d: %q", n, p)
			require.True(t, Intersects(key, p), "%d: %q", n, p)
			require.True(t, Includes(p, key), "%d: %q", n, p)
			require.True(t, m.Matches(key), "%d: %q", n, p)
			require.True(t, Includes(p, p))
			require.False(t, m.Matches(key+"/x/@v"), "%d: %q", n, p)
			require.False(t, Intersects(p, "@v/"+key), "%d: %q", n, p)
			require.True(t, Intersects(p, "**"))
			require.True(t, Intersects(p, key[:len(key)-1]+"$*"))
		}
	}
}

// TestPrefixTail covers the fast path for "prefix/**" and "**" subscriptions.
func TestPrefixTail(t *testing.T) {
	cases := []struct {
		pattern, key string
		want         bool
	}{
		{"0/scan/**", "0/scan", true},
		{"0/scan/**", "0/scan/x", true},
		{"0/scan/**", "0/scan/x/y/z", true},
		{"0/scan/**", "0/scanx", false},
		{"0/scan/**", "0/sca", false},
		{"0/scan/**", "0", false},
		{"0/scan/**", "1/scan/x", false},
		{"0/scan/**", "0/scan/@v", false},
		{"0/scan/**", "0/scan/x/@v/y", false},
		{"0/scan/**", "0/scan/x@v", true},
		{"@ros2_lv/0/**", "@ros2_lv/0/zid/nid", true},
		{"@ros2_lv/0/**", "@ros2_lv/1/zid", false},
		{"**", "a", true},
		{"**", "a/b/c", true},
		{"**", "@a", false},
		{"**", "a/@b", false},
		{"**", "a@b/c", true},
		{"**", "a@@/b@/c@d@", true},
		{"**", "a@/@b", false},
		{"**", "x/a@b/@", false},
		{"**", "x/a@b/y/@z@", false},
		{"@a/**", "@a", true},
		{"@a/**", "@a/@a", false},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, Intersects(tc.pattern, tc.key), "Intersects(%q, %q)", tc.pattern, tc.key)
		require.Equal(t, tc.want, Intersects(tc.key, tc.pattern), "Intersects(%q, %q)", tc.key, tc.pattern)
		require.Equal(t, tc.want, Includes(tc.pattern, tc.key), "Includes(%q, %q)", tc.pattern, tc.key)
		require.Equal(t, tc.want, NewMatcher(MustNew(tc.pattern)).Matches(tc.key), "Matches(%q, %q)", tc.pattern, tc.key)
		// The general path agrees.
		var buf chunkBuf
		l := buf.split(tc.pattern)
		require.Equal(t, tc.want, matchConcrete(&l, 0, tc.key), "matchConcrete(%q, %q)", tc.pattern, tc.key)
		require.Equal(t, tc.want, intersectsDP(tc.key, buf.split(tc.pattern)), "intersectsDP(%q, %q)", tc.key, tc.pattern)
	}
}
