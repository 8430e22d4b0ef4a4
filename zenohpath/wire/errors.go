package wire

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by a parser in this package is an
// *Error wrapping exactly one of these, so callers match with errors.Is and
// read the position with errors.As (zenoh-wire.md §2, style.md §2.6).
var (
	// ErrTruncated: the input ended inside a field, or a length prefix claims
	// more bytes than remain.
	ErrTruncated = errors.New("truncated")
	// ErrUnknownMessage: a header byte carries an ID that is not defined in
	// the ID space where it appears (or is not allowed there).
	ErrUnknownMessage = errors.New("unknown message id")
	// ErrUnknownMandatoryExt: an extension with the M bit (0x10) that this
	// codec does not know; the message is invalid (zenoh-wire.md §2.2).
	ErrUnknownMandatoryExt = errors.New("unknown mandatory extension")
	// ErrTooLarge: a VLE value exceeds the bound of its field (z8/z16/z32),
	// or a length exceeds a limit.
	ErrTooLarge = errors.New("value too large")
	// ErrInvalid: a field holds a value the protocol forbids (ZID length 0,
	// reserved extension encoding 0b11, DeclareFinal without context, ...).
	ErrInvalid = errors.New("invalid value")
	// ErrNotNetwork is returned by the network-message parsers when the
	// header byte holds a transport-message ID (0x00-0x07): inside a FRAME
	// this marks the end of the frame in a Rust multi-frame batch (§3.2).
	ErrNotNetwork = errors.New("not a network message")
)

// Error records where decoding failed. Offset counts bytes from the start of
// the slice handed to the outermost parse call (for Parser.WalkBatch: the
// start of the batch); Msg names the message (e.g. "PUSH") and Field the field.
type Error struct {
	Msg    string
	Field  string
	Offset int
	Err    error // one of the sentinels above
}

func (e *Error) Error() string {
	return fmt.Sprintf("wire: %s.%s at offset %d: %v", e.Msg, e.Field, e.Offset, e.Err)
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

func newErr(msg, field string, off int, err error) error {
	return &Error{Msg: msg, Field: field, Offset: off, Err: err}
}

// shiftErr adds delta to the offset of a wire *Error (used when a parser
// works on a sub-slice) and fills Msg if the inner parser left it empty.
func shiftErr(err error, delta int) error {
	var e *Error
	if errors.As(err, &e) {
		e.Offset += delta
	}
	return err
}
