package wire

// Parser decodes transport and network messages into values it owns and
// reuses, so that steady-state decoding (FRAME → PUSH → PUT) does not
// allocate. A message returned by a Parser method is valid until the next
// call of any method of the same Parser; its []byte fields alias the input
// batch (copy what must outlive the batch). Key suffixes are strings,
// interned per Parser, so repeated keys do not allocate either.
//
// The zero value is ready to use. A Parser is not safe for concurrent use:
// use one per link (read loop). A nil *Parser works too and decodes into
// freshly allocated values (that is what ParseTransport and ParseNetwork
// do).
type Parser struct {
	keys interner
	scan frameScan

	initSyn  InitSyn
	initAck  InitAck
	openSyn  OpenSyn
	openAck  OpenAck
	close    Close
	keep     KeepAlive
	frame    Frame
	fragment Fragment
	join     Join
	toam     TransportOAM

	push     Push
	request  Request
	response Response
	final    ResponseFinal
	declare  Declare
	interest Interest
	noam     NetworkOAM

	put      Put
	del      Del
	query    Query
	reply    Reply
	errBody  Err
	replyPut Put
	replyDel Del

	dKeyExpr  DeclareKeyExpr
	uKeyExpr  UndeclareKeyExpr
	dSub      DeclareSubscriber
	uSub      UndeclareSubscriber
	dQbl      DeclareQueryable
	uQbl      UndeclareQueryable
	dTok      DeclareToken
	uTok      UndeclareToken
	declFinal DeclareFinal
}

// Transport decodes one transport message starting at b[0] (its header
// byte) and returns it with the number of bytes consumed. A FRAME or
// FRAGMENT consumes the rest of b. Error offsets count from b[0].
func (p *Parser) Transport(b []byte) (TransportMessage, int, error) {
	if len(b) == 0 {
		return nil, 0, newErr("transport", "header", 0, ErrTruncated)
	}
	h := b[0]
	r := reader{b: b, i: 1}
	var m TransportMessage
	var err error
	switch TransportID(h & MaskID) {
	case IDTransportOAM:
		r.msg = "OAM"
		var x *TransportOAM
		if p != nil {
			x = &p.toam
		} else {
			x = new(TransportOAM)
		}
		err, m = x.decode(&r, h), x
	case IDInit:
		if h&FlagInitAck == 0 {
			r.msg = "InitSyn"
			var x *InitSyn
			if p != nil {
				x = &p.initSyn
			} else {
				x = new(InitSyn)
			}
			err, m = x.decode(&r, h), x
		} else {
			r.msg = "InitAck"
			var x *InitAck
			if p != nil {
				x = &p.initAck
			} else {
				x = new(InitAck)
			}
			err, m = x.decode(&r, h), x
		}
	case IDOpen:
		if h&FlagOpenAck == 0 {
			r.msg = "OpenSyn"
			var x *OpenSyn
			if p != nil {
				x = &p.openSyn
			} else {
				x = new(OpenSyn)
			}
			err, m = x.decode(&r, h), x
		} else {
			r.msg = "OpenAck"
			var x *OpenAck
			if p != nil {
				x = &p.openAck
			} else {
				x = new(OpenAck)
			}
			err, m = x.decode(&r, h), x
		}
	case IDClose:
		r.msg = "CLOSE"
		var x *Close
		if p != nil {
			x = &p.close
		} else {
			x = new(Close)
		}
		err, m = x.decode(&r, h), x
	case IDKeepAlive:
		r.msg = "KEEP_ALIVE"
		var x *KeepAlive
		if p != nil {
			x = &p.keep
		} else {
			x = new(KeepAlive)
		}
		err, m = x.decode(&r, h), x
	case IDFrame:
		r.msg = "FRAME"
		var x *Frame
		if p != nil {
			x = &p.frame
		} else {
			x = new(Frame)
		}
		err, m = x.decode(&r, h), x
	case IDFragment:
		r.msg = "FRAGMENT"
		var x *Fragment
		if p != nil {
			x = &p.fragment
		} else {
			x = new(Fragment)
		}
		err, m = x.decode(&r, h), x
	case IDJoin:
		r.msg = "JOIN"
		var x *Join
		if p != nil {
			x = &p.join
		} else {
			x = new(Join)
		}
		err, m = x.decode(&r, h), x
	default:
		return nil, 0, newErr("transport", "header", 0, ErrUnknownMessage)
	}
	if err != nil {
		return nil, r.i, err
	}
	return m, r.i, nil
}

