package wire

// Parser decodes transport and network messages into values it owns and
// reuses, so that steady-state decoding (FRAME → PUSH → PUT) does not
// allocate. A message returned by a Parser method is valid until the next
// call of any method of the same Parser; its []byte fields alias the input
// batch (copy what must outlive the batch). Key suffixes are strings,
// interned per Parser, so repeated keys do not allocate either.
//
// The zero value is ready to use. A Parser is not safe for concurrent use:
// use one per link (read loop).
type Parser struct {
	keys interner

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

	// NETWORK_SCRATCH
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
		err = p.toam.decode(&r, h)
		m = &p.toam
	case IDInit:
		if h&FlagInitAck == 0 {
			r.msg = "InitSyn"
			err = p.initSyn.decode(&r, h)
			m = &p.initSyn
		} else {
			r.msg = "InitAck"
			err = p.initAck.decode(&r, h)
			m = &p.initAck
		}
	case IDOpen:
		if h&FlagOpenAck == 0 {
			r.msg = "OpenSyn"
			err = p.openSyn.decode(&r, h)
			m = &p.openSyn
		} else {
			r.msg = "OpenAck"
			err = p.openAck.decode(&r, h)
			m = &p.openAck
		}
	case IDClose:
		r.msg = "CLOSE"
		err = p.close.decode(&r, h)
		m = &p.close
	case IDKeepAlive:
		r.msg = "KEEP_ALIVE"
		err = p.keep.decode(&r, h)
		m = &p.keep
	case IDFrame:
		r.msg = "FRAME"
		err = p.frame.decode(&r, h)
		m = &p.frame
	case IDFragment:
		r.msg = "FRAGMENT"
		err = p.fragment.decode(&r, h)
		m = &p.fragment
	case IDJoin:
		r.msg = "JOIN"
		err = p.join.decode(&r, h)
		m = &p.join
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
	var p Parser
	return p.Transport(b)
}
