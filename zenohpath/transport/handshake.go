package transport

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// params is what INIT/OPEN negotiated (zenoh-wire.md §4.1–§4.3, §12.1).
type params struct {
	peerZID       wire.ZID
	peerWhatAmI   wire.WhatAmI
	resolution    uint8
	batchSize     uint16 // negotiated, prefix included on streams
	patch         uint64
	peerLease     time.Duration
	peerInitialSN uint64
	ourInitialSN  uint64
	ident         Identity // what authentication established (tls.go, usrpwd.go)
}

func (p params) snMask() uint64 { return wire.SNMask(p.resolution) }

// minResolution takes the per-field minimum of two resolution bytes
// (bits 0-1 frame SN, bits 2-3 request id; §4.2).
func minResolution(a, b uint8) uint8 {
	var r uint8
	for shift := uint(0); shift < 8; shift += 2 {
		x, y := (a>>shift)&3, (b>>shift)&3
		r |= min(x, y) << shift
	}
	return r
}

// resolutionLE reports whether every field of a is ≤ the same field of b.
func resolutionLE(a, b uint8) bool { return minResolution(a, b) == a }

func ourPatch(cfg *Config) uint64 {
	if cfg.NoPatch {
		return 0
	}
	return 1
}

func linkBatch(cfg *Config, l link) uint16 {
	return uint16(min(int(cfg.BatchSize), l.maxBatch()))
}

// MinBatchSize is the smallest negotiated batch size accepted, in bytes:
// room for the stream prefix, a FRAGMENT header with a 9-byte SN and the
// First marker, and some payload.
const MinBatchSize = 64

// randomSN draws an initial SN inside the mask (Rust derives one from the
// ZIDs, pico uses 0 in practice: peers must not rely on either, §4.3).
func randomSN(mask uint64) uint64 { return mrand.Uint64() & mask }

// cookie is stateless: it carries what the accepting side needs after
// OpenSyn, authenticated with an HMAC keyed per Listener (§4.2):
//
//	nonce[8] | zidlen | zid | whatami | resolution | batch u16le | patch | mac[16]
type cookieKey [32]byte

func newCookieKey() cookieKey {
	var k cookieKey
	_, _ = rand.Read(k[:])
	return k
}

const cookieMACLen = 16

func (k *cookieKey) make(p *params) []byte {
	b := make([]byte, 8, 8+1+wire.MaxZIDLen+5+cookieMACLen)
	_, _ = rand.Read(b[:8])
	z := p.peerZID.Bytes()
	b = append(b, byte(len(z)))
	b = append(b, z...)
	b = append(b, byte(p.peerWhatAmI), p.resolution, byte(p.batchSize), byte(p.batchSize>>8), byte(min(p.patch, 255)))
	mac := hmac.New(sha256.New, k[:])
	mac.Write(b)
	return mac.Sum(b)[:len(b)+cookieMACLen]
}

var errBadCookie = errors.New("bad cookie")

func (k *cookieKey) open(c []byte) (params, error) {
	var p params
	if len(c) < 8+1+cookieMACLen {
		return p, errBadCookie
	}
	body, sum := c[:len(c)-cookieMACLen], c[len(c)-cookieMACLen:]
	mac := hmac.New(sha256.New, k[:])
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil)[:cookieMACLen], sum) {
		return p, errBadCookie
	}
	zl := int(body[8])
	if len(body) != 8+1+zl+5 {
		return p, errBadCookie
	}
	z, err := wire.NewZID(body[9 : 9+zl])
	if err != nil {
		return p, errBadCookie
	}
	r := body[9+zl:]
	p.peerZID = z
	p.peerWhatAmI = wire.WhatAmI(r[0])
	p.resolution = r[1]
	p.batchSize = uint16(r[2]) | uint16(r[3])<<8
	p.patch = uint64(r[4])
	return p, nil
}

