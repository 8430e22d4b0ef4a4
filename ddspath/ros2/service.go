package ros2

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// ServiceHeaderLen is the size of rmw_cyclonedds's request id, carried
// between the 4-byte encapsulation and the body of every service request
// and reply sample (ros2-services.md §2.1).
const ServiceHeaderLen = 16

// ServiceHeader is rmw_cyclonedds's request id: the client's request-writer
// instance handle and the request's sequence number. On the wire both are
// in the byte order of the sample's encapsulation (00 01 = little endian,
// 00 00 = big endian).
type ServiceHeader struct {
	GUID uint64
	Seq  int64
}

func encOrder(cdr []byte) (binary.ByteOrder, error) {
	if len(cdr) < 4 || cdr[0] != 0 || cdr[1] > 1 {
		return nil, fmt.Errorf("%w: want CDR_BE (00 00) or CDR_LE (00 01)", ErrEncapsulation)
	}
	if cdr[1] == 1 {
		return binary.LittleEndian, nil
	}
	return binary.BigEndian, nil
}

// SplitServiceHeader takes an rmw_cyclonedds request or reply sample apart:
// enc(4) · header(16) · body → the header and enc · body (a new slice; the
// body's alignment is unchanged because the header is 16 bytes). Errors:
// ErrEncapsulation (not plain CDR), ErrTruncated (shorter than 20 bytes).
func SplitServiceHeader(cdr []byte) (ServiceHeader, []byte, error) {
	bo, err := encOrder(cdr)
	if err != nil {
		return ServiceHeader{}, nil, err
	}
	if len(cdr) < 4+ServiceHeaderLen {
		return ServiceHeader{}, nil, fmt.Errorf("%w: service sample of %d bytes, want ≥ 20", ErrTruncated, len(cdr))
	}
	h := ServiceHeader{GUID: bo.Uint64(cdr[4:]), Seq: int64(bo.Uint64(cdr[12:]))}
	out := make([]byte, 0, len(cdr)-ServiceHeaderLen)
	out = append(out, cdr[:4]...)
	out = append(out, cdr[4+ServiceHeaderLen:]...)
	return h, out, nil
}

// JoinServiceHeader builds an rmw_cyclonedds sample from enc · body: enc ·
// h · body, h in the encapsulation's byte order. An empty payload becomes a
// little-endian encapsulation with no body. Errors: ErrEncapsulation.
func JoinServiceHeader(payload []byte, h ServiceHeader) ([]byte, error) {
	if len(payload) == 0 {
		payload = []byte{0, 1, 0, 0}
	}
	bo, err := encOrder(payload)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 4+ServiceHeaderLen, len(payload)+ServiceHeaderLen)
	copy(out, payload[:4])
	bo.PutUint64(out[4:], h.GUID)
	bo.PutUint64(out[12:], uint64(h.Seq))
	return append(out, payload[4:]...), nil
}

// CheckEncapsulation accepts a payload that starts with a plain CDR
// encapsulation (big or little endian), what a raw-CDR service bridge can
// insert a header into. Errors: ErrEncapsulation.
func CheckEncapsulation(payload []byte) error {
	_, err := encOrder(payload)
	return err
}

// ServiceTypeFromDDS maps a request or reply DDS type to the service type:
// "example_interfaces::srv::dds_::AddTwoInts_Request_" →
// "example_interfaces/srv/AddTwoInts"; action parts keep their part name
// ("…::action::dds_::Fibonacci_SendGoal_Request_" →
// "example_interfaces/action/Fibonacci_SendGoal"). Errors: ErrInvalidType.
func ServiceTypeFromDDS(ddsType string) (string, error) {
	for _, suf := range []string{"_Request_", "_Response_"} {
		if base, ok := strings.CutSuffix(ddsType, suf); ok {
			return TypeFromDDS(base + "_")
		}
	}
	return "", typeErr(ddsType, "service DDS type must end with _Request_ or _Response_")
}

// ZenohAttachmentLen is the size of rmw_zenoh's attachment (ros2-services.md §4.5).
const ZenohAttachmentLen = 33

// ZenohAttachment is rmw_zenoh's per-message attachment: sequence number,
// source timestamp and the entity GID (ros2-services.md §4.5).
type ZenohAttachment struct {
	Seq       int64
	Timestamp time.Time
	GID       [16]byte
}

// Marshal encodes a as 33 bytes: seq (int64 LE) · ns since the epoch (int64
// LE) · 0x10 · GID.
func (a ZenohAttachment) Marshal() []byte {
	b := make([]byte, ZenohAttachmentLen)
	binary.LittleEndian.PutUint64(b, uint64(a.Seq))
	binary.LittleEndian.PutUint64(b[8:], uint64(a.Timestamp.UnixNano()))
	b[16] = 16
	copy(b[17:], a.GID[:])
	return b
}

// ParseZenohAttachment decodes a 33-byte rmw_zenoh attachment; it fails on
// any other length or a GID length byte other than 16.
func ParseZenohAttachment(b []byte) (ZenohAttachment, error) {
	if len(b) != ZenohAttachmentLen || b[16] != 16 {
		return ZenohAttachment{}, fmt.Errorf("%w: rmw_zenoh attachment of %d bytes, want 33 with GID length 16", ErrMalformed, len(b))
	}
	a := ZenohAttachment{Seq: int64(binary.LittleEndian.Uint64(b)),
		Timestamp: time.Unix(0, int64(binary.LittleEndian.Uint64(b[8:])))}
	copy(a.GID[:], b[17:])
	return a, nil
}
