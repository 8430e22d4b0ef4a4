package transport

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// link is one connection carrying batches (zenoh-wire.md §3.1). A link
// has one reader (the session's read goroutine) and one writer (the
// handshake, then the session's write goroutine) at a time.
type link interface {
	// readBatch returns the next batch content, valid until the next call.
	// A zero deadline means none; an expired one gives an error for which
	// isTimeout is true.
	readBatch(deadline time.Time) ([]byte, error)
	// writeBatch writes one batch. b starts with wire.StreamPrefixLen
	// reserved bytes that a stream link fills with the length and a
	// datagram link skips.
	writeBatch(b []byte, deadline time.Time) error
	// stream reports a length-prefixed stream link (TCP).
	stream() bool
	// maxBatch is the largest batch size the link supports, in bytes.
	maxBatch() int
	close() error
	remoteAddr() net.Addr
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// streamReader splits a byte stream into u16le-prefixed batches. It copes
// with any split of the input across reads (FuzzStreamReader).
type streamReader struct {
	r   *bufio.Reader
	hdr [wire.StreamPrefixLen]byte
	buf []byte
}

// The read buffer grows on demand (to the largest batch seen), so that a
// gateway with thousands of batch-2048 devices does not hold 64 KiB per
// link; bufio reads larger than its buffer go straight to buf.
func newStreamReader(r io.Reader) *streamReader {
	return &streamReader{r: bufio.NewReaderSize(r, 4<<10)}
}

// next returns the next batch content (aliasing an internal buffer, valid
// until the next call).
func (s *streamReader) next() ([]byte, error) {
	if _, err := io.ReadFull(s.r, s.hdr[:]); err != nil {
		return nil, err
	}
	n := int(s.hdr[0]) | int(s.hdr[1])<<8
	if n > cap(s.buf) {
		s.buf = make([]byte, min(max(n, 2*cap(s.buf), 512), 0xffff))
	}
	s.buf = s.buf[:cap(s.buf)]
	if _, err := io.ReadFull(s.r, s.buf[:n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return s.buf[:n], nil
}

// tcpLink is a TCP (stream) link.
type tcpLink struct {
	c  net.Conn
	sr *streamReader
}

func newStreamLink(c net.Conn) *tcpLink {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return &tcpLink{c: c, sr: newStreamReader(c)}
}

func (l *tcpLink) readBatch(deadline time.Time) ([]byte, error) {
	if err := l.c.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	return l.sr.next()
}

func (l *tcpLink) writeBatch(b []byte, deadline time.Time) error {
	wire.PutStreamPrefix(b, len(b)-wire.StreamPrefixLen)
	if err := l.c.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err := l.c.Write(b)
	return err
}

func (l *tcpLink) stream() bool         { return true }
func (l *tcpLink) maxBatch() int        { return 0xffff }
func (l *tcpLink) close() error         { return l.c.Close() }
func (l *tcpLink) remoteAddr() net.Addr { return l.c.RemoteAddr() }

// udpConnLink is a dialled (connected) UDP link: one datagram per batch.
type udpConnLink struct {
	c   *net.UDPConn
	buf []byte
}

func newUDPConnLink(c *net.UDPConn) *udpConnLink {
	return &udpConnLink{c: c, buf: make([]byte, 0xffff)}
}

func (l *udpConnLink) readBatch(deadline time.Time) ([]byte, error) {
	if err := l.c.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	n, err := l.c.Read(l.buf)
	if err != nil {
		return nil, err
	}
	return l.buf[:n], nil
}

func (l *udpConnLink) writeBatch(b []byte, deadline time.Time) error {
	if err := l.c.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err := l.c.Write(b[wire.StreamPrefixLen:])
	return err
}

func (l *udpConnLink) stream() bool         { return false }
func (l *udpConnLink) maxBatch() int        { return DefaultUDPBatchSize }
func (l *udpConnLink) close() error         { return l.c.Close() }
func (l *udpConnLink) remoteAddr() net.Addr { return l.c.RemoteAddr() }

// udpPeerLink is the per-peer link of a UDP listener: the listener's read
// goroutine demultiplexes datagrams by source address into in.
type udpPeerLink struct {
	conn   *net.UDPConn
	addr   netip.AddrPort
	in     chan []byte
	timer  *time.Timer // read deadline timer, reused by the read goroutine
	closed chan struct{}
	once   sync.Once
	onEnd  func()
}

var errLinkClosed = errors.New("transport: link closed")

type timeoutError struct{}

func (timeoutError) Error() string   { return "transport: read deadline exceeded" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func (l *udpPeerLink) readBatch(deadline time.Time) ([]byte, error) {
	var tc <-chan time.Time
	if !deadline.IsZero() {
		if l.timer == nil {
			l.timer = time.NewTimer(time.Until(deadline))
		} else {
			l.timer.Reset(time.Until(deadline))
		}
		defer l.timer.Stop()
		tc = l.timer.C
	}
	select {
	case b := <-l.in:
		return b, nil
	case <-tc:
		return nil, timeoutError{}
	case <-l.closed:
		return nil, errLinkClosed
	}
}

func (l *udpPeerLink) writeBatch(b []byte, _ time.Time) error {
	select {
	case <-l.closed:
		return errLinkClosed
	default:
	}
	_, err := l.conn.WriteToUDPAddrPort(b[wire.StreamPrefixLen:], l.addr)
	return err
}

func (l *udpPeerLink) stream() bool  { return false }
func (l *udpPeerLink) maxBatch() int { return DefaultUDPBatchSize }
func (l *udpPeerLink) close() error {
	l.once.Do(func() {
		close(l.closed)
		if l.onEnd != nil {
			l.onEnd()
		}
	})
	return nil
}
func (l *udpPeerLink) remoteAddr() net.Addr { return net.UDPAddrFromAddrPort(l.addr) }

// release drops the read buffer (placeholder).
func (s *streamReader) release() {}