// hs carries one handshake's I/O: the link, a parser and the deadline.
type hs struct {
	l        link
	parser   *wire.Parser // from parserPool (newHS), given back by done
	deadline time.Time
	buf      []byte
}

func newHS(l link, deadline time.Time) *hs {
	return &hs{l: l, deadline: deadline, parser: parserPool.Get().(*wire.Parser)}
}

// done gives the parser back; the messages it decoded are no longer valid.
func (h *hs) done() {
	parserPool.Put(h.parser)
	h.parser = nil
}

func (h *hs) write(m wire.TransportMessage) error {
	h.buf = m.Append(append(h.buf[:0], 0, 0))
	return h.l.writeBatch(h.buf, h.deadline)
}

// read returns the first transport message of the next batch, skipping
// batches that hold only KEEP_ALIVE.
func (h *hs) read(step string) (wire.TransportMessage, error) {
	for {
		b, err := h.l.readBatch(h.deadline)
		if err != nil {
			return nil, &HandshakeError{Step: step, Reason: ReasonHandshake, Err: err}
		}
		if len(b) == 0 {
			continue
		}
		t, _, err := h.parser.Transport(b)
		if err != nil {
			return nil, &HandshakeError{Step: step, Reason: ReasonDecodeError, Err: err}
		}
		if _, ka := t.(*wire.KeepAlive); ka {
			continue
		}
		if c, ok := t.(*wire.Close); ok {
			return nil, &HandshakeError{Step: step, Reason: ReasonRemoteClose,
				Err: fmt.Errorf("peer sent CLOSE(%s)", c.Reason)}
		}
		return t, nil
	}
}

// fail sends CLOSE(reason) (best effort) and returns the error.
func (h *hs) fail(step string, reason CloseReason, err error) error {
	_ = h.write(&wire.Close{Session: true, Reason: reason.Wire()})
	return &HandshakeError{Step: step, Reason: reason, Err: err}
}

// checkPeerIdentity refuses what Rust refuses in INIT: the whatami value
// 0b11 (no such role; Rust's WhatAmI decoder errors) and an all-zero ZID
// (Rust's ZenohIdProto is a NonZeroU128).
func checkPeerIdentity(w wire.WhatAmI, z wire.ZID) error {
	if w > wire.WhatAmIClient {
		return fmt.Errorf("invalid whatami %#b (router 0b00, peer 0b01, client 0b10)", uint8(w))
	}
	for _, b := range z.Bytes() {
		if b != 0 {
			return nil
		}
	}
	return fmt.Errorf("invalid all-zero ZID %s", z.Hex())
}

