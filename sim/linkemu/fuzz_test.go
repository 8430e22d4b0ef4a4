package linkemu

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzCut feeds a byte stream to the TCP proxy's framing in two reads cut
// at any point: the packets and the kept tail must give back the stream
// byte for byte, each Zenoh packet must be one whole batch, and chunks
// must respect ChunkSize.
func FuzzCut(f *testing.F) {
	f.Add(zenohStream(1, 5, 40), uint16(7), false)
	f.Add([]byte{0, 0, 1, 0, 'x', 255, 255}, uint16(3), false)
	f.Add(bytes.Repeat([]byte{9}, 300), uint16(100), true)
	f.Fuzz(func(t *testing.T, stream []byte, split uint16, chunk bool) {
		cfg := Config{ChunkSize: 64}
		if chunk {
			cfg.Framing = FramingChunk
		}
		p := &TCPProxy{core: &core{cfg: cfg}}
		at := int(split) % (len(stream) + 1)
		u1, rest := p.cut(nil, stream[:at])
		u2, rest := p.cut(rest, stream[at:])
		var got []byte
		for _, u := range append(u1, u2...) {
			if chunk {
				if len(u) == 0 || len(u) > cfg.ChunkSize {
					t.Fatalf("chunk of %d bytes", len(u))
				}
			} else if len(u) < 2 || int(binary.LittleEndian.Uint16(u))+2 != len(u) {
				t.Fatalf("packet of %d bytes is not one batch", len(u))
			}
			got = append(got, u...)
		}
		got = append(got, rest...)
		if !bytes.Equal(got, stream) {
			t.Fatalf("stream changed: %x != %x", got, stream)
		}
	})
}
