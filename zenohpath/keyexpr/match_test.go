package keyexpr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

var canonizeCases = []struct{ in, want string }{
	// Already canonical: returned unchanged.
	{"greetings/hello/there", "greetings/hello/there"},
	{"greetings/good/*/morning", "greetings/good/*/morning"},
	{"greetings/*", "greetings/*"},
	{"greetings/*/**", "greetings/*/**"},
	{"**", "**"},
	{"*/**", "*/**"},
	{"a$*b", "a$*b"},
	{"@adv/**", "@adv/**"},
	// Lone $* chunk -> *.
	{"greetings/$*", "greetings/*"},
	{"$*", "*"},
	{"$*$*", "*"},
	{"$*$*$*", "*"},
	{"hello/$*/bye", "hello/*/bye"},
	{"hello/$*$*/bye", "hello/*/bye"},
	{"$*/hello/$*/bye", "*/hello/*/bye"},
	{"$*$*$*/hello/$*/bye/$*", "*/hello/*/bye/*"},
	{"$*$*$*/hello/$*$*/bye/$*$*", "*/hello/*/bye/*"},
	// $*$* -> $* inside a chunk.
	{"hello/foo$*$*/bar", "hello/foo$*/bar"},
	{"$*hi$*$*", "$*hi$*"},
	{"$*$*hi$*", "$*hi$*"},
	{"hi$*$*$*", "hi$*"},
	{"$*$*$*hi", "$*hi"},
	{"$*$*$*hi$*$*$*", "$*hi$*"},
	{"a$*$*b$*$*c", "a$*b$*c"},
	{"@v$*$*", "@v$*"}, // as in Rust and pico, even inside a verbatim chunk
	// **/** -> **.
	{"greetings/**/**", "greetings/**"},
	{"hello/**/**/bye", "hello/**/bye"},
	{"greetings/**/**/morning", "greetings/**/morning"},
	{"greetings/**/**/g/morning", "greetings/**/g/morning"},
	{"greetings/**/**/m", "greetings/**/m"},
	{"**/**/**", "**"},
	{"**/**/a/**/**", "**/a/**"},
	// **/* -> */**.
	{"hello/**/*", "hello/*/**"},
	{"greetings/**/*/morning", "greetings/*/**/morning"},
	{"greetings/**/*/g/morning", "greetings/*/**/g/morning"},
	{"greetings/**/*/m", "greetings/*/**/m"},
	{"greetings/**/*", "greetings/*/**"},
	{"greetings/**/*/**", "greetings/*/**"},
	{"**/*", "*/**"},
	{"**/*/*", "*/*/**"},
	{"**/*/**/*", "*/*/**"},
	{"*/**/*/**/*/a", "*/*/*/**/a"},
	{"**/$*", "*/**"},
	{"**/$*$*/**/x", "*/**/x"},
	{"a/**/*/b/**/**/*/c", "a/*/**/b/*/**/c"},
	{"@a/**/*/@b", "@a/*/**/@b"},
}

func TestCanonize(t *testing.T) {
	for _, tc := range canonizeCases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Canonize(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.True(t, IsCanonical(got), "result must be canonical")
			require.Equal(t, tc.in == tc.want, IsCanonical(tc.in))
			again, err := Canonize(got)
			require.NoError(t, err)
			require.Equal(t, got, again, "idempotent")
			k, err := Autocanonize(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, k.String())
		})
	}
}

func TestCanonizeErrors(t *testing.T) {
	for _, tc := range validateCases {
		if tc.err == nil {
			continue
		}
		got, err := Canonize(tc.in)
		require.ErrorIs(t, err, tc.err, tc.in)
		require.Empty(t, got)
		_, err = Autocanonize(tc.in)
		require.ErrorIs(t, err, tc.err, tc.in)
	}
}

