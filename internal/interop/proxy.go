package interop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Direction says which way a [Batch] went through a [Proxy].
type Direction int

const (
	// ToServer is from the connecting side (the one given the proxy's endpoint) to the target.
	ToServer Direction = iota
	// ToClient is from the target back to the connecting side.
	ToClient
)

func (d Direction) String() string {
	if d == ToServer {
		return "c->s"
	}
	return "s->c"
}

// Batch is one Zenoh stream batch seen by a [Proxy]: the content after the u16 little-endian
// length prefix (zenoh-wire.md §3.1).
type Batch struct {
	Conn int           // connection number, from 0 in accept order
	Dir  Direction     // which way it went
	At   time.Duration // when its last byte was read, since the connection was accepted
	Data []byte        // a copy of the batch content, without the length prefix
}

func (b Batch) String() string {
	return fmt.Sprintf("#%d %s %8.3fs %-40s % x", b.Conn, b.Dir, b.At.Seconds(), Describe(b.Data), b.Data)
}

// Proxy is a recording TCP proxy on 127.0.0.1 in front of one Zenoh TCP endpoint. It parses
// the length-prefixed batch framing in both directions and keeps a copy of each batch (up to
// a cap) while forwarding the bytes unchanged.
type Proxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu      sync.Mutex
	batches []Batch
	kept    int // bytes of Data kept
	conns   []net.Conn
	closed  bool
	changed chan struct{}

	wg sync.WaitGroup
}

// proxyKeepBytes caps what a Proxy records; past it, batches are forwarded unrecorded.
const proxyKeepBytes = 16 << 20

// StartProxy listens on a free 127.0.0.1 port and forwards each connection to target (a
// "tcp/127.0.0.1:port" locator or a "host:port" address). It is closed in t.Cleanup, which
// waits for all of its goroutines.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("interop: proxy listen: %v", err)
	}
	p := &Proxy{t: t, ln: ln, target: strings.TrimPrefix(target, "tcp/"), changed: make(chan struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.Close)
	return p
}

// Endpoint is the proxy's locator, tcp/127.0.0.1:port, to give to the connecting side.
func (p *Proxy) Endpoint() string {
	return Endpoint(p.ln.Addr().(*net.TCPAddr).Port)
}

// Close stops listening, closes every proxied connection and waits for the goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}

// Batches returns a copy of the batches recorded so far, in the order they were read.
func (p *Proxy) Batches() []Batch {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Batch(nil), p.batches...)
}

// WaitBatch polls until some recorded batch satisfies match and returns the first one, or
// fails the test after the nominal timeout (scaled by [Timescale]).
func (p *Proxy) WaitBatch(what string, timeout time.Duration, match func(Batch) bool) Batch {
	p.t.Helper()
	b, ok := p.NextBatch(timeout, 0, match)
	if !ok {
		var sb strings.Builder
		for i, b := range p.Batches() {
			if i == 200 {
				sb.WriteString("...\n")
				break
			}
			sb.WriteString(b.String() + "\n")
		}
		p.t.Fatalf("interop: proxy: no batch %s within %v; recorded:\n%s", what, Scale(timeout), sb.String())
	}
	return b
}

// NextBatch is the non-failing form of [Proxy.WaitBatch], looking at batches from index from
// on; it also returns false once the proxy is closed.
func (p *Proxy) NextBatch(timeout time.Duration, from int, match func(Batch) bool) (Batch, bool) {
	timer := time.NewTimer(Scale(timeout))
	defer timer.Stop()
	for {
		p.mu.Lock()
		for ; from < len(p.batches); from++ {
			if match(p.batches[from]) {
				b := p.batches[from]
				p.mu.Unlock()
				return b, true
			}
		}
		changed, closed := p.changed, p.closed
		p.mu.Unlock()
		if closed {
			return Batch{}, false
		}
		select {
		case <-changed:
		case <-timer.C:
			return Batch{}, false
		}
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for n := 0; ; n++ {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			return
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		start := time.Now()
		p.wg.Add(2)
		go p.pump(n, ToServer, start, c, s)
		go p.pump(n, ToClient, start, s, c)
	}
}

// pump copies length-prefixed batches from src to dst, recording each one. When either side
// fails, both connections are closed, which ends the opposite pump too.
func (p *Proxy) pump(conn int, dir Direction, start time.Time, src, dst net.Conn) {
	defer p.wg.Done()
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 2+65535)
	for {
		if _, err := io.ReadFull(src, buf[:2]); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint16(buf[:2]))
		if _, err := io.ReadFull(src, buf[2:2+n]); err != nil {
			return
		}
		at := time.Since(start)
		p.record(Batch{Conn: conn, Dir: dir, At: at, Data: buf[2 : 2+n]})
		if _, err := dst.Write(buf[:2+n]); err != nil {
			return
		}
	}
}

