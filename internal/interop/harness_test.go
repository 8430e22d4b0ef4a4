package interop

// Tests of the harness itself. Most need no Python; the failure-path test starts zpeer.py.

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDescribe(t *testing.T) {
	cases := []struct {
		hex  string
		want string
	}{
		{"c1 09 f2 4b ff 51 f9 83 46 27 65 8d 23 df 95 59 e1 bd fa 0a c8 ff 81 c2 05 a6 b4 e8 f4 06 27 01", "InitSyn"},
		{"e1 09 f0", "InitAck"},
		{"c2 0a", "OpenSyn"},
		{"e2 0a", "OpenAck"},
		{"04", "KeepAlive"},
		{"03 00", "Close"},
		{"25 00 1e 20 01 00 0c", "Frame(R sn=0) Declare"}, // zenoh-wire.md §13 (pico)
		{"a5 b9 f8 b8 0f 31 00 9e 21 08", "Frame(R sn=32390201) Declare"}, // Rust: QoS ext on the frame
		{"25 93 8a df 29 dd 01 21 0d", "Frame(R sn=87541011) Push"},
		{"05 7f 5d", "Frame(BE sn=127) Push"},
		{"25 01 79 02 d3 01", "Frame(R sn=1) Interest"},
		{"25", "Frame(truncated)"},
		{"a5 01 31", "Frame(bad ext)"},
		{"c6 01 02", "Fragment"},
		{"1f", "unknown(0x1f)"},
		{"", "empty"},
	}
	for _, c := range cases {
		b := mustHex(t, c.hex)
		require.Equal(t, c.want, Describe(b), "% x", b)
	}
	id, ok := FrameFirstNetworkID(mustHex(t, "a5 b9 f8 b8 0f 31 00 f9 01"))
	require.True(t, ok)
	require.Equal(t, byte(0x19), id)
	_, ok = FrameFirstNetworkID(mustHex(t, "04"))
	require.False(t, ok)
}

func TestReadVLE(t *testing.T) {
	for _, c := range []struct {
		hex string
		v   uint64
		n   int
	}{
		{"00", 0, 1}, {"7f", 127, 1}, {"80 01", 128, 2}, {"90 4e", 10000, 2},
		{"ff ff ff ff ff ff ff ff ff", ^uint64(0), 9}, // the 9th byte carries 8 bits
	} {
		v, n, err := readVLE(mustHex(t, c.hex))
		require.NoError(t, err)
		require.Equal(t, c.v, v, c.hex)
		require.Equal(t, c.n, n, c.hex)
	}
	_, _, err := readVLE(mustHex(t, "80"))
	require.ErrorIs(t, err, errTruncated)
}

