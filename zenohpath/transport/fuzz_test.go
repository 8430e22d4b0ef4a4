package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// chunkReader returns its data in the given chunk sizes.
type chunkReader struct {
	data   []byte
	chunks []int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.chunks) > 0 {
		n = min(n, c.chunks[0])
		c.chunks = c.chunks[1:]
	}
	n = min(n, len(p))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func readAllBatches(r io.Reader) ([][]byte, error) {
	sr := newStreamReader(r)
	var out [][]byte
	for {
		b, err := sr.next()
		if err != nil {
			return out, err
		}
		out = append(out, append([]byte(nil), b...))
	}
}

// FuzzStreamReader feeds a byte stream whole and split in two halves (and
// byte by byte): the batches and the final error must be the same.
func FuzzStreamReader(f *testing.F) {
	f.Add(wire.AppendStreamBatch(wire.AppendStreamBatch(nil, []byte{0x04}), frameBatch(true, 1, push("k", []byte("v")))), uint16(3))
	f.Add([]byte{0x05, 0x00, 0x01}, uint16(1))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, stream []byte, split uint16) {
		k := 0
		if len(stream) > 0 {
			k = int(split) % (len(stream) + 1)
		}
		whole, errW := readAllBatches(bytes.NewReader(stream))
		halves, errH := readAllBatches(&chunkReader{data: stream, chunks: []int{k, len(stream)}})
		bytewise, errB := readAllBatches(&chunkReader{data: stream, chunks: repeatInt(1, len(stream))})
		require.Equal(t, whole, halves)
		require.Equal(t, whole, bytewise)
		require.Equal(t, errW, errH)
		require.Equal(t, errW, errB)
		require.True(t, errors.Is(errW, io.EOF) || errors.Is(errW, io.ErrUnexpectedEOF))
	})
}

func repeatInt(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// nullLink is a link that is never read or written by FuzzSessionRX.
type nullLink struct{}

func (nullLink) readBatch(time.Time) ([]byte, error) { return nil, io.EOF }
func (nullLink) writeBatch([]byte, time.Time) error  { return nil }
func (nullLink) stream() bool                        { return true }
func (nullLink) maxBatch() int                       { return 0xffff }
func (nullLink) close() error                        { return nil }
func (nullLink) remoteAddr() net.Addr                { return &net.TCPAddr{} }

// FuzzSessionRX runs arbitrary batches through a session's receive path
// (SN windows, fragments, dispatch): it returns an error or nil, never
// panics (invariant 4), and its drops are counted under known reasons.
func FuzzSessionRX(f *testing.F) {
	f.Add(frameBatch(true, 0, push("k", []byte("v"))), []byte{0xc6, 0x00, 0x02, 0x1d})
	f.Add([]byte{0x04}, []byte{0x23, 0x05})
	f.Add(wire.Fragment{SN: 0, More: true, First: true, Payload: []byte{0x1d, 0x00}}.Append(nil),
		wire.Fragment{SN: 1, Payload: []byte{0x01, 0x01, 0x01, 'x'}}.Append(nil))
	f.Fuzz(func(t *testing.T, b1, b2 []byte) {
		cfg := testConfig().withDefaults()
		cfg.MaxMessageSize, cfg.MaxReassembly = 1024, 1024
		s := newSession(&cfg, nullLink{}, params{resolution: 0x08, batchSize: 2048, patch: 1, peerLease: time.Second}, HandlerFuncs{})
		for _, b := range [][]byte{b1, b2} {
			_ = s.rxBatch(b)
		}
		for r, name := range dropNames {
			_ = s.stats.drops[r].Load()
			require.NotEmpty(t, name)
		}
	})
}

// scriptLink serves batches from a script and discards writes.
type scriptLink struct {
	in  [][]byte
	out [][]byte
}

func (l *scriptLink) readBatch(time.Time) ([]byte, error) {
	if len(l.in) == 0 {
		return nil, io.EOF
	}
	b := l.in[0]
	l.in = l.in[1:]
	return b, nil
}
func (l *scriptLink) writeBatch(b []byte, _ time.Time) error {
	l.out = append(l.out, append([]byte(nil), b[wire.StreamPrefixLen:]...))
	return nil
}
func (l *scriptLink) stream() bool         { return true }
func (l *scriptLink) maxBatch() int        { return 0xffff }
func (l *scriptLink) close() error         { return nil }
func (l *scriptLink) remoteAddr() net.Addr { return &net.TCPAddr{} }

// FuzzHandshake feeds arbitrary first batches to both handshake roles:
// they fail with an error or succeed with valid parameters, never panic,
// and every reply decodes.
func FuzzHandshake(f *testing.F) {
	zid := wire.MustZID([]byte{1, 2, 3, 4})
	syn := wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: zid, HasSize: true, Resolution: 0x0a, BatchSize: 2048, Patch: 1}
	f.Add(syn.Append(nil), wire.OpenSyn{Lease: time.Second, Cookie: []byte("x")}.Append(nil))
	ack := wire.InitAck{Version: wire.ProtoVersion, ZID: zid, HasSize: true, Resolution: 0x0a, BatchSize: 1024, Cookie: []byte("c")}
	f.Add(ack.Append(nil), wire.OpenAck{Lease: time.Second, InitialSN: 5}.Append(nil))
	f.Add([]byte{0x04}, []byte{0x23, 0x02})
	key := newCookieKey()
	f.Fuzz(func(t *testing.T, b1, b2 []byte) {
		cfg := testConfig().withDefaults()
		cfg.BatchSize = 4096
		for _, accept := range []bool{true, false} {
			l := &scriptLink{in: [][]byte{b1, b2}}
			var p params
			var err error
			if accept {
				p, err = acceptHandshake(l, &cfg, &key, time.Time{})
			} else {
				p, err = openHandshake(l, &cfg, time.Time{})
			}
			if err == nil {
				require.GreaterOrEqual(t, int(p.batchSize), MinBatchSize)
				require.LessOrEqual(t, p.batchSize, cfg.BatchSize)
				require.Zero(t, p.peerInitialSN&^p.snMask())
			}
			for _, out := range l.out {
				_, n, err := wire.ParseTransport(out)
				require.NoError(t, err)
				require.Equal(t, len(out), n)
			}
		}
	})
}

