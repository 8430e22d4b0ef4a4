package wire

// Validate checks what the types cannot rule out before a message is
// appended: ZIDs are set (1..16 bytes), bodies are present, and the
// encoded message fits the protocol's length fields. Append itself never
// fails; it writes a zero ZID as one 0x00 byte and a nil body as nothing.
// m is any message of this package (pointer or value).
func Validate(m any) error {
	switch x := m.(type) {
	case *InitSyn:
		return zidSet("InitSyn", x.ZID)
	case InitSyn:
		return zidSet("InitSyn", x.ZID)
	case *InitAck:
		return firstErr(zidSet("InitAck", x.ZID), maxLen("InitAck", "cookie", len(x.Cookie), 0xffff))
	case InitAck:
		return Validate(&x)
	case *OpenSyn:
		return maxLen("OpenSyn", "cookie", len(x.Cookie), 0xffff)
	case OpenSyn:
		return Validate(&x)
	case *Join:
		return zidSet("JOIN", x.ZID)
	case Join:
		return zidSet("JOIN", x.ZID)
	case *Push:
		if x.Body == nil {
			return newErr("PUSH", "body", 0, ErrInvalid)
		}
		return firstErr(validateWE("PUSH", x.WireExpr), validateNet("PUSH", &x.NetExt), Validate(x.Body))
	case Push:
		return Validate(&x)
	case *Request:
		if x.Body == nil {
			return newErr("REQUEST", "body", 0, ErrInvalid)
		}
		return firstErr(validateWE("REQUEST", x.WireExpr), validateNet("REQUEST", &x.NetExt), Validate(x.Body))
	case Request:
		return Validate(&x)
	case *Response:
		if x.Body == nil {
			return newErr("RESPONSE", "body", 0, ErrInvalid)
		}
		if x.HasResponderID {
			if err := zidSet("RESPONSE", x.ResponderID.ZID); err != nil {
				return err
			}
		}
		return firstErr(validateWE("RESPONSE", x.WireExpr), validateNet("RESPONSE", &x.NetExt), Validate(x.Body))
	case Response:
		return Validate(&x)
	case *Declare:
		if x.Body == nil {
			return newErr("DECLARE", "body", 0, ErrInvalid)
		}
		if err := validateNet("DECLARE", &x.NetExt); err != nil {
			return err
		}
		switch b := x.Body.(type) {
		case *DeclareKeyExpr:
			return validateWE("DECLARE", b.WireExpr)
		case *DeclareSubscriber:
			return validateWE("DECLARE", b.WireExpr)
		case *DeclareQueryable:
			return validateWE("DECLARE", b.WireExpr)
		case *DeclareToken:
			return validateWE("DECLARE", b.WireExpr)
		case *DeclareFinal:
			if !x.HasInterestID {
				return newErr("DECLARE", "interest_id", 0, ErrInvalid)
			}
		}
		return nil
	case Declare:
		return Validate(&x)
	case *Interest:
		return firstErr(validateWE("INTEREST", x.WireExpr), validateNet("INTEREST", &x.NetExt))
	case Interest:
		return Validate(&x)
	case *ResponseFinal:
		return validateNet("RESPONSE_FINAL", &x.NetExt)
	case *NetworkOAM:
		return validateNet("OAM", &x.NetExt)
	case *Put:
		return firstErr(tsSet("PUT", x.HasTimestamp, x.Timestamp), srcSet("PUT", x.HasSourceInfo, x.SourceInfo),
			schemaLen("PUT", x.HasEncoding, x.Encoding), maxLen("PUT", "payload", len(x.Payload), 0xffff_ffff))
	case Put:
		return Validate(&x)
	case *Del:
		return firstErr(tsSet("DEL", x.HasTimestamp, x.Timestamp), srcSet("DEL", x.HasSourceInfo, x.SourceInfo))
	case *Query:
		return firstErr(srcSet("QUERY", x.HasSourceInfo, x.SourceInfo), maxLen("QUERY", "parameters", len(x.Parameters), 0xffff),
			schemaLen("QUERY", x.HasBody, x.Body.Encoding))
	case *Reply:
		if x.Body == nil {
			return newErr("REPLY", "body", 0, ErrInvalid)
		}
		return Validate(x.Body)
	case *Err:
		return firstErr(srcSet("ERR", x.HasSourceInfo, x.SourceInfo), schemaLen("ERR", x.HasEncoding, x.Encoding))
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func zidSet(msg string, z ZID) error {
	if z.IsZero() {
		return newErr(msg, "zid", 0, ErrInvalid)
	}
	return nil
}

func maxLen(msg, field string, n, limit int) error {
	if n > limit {
		return newErr(msg, field, 0, ErrTooLarge)
	}
	return nil
}

func validateWE(msg string, w WireExpr) error { return maxLen(msg, "suffix", len(w.Suffix), 0xffff) }

func validateNet(msg string, x *NetExt) error { return tsSet(msg, x.HasTimestamp, x.Timestamp) }

func tsSet(msg string, has bool, t Timestamp) error {
	if has {
		return zidSet(msg, t.ZID)
	}
	return nil
}

func srcSet(msg string, has bool, s SourceInfo) error {
	if has {
		return zidSet(msg, s.ZID)
	}
	return nil
}

func schemaLen(msg string, has bool, e Encoding) error {
	if has {
		return maxLen(msg, "encoding", len(e.Schema), 0xff)
	}
	return nil
}
