package wire

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type appender interface {
	Append([]byte) []byte
	Len() int
}

// unhex decodes hex with optional spaces; strings in quotes are taken raw:
// unhex(`25 00 "demo"`).
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \n\t")
		if s == "" {
			break
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			require.GreaterOrEqual(t, end, 0)
			out = append(out, s[1:1+end]...)
			s = s[end+2:]
			continue
		}
		tok := s
		if i := strings.IndexAny(s, " \n\t\""); i >= 0 {
			tok = s[:i]
		}
		b, err := hex.DecodeString(tok)
		require.NoError(t, err, tok)
		out = append(out, b...)
		s = s[len(tok):]
	}
	return out
}

// trio runs the three standard checks of a message: known bytes decode to
// want, every truncation point (before minLen) fails with ErrTruncated, and
// want appends to exactly the known bytes with Len agreeing.
func trio[M appender](t *testing.T, want M, wire []byte, minLen int, parse func([]byte, byte) (M, int, error)) {
	t.Helper()
	got, n, err := parse(wire[1:], wire[0])
	require.NoError(t, err)
	require.Equal(t, len(wire)-1, n)
	require.Equal(t, want, got)
	require.Equal(t, wire, want.Append(nil))
	require.Equal(t, len(wire), want.Len())
	require.Equal(t, len(wire), got.Len())
	// appending after existing bytes works too
	pre := []byte{0xaa, 0xbb}
	require.Equal(t, append(pre[:2:2], wire...), want.Append(pre))
	if minLen == 0 {
		minLen = len(wire)
	}
	for i := 1; i < minLen; i++ {
		_, _, err := parse(wire[1:i], wire[0])
		require.ErrorIs(t, err, ErrTruncated, "cut at %d", i)
		var we *Error
		require.ErrorAs(t, err, &we)
	}
}
