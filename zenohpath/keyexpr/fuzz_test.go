package keyexpr

import (
	"errors"
	"strings"
	"testing"
)

// FuzzKeyExpr feeds two expressions (split at the first NUL of the input) to Validate,
// Canonize, Intersects and Includes. Rejecting input is no failure; it checks that nothing
// panics, that errors carry an in-range offset, that Canonize is idempotent and agrees with
// Validate and IsCanonical, and that the relations are symmetric, reflexive and consistent.
func FuzzKeyExpr(f *testing.F) {
	for _, tc := range validateCases {
		f.Add(tc.in + "\x00" + "**")
	}
	for _, tc := range canonizeCases {
		f.Add(tc.in + "\x00" + tc.want)
	}
	for _, tc := range intersectCases {
		f.Add(tc.a + "\x00" + tc.b)
	}
	for _, tc := range includeCases {
		f.Add(tc.a + "\x00" + tc.b)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s1, s2, _ := strings.Cut(in, "\x00")
		c1 := fuzzCanon(t, s1)
		c2 := fuzzCanon(t, s2)
		// Relations on arbitrary strings must not panic.
		_, _ = Intersects(s1, s2), Includes(s1, s2)
		if c1 != "" {
			_ = NewMatcher(MustNew(c1)).Matches(s2)
		}
		if c1 == "" || c2 == "" {
			return
		}
		x := Intersects(c1, c2)
		if x != Intersects(c2, c1) {
			t.Fatalf("Intersects(%q, %q) not symmetric", c1, c2)
		}
		if !Includes(c1, c1) || !Intersects(c1, c1) {
			t.Fatalf("%q: not reflexive", c1)
		}
		if Includes(c1, c2) && !x {
			t.Fatalf("Includes(%q, %q) without Intersects", c1, c2)
		}
		if Includes(c1, c2) && Includes(c2, c1) && c1 != c2 && c1 != "**" && c2 != "**" {
			t.Fatalf("%q and %q include each other", c1, c2)
		}
		m := NewMatcher(MustNew(c1))
		if m.Intersects(c2) != x || m.Matches(c2) != x || m.Includes(c2) != Includes(c1, c2) {
			t.Fatalf("Matcher(%q) disagrees on %q", c1, c2)
		}
	})
}

// fuzzCanon checks Validate/Canonize on s and returns its canonical form, "" if s is invalid.
func fuzzCanon(t *testing.T, s string) string {
	err := Validate(s)
	c, cerr := Canonize(s)
	if (err == nil) != (cerr == nil) {
		t.Fatalf("%q: Validate %v, Canonize %v", s, err, cerr)
	}
	verr := ValidateCanonical(s)
	if IsCanonical(s) != (verr == nil) {
		t.Fatalf("%q: IsCanonical disagrees with ValidateCanonical %v", s, verr)
	}
	if err != nil {
		var ke *Error
		if !errors.As(err, &ke) || ke.Offset < 0 || ke.Offset > len(s) || (len(s) > 0 && ke.Offset >= len(s)) {
			t.Fatalf("%q: bad error %v", s, err)
		}
		if errors.Is(verr, ErrNotCanonical) {
			t.Fatalf("%q: invalid, yet ValidateCanonical says only not canonical: %v", s, verr)
		}
		return ""
	}
	if (verr == nil) != (c == s) {
		t.Fatalf("%q: canonical %v but Canonize gives %q", s, verr, c)
	}
	if verr != nil && !errors.Is(verr, ErrNotCanonical) {
		t.Fatalf("%q: valid but ValidateCanonical says %v", s, verr)
	}
	if !IsCanonical(c) {
		t.Fatalf("Canonize(%q) = %q is not canonical: %v", s, c, ValidateCanonical(c))
	}
	if c2, err := Canonize(c); err != nil || c2 != c {
		t.Fatalf("Canonize not idempotent: %q -> %q -> %q, %v", s, c, c2, err)
	}
	if len(c) > len(s) {
		t.Fatalf("Canonize(%q) = %q grew", s, c)
	}
	return c
}