func (p *Proxy) record(b Batch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kept+len(b.Data) > proxyKeepBytes {
		return
	}
	b.Data = append([]byte(nil), b.Data...)
	p.kept += len(b.Data)
	p.batches = append(p.batches, b)
	close(p.changed)
	p.changed = make(chan struct{})
}

// ---------------------------------------------------------------------------------------------
// A deliberately small look at batch content, enough to label captures (zenoh-wire.md §2–§9);
// the real codec is zenohpath/wire.

var transportNames = map[byte]string{
	0x00: "OAM", 0x01: "Init", 0x02: "Open", 0x03: "Close", 0x04: "KeepAlive",
	0x05: "Frame", 0x06: "Fragment", 0x07: "Join",
}

var networkNames = map[byte]string{
	0x19: "Interest", 0x1A: "ResponseFinal", 0x1B: "Response", 0x1C: "Request",
	0x1D: "Push", 0x1E: "Declare", 0x1F: "OAM",
}

// TransportID is the message ID of the first transport message of a batch (0xFF if empty).
func TransportID(batch []byte) byte {
	if len(batch) == 0 {
		return 0xFF
	}
	return batch[0] & 0x1F
}

// Describe names the first transport message of a batch and, for a FRAME, the network
// message right after its header: "InitSyn", "OpenAck", "Frame(R sn=5) Declare", ...
func Describe(batch []byte) string {
	if len(batch) == 0 {
		return "empty"
	}
	h := batch[0]
	id := h & 0x1F
	name, ok := transportNames[id]
	if !ok {
		return fmt.Sprintf("unknown(0x%02x)", h)
	}
	switch id {
	case 0x01, 0x02:
		if h&0x20 != 0 {
			return name + "Ack"
		}
		return name + "Syn"
	case 0x05:
		rel := "BE"
		if h&0x20 != 0 {
			rel = "R"
		}
		sn, n, err := readVLE(batch[1:])
		if err != nil {
			return "Frame(truncated)"
		}
		rest := batch[1+n:]
		if h&0x80 != 0 {
			if rest, err = skipExts(rest); err != nil {
				return "Frame(bad ext)"
			}
		}
		first := "empty"
		if len(rest) > 0 {
			if nn, ok := networkNames[rest[0]&0x1F]; ok {
				first = nn
			} else {
				first = fmt.Sprintf("net(0x%02x)", rest[0])
			}
		}
		return fmt.Sprintf("Frame(%s sn=%d) %s", rel, sn, first)
	}
	return name
}

// FrameFirstNetworkID returns the ID of the first network message inside a batch that starts
// with a FRAME (0x19 Interest ... 0x1F OAM), and false for any other batch.
func FrameFirstNetworkID(batch []byte) (byte, bool) {
	if TransportID(batch) != 0x05 {
		return 0, false
	}
	_, n, err := readVLE(batch[1:])
	if err != nil {
		return 0, false
	}
	rest := batch[1+n:]
	if batch[0]&0x80 != 0 {
		if rest, err = skipExts(rest); err != nil {
			return 0, false
		}
	}
	if len(rest) == 0 {
		return 0, false
	}
	return rest[0] & 0x1F, true
}

var errTruncated = errors.New("truncated")

// readVLE reads a Zenoh VLE integer (zenoh-wire.md §1.1: 7 bits a byte, the 9th byte whole).
func readVLE(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < 9; i++ {
		if i >= len(b) {
			return 0, 0, errTruncated
		}
		if i == 8 {
			return v | uint64(b[i])<<56, 9, nil
		}
		v |= uint64(b[i]&0x7F) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return v, 9, nil
}

// skipExts skips an extension chain (zenoh-wire.md §2.2) and returns what follows it.
func skipExts(b []byte) ([]byte, error) {
	for {
		if len(b) == 0 {
			return nil, errTruncated
		}
		h := b[0]
		b = b[1:]
		switch (h >> 5) & 0x03 {
		case 0: // unit
		case 1: // Z64
			_, n, err := readVLE(b)
			if err != nil {
				return nil, err
			}
			b = b[n:]
		case 2: // ZBuf
			l, n, err := readVLE(b)
			if err != nil {
				return nil, err
			}
			if uint64(len(b)-n) < l {
				return nil, errTruncated
			}
			b = b[n+int(l):]
		default:
			return nil, errors.New("reserved extension encoding")
		}
		if h&0x80 == 0 {
			return b, nil
		}
	}
}
