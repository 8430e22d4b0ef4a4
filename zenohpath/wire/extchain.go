package wire

// Nested extension chains: the INIT/OPEN Auth extension (0x43) carries, as
// its ZBuf body, a chain of sub-extensions in the ordinary extension format
// (zenoh-mesh-auth.md §3.1): each header's Z bit says another follows, there
// is no count, and an empty chain is never sent.

// Auth sub-extension headers (ID|M|ENC) inside ExtInitAuth, per message
// (zenoh-mesh-auth.md §3.2).
const (
	ExtAuthPubKey      byte = 0x01 // pubkey (not implemented; skipped)
	ExtAuthUsrPwd      byte = 0x02 // InitSyn, OpenAck: usrpwd (unit)
	ExtAuthUsrPwdNonce byte = 0x22 // InitAck: usrpwd nonce (Z64)
	ExtAuthUsrPwdOpen  byte = 0x42 // OpenSyn: usrpwd user + HMAC (ZBuf)
)

// ParseExtChain decodes a whole extension chain from b (the body of a
// nesting ZBuf extension): every byte of b must belong to the chain, which
// ends at the first header without Z. The extensions are returned raw (Body
// aliases b), mandatory or not: the caller decides. An empty b is an empty
// chain. Errors: ErrTruncated, ErrInvalid (reserved encoding, bytes after
// the last extension).
func ParseExtChain(b []byte) ([]Ext, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r := reader{b: b, msg: "ext chain"}
	var out []Ext
	for more := true; more; {
		var e Ext
		var err error
		if e, more, err = r.ext(); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if r.left() != 0 {
		return nil, r.err("ext chain", ErrInvalid)
	}
	return out, nil
}

// AppendExtChain appends exts as one chain (Z set on all but the last);
// nothing for an empty list.
func AppendExtChain(b []byte, exts []Ext) []byte {
	for i, e := range exts {
		b = e.Append(b, i < len(exts)-1)
	}
	return b
}

// AppendBytes appends s with its VLE length prefix (the `<u8;z32>` field
// encoding), for bodies built outside this package.
func AppendBytes(b, s []byte) []byte { return appendBytes(b, s) }

// ParseBytes reads one VLE-length-prefixed byte field of at most max bytes
// from b and returns it (aliasing b) and the rest of b.
func ParseBytes(b []byte, max uint64) (field, rest []byte, err error) {
	r := reader{b: b, msg: "bytes"}
	if field, err = r.bytes("bytes", max); err != nil {
		return nil, nil, err
	}
	return field, r.rest(), nil
}