// acceptHandshake runs the accepting (router) side of INIT/OPEN on l
// (zenoh-wire.md §4.2, §12.1).
func acceptHandshake(l link, cfg *Config, key *cookieKey, deadline time.Time) (params, error) {
	h := newHS(l, deadline)
	defer h.done()
	t, err := h.read("InitSyn")
	if err != nil {
		return params{}, err
	}
	syn, ok := t.(*wire.InitSyn)
	if !ok {
		return params{}, h.fail("InitSyn", ReasonInvalid, fmt.Errorf("unexpected %T", t))
	}
	if syn.Version != wire.ProtoVersion {
		return params{}, h.fail("InitSyn", ReasonInvalid, fmt.Errorf("protocol version %#x, want %#x", syn.Version, wire.ProtoVersion))
	}
	if err := checkPeerIdentity(syn.WhatAmI, syn.ZID); err != nil {
		return params{}, h.fail("InitSyn", ReasonInvalid, err)
	}
	if syn.ZID == cfg.ZID {
		return params{}, h.fail("InitSyn", ReasonConnectionToSelf, errors.New("peer has our own ZID"))
	}
	p := params{
		peerZID:     syn.ZID,
		peerWhatAmI: syn.WhatAmI,
		resolution:  minResolution(syn.Resolution, cfg.Resolution),
		batchSize:   min(syn.BatchSize, linkBatch(cfg, l)),
		patch:       min(syn.Patch, ourPatch(cfg)),
	}
	if p.batchSize < MinBatchSize {
		return params{}, h.fail("InitSyn", ReasonInvalid, fmt.Errorf("batch size %d below %d", p.batchSize, MinBatchSize))
	}
	auth := cfg.UsrPwd.acceptor()
	if auth {
		// zenohd: an acceptor with usrpwd requires the opener's offer.
		if _, ok, err := findAuthSub(syn.Exts, wire.ExtAuthUsrPwd); err != nil || !ok {
			if err == nil {
				err = errors.New("usrpwd required: the InitSyn offers no credentials")
			}
			return params{}, h.fail("InitSyn", ReasonAuth, err)
		}
	}
	ack := wire.InitAck{
		Version:    wire.ProtoVersion,
		WhatAmI:    cfg.WhatAmI,
		ZID:        cfg.ZID,
		HasSize:    syn.HasSize || p.resolution != wire.DefaultResolution || p.batchSize != wire.DefaultBatchUnicast,
		Resolution: p.resolution,
		BatchSize:  p.batchSize,
		Cookie:     key.make(&p),
		Patch:      p.patch,
	}
	if auth {
		ack.Exts = []wire.Ext{authExt(wire.Ext{Header: wire.ExtAuthUsrPwdNonce, Value: cookieNonce(ack.Cookie)})}
	}
	if err := h.write(&ack); err != nil {
		return params{}, &HandshakeError{Step: "InitAck", Reason: ReasonLinkError, Err: err}
	}
	t, err = h.read("OpenSyn")
	if err != nil {
		return params{}, err
	}
	os, ok := t.(*wire.OpenSyn)
	if !ok {
		return params{}, h.fail("OpenSyn", ReasonInvalid, fmt.Errorf("unexpected %T", t))
	}
	cp, err := key.open(os.Cookie)
	if err != nil || cp.peerZID != p.peerZID {
		return params{}, h.fail("OpenSyn", ReasonInvalid, errBadCookie)
	}
	p.resolution, p.batchSize, p.patch, p.peerWhatAmI = cp.resolution, cp.batchSize, cp.patch, cp.peerWhatAmI
	var ackExts []wire.Ext
	if auth {
		e, ok, err := findAuthSub(os.Exts, wire.ExtAuthUsrPwdOpen)
		if err == nil && !ok {
			err = errors.New("usrpwd required: the OpenSyn carries no user and HMAC")
		}
		if err == nil {
			p.ident.User, err = checkUsrPwd(cfg.UsrPwd.Dictionary, cookieNonce(os.Cookie), e.Body)
		}
		if err != nil {
			return params{}, h.fail("OpenSyn", ReasonAuth, err)
		}
		ackExts = []wire.Ext{authExt(wire.Ext{Header: wire.ExtAuthUsrPwd})}
	}
	mask := p.snMask()
	if os.InitialSN&^mask != 0 {
		return params{}, h.fail("OpenSyn", ReasonInvalid, fmt.Errorf("initial SN %#x outside mask %#x", os.InitialSN, mask))
	}
	p.peerLease = os.Lease
	p.peerInitialSN = os.InitialSN
	p.ourInitialSN = randomSN(mask)
	if err := h.write(&wire.OpenAck{Lease: cfg.Lease, InitialSN: p.ourInitialSN, Exts: ackExts}); err != nil {
		return params{}, &HandshakeError{Step: "OpenAck", Reason: ReasonLinkError, Err: err}
	}
	return p, nil
}

