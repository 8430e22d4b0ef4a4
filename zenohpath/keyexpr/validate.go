package keyexpr

import (
	"strings"
	"unicode/utf8"
)

// Validate reports whether s is a syntactically valid key expression (zenoh-wire.md §11.1),
// canonical or not: non-empty '/'-separated chunks, no '#' or '?', '$' only in "$*", '*' only
// as a whole "*" or "**" chunk or right after '$', valid UTF-8. The non-canonical spellings that
// [Canonize] repairs ("$*$*", a lone "$*" chunk, "**/**", "**/*") are accepted; use
// [ValidateCanonical] to refuse them as well.
//
// The error is an [*Error] wrapping one of ErrEmpty, ErrEmptyChunk, ErrStarInChunk,
// ErrUnboundDollar, ErrForbiddenChar or ErrInvalidUTF8, with the offset of the first problem.
func Validate(s string) error {
	if off, err := check(s, false); err != nil {
		return newError(s, off, err)
	}
	return nil
}

// ValidateCanonical reports whether s is a valid key expression in canonical form, the only
// form Zenoh accepts on the wire (zenoh-wire.md §11.1). It accepts exactly what the Rust
// keyexpr::new (zenoh-keyexpr key_expr/borrowed.rs, TryFrom<&str>) and zenoh-pico
// _z_keyexpr_is_canon accept. Besides the errors of [Validate] it may return
// ErrLoneDollarStar, ErrRepeatedDollarStar, ErrDoubleStarAfterDoubleStar or
// ErrSingleStarAfterDoubleStar, all of which match ErrNotCanonical.
//
// A syntax error takes precedence over a canonical-form error anywhere in s, so
// errors.Is(err, ErrNotCanonical) means exactly that [Canonize] will succeed.
func ValidateCanonical(s string) error {
	off, err := check(s, true)
	if err == nil {
		return nil
	}
	if isCanonErr(err) {
		if off2, err2 := check(s, false); err2 != nil {
			off, err = off2, err2
		}
	}
	return newError(s, off, err)
}

func isCanonErr(err error) bool {
	switch err {
	case ErrLoneDollarStar, ErrRepeatedDollarStar, ErrDoubleStarAfterDoubleStar, ErrSingleStarAfterDoubleStar:
		return true
	}
	return false
}

// IsCanonical reports whether s is a valid key expression in canonical form
// (ValidateCanonical(s) == nil). It does not allocate.
func IsCanonical(s string) bool {
	_, err := check(s, true)
	return err == nil
}

// check is the allocation-free core of Validate and ValidateCanonical: it returns the offset
// of the first problem and its sentinel, scanning left to right like the Rust validator.
func check(s string, canon bool) (int, error) {
	if s == "" {
		return 0, ErrEmpty
	}
	chunkStart := 0
	prevDouble := false // the previous chunk was "**"
	for chunkStart <= len(s) {
		end := strings.IndexByte(s[chunkStart:], '/')
		if end < 0 {
			end = len(s)
		} else {
			end += chunkStart
		}
		if end == chunkStart {
			// Empty chunk: point at the '/' that delimits it.
			if end == len(s) {
				return end - 1, ErrEmptyChunk
			}
			return end, ErrEmptyChunk
		}
		c := s[chunkStart:end]
		switch c {
		case "*":
			if canon && prevDouble {
				return chunkStart, ErrSingleStarAfterDoubleStar
			}
			prevDouble = false
		case "**":
			if canon && prevDouble {
				return chunkStart, ErrDoubleStarAfterDoubleStar
			}
			prevDouble = true
		default:
			prevDouble = false
			if off, err := checkChunk(c, canon); err != nil {
				return chunkStart + off, err
			}
		}
		chunkStart = end + 1
	}
	return 0, nil
}

// checkChunk checks a chunk that is neither "*" nor "**".
func checkChunk(c string, canon bool) (int, error) {
	for j := 0; j < len(c); {
		b := c[j]
		if b > '/' && b != '?' && b < utf8.RuneSelf {
			j++ // the common case: no special character is above '/' except '?'
			continue
		}
		switch b {
		case '#', '?':
			return j, ErrForbiddenChar
		case '*':
			if j == 0 || c[j-1] != '$' {
				return j, ErrStarInChunk
			}
		case '$':
			if j+1 >= len(c) || c[j+1] != '*' {
				return j, ErrUnboundDollar
			}
			if canon && j >= 2 && c[j-2] == '$' && c[j-1] == '*' {
				return j, ErrRepeatedDollarStar
			}
		default:
			if b >= utf8.RuneSelf {
				r, size := utf8.DecodeRuneInString(c[j:])
				if r == utf8.RuneError && size <= 1 {
					return j, ErrInvalidUTF8
				}
				j += size
				continue
			}
		}
		j++
	}
	if canon && c == "$*" {
		return 0, ErrLoneDollarStar
	}
	return 0, nil
}
