package keyexpr

import "strings"

// Canonize returns the canonical form of the key expression s (zenoh-wire.md §11.1), the form
// to put on the wire and to compare with ==. It applies, until stable:
//
//	$*$*  -> $*     inside a chunk
//	$*    -> *      as a whole chunk
//	**/** -> **
//	**/*  -> */**
//
// so a run of "*" and "**" chunks containing at least one "**" becomes its "*" chunks followed
// by a single "**". The result is the string Rust's keyexpr::autocanonize (zenoh-keyexpr
// key_expr/canon.rs) produces (testdata/rust_golden.json). Like it, and zenoh-pico's
// z_keyexpr_canonize, this also collapses "$*$*" inside verbatim '@' chunks. Deliberate
// differences, where the references are wrong: the Rust canonizer of zenoh 1.10 mishandles a
// "$*$*" that follows an earlier rewrite or precedes a later "$*" ("a$*$*/b$*" gives the
// invalid "a$*$*"; "$*/a$*$*" panics), and zenoh-pico's turns "**/$*" into the non-canonical
// "**/*" and passes '#' through; here those get their canonical form ("a$*/b$*", "*/a$*",
// "*/**") or an error.
//
// If s is already canonical it is returned as is, without allocating. An invalid s gives the
// [*Error] of [Validate], with offsets into s.
func Canonize(s string) (string, error) {
	if off, err := check(s, false); err != nil {
		return "", newError(s, off, err)
	}
	if _, err := check(s, true); err == nil {
		return s, nil
	}
	return canonize(s), nil
}

// canonize rewrites a valid (by Validate) expression into canonical form.
func canonize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	stars := 0      // "*" chunks in the current wildcard run
	double := false // the current wildcard run holds a "**"
	sep := func() {
		if b.Len() > 0 {
			b.WriteByte('/')
		}
	}
	flush := func() {
		for ; stars > 0; stars-- {
			sep()
			b.WriteByte('*')
		}
		if double {
			sep()
			b.WriteString("**")
			double = false
		}
	}
	for rest := s; ; {
		c, r, more := cut(rest)
		switch {
		case c == "*" || onlyDollarStars(c):
			stars++
		case c == "**":
			double = true
		default:
			flush()
			sep()
			writeCollapsed(&b, c)
		}
		if !more {
			break
		}
		rest = r
	}
	flush()
	return b.String()
}

// onlyDollarStars reports whether c is "$*", "$*$*", ...: a lone "$*" chunk.
func onlyDollarStars(c string) bool {
	if len(c) == 0 || len(c)%2 != 0 {
		return false
	}
	for i := 0; i < len(c); i += 2 {
		if c[i] != '$' || c[i+1] != '*' {
			return false
		}
	}
	return true
}

// writeCollapsed writes chunk c with each run of "$*" collapsed to one "$*".
func writeCollapsed(b *strings.Builder, c string) {
	for {
		i := strings.Index(c, "$*$*")
		if i < 0 {
			b.WriteString(c)
			return
		}
		b.WriteString(c[:i+2])
		c = c[i+2:]
		for strings.HasPrefix(c, "$*") {
			c = c[2:]
		}
	}
}

// cut splits off the first chunk of s; more is false when c is the last chunk.
func cut(s string) (c, rest string, more bool) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}