// TestProxyRecordsBatches runs the proxy against a batch echo server: every batch is
// forwarded unchanged and recorded in both directions, and Close leaves no goroutine.
func TestProxyRecordsBatches(t *testing.T) {
	before := runtime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // echo server: copies the byte stream back
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()

	sub := &subTB{TB: t}
	px := StartProxy(sub, "tcp/"+ln.Addr().String())
	c, err := net.Dial("tcp", strings.TrimPrefix(px.Endpoint(), "tcp/"))
	require.NoError(t, err)
	batches := [][]byte{{0x04}, mustHex(t, "25 01 5d 01 01 02 68 69"), make([]byte, 65535)}
	for _, b := range batches {
		frame := binary.LittleEndian.AppendUint16(nil, uint16(len(b)))
		_, err := c.Write(append(frame, b...))
		require.NoError(t, err)
	}
	for _, b := range batches { // read the echo back through the proxy
		hdr := make([]byte, 2)
		_, err := io.ReadFull(c, hdr)
		require.NoError(t, err)
		got := make([]byte, binary.LittleEndian.Uint16(hdr))
		_, err = io.ReadFull(c, got)
		require.NoError(t, err)
		require.Equal(t, b, got)
	}
	last := px.WaitBatch("echo of the big batch", 5*time.Second, func(b Batch) bool {
		return b.Dir == ToClient && len(b.Data) == 65535
	})
	require.Equal(t, 0, last.Conn)
	rec := px.Batches()
	require.Len(t, rec, 6)
	var up, down int
	for _, b := range rec {
		if b.Dir == ToServer {
			require.Equal(t, batches[up], b.Data)
			up++
		} else {
			require.Equal(t, batches[down], b.Data)
			down++
		}
	}
	for _, b := range rec {
		if b.Dir == ToServer && len(b.Data) == 8 {
			require.Contains(t, b.String(), "#0 c->s")
			require.Contains(t, b.String(), "Frame(R sn=1) Push")
		}
	}

	_ = c.Close()
	sub.cleanup()
	_ = ln.Close()
	wg.Wait()
	_, ok := px.NextBatch(time.Second, len(rec), func(Batch) bool { return true })
	require.False(t, ok, "closed proxy")
	deadline := time.Now().Add(Scale(5 * time.Second)) // polled by hand: require.Eventually runs goroutines
	for runtime.NumGoroutine() > before {
		require.True(t, time.Now().Before(deadline), "goroutines: %d, before: %d", runtime.NumGoroutine(), before)
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWaitEventFailureCarriesOutput checks the failure path: an error event ends the wait at
// once, and the message holds the process's command line, stdout and stderr.
func TestWaitEventFailureCarriesOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts zpeer.py")
	}
	rec := &subTB{TB: t}
	// zpeer refuses a non-loopback endpoint before opening anything.
	p := Start(rec, "sub", "k", "--connect", "tcp/not-loopback.invalid:7447")
	msg := rec.run(func() { p.WaitEvent("ready", 10*time.Second) })
	require.Contains(t, msg, `waiting for event "ready": error event: endpoint tcp/not-loopback.invalid:7447 is not loopback`)
	require.Contains(t, msg, "--- zpeer sub k (sub k --connect tcp/not-loopback.invalid:7447)")
	require.Contains(t, msg, `{"ev":"error"`)
	require.Contains(t, msg, "--- stderr:")
	require.Equal(t, 2, p.Wait(10*time.Second))

	// A process that exits without the event: ErrExited.
	p2 := Start(rec, "put", "k", "--connect", "tcp/not-loopback.invalid:7447")
	_, err := p2.Next(10*time.Second, func(e Event) bool { return e.Ev == "ready" })
	require.ErrorContains(t, err, "not loopback")
	_, err = p2.Next(10*time.Second, func(e Event) bool { return e.Ev == "error" })
	require.NoError(t, err) // error events can be waited for
	_, err = p2.Next(10*time.Second, func(e Event) bool { return e.Ev == "ready" })
	require.ErrorIs(t, err, ErrExited)
	rec.cleanup()
	require.True(t, p.Exited() && p2.Exited())
}

// subTB runs harness calls against a TB whose Fatal ends only the calling goroutine and
// records the message, and whose cleanups run when the test says so.
type subTB struct {
	testing.TB
	mu       sync.Mutex
	fatal    string
	cleanups []func()
}

func (s *subTB) Helper() {}

func (s *subTB) Fatalf(format string, args ...any) {
	s.mu.Lock()
	s.fatal = fmt.Sprintf(format, args...)
	s.mu.Unlock()
	runtime.Goexit()
}

func (s *subTB) Fatal(args ...any) { s.Fatalf("%s", fmt.Sprint(args...)) }

func (s *subTB) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *subTB) Failed() bool { return false }

// run calls f in a goroutine and returns the Fatal message it ended with ("" if none).
func (s *subTB) run(f func()) string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := s.fatal
	s.fatal = ""
	return msg
}

func (s *subTB) cleanup() {
	s.mu.Lock()
	cs := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	var b []byte
	for _, f := range strings.Fields(s) {
		var v byte
		_, err := fmt.Sscanf(f, "%02x", &v)
		require.NoError(t, err)
		b = append(b, v)
	}
	return b
}
