package keyexpr

import "strings"

// KeyExpr is a valid key expression in canonical form (zenoh-wire.md §11.1). It is a small
// comparable value: == on two KeyExprs is set equality (but for Zenoh's one corner, "**" and
// "*/**" denote the same non-empty keys). The zero value is not a valid key
// expression; it reports IsZero and String "". The API mirrors zenoh's KeyExpr (Rust
// zenoh/src/api/key_expr.rs; zenoh-go NewKeyExpr, NewKeyExprAutocanonized, zenoh-wire.md §15.2).
type KeyExpr struct {
	s string
}

// New returns s as a KeyExpr if it is valid and canonical, like Rust's KeyExpr::try_from and
// zenoh-go's NewKeyExpr. Otherwise the error is that of [ValidateCanonical]; a non-canonical
// but valid s gives an error matching ErrNotCanonical (use [Autocanonize] for those).
func New(s string) (KeyExpr, error) {
	if err := ValidateCanonical(s); err != nil {
		return KeyExpr{}, err
	}
	return KeyExpr{s}, nil
}

// MustNew is like [New] but panics on error; for constants and tests.
func MustNew(s string) KeyExpr {
	k, err := New(s)
	if err != nil {
		panic(err)
	}
	return k
}

// Autocanonize returns the canonical form of s as a KeyExpr, like Rust's
// KeyExpr::autocanonize and zenoh-go's NewKeyExprAutocanonized. The error is that of
// [Validate].
func Autocanonize(s string) (KeyExpr, error) {
	c, err := Canonize(s)
	if err != nil {
		return KeyExpr{}, err
	}
	return KeyExpr{c}, nil
}

// String returns the canonical string.
func (k KeyExpr) String() string { return k.s }

// IsZero reports whether k is the zero KeyExpr.
func (k KeyExpr) IsZero() bool { return k.s == "" }

// IsWild reports whether k contains a wildcard ("*", "**" or "$*"), that is, whether it
// denotes more than one key.
func (k KeyExpr) IsWild() bool { return strings.IndexByte(k.s, '*') >= 0 }

// Intersects reports whether some key matches both k and o; see [Intersects].
func (k KeyExpr) Intersects(o KeyExpr) bool { return Intersects(k.s, o.s) }

// Includes reports whether every key matched by o is matched by k; see [Includes].
func (k KeyExpr) Includes(o KeyExpr) bool { return Includes(k.s, o.s) }

// Join returns k + "/" + s, canonized, like Rust's KeyExpr::join: "a/**".Join("**/b") is
// "a/**/b". This is the way to build a key from path segments. s need not be canonical but the
// result must be valid: s may not be empty, start or end with '/'.
func (k KeyExpr) Join(s string) (KeyExpr, error) {
	return Autocanonize(k.s + "/" + s)
}

// Concat returns k + s by plain string concatenation, which must be a valid canonical key
// expression, like Rust's KeyExpr::concat: "robot".Concat("1/imu") is "robot1/imu". As in
// Rust it refuses a k ending in '*' with an s starting with '*' (which would merge wildcards
// by accident), with an error wrapping ErrStarJunction at the junction; prefer [KeyExpr.Join].
func (k KeyExpr) Concat(s string) (KeyExpr, error) {
	joined := k.s + s
	if strings.HasSuffix(k.s, "*") && strings.HasPrefix(s, "*") {
		return KeyExpr{}, newError(joined, len(k.s), ErrStarJunction)
	}
	return New(joined)
}
