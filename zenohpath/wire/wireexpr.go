package wire

// WireExpr is a key expression on the wire (zenoh-wire.md §9.1):
//
//	%scope:z16%            id from a DeclareKeyExpr, 0 = no prefix
//	[suffix <u8;z16>]      if the message's N flag is set
//
// The full key is the string bound to Scope (or "" for 0) followed by
// Suffix. Mapping says whose id space Scope belongs to: MappingSender (the M
// flag) means the sender of the message declared it, MappingReceiver means
// the receiver did. The N and M flags live in the header byte of the
// carrying message; Append writes only the fields.
type WireExpr struct {
	Scope   uint16
	Suffix  string
	Mapping Mapping
}

// Mapping says which side declared a WireExpr's scope id (the M flag).
type Mapping bool

// Mappings.
const (
	MappingReceiver Mapping = false // M=0: the receiver declared the scope id
	MappingSender   Mapping = true  // M=1: the sender declared the scope id
)

// HasSuffix reports whether N must be set. An empty suffix is never sent
// (N=0), see zenoh-wire.md §9.1.
func (w WireExpr) HasSuffix() bool { return len(w.Suffix) > 0 }

// flags returns the N and M bits for a header that uses 0x20/0x40.
func (w WireExpr) flags() byte {
	return boolByte(w.HasSuffix(), FlagN) | boolByte(bool(w.Mapping), FlagM)
}

// Len is the encoded size of the fields.
func (w WireExpr) Len() int {
	n := VLELen(uint64(w.Scope))
	if w.HasSuffix() {
		n += bytesLen(len(w.Suffix))
	}
	return n
}

// Append appends scope and, if HasSuffix, the suffix.
func (w WireExpr) Append(b []byte) []byte {
	b = AppendVLE(b, uint64(w.Scope))
	if w.HasSuffix() {
		b = appendString(b, w.Suffix)
	}
	return b
}

// String shows scope, suffix and mapping for logs.
func (w WireExpr) String() string {
	s := "scope " + itoa(uint64(w.Scope))
	if w.Mapping {
		s += " M"
	}
	return s + " suffix " + quote(w.Suffix)
}

func quote(s string) string { return "\"" + s + "\"" }

// wireExpr reads a WireExpr; named says whether the N flag was set.
func (r *reader) wireExpr(named bool, m Mapping, in *interner) (WireExpr, error) {
	w := WireExpr{Mapping: m}
	var err error
	if w.Scope, err = r.z16("scope"); err != nil {
		return w, err
	}
	if named {
		s, err := r.bytes("suffix", 0xffff)
		if err != nil {
			return w, err
		}
		w.Suffix = in.str(s)
	}
	return w, nil
}

// interner turns key suffixes into strings without allocating for keys it
// has seen before. A nil interner always allocates.
type interner struct {
	m map[string]string
}

// maxInterned bounds the interner (entries); beyond it new keys are simply
// allocated.
const maxInterned = 4096

func (in *interner) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if in == nil {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = make(map[string]string)
	}
	if len(in.m) < maxInterned {
		in.m[s] = s
	}
	return s
}
