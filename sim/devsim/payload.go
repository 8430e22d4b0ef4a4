package devsim

import (
	"encoding/binary"
	"time"

	"github.com/picobridge/picobridge/ddspath/ros2"
)

// Sample format of simulated publishers (docs/devsim.md):
//
//   - payload: little-endian CDR of a std_msgs/Header (stamp = publish time,
//     frame_id = device name) padded with zeros to Publication.Size, so any
//     ROS-aware receiver can read ros2.HeaderStamp;
//   - attachment: the 33-byte rmw_zenoh attachment (zenoh-wire.md §16.4):
//     sequence number (i64 LE), source timestamp (i64 LE ns), 0x10, 16-byte
//     source GID.
const (
	attachmentLen = 33
	// zpeerMagic prefixes the payloads of the interop harness's publisher
	// (internal/interop/testdata/zpeer.py): "zpq1" + u64 LE sequence.
	zpeerMagic = "zpq1"
)

// buildSample appends a sample payload to b.
func buildSample(b []byte, now time.Time, frameID string, size int) []byte {
	h := ros2.Header{Stamp: ros2.TimeOf(now), FrameID: frameID}
	b = append(b, ros2.Marshal(&h)...)
	for len(b) < size {
		b = append(b, 0)
	}
	return b
}

// buildAttachment appends the rmw_zenoh attachment to b.
func buildAttachment(b []byte, seq int64, now time.Time, gid [16]byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(seq))
	b = binary.LittleEndian.AppendUint64(b, uint64(now.UnixNano()))
	b = append(b, 0x10)
	return append(b, gid[:]...)
}

// sampleSeq extracts the source and sequence number of a received sample:
// from an rmw_zenoh attachment (source = GID), else from a zpeer payload
// (source ""). ok is false when the sample carries neither.
func sampleSeq(payload, attachment []byte) (src string, seq uint64, ok bool) {
	if len(attachment) == attachmentLen && attachment[16] == 0x10 {
		return string(attachment[17:]), binary.LittleEndian.Uint64(attachment), true
	}
	if len(payload) >= len(zpeerMagic)+8 && string(payload[:len(zpeerMagic)]) == zpeerMagic {
		return "", binary.LittleEndian.Uint64(payload[len(zpeerMagic):]), true
	}
	return "", 0, false
}

// sampleStamp returns the ROS header stamp of a CDR payload (zero time when
// it has none).
func sampleStamp(payload []byte) time.Time {
	t, err := ros2.HeaderStamp(payload)
	if err != nil || (t.Sec == 0 && t.Nanosec == 0) {
		return time.Time{}
	}
	return t.Time()
}
