package wire_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
	"github.com/picobridge/picobridge/zenohpath/wire/zvec"
)

func transcripts(t testing.TB) []string {
	t.Helper()
	dir, err := zvec.FindTestdata()
	if err != nil {
		t.Skip("zenoh-pico transcripts not found: " + err.Error())
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.zvec"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

func loadTranscript(t testing.TB, path string) *zvec.File {
	t.Helper()
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	f, err := zvec.Parse(fh)
	require.NoError(t, err)
	return f
}

// reencode rebuilds a batch from its decoded messages. The encoding of every
// message seen from zenoh-pico and from the stand-in router is canonical,
// so the result must equal the input (see doc.go "Canonical forms" for the
// inputs where it would not).
func reencode(t *testing.T, batch []byte) []byte {
	t.Helper()
	var p wire.Parser
	var out []byte
	err := p.WalkBatch(batch, func(tm wire.TransportMessage, nm wire.NetworkMessage) error {
		if nm != nil {
			b := nm.Append(nil)
			require.Equal(t, len(b), nm.Len())
			out = append(out, b...)
			return nil
		}
		if f, ok := tm.(*wire.Frame); ok {
			h := *f
			h.Payload = nil
			out = h.Append(out)
			return nil
		}
		b := tm.Append(nil)
		require.Equal(t, len(b), tm.Len())
		out = append(out, b...)
		return nil
	})
	require.NoError(t, err)
	return out
}

func TestTranscripts(t *testing.T) {
	for _, path := range transcripts(t) {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".zvec"), func(t *testing.T) {
			f := loadTranscript(t, path)
			require.NotEmpty(t, f.Lines)
			d := zvec.NewDescriber()
			var reasm [2]wire.Reassembler
			for _, l := range f.Lines {
				if f.NewConnectionAfter(l.N - 1) {
					d.Reset()
				}
				// every batch decodes completely (WalkBatch fails on any
				// trailing byte that is not a complete message)
				var p wire.Parser
				err := p.WalkBatch(l.Batch, func(tm wire.TransportMessage, _ wire.NetworkMessage) error {
					if fr, ok := tm.(*wire.Fragment); ok {
						s := 0
						if l.Dir == zvec.GatewayToDevice {
							s = 1
						}
						msg, done, err := reasm[s].Push(fr)
						require.NoError(t, err)
						if done {
							var p2 wire.Parser
							m, n, err := p2.Network(msg)
							require.NoError(t, err, "line %d reassembled", l.N)
							require.Equal(t, len(msg), n, "line %d reassembled: trailing bytes", l.N)
							require.Equal(t, msg, m.Append(nil), "line %d reassembled re-encode", l.N)
						}
					}
					return nil
				})
				require.NoError(t, err, "line %d %s", l.N, l.Dir)
				// re-encoding gives the same bytes
				require.Equal(t, l.Batch, reencode(t, l.Batch), "line %d re-encode", l.N)
				// the description matches the # expect: line
				desc, err := d.Batch(l.Dir, l.Batch)
				require.NoError(t, err, "line %d", l.N)
				require.Len(t, desc, 1, "line %d: one transport message per batch", l.N)
				require.NotEmpty(t, l.Expect, "line %d has no expect", l.N)
				require.Equal(t, l.Expect, desc[0], "line %d %s", l.N, l.Dir)
			}
		})
	}
}

// TestTranscriptTruncations cuts every transcript batch at every byte: the
// walk must never panic, and a cut inside a message must be an error
// (a cut at a message boundary is a shorter valid batch).
func TestTranscriptTruncations(t *testing.T) {
	var p wire.Parser
	for _, path := range transcripts(t) {
		f := loadTranscript(t, path)
		for _, l := range f.Lines {
			// message boundaries of the full batch
			bounds := map[int]bool{}
			off := 0
			bounds[0] = true
			for off < len(l.Batch) {
				m, n, err := p.Transport(l.Batch[off:])
				require.NoError(t, err)
				if fr, ok := m.(*wire.Frame); ok {
					hdr := off + n - len(fr.Payload)
					bounds[hdr] = true
					for k := hdr; k < len(l.Batch); {
						_, j, err := p.Network(l.Batch[k:])
						require.NoError(t, err)
						k += j
						bounds[k] = true
					}
					off = len(l.Batch)
				} else {
					off += n
					bounds[off] = true
				}
			}
			for i := 0; i < len(l.Batch); i++ {
				err := p.WalkBatch(l.Batch[:i], func(wire.TransportMessage, wire.NetworkMessage) error { return nil })
				if bounds[i] {
					require.NoError(t, err, "%s line %d cut at boundary %d", filepath.Base(path), l.N, i)
					continue
				}
				m, n, _ := p.Transport(l.Batch)
				if fr, frag := m.(*wire.Fragment); frag && i >= n-len(fr.Payload) {
					continue // a fragment's payload is opaque: any cut after its header decodes
				}
				require.Error(t, err, "%s line %d cut at %d", filepath.Base(path), l.N, i)
				require.ErrorIs(t, err, wire.ErrTruncated, "%s line %d cut at %d", filepath.Base(path), l.N, i)
			}
		}
	}
}