// ParseTransport decodes one transport message starting at its header byte
// b[0] into freshly allocated values (see Parser for the reusing form).
func ParseTransport(b []byte) (TransportMessage, int, error) {
	return (*Parser)(nil).Transport(b)
}

func (p *Parser) interner() *interner {
	if p == nil {
		return nil
	}
	return &p.keys
}

// The new* helpers return scratch values of a Parser, or fresh ones when p
// is nil (the ParseX functions).
func (p *Parser) newPut(inReply bool) *Put {
	switch {
	case p == nil:
		return new(Put)
	case inReply:
		return &p.replyPut
	}
	return &p.put
}

func (p *Parser) newDel(inReply bool) *Del {
	switch {
	case p == nil:
		return new(Del)
	case inReply:
		return &p.replyDel
	}
	return &p.del
}

func (p *Parser) newQuery() *Query {
	if p == nil {
		return new(Query)
	}
	return &p.query
}

func (p *Parser) newReply() *Reply {
	if p == nil {
		return new(Reply)
	}
	return &p.reply
}

func (p *Parser) newErr() *Err {
	if p == nil {
		return new(Err)
	}
	return &p.errBody
}

func (p *Parser) newDeclKeyExpr() *DeclareKeyExpr {
	if p == nil {
		return new(DeclareKeyExpr)
	}
	return &p.dKeyExpr
}

func (p *Parser) newUndeclKeyExpr() *UndeclareKeyExpr {
	if p == nil {
		return new(UndeclareKeyExpr)
	}
	return &p.uKeyExpr
}

func (p *Parser) newDeclSub() *DeclareSubscriber {
	if p == nil {
		return new(DeclareSubscriber)
	}
	return &p.dSub
}

func (p *Parser) newUndeclSub() *UndeclareSubscriber {
	if p == nil {
		return new(UndeclareSubscriber)
	}
	return &p.uSub
}

func (p *Parser) newDeclQbl() *DeclareQueryable {
	if p == nil {
		return new(DeclareQueryable)
	}
	return &p.dQbl
}

func (p *Parser) newUndeclQbl() *UndeclareQueryable {
	if p == nil {
		return new(UndeclareQueryable)
	}
	return &p.uQbl
}

func (p *Parser) newDeclTok() *DeclareToken {
	if p == nil {
		return new(DeclareToken)
	}
	return &p.dTok
}

func (p *Parser) newUndeclTok() *UndeclareToken {
	if p == nil {
		return new(UndeclareToken)
	}
	return &p.uTok
}

func (p *Parser) newDeclFinal() *DeclareFinal {
	if p == nil {
		return new(DeclareFinal)
	}
	return &p.declFinal
}

// IsNetworkHeader reports whether a header byte carries a network message
// ID (0x19-0x1f). Transport IDs (0x00-0x07) never collide with them
// (zenoh-wire.md §3.2).
func IsNetworkHeader(h byte) bool { return h&MaskID >= byte(IDInterest) }

// Network decodes one network message starting at b[0] (its header byte)
// and returns it with the number of bytes consumed. A header with a
// transport ID gives ErrNotNetwork. Error offsets count from b[0].
func (p *Parser) Network(b []byte) (NetworkMessage, int, error) {
	if len(b) == 0 {
		return nil, 0, newErr("network", "header", 0, ErrTruncated)
	}
	h := b[0]
	r := reader{b: b, i: 1}
	var m NetworkMessage
	var err error
	switch NetworkID(h & MaskID) {
	case IDPush:
		r.msg = "PUSH"
		var x *Push
		if p != nil {
			x = &p.push
		} else {
			x = new(Push)
		}
		err, m = x.decode(&r, h, p), x
	case IDRequest:
		r.msg = "REQUEST"
		var x *Request
		if p != nil {
			x = &p.request
		} else {
			x = new(Request)
		}
		err, m = x.decode(&r, h, p), x
	case IDResponse:
		r.msg = "RESPONSE"
		var x *Response
		if p != nil {
			x = &p.response
		} else {
			x = new(Response)
		}
		err, m = x.decode(&r, h, p), x
	case IDResponseFinal:
		r.msg = "RESPONSE_FINAL"
		var x *ResponseFinal
		if p != nil {
			x = &p.final
		} else {
			x = new(ResponseFinal)
		}
		err, m = x.decode(&r, h), x
	case IDDeclare:
		r.msg = "DECLARE"
		var x *Declare
		if p != nil {
			x = &p.declare
		} else {
			x = new(Declare)
		}
		err, m = x.decode(&r, h, p), x
	case IDInterest:
		r.msg = "INTEREST"
		var x *Interest
		if p != nil {
			x = &p.interest
		} else {
			x = new(Interest)
		}
		err, m = x.decode(&r, h, p.interner()), x
	case IDNetworkOAM:
		r.msg = "OAM"
		var x *NetworkOAM
		if p != nil {
			x = &p.noam
		} else {
			x = new(NetworkOAM)
		}
		err, m = x.decode(&r, h), x
	default:
		if h&MaskID <= byte(IDJoin) {
			return nil, 0, newErr("network", "header", 0, ErrNotNetwork)
		}
		return nil, 0, newErr("network", "header", 0, ErrUnknownMessage)
	}
	if err != nil {
		return nil, r.i, err
	}
	return m, r.i, nil
}

