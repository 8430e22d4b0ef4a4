package ros2

import (
	"bytes"
	"testing"
)

// fuzzRoundTrip checks the decoder invariants on arbitrary input: no panic; when decoding
// succeeds, re-encoding in the input's byte order gives a message of CDRLen bytes that is no
// longer than the input, decodes again, and encodes to the same bytes (a fixed point).
func fuzzRoundTrip[M any, PM interface {
	*M
	Message
}](t *testing.T, in []byte, dec func([]byte) (M, error)) {
	m, err := dec(in)
	if err != nil {
		return
	}
	e, err := ParseEncapsulation(in)
	if err != nil {
		t.Fatalf("decoded but encapsulation invalid: %v", err)
	}
	out := PM(&m).AppendCDR(nil, e)
	if len(out) != PM(&m).CDRLen() {
		t.Fatalf("len(AppendCDR) %d != CDRLen %d", len(out), PM(&m).CDRLen())
	}
	if len(out) > len(in) {
		t.Fatalf("re-encoded %d bytes from %d input bytes", len(out), len(in))
	}
	m2, err := dec(out)
	if err != nil {
		t.Fatalf("re-decode: %v", err)
	}
	out2 := PM(&m2).AppendCDR(nil, e)
	if !bytes.Equal(out, out2) {
		t.Fatalf("not a fixed point:\n%x\n%x", out, out2)
	}
	// Same bytes as the input except padding and trailing bytes: stamps must agree.
	s1, err1 := HeaderStamp(in)
	s2, err2 := HeaderStamp(out)
	if (err1 == nil) != (err2 == nil) || s1 != s2 {
		t.Fatalf("stamp changed: %v %v / %v %v", s1, err1, s2, err2)
	}
}

func FuzzDecodeLaserScan(f *testing.F) {
	s := sampleScan()
	f.Add(s.AppendCDR(nil, LittleEndian))
	f.Add(s.AppendCDR(nil, BigEndian))
	s.Intensities = []float32{1, 2}
	s.Header.FrameID = ""
	f.Add(s.AppendCDR(nil, LittleEndian))
	f.Add([]byte{0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzRoundTrip(t, in, DecodeLaserScan)
	})
}

func FuzzDecodeImu(f *testing.F) {
	m := sampleImu()
	f.Add(m.AppendCDR(nil, LittleEndian))
	f.Add(m.AppendCDR(nil, BigEndian))
	m.Header.FrameID = "abcd"
	f.Add(m.AppendCDR(nil, LittleEndian))
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzRoundTrip(t, in, DecodeImu)
	})
}

func FuzzDecodeHeader(f *testing.F) {
	h := Header{Stamp: Time{Sec: 1, Nanosec: 2}, FrameID: "base_link"}
	f.Add(h.AppendCDR(nil, LittleEndian))
	f.Add(h.AppendCDR(nil, BigEndian))
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzRoundTrip(t, in, DecodeHeader)
		tm, err := DecodeTime(in)
		if err == nil {
			if got := tm.AppendCDR(nil, LittleEndian); len(got) != tm.CDRLen() {
				t.Fatal("time length")
			}
		}
	})
}

// FuzzSetHeaderStamp checks that stamp rewriting never panics, touches only bytes 4..11 and
// reads back what it wrote.
func FuzzSetHeaderStamp(f *testing.F) {
	f.Add(sampleScan().AppendCDR(nil, BigEndian), int32(5), uint32(6))
	f.Add([]byte{0, 1, 0, 0}, int32(0), uint32(0))
	f.Fuzz(func(t *testing.T, in []byte, sec int32, nsec uint32) {
		b := append([]byte(nil), in...)
		err := SetHeaderStamp(b, Time{Sec: sec, Nanosec: nsec})
		if err != nil {
			if !bytes.Equal(b, in) {
				t.Fatal("failed SetHeaderStamp modified the buffer")
			}
			return
		}
		if !bytes.Equal(b[:4], in[:4]) || !bytes.Equal(b[12:], in[12:]) {
			t.Fatal("SetHeaderStamp touched bytes outside the stamp")
		}
		got, err := HeaderStamp(b)
		if err != nil || got != (Time{Sec: sec, Nanosec: nsec}) {
			t.Fatalf("read back %v %v", got, err)
		}
	})
}
