package transport

import (
	"errors"
	"fmt"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// CloseReason says why a session ended. Values 0..255 are the Zenoh CLOSE
// reasons carried on the wire (zenoh-wire.md §4.4, wire.CloseReason); values
// from 256 up are local reasons that never appear on the wire. A session
// records exactly one CloseReason (the first one).
type CloseReason uint16

// Zenoh CLOSE reasons (zenoh-wire.md §4.4).
const (
	ReasonGeneric          = CloseReason(wire.CloseGeneric)
	ReasonUnsupported      = CloseReason(wire.CloseUnsupported)
	ReasonInvalid          = CloseReason(wire.CloseInvalid)
	ReasonMaxSessions      = CloseReason(wire.CloseMaxSessions)
	ReasonMaxLinks         = CloseReason(wire.CloseMaxLinks)
	ReasonExpired          = CloseReason(wire.CloseExpired)
	ReasonUnresponsive     = CloseReason(wire.CloseUnresponsive)
	ReasonConnectionToSelf = CloseReason(wire.CloseConnectionToSelf)
)

// Local close reasons (not on the wire).
const (
	// ReasonEOF: the link was closed by the peer (TCP EOF, reset) without a
	// CLOSE message; zenoh-pico's normal way to end a session (§12.7).
	ReasonEOF CloseReason = 256 + iota
	// ReasonDecodeError: the peer sent bytes that do not decode
	// (invariant 4). Err wraps the *wire.Error.
	ReasonDecodeError
	// ReasonShutdown: closed locally (Session.Close, Listener.Close, the
	// dial context).
	ReasonShutdown
	// ReasonRemoteClose: the peer sent CLOSE; CloseError.Remote holds its reason.
	ReasonRemoteClose
	// ReasonLinkError: a read or write on the link failed (not EOF).
	ReasonLinkError
	// ReasonWriteTimeout: a batch could not be written within the peer's
	// lease (a stuck peer that stopped reading).
	ReasonWriteTimeout
	// ReasonHandshake: the INIT/OPEN exchange failed (timeout, bad cookie,
	// unexpected message, refused parameters).
	ReasonHandshake
	// ReasonRejected: the Listener's accept function returned nil.
	ReasonRejected
	// ReasonAuth: usrpwd authentication failed in INIT/OPEN (no
	// credentials offered or asked for, unknown user, wrong password); the
	// peer gets CLOSE(GENERIC), as zenohd sends (zenoh-mesh-auth.md §3.4).
	ReasonAuth
)

var reasonNames = map[CloseReason]string{
	ReasonGeneric:          "generic",
	ReasonUnsupported:      "unsupported",
	ReasonInvalid:          "invalid",
	ReasonMaxSessions:      "max_sessions",
	ReasonMaxLinks:         "max_links",
	ReasonExpired:          "expired",
	ReasonUnresponsive:     "unresponsive",
	ReasonConnectionToSelf: "connection_to_self",
	ReasonEOF:              "eof",
	ReasonDecodeError:      "decode_error",
	ReasonShutdown:         "shutdown",
	ReasonRemoteClose:      "remote_close",
	ReasonLinkError:        "link_error",
	ReasonWriteTimeout:     "write_timeout",
	ReasonHandshake:        "handshake",
	ReasonRejected:         "rejected",
	ReasonAuth:             "auth",
}

// String is a short snake_case name, also used as the metrics label value
// (a bounded set: unknown wire values are "other").
func (r CloseReason) String() string {
	if s, ok := reasonNames[r]; ok {
		return s
	}
	return "other"
}

// Wire returns the reason to put in a CLOSE message: the value itself for
// a Zenoh reason, and for local reasons the closest Zenoh one
// (DecodeError → INVALID, everything else → GENERIC).
func (r CloseReason) Wire() wire.CloseReason {
	switch {
	case r < 256:
		return wire.CloseReason(r)
	case r == ReasonDecodeError || r == ReasonHandshake:
		return wire.CloseInvalid
	case r == ReasonRejected:
		return wire.CloseMaxSessions
	}
	return wire.CloseGeneric
}

// CloseError is the error HandleClose receives and Session.Err returns.
type CloseError struct {
	Reason CloseReason
	// Remote is the reason of the peer's CLOSE when Reason is ReasonRemoteClose.
	Remote wire.CloseReason
	// Err is the underlying cause when there is one (a *wire.Error for
	// ReasonDecodeError, a net error for ReasonLinkError), else nil.
	Err error
}

func (e *CloseError) Error() string {
	s := "transport: session closed: " + e.Reason.String()
	if e.Reason == ReasonRemoteClose {
		s += " (" + e.Remote.String() + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *CloseError) Unwrap() error { return e.Err }

// Is matches another *CloseError with the same Reason, so that
// errors.Is(err, &CloseError{Reason: ReasonExpired}) works.
func (e *CloseError) Is(target error) bool {
	t, ok := target.(*CloseError)
	return ok && t.Reason == e.Reason && t.Err == nil
}

// Errors returned by Send.
var (
	// ErrClosed: the session is closed (or closing).
	ErrClosed = errors.New("transport: session closed")
	// ErrQueueFull: the TX queue was full and the message was dropped
	// (SendOptions.Block false). The drop is counted ("queue_full").
	ErrQueueFull = errors.New("transport: tx queue full, message dropped")
	// ErrBlockTimeout: SendOptions.Block waited Config.BlockTimeout for room
	// in the TX queue and dropped the message (counted "block_timeout").
	ErrBlockTimeout = errors.New("transport: tx queue full for the block timeout, message dropped")
	// ErrTooLarge: the encoded message is larger than Config.MaxMessage.
	ErrTooLarge = errors.New("transport: message larger than the fragmentation bound")
)

// HandshakeError is returned by Dial (and logged by a Listener) when INIT/OPEN fails.
type HandshakeError struct {
	Step string // "InitSyn", "InitAck", "OpenSyn", "OpenAck"
	// Reason is the CLOSE reason sent to the peer or received from it.
	Reason CloseReason
	Err    error
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("transport: handshake failed at %s (%s): %v", e.Step, e.Reason, e.Err)
}

func (e *HandshakeError) Unwrap() error { return e.Err }