// openHandshake runs the opening (client/peer) side of INIT/OPEN on l
// (zenoh-wire.md §4.1–§4.3).
func openHandshake(l link, cfg *Config, deadline time.Time) (params, error) {
	h := newHS(l, deadline)
	defer h.done()
	batch := linkBatch(cfg, l)
	syn := wire.InitSyn{
		Version:    wire.ProtoVersion,
		WhatAmI:    cfg.WhatAmI,
		ZID:        cfg.ZID,
		HasSize:    cfg.Resolution != wire.DefaultResolution || batch != wire.DefaultBatchUnicast,
		Resolution: cfg.Resolution,
		BatchSize:  batch,
		Patch:      ourPatch(cfg),
	}
	auth := cfg.UsrPwd.opener()
	if auth {
		syn.Exts = []wire.Ext{authExt(wire.Ext{Header: wire.ExtAuthUsrPwd})}
	}
	if err := h.write(&syn); err != nil {
		return params{}, &HandshakeError{Step: "InitSyn", Reason: ReasonLinkError, Err: err}
	}
	t, err := h.read("InitAck")
	if err != nil {
		return params{}, err
	}
	ack, ok := t.(*wire.InitAck)
	if !ok {
		return params{}, h.fail("InitAck", ReasonInvalid, fmt.Errorf("unexpected %T", t))
	}
	if ack.Version != wire.ProtoVersion {
		return params{}, h.fail("InitAck", ReasonInvalid, fmt.Errorf("protocol version %#x", ack.Version))
	}
	if err := checkPeerIdentity(ack.WhatAmI, ack.ZID); err != nil {
		return params{}, h.fail("InitAck", ReasonInvalid, err)
	}
	if ack.BatchSize > batch || ack.BatchSize < MinBatchSize || !resolutionLE(ack.Resolution, cfg.Resolution) {
		return params{}, h.fail("InitAck", ReasonInvalid,
			fmt.Errorf("InitAck batch %d / resolution %#x outside [%d, %d] / %#x", ack.BatchSize, ack.Resolution, MinBatchSize, batch, cfg.Resolution))
	}
	p := params{
		peerZID:     ack.ZID,
		peerWhatAmI: ack.WhatAmI,
		resolution:  ack.Resolution,
		batchSize:   ack.BatchSize,
		patch:       min(ack.Patch, ourPatch(cfg)),
	}
	var synExts []wire.Ext
	if auth {
		// Rust: an opener with credentials requires the acceptor's nonce.
		e, ok, err := findAuthSub(ack.Exts, wire.ExtAuthUsrPwdNonce)
		if err == nil && !ok {
			err = errors.New("usrpwd: the peer does not ask for credentials (no nonce in InitAck)")
		}
		if err != nil {
			return params{}, h.fail("InitAck", ReasonAuth, err)
		}
		body := appendUsrPwdOpen(nil, cfg.UsrPwd.User, usrpwdMAC(e.Value, cfg.UsrPwd.Password))
		synExts = []wire.Ext{authExt(wire.Ext{Header: wire.ExtAuthUsrPwdOpen, Body: body})}
	}
	p.ourInitialSN = randomSN(p.snMask())
	cookie := append([]byte(nil), ack.Cookie...)
	if err := h.write(&wire.OpenSyn{Lease: cfg.Lease, InitialSN: p.ourInitialSN, Cookie: cookie, Exts: synExts}); err != nil {
		return params{}, &HandshakeError{Step: "OpenSyn", Reason: ReasonLinkError, Err: err}
	}
	t, err = h.read("OpenAck")
	if err != nil {
		return params{}, err
	}
	oa, ok := t.(*wire.OpenAck)
	if !ok {
		return params{}, h.fail("OpenAck", ReasonInvalid, fmt.Errorf("unexpected %T", t))
	}
	if oa.InitialSN&^p.snMask() != 0 {
		return params{}, h.fail("OpenAck", ReasonInvalid, fmt.Errorf("initial SN %#x outside mask", oa.InitialSN))
	}
	if auth {
		if _, ok, err := findAuthSub(oa.Exts, wire.ExtAuthUsrPwd); err != nil || !ok {
			if err == nil {
				err = errors.New("usrpwd: the OpenAck does not confirm authentication")
			}
			return params{}, h.fail("OpenAck", ReasonAuth, err)
		}
	}
	p.peerLease = oa.Lease
	p.peerInitialSN = oa.InitialSN
	return p, nil
}
