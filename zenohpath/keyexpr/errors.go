package keyexpr

import (
	"errors"
	"strconv"
)

// Sentinel errors, wrapped in an [*Error] that records the expression and the byte offset.
// Match them with [errors.Is]. The names follow the KeyExprError codes of the Rust crate
// zenoh-keyexpr (key_expr/borrowed.rs) and zp_keyexpr_canon_status_t of zenoh-pico.
var (
	// ErrEmpty: the expression is the empty string (zenoh-wire.md §11.1).
	ErrEmpty = errors.New("empty key expression")
	// ErrEmptyChunk: a leading or trailing '/', or "//" (zenoh-wire.md §11.1).
	ErrEmptyChunk = errors.New("empty chunk (leading, trailing or double '/')")
	// ErrStarInChunk: a '*' that is neither a whole "*" or "**" chunk nor part of "$*".
	ErrStarInChunk = errors.New("'*' may only form a whole '*' or '**' chunk or follow '$'")
	// ErrUnboundDollar: a '$' not followed by '*'.
	ErrUnboundDollar = errors.New("'$' is only allowed in '$*'")
	// ErrForbiddenChar: '#' or '?', which are reserved for selectors.
	ErrForbiddenChar = errors.New("'#' and '?' are forbidden")
	// ErrInvalidUTF8: the expression is not valid UTF-8 (Rust keys are &str).
	ErrInvalidUTF8 = errors.New("invalid UTF-8")

	// ErrStarJunction: [KeyExpr.Concat] of a left side ending in '*' and a right side
	// starting with '*', refused as by Rust's KeyExpr::concat.
	ErrStarJunction = errors.New("concatenation would join a trailing '*' to a leading '*'")

	// ErrNotCanonical is matched (through [Error.Is]) by each of the four errors below, which
	// [Canonize] repairs and [ValidateCanonical] reports.
	ErrNotCanonical = errors.New("key expression is not canonical")
	// ErrLoneDollarStar: a chunk made only of "$*" (canonical form: "*").
	ErrLoneDollarStar = errors.New("a lone '$*' chunk must be written '*'")
	// ErrRepeatedDollarStar: "$*$*" (canonical form: "$*").
	ErrRepeatedDollarStar = errors.New("'$*$*' must be written '$*'")
	// ErrDoubleStarAfterDoubleStar: "**/**" (canonical form: "**").
	ErrDoubleStarAfterDoubleStar = errors.New("'**/**' must be written '**'")
	// ErrSingleStarAfterDoubleStar: "**/*" (canonical form: "*/**").
	ErrSingleStarAfterDoubleStar = errors.New("'**/*' must be written '*/**'")
)

// Error reports what is wrong with a key expression and where. Err is one of the sentinels
// above; Offset is the index of the offending byte in Expr.
type Error struct {
	Expr   string // the expression as given
	Offset int    // byte offset of the problem in Expr
	Err    error  // one of the Err* sentinels
}

func (e *Error) Error() string {
	return "keyexpr " + strconv.Quote(e.Expr) + ": " + e.Err.Error() + " at byte " + strconv.Itoa(e.Offset)
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel, or ErrNotCanonical for the canonical-form
// errors, so that errors.Is(err, ErrNotCanonical) tells "fixable by Canonize" from "invalid".
func (e *Error) Is(target error) bool {
	if target == e.Err {
		return true
	}
	return target == ErrNotCanonical && isCanonErr(e.Err)
}

func newError(s string, off int, err error) error {
	return &Error{Expr: s, Offset: off, Err: err}
}