// TestStreamReaderSocket runs the socket path of the stream reader (raw
// reads, link_unix.go) over loopback TCP, with the stream written in
// pieces of every size from 1 byte up: the batches and the final error are
// those of the io.Reader path, and the reader holds no buffer once it has
// handed out everything.
func TestStreamReaderSocket(t *testing.T) {
	var stream []byte
	for _, n := range []int{0, 1, 5, 300, 4094, 4095, 4096, 5000, 65535, 17, 0, 2} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + n)
		}
		stream = wire.AppendStreamBatch(stream, b)
	}
	stream = append(stream, 0x10, 0x00, 'x') // truncated last batch
	want, wantErr := readAllBatches(bytes.NewReader(stream))
	require.ErrorIs(t, wantErr, io.ErrUnexpectedEOF)
	for _, piece := range []int{3, 1000, 4096, 70000} {
		tp := newTCPPipe(t)
		sr := newStreamReader(tp.b)
		require.NotNil(t, sr.raw, "a TCP conn is read through its RawConn")
		go func() {
			for rest := stream; len(rest) > 0; {
				k := min(piece, len(rest))
				if _, err := tp.a.Write(rest[:k]); err != nil {
					return
				}
				rest = rest[k:]
			}
			_ = tp.a.Close()
		}()
		var got [][]byte
		var err error
		for {
			_ = tp.b.SetReadDeadline(time.Now().Add(10 * time.Second))
			var b []byte
			if b, err = sr.next(); err != nil {
				break
			}
			got = append(got, append([]byte(nil), b...))
		}
		require.Equal(t, len(want), len(got), "pieces of %d", piece)
		require.Equal(t, want, got, "pieces of %d", piece)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "pieces of %d", piece)
		sr.release()
		require.Zero(t, sr.held())
	}
	// A clean end at a batch boundary is io.EOF, and an idle reader holds
	// no buffer while it waits.
	tp := newTCPPipe(t)
	sr := newStreamReader(tp.b)
	_, err := tp.a.Write(wire.AppendStreamBatch(nil, []byte("abc")))
	require.NoError(t, err)
	b, err := sr.next()
	require.NoError(t, err)
	require.Equal(t, "abc", string(b))
	_ = tp.b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err = sr.next()
	require.True(t, isTimeout(err), "got %v", err)
	require.Zero(t, sr.held(), "a reader waiting for data holds no buffer")
	_ = tp.a.Close()
	_ = tp.b.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = sr.next()
	require.ErrorIs(t, err, io.EOF)
	require.NotErrorIs(t, err, io.ErrUnexpectedEOF)
}