// ParseNetwork decodes one network message starting at its header byte
// b[0] into freshly allocated values (see Parser for the reusing form).
func ParseNetwork(b []byte) (NetworkMessage, int, error) {
	return (*Parser)(nil).Network(b)
}

// ParseZenohMessage decodes one zenoh message (PUT, DEL, QUERY, REPLY,
// ERR) starting at its header byte b[0], into freshly allocated values.
func ParseZenohMessage(b []byte) (ZenohMessage, int, error) {
	if len(b) == 0 {
		return nil, 0, newErr("zenoh", "header", 0, ErrTruncated)
	}
	h := b[0]
	r := reader{b: b, i: 1}
	var m ZenohMessage
	var err error
	switch ZenohID(h & MaskID) {
	case IDPut:
		r.msg = "PUT"
		x := new(Put)
		err, m = x.decode(&r, h), x
	case IDDel:
		r.msg = "DEL"
		x := new(Del)
		err, m = x.decode(&r, h), x
	case IDQuery:
		r.msg = "QUERY"
		x := new(Query)
		err, m = x.decode(&r, h), x
	case IDReply:
		r.msg = "REPLY"
		x := new(Reply)
		err, m = x.decode(&r, h, nil), x
	case IDErr:
		r.msg = "ERR"
		x := new(Err)
		err, m = x.decode(&r, h), x
	default:
		return nil, 0, newErr("zenoh", "header", 0, ErrUnknownMessage)
	}
	if err != nil {
		return nil, r.i, err
	}
	return m, r.i, nil
}

// SkipFrame may be returned by a WalkBatch callback given a *Frame and a
// nil network message: the frame's network messages are then decoded only
// to find where the frame ends, and not passed to the callback.
var SkipFrame = errSkipFrame{}

type errSkipFrame struct{}

func (errSkipFrame) Error() string { return "skip frame" }

// WalkBatch decodes a whole batch (content without the stream length
// prefix). It calls fn(t, nil) for every transport message t and, for each
// FRAME, fn(frame, n) for each of its network messages n in order. The
// values passed are the Parser's and valid only during the call.
//
// A FRAME's network messages run to the end of the batch (zenoh-pico); if
// a header byte with a transport ID appears where a network message should
// start, the frame ends there and decoding continues at batch level (Rust
// multi-frame batches, zenoh-wire.md §3.2). The Frame passed to fn(t, nil)
// has Payload up to the end of the batch; the one passed with network
// messages has the same.
//
// FRAGMENT payloads are passed as they are: reassemble them (Reassembler)
// and decode the result with Network. A callback error stops the walk and
// is returned unchanged (except SkipFrame); decode errors are *Error with
// offsets counted from the start of the batch.
func (p *Parser) WalkBatch(batch []byte, fn func(t TransportMessage, n NetworkMessage) error) error {
	off := 0
	for off < len(batch) {
		t, n, err := p.Transport(batch[off:])
		if err != nil {
			return shiftErr(err, off)
		}
		skip := false
		if err := fn(t, nil); err != nil {
			if err != SkipFrame {
				return err
			}
			skip = true
		}
		f, ok := t.(*Frame)
		if !ok {
			off += n
			continue
		}
		off += n - len(f.Payload)
		for off < len(batch) && IsNetworkHeader(batch[off]) {
			m, k, err := p.Network(batch[off:])
			if err != nil {
				return shiftErr(err, off)
			}
			if !skip {
				if err := fn(f, m); err != nil {
					if err != SkipFrame {
						return err
					}
					skip = true
				}
			}
			off += k
		}
	}
	return nil
}
