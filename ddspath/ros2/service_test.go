package ros2

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestServiceHeaderLittleAndBigEndian(t *testing.T) {
	le := []byte{0, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0xbb}
	h, body, err := SplitServiceHeader(le)
	require.NoError(t, err)
	require.Equal(t, ServiceHeader{GUID: 0x0807060504030201, Seq: 9}, h)
	require.Equal(t, []byte{0, 1, 0, 0, 0xaa, 0xbb}, body)
	back, err := JoinServiceHeader(body, h)
	require.NoError(t, err)
	require.Equal(t, le, back)

	be, err := JoinServiceHeader([]byte{0, 0, 0, 0, 0xcc}, ServiceHeader{GUID: 1, Seq: 2})
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0xcc}, be)
	h, _, err = SplitServiceHeader(be)
	require.NoError(t, err)
	require.Equal(t, ServiceHeader{GUID: 1, Seq: 2}, h)

	empty, err := JoinServiceHeader(nil, ServiceHeader{GUID: 3, Seq: 4})
	require.NoError(t, err)
	require.Len(t, empty, 20)
	require.Equal(t, []byte{0, 1, 0, 0, 3}, empty[:5])
}

func TestServiceHeaderRejects(t *testing.T) {
	_, _, err := SplitServiceHeader([]byte{0, 1, 0, 0, 1, 2})
	require.ErrorIs(t, err, ErrTruncated)
	_, _, err = SplitServiceHeader(append([]byte{0, 7, 0, 0}, make([]byte, 16)...)) // XCDR2
	require.ErrorIs(t, err, ErrEncapsulation)
	_, err = JoinServiceHeader([]byte{0, 1}, ServiceHeader{})
	require.ErrorIs(t, err, ErrEncapsulation)
	require.NoError(t, CheckEncapsulation([]byte{0, 0, 0, 0}))
	require.ErrorIs(t, CheckEncapsulation([]byte{1, 1, 0, 0}), ErrEncapsulation)
}

func TestServiceTypeFromDDS(t *testing.T) {
	for in, want := range map[string]string{
		"example_interfaces::srv::dds_::AddTwoInts_Request_":            "example_interfaces/srv/AddTwoInts",
		"example_interfaces::srv::dds_::AddTwoInts_Response_":           "example_interfaces/srv/AddTwoInts",
		"example_interfaces::action::dds_::Fibonacci_SendGoal_Request_": "example_interfaces/action/Fibonacci_SendGoal",
		"action_msgs::srv::dds_::CancelGoal_Response_":                  "action_msgs/srv/CancelGoal",
	} {
		got, err := ServiceTypeFromDDS(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := ServiceTypeFromDDS("std_msgs::msg::dds_::String_")
	require.ErrorIs(t, err, ErrInvalidType)
}

func TestZenohAttachmentRoundTrip(t *testing.T) {
	a := ZenohAttachment{Seq: 7, Timestamp: time.Unix(1700000000, 5), GID: [16]byte{1, 2, 3}}
	b := a.Marshal()
	require.Len(t, b, 33)
	require.Equal(t, []byte{7, 0, 0, 0, 0, 0, 0, 0}, b[:8])
	require.Equal(t, byte(16), b[16])
	back, err := ParseZenohAttachment(b)
	require.NoError(t, err)
	require.Equal(t, a.Seq, back.Seq)
	require.True(t, a.Timestamp.Equal(back.Timestamp))
	require.Equal(t, a.GID, back.GID)
	_, err = ParseZenohAttachment(b[:32])
	require.ErrorIs(t, err, ErrMalformed)
}

func FuzzSplitServiceHeader(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0xaa})
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := SplitServiceHeader(b)
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrEncapsulation) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		back, err := JoinServiceHeader(body, h)
		if err != nil || !bytes.Equal(back, b) {
			t.Fatalf("round trip: %x → %x (%v)", b, back, err)
		}
	})
}

func FuzzParseZenohAttachment(f *testing.F) {
	f.Add(ZenohAttachment{Seq: 1, GID: [16]byte{9}}.Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseZenohAttachment(b)
		if err != nil {
			return
		}
		if !bytes.Equal(a.Marshal(), b) {
			t.Fatalf("round trip differs: %x", b)
		}
	})
}