func TestCanonizeNoAllocWhenCanonical(t *testing.T) {
	s := "0/scan/sensor_msgs::msg::dds_::LaserScan_/RIHS01_1234/**"
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Canonize(s); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// intersectCases are checked in both orders (intersects is symmetric).
var intersectCases = []struct {
	a, b string
	want bool
}{
	// Literal and single wildcards (zenoh-pico tests/z_keyexpr_test.c, zenoh-wire.md §11.2).
	{"a", "a", true},
	{"a/b", "a/b", true},
	{"a", "b", false},
	{"a/b", "a/c", false},
	{"a", "a/b", false},
	{"*", "abc", true},
	{"*", "xxx", true},
	{"*", "*", true},
	{"*", "x/abc", false},
	{"x/*", "x/abc", true},
	{"x/*", "abc", false},
	{"x/abc", "abc", false},
	{"a/*", "*/b", true},
	{"a/*", "a/b", true},
	{"a/*/b", "a/b", false},
	{"ab/*", "ab", false},
	{"a/*/c/*/e", "a/b/c/d/e", true},
	{"a/*/c/*/e", "a/c/e", false},
	{"a/*/c/*/e", "a/b/c/d/x/e", false},
	{"*/*", "*", false},
	{"*/*", "*/*", true},
	// Double wildcards.
	{"**", "a", true},
	{"**", "abc", true},
	{"**", "a/b/c", true},
	{"**", "*", true},
	{"**", "**", true},
	{"**", "*/**", true},
	{"a/a/a/a", "**", true},
	{"ab/**", "ab", true},
	{"a/**/b", "a/b", true},
	{"a/**", "b/**", false},
	{"a/**", "**/b", true},
	{"**/a", "b/**", true},
	{"**/a", "**/b", false},
	{"**/a/**", "**/b/**", true},
	{"a/**/d/**/l", "a/b/c/d/e/f/g/h/i/l", true},
	{"a/**/d/**/l", "a/d/foo/l", true},
	{"a/**/d/**/l", "a/d/foo/k", false},
	{"**/xyz", "a/b/xyz/d/e/f/xyz", true},
	{"a/**/c/**/e", "a/b/b/b/c/d/d/d/e", true},
	{"a/**/c/**/e", "a/c/e", true},
	{"a/**/c/*/e/*", "a/b/b/b/c/d/d/c/d/e/f", true},
	{"a/**/c/*/e/*", "a/b/b/b/c/d/d/c/d/d/e/f", false},
	{"*/**", "a", true},
	{"*/*/**", "a", false},
	{"*/*/**", "**/a/b", true},
	{"a/*/**/b", "a/b", false},
	{"a/*/**/b", "**/x/b", true},
	{"**/a/b/**", "**/b/a/**", true},
	{"x/**/y", "x/*", true}, // on x/y
	{"x/**/y/z", "x/*", false},
	{"x/**/y", "*/y", true},
	// Sub-chunk wildcards $*.
	{"ab$*", "abcd", true},
	{"ab$*d", "abcd", true},
	{"ab$*", "ab", true},
	{"ab$*cd", "abxxcxxd", false},
	{"ab$*cd", "abxxcxxcd", true},
	{"ab$*cd", "abxxcxxcdx", false},
	{"ab$*cd", "abcd", true},
	{"ab$*cd", "abd", false},
	{"a/$*b/c/$*d/e", "a/xb/c/xd/e", true},
	{"**/xyz$*xyz", "a/b/xyz/d/e/f/xyz", false},
	{"**/xyz$*xyz", "a/b/xyzxyz", true},
	{"**/xyz$*xyz", "a/b/xyzxy", false},
	{"x/*", "x/abc$*", true},
	{"x/$*abc", "x/abc$*", true},
	{"x/a$*", "x/abc$*", true},
	{"x/a$*de", "x/abc$*de", true},
	{"x/a$*d$*e", "x/a$*e", true},
	{"x/a$*d$*e", "x/a$*c$*e", true},
	{"x/a$*d$*e", "x/ade", true},
	{"x/a$*d$*e", "x/ae", false},
	{"x/c$*", "x/abc$*", false},
	{"x/$*d", "x/$*e", false},
	{"x/$*d", "x/$*ed", true},
	{"x/ab$*", "x/$*ba", true},
	{"x/ab$*", "x/b$*", false},
	{"a$*b$*c", "$*x$*", true},
	{"a$*", "$*a", true},
	{"a", "$*a", true},
	{"a", "a$*", true},
	{"a", "$*a$*", true},
	{"a/b$*", "a/b", true},
	{"a/$*b$*", "a/b", true},
	{"a/$*b", "a/b", true},
	{"a/b$*", "a/bc", true},
	{"a/$*b$*", "a/ebc", true},
	{"a/$*b", "a/cb", true},
	{"a/b$*", "a/ebc", false},
	{"a/$*b", "a/cbc", false},
	{"a/**/b$*", "a/b", true},
	{"a/**/$*b$*", "a/b", true},
	{"a/**/$*b", "a/b", true},
	{"a/**/b$*", "a/bc", true},
	{"a/**/$*b$*", "a/ebc", true},
	{"a/**/$*b", "a/cb", true},
	{"a/**/b$*", "a/ebc", false},
	{"a/**/$*b", "a/cbc", false},
	{"**/a$*", "**/$*b", true},
	{"*/a$*", "b$*/*", true},
	{"abc$*", "ab", false},
	{"$*abc", "bc", false},
	// Verbatim chunks: matched only by identical chunks.
	{"@a", "@a", true},
	{"@a", "@ab", false},
	{"@a", "@a/b", false},
	{"@a", "@a/*", false},
	{"@a", "@a/*/**", false},
	{"@a", "@a/**", true},
	{"@a", "*", false},
	{"@a", "**", false},
	{"@a", "$*a", false},
	{"@a", "@$*", false},
	{"@a$*", "@a$*", true},
	{"@a$*", "@ab", false},
	{"@x/**", "**", false},
	{"**/xyz$*xyz", "@a/b/xyzdefxyz", false},
	{"@a/**/c/**/e", "@a/b/b/b/c/d/d/d/e", true},
	{"@a/**/c/**/e", "@a/@b/b/b/c/d/d/d/e", false},
	{"@a/**/@c/**/e", "@a/b/b/b/@c/d/d/d/e", true},
	{"@a/**/e", "@a/b/b/d/d/d/e", true},
	{"@a/**/e", "@a/b/b/c/d/d/d/e", true},
	{"@a/**/e", "@a/b/b/@c/b/d/d/d/e", false},
	{"@a/*", "@a/@b", false},
	{"@a/**", "@a/@b", false},
	{"@a/**/@b", "@a/@b", true},
	{"@a/**/@b", "@a/**/@c/**/@b", false},
	{"@a/@b/**", "@a/@b", true},
	{"@a/**/@c/@b", "@a/**/@c/**/@b", true},
	{"a/**/$*b", "a/@b", false},
	{"**/@a/b/c/**", "@a/b/c", true},
	{"**/@a/b/c/**", "@b/b/c", false},
	{"**/@a/@b/@c/**", "@a/@b/@c", true},
	{"**/@a/@b/@c/**", "@a/@a/@c", false},
	{"**/@ros2_lv/**", "@ros2_lv/0/x", true},
	{"*/**", "@ros2_lv/0/x", false},
	{"@ros2_lv/0/**", "@ros2_lv/1/x", false},
	{"@ros2_lv/*/**", "@ros2_lv/0/zid/nid/NN/%/%/talker", true},
	{"a@b", "*", true}, // '@' not at the start: an ordinary chunk
	{"@/router/**", "@/router/local/status", true},
	// ROS 2 data keys (zenoh-wire.md §16.1).
	{"0/scan/**", "0/scan/sensor_msgs::msg::dds_::LaserScan_/RIHS01_abc", true},
	{"0/scan/**", "0/chatter/std_msgs::msg::dds_::String_/RIHS01_abc", false},
	{"0/*/std_msgs::msg::dds_::String_/*", "0/chatter/std_msgs::msg::dds_::String_/RIHS01_abc", true},
	{"0/**/std_msgs$*/*", "0/robot1/chatter/std_msgs::msg::dds_::String_/TypeHashNotSupported", true},
	{"robot/*/imu_data", "robot/**", true},
	{"robot/*/imu_data", "robot/r1/imu_data", true},
	{"robot/*/imu_data", "robot/r1/r2/imu_data", false},
}

func TestIntersects(t *testing.T) {
	for _, tc := range intersectCases {
		requireCanonical(t, tc.a, tc.b)
		require.Equal(t, tc.want, Intersects(tc.a, tc.b), "Intersects(%q, %q)", tc.a, tc.b)
		require.Equal(t, tc.want, Intersects(tc.b, tc.a), "Intersects(%q, %q)", tc.b, tc.a)
		require.Equal(t, tc.want, MustNew(tc.a).Intersects(MustNew(tc.b)))
	}
}

var includeCases = []struct {
	a, b string
	want bool
}{
	{"a", "a", true},
	{"a/b", "a/b", true},
	{"a", "b", false},
	{"*", "a", true},
	{"a", "*", false},
	{"*", "aaaaa", true},
	{"*", "*", true},
	{"*", "a$*", true},
	{"*", "**", false},
	{"*", "a/b", false},
	{"**", "a", true},
	{"a", "**", false},
	{"**", "a/a/a/a", true},
	{"**", "*/**", true},
	{"**", "**/a/**", true},
	{"**", "a$*/*", true},
	{"*/**", "*/**", true},
	{"*/**", "**", false}, // as in Zenoh: "**" counts as also matching the empty key
	{"*/**", "a/**", true},
	{"a/a/a/a", "**", false},
	{"a/*", "a/b", true},
	{"a/*", "a/**", false},
	{"a/**", "a/b/*", true},
	{"a/**", "a", true},
	{"a/**", "a/**", true},
	{"a/**", "a/*/**", true},
	{"a/*/**", "a/**", false},
	{"a/*/**", "a/b/**", true},
	{"a/**", "**/a", false},
	{"**/a", "a", true},
	{"**/a", "*/*/a", true},
	{"**/a", "**/a", true},
	{"**/a", "**/b/a", true},
	{"**/b/a", "**/a", false},
	{"a/**/b", "a/b", true},
	{"a/**/b", "a/*/c/**/b", true},
	{"a/**/b", "a/**/c", false},
	{"a/**/c/**/e", "a/b/b/b/c/d/d/d/e", true},
	{"a/**/c/**/e", "a/**/c/*/e", true},
	{"a/**/c/**/e", "a/**/e", false},
	{"a/*/b", "a/b", false},
	// $* chunks.
	{"a/b$*", "a/b", true},
	{"a/b", "a/b$*", false},
	{"a/$*b$*", "a/b", true},
	{"a/$*b", "a/b", true},
	{"a/b$*", "a/bc", true},
	{"a/$*b$*", "a/ebc", true},
	{"a/$*b", "a/cb", true},
	{"a/b$*", "a/ebc", false},
	{"a/$*b", "a/cbc", false},
	{"a/**/b$*", "a/b", true},
	{"a/**/$*b$*", "a/b", true},
	{"a/**/$*b", "a/b", true},
	{"a/**/b$*", "a/bc", true},
	{"a/**/$*b$*", "a/ebc", true},
	{"a/**/$*b", "a/cb", true},
	{"a/**/b$*", "a/ebc", false},
	{"a/**/$*b", "a/cbc", false},
	{"a$*", "ab$*", true},
	{"a$*", "a$*b", true},
	{"a$*", "$*b", false},
	{"ab$*", "a$*", false},
	{"$*b$*", "a$*c", false},
	{"$*b$*", "a$*b$*c", true},
	{"a$*b", "a$*b", true},
	{"a$*b", "ab", true},
	{"a$*b", "aXbYb", true},
	{"a$*b", "a$*c$*b", true},
	{"a$*c$*b", "a$*b", false},
	{"a$*", "*", false},
	{"$*x", "*", false},
	{"ab$*ba", "aba", false},
	{"ab$*ba", "abba", true},
	{"$*x$*y$*", "axbxcy", true},
	{"$*x$*y$*", "aybx", false},
	// Verbatim chunks.
	{"@a", "@a", true},
	{"@a", "@ab", false},
	{"@a", "@a/b", false},
	{"@a", "@a/*", false},
	{"@a", "@a/*/**", false},
	{"@a", "@a/**", false},
	{"@a/**", "@a", true},
	{"@a/**", "@a/b/c", true},
	{"@a/**", "@a/@b", false},
	{"@a/*", "@a/@b", false},
	{"@a/**/@b", "@a/@b", true},
	{"@a/@b/**", "@a/@b", true},
	{"**", "@a", false},
	{"*", "@a", false},
	{"$*a", "@a", false},
	{"**/xyz$*xyz", "@a/b/xyzdefxyz", false},
	{"@a/**/c/**/e", "@a/b/b/b/c/d/d/d/e", true},
	{"a/**/$*b", "a/@b", false},
	{"**/@a/b/c/**", "@a/b/c", true},
	{"**/@a/b/c/**", "@b/b/c", false},
	{"**/@a/@b/@c/**", "@a/@b/@c", true},
	{"**/@a/@b/@c/**", "@a/@a/@c", false},
	{"@a$*", "@a$*", true},
	{"@a$*", "@ab", false},
	// ROS 2 keys.
	{"0/scan/**", "0/scan/sensor_msgs::msg::dds_::LaserScan_/RIHS01_abc", true},
	{"0/**", "0/scan/**", true},
	{"0/scan/**", "0/**", false},
	{"robot/**", "robot/*/imu_data", true},
	{"robot/*/imu_data", "robot/**", false},
	{"@ros2_lv/0/**", "@ros2_lv/0/zid/nid/NN/%/%/talker", true},
}

func TestIncludes(t *testing.T) {
	for _, tc := range includeCases {
		requireCanonical(t, tc.a, tc.b)
		require.Equal(t, tc.want, Includes(tc.a, tc.b), "Includes(%q, %q)", tc.a, tc.b)
		require.Equal(t, tc.want, MustNew(tc.a).Includes(MustNew(tc.b)))
		if tc.want {
			require.True(t, Intersects(tc.a, tc.b), "includes implies intersects: %q %q", tc.a, tc.b)
		}
		if tc.want && tc.a != tc.b {
			// Canonical forms: distinct strings are distinct sets, except Zenoh's "**" quirk.
			require.False(t, Includes(tc.b, tc.a) && tc.b != "**", "antisymmetry: %q %q", tc.a, tc.b)
		}
	}
}

func requireCanonical(t *testing.T, ss ...string) {
	t.Helper()
	for _, s := range ss {
		require.NoError(t, ValidateCanonical(s), "test case must be canonical")
	}
}

func TestKeyExpr(t *testing.T) {
	k, err := New("robot/*/imu")
	require.NoError(t, err)
	require.Equal(t, "robot/*/imu", k.String())
	require.True(t, k.IsWild())
	require.False(t, k.IsZero())
	require.True(t, KeyExpr{}.IsZero())
	require.False(t, MustNew("a/b").IsWild())
	require.True(t, MustNew("a$*").IsWild())

	_, err = New("robot/**/*")
	require.ErrorIs(t, err, ErrNotCanonical)
	k, err = Autocanonize("robot/**/*")
	require.NoError(t, err)
	require.Equal(t, MustNew("robot/*/**"), k)
	require.Panics(t, func() { MustNew("a//b") })

	// Join inserts '/' and canonizes (Rust KeyExpr::join).
	j, err := MustNew("some/prefix").Join("some/suffix")
	require.NoError(t, err)
	require.Equal(t, "some/prefix/some/suffix", j.String())
	j, err = MustNew("a/**").Join("**/b")
	require.NoError(t, err)
	require.Equal(t, "a/**/b", j.String())
	j, err = MustNew("a/**").Join("*")
	require.NoError(t, err)
	require.Equal(t, "a/*/**", j.String())
	j, err = MustNew("a").Join("$*")
	require.NoError(t, err)
	require.Equal(t, "a/*", j.String())
	_, err = MustNew("a").Join("/b")
	require.ErrorIs(t, err, ErrEmptyChunk)
	_, err = MustNew("a").Join("")
	require.ErrorIs(t, err, ErrEmptyChunk)
	_, err = MustNew("a").Join("b?x=1")
	require.ErrorIs(t, err, ErrForbiddenChar)

	// Concat is plain concatenation, validated strictly (Rust KeyExpr::concat).
	c, err := MustNew("robot").Concat("1/imu")
	require.NoError(t, err)
	require.Equal(t, "robot1/imu", c.String())
	c, err = MustNew("a$*").Concat("b")
	require.NoError(t, err)
	require.Equal(t, "a$*b", c.String())
	_, err = MustNew("a/*").Concat("*/b")
	require.ErrorIs(t, err, ErrStarJunction)
	var ke *Error
	require.ErrorAs(t, err, &ke)
	require.Equal(t, 3, ke.Offset)
	_, err = MustNew("a/**").Concat("/*")
	require.ErrorIs(t, err, ErrSingleStarAfterDoubleStar)
	_, err = MustNew("a").Concat("/")
	require.ErrorIs(t, err, ErrEmptyChunk)
}
