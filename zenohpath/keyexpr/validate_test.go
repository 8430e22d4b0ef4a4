package keyexpr

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// validateCases: input, the sentinel Validate returns (nil if valid), its offset, and the
// sentinel ValidateCanonical returns when it differs (canonErr; zero value = same as err).
var validateCases = []struct {
	in       string
	err      error
	off      int
	canonErr error // nil: same as err
	canonOff int
}{
	// Valid and canonical (zenoh-wire.md §11.1, zenoh-keyexpr borrowed.rs tests).
	{in: "a"},
	{in: "demo/example/test"},
	{in: "demo/*"},
	{in: "demo/**"},
	{in: "demo/*/*/test"},
	{in: "demo/*/**/test"},
	{in: "demo/example$*/test"},
	{in: "demo/example$*-$*/test"},
	{in: "demo/example$*"},
	{in: "$*a"},
	{in: "a$*b$*c"},
	{in: "*"},
	{in: "**"},
	{in: "*/**"},
	{in: "**/a/**"},
	{in: "@ros2_lv/0/**"},
	{in: "@/router/local"},
	{in: "@adv/a$*"},
	{in: "0/chatter/std_msgs::msg::dds_::String_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"},
	{in: "héllo/wörld/日本"},
	{in: "a b/c\td"}, // spaces and control characters are not forbidden
	{in: "a@b"},      // '@' only makes a chunk verbatim at its start
	{in: "a/!%&()+,-.:;<=>[]^_`{|}~"},
	// Empty chunks.
	{in: "", err: ErrEmpty, off: 0},
	{in: "/", err: ErrEmptyChunk, off: 0},
	{in: "/a", err: ErrEmptyChunk, off: 0},
	{in: "a/", err: ErrEmptyChunk, off: 1},
	{in: "a//b", err: ErrEmptyChunk, off: 2},
	{in: "a/b/c/", err: ErrEmptyChunk, off: 5},
	{in: "**/*/", err: ErrEmptyChunk, off: 4},
	{in: "//", err: ErrEmptyChunk, off: 0},
	// Stars inside chunks.
	{in: "demo/exam*ple/test", err: ErrStarInChunk, off: 9},
	{in: "a*", err: ErrStarInChunk, off: 1},
	{in: "*a", err: ErrStarInChunk, off: 0},
	{in: "***", err: ErrStarInChunk, off: 0},
	{in: "a/***/b", err: ErrStarInChunk, off: 2},
	{in: "*$*", err: ErrStarInChunk, off: 0},
	{in: "a$**", err: ErrStarInChunk, off: 3},
	{in: "a/b/$**", err: ErrStarInChunk, off: 6},
	{in: "a/b/**$*", err: ErrStarInChunk, off: 4},
	{in: "a/b/*$***", err: ErrStarInChunk, off: 4},
	{in: "**/*a", err: ErrStarInChunk, off: 3},
	// Dollars.
	{in: "demo/$/test", err: ErrUnboundDollar, off: 5},
	{in: "a$", err: ErrUnboundDollar, off: 1},
	{in: "$", err: ErrUnboundDollar, off: 0},
	{in: "a$b", err: ErrUnboundDollar, off: 1},
	{in: "demo/example$*$/test", err: ErrUnboundDollar, off: 14},
	{in: "greetings/**/*/$e", err: ErrUnboundDollar, off: 15},
	{in: "$$*", err: ErrUnboundDollar, off: 0},
	// Forbidden characters.
	{in: "demo/example#/test", err: ErrForbiddenChar, off: 12},
	{in: "demo/example?/test", err: ErrForbiddenChar, off: 12},
	{in: "a?b=c", err: ErrForbiddenChar, off: 1},
	{in: "#", err: ErrForbiddenChar, off: 0},
	{in: "greetings/**/*/e?", err: ErrForbiddenChar, off: 16},
	// UTF-8.
	{in: "a/\xff", err: ErrInvalidUTF8, off: 2},
	{in: "é\xc3", err: ErrInvalidUTF8, off: 2},
	{in: "ok/\xed\xa0\x80", err: ErrInvalidUTF8, off: 3}, // surrogate
	// Valid but not canonical: Validate accepts, ValidateCanonical names the rule.
	{in: "demo/$*/test", canonErr: ErrLoneDollarStar, canonOff: 5},
	{in: "demo/$*", canonErr: ErrLoneDollarStar, canonOff: 5},
	{in: "$*", canonErr: ErrLoneDollarStar, canonOff: 0},
	{in: "demo/example$*$*/test", canonErr: ErrRepeatedDollarStar, canonOff: 14},
	{in: "$*$*", canonErr: ErrRepeatedDollarStar, canonOff: 2},
	{in: "a$*$*$*b", canonErr: ErrRepeatedDollarStar, canonOff: 3},
	{in: "@v$*$*", canonErr: ErrRepeatedDollarStar, canonOff: 4},
	{in: "demo/**/*/test", canonErr: ErrSingleStarAfterDoubleStar, canonOff: 8},
	{in: "**/*", canonErr: ErrSingleStarAfterDoubleStar, canonOff: 3},
	{in: "demo/**/**/test", canonErr: ErrDoubleStarAfterDoubleStar, canonOff: 8},
	{in: "**/**", canonErr: ErrDoubleStarAfterDoubleStar, canonOff: 3},
	{in: "a/**/b/**/**", canonErr: ErrDoubleStarAfterDoubleStar, canonOff: 10},
	{in: "greetings/**/*/**", canonErr: ErrSingleStarAfterDoubleStar, canonOff: 13},
}

func TestValidate(t *testing.T) {
	for _, tc := range validateCases {
		t.Run(tc.in, func(t *testing.T) {
			err := Validate(tc.in)
			if tc.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.err)
				var ke *Error
				require.True(t, errors.As(err, &ke))
				require.Equal(t, tc.off, ke.Offset, "offset: %v", err)
				require.Equal(t, tc.in, ke.Expr)
				require.NotErrorIs(t, err, ErrNotCanonical)
			}

			wantErr, wantOff := tc.err, tc.off
			if tc.canonErr != nil {
				require.Nil(t, tc.err, "bad case: non-canonical cases must be valid")
				wantErr, wantOff = tc.canonErr, tc.canonOff
			}
			err = ValidateCanonical(tc.in)
			require.Equal(t, wantErr == nil, IsCanonical(tc.in))
			if wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, wantErr)
			var ke *Error
			require.True(t, errors.As(err, &ke))
			require.Equal(t, wantOff, ke.Offset, "canonical offset: %v", err)
			require.Equal(t, tc.canonErr != nil, errors.Is(err, ErrNotCanonical))
			_, err = New(tc.in)
			require.ErrorIs(t, err, wantErr)
		})
	}
}

func TestErrorMessage(t *testing.T) {
	err := Validate("a//b")
	require.EqualError(t, err, `keyexpr "a//b": empty chunk (leading, trailing or double '/') at byte 2`)
	err = ValidateCanonical("a/**/**")
	require.ErrorIs(t, err, ErrNotCanonical)
	require.ErrorIs(t, err, ErrDoubleStarAfterDoubleStar)
	require.NotErrorIs(t, err, ErrSingleStarAfterDoubleStar)
	require.Contains(t, err.Error(), "'**/**' must be written '**' at byte 5")
}

func TestValidateLong(t *testing.T) {
	long := strings.Repeat("chunk/", 10000) + "end"
	require.NoError(t, ValidateCanonical(long))
	require.ErrorIs(t, Validate(long+"/"), ErrEmptyChunk)
}
