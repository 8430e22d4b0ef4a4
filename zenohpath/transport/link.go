package transport

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pool "github.com/libp2p/go-buffer-pool"

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
//
// An idle reader holds no buffer: it waits for the 2-byte length prefix in
// a fixed array, then takes a buffer of the right size class (at least
// minRead, so that a burst of small batches is read in few system calls)
// from rxPool, and gives it back on the next call once everything read
// ahead has been handed out. So a gateway with 10 000 idle links holds no
// read buffer at all, and a busy one about one per running read goroutine.
type streamReader struct {
	r io.Reader
	// raw, when the reader is a socket, lets the reader wait for data
	// without holding a buffer (link_unix.go): the buffer is taken when the
	// socket is readable and given back when a read would block with
	// nothing pending, so one system call reads each burst.
	raw syscall.RawConn
	// hint is the size of the last batch with its prefix: the first buffer
	// of a burst is at least that large.
	hint int
	// limit is the largest batch content accepted, in bytes; a longer
	// prefix fails with errBatchTooLarge before anything is allocated
	// (0 = 0xffff, the most a prefix can say).
	limit int
	hdr   [wire.StreamPrefixLen]byte
	buf   []byte // pooled, nil when idle; buf[off:end] was read ahead
	off   int
	end   int

	// The raw.Read callback and its arguments and results, kept here so
	// that a read allocates nothing (a closure over locals escapes: three
	// allocations per read, i.e. per message on an idle link).
	rawFn  func(fd uintptr) bool
	rawK   int
	rawN   int
	rawErr error
}

// minRead is the smallest read buffer a stream link takes from rxPool, in bytes.
const minRead = 4 << 10

// rxPool holds the receive buffers of all links (size classes, powers of 2).
var rxPool pool.BufferPool

// rxHeld is the capacity of the receive buffers taken from rxPool and not
// given back, in bytes, over all links of the process.
var rxHeld atomic.Int64

// getRx takes a receive buffer of length n (capacity: the size class).
func getRx(n int) []byte {
	b := rxPool.Get(n)
	rxHeld.Add(int64(cap(b)))
	return b
}

// putRx gives a receive buffer back.
func putRx(b []byte) {
	rxHeld.Add(-int64(cap(b)))
	rxPool.Put(b)
}

// errBatchTooLarge: a stream batch prefix over the reader's limit.
var errBatchTooLarge = errors.New("transport: batch length over the limit")

func newStreamReader(r io.Reader) *streamReader {
	s := &streamReader{r: r, raw: rawConnOf(r)}
	s.rawFn = s.rawRead
	return s
}

// next returns the next batch content (aliasing a pooled buffer, valid
// until the next call or release).
func (s *streamReader) next() ([]byte, error) {
	if s.off == s.end {
		s.release()
	}
	limit := s.limit
	if limit <= 0 {
		limit = 0xffff
	}
	var n int
	if s.buf == nil && s.raw == nil {
		if _, err := io.ReadFull(s.r, s.hdr[:]); err != nil {
			return nil, err
		}
		n = int(s.hdr[0]) | int(s.hdr[1])<<8
		if n == 0 {
			return s.hdr[:0], nil
		}
		if n > limit {
			return nil, errBatchTooLarge
		}
	} else {
		if err := s.fill(wire.StreamPrefixLen, true); err != nil {
			return nil, err
		}
		n = int(s.buf[s.off]) | int(s.buf[s.off+1])<<8
		s.off += wire.StreamPrefixLen
		if n > limit {
			return nil, errBatchTooLarge
		}
	}
	if err := s.fill(n, false); err != nil {
		return nil, err
	}
	b := s.buf[s.off : s.off+n : s.off+n]
	s.off += n
	s.hint = min(n+wire.StreamPrefixLen, 1<<16) // a 65535-byte batch must not pick the 128 KB class
	return b, nil
}

// fill makes buf[off:end] hold at least k bytes, reading ahead as much as
// the buffer takes. boundary says that nothing of the next batch has been
// consumed yet, so that EOF with nothing buffered is a clean io.EOF.
func (s *streamReader) fill(k int, boundary bool) error {
	if s.raw != nil {
		return s.fillRaw(k, boundary)
	}
	if s.end-s.off >= k {
		return nil
	}
	s.room(k)
	m, err := io.ReadAtLeast(s.r, s.buf[s.end:], s.off+k-s.end)
	s.end += m
	if err == io.EOF && (!boundary || s.end > s.off) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// room makes buf able to hold k bytes from off: it moves what is pending
// to the front, or into a larger pool buffer.
func (s *streamReader) room(k int) {
	if s.off+k <= len(s.buf) {
		return
	}
	if k > len(s.buf) {
		nb := getRx(max(k, minRead, s.hint))
		nb = nb[:cap(nb)]
		copy(nb, s.buf[s.off:s.end])
		if s.buf != nil {
			putRx(s.buf)
		}
		s.buf = nb
	} else {
		copy(s.buf, s.buf[s.off:s.end])
	}
	s.end -= s.off
	s.off = 0
}

// fillRaw is fill on a socket: it waits for readability through raw, and
// holds a buffer only while bytes are pending or being read.
func (s *streamReader) fillRaw(k int, boundary bool) error {
	for s.end-s.off < k {
		if s.buf != nil {
			s.room(k)
		}
		s.rawK, s.rawN, s.rawErr = k, 0, nil
		err := s.raw.Read(s.rawFn)
		n, rerr := s.rawN, s.rawErr
		s.rawErr = nil
		switch {
		case err != nil:
			return err
		case rerr != nil:
			return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", rerr)}
		case n == 0:
			if boundary && s.end == s.off {
				return io.EOF
			}
			return io.ErrUnexpectedEOF
		}
		s.end += n
	}
	return nil
}

// rawRead is the raw.Read callback of fillRaw: one read(2) into buf,
// taking a buffer first when the reader holds none; false (wait for
// readability) when the read would block, giving an empty buffer back.
func (s *streamReader) rawRead(fd uintptr) bool {
	if s.buf == nil {
		s.buf = getRx(max(s.rawK, minRead, s.hint))
		s.buf = s.buf[:cap(s.buf)]
		s.off, s.end = 0, 0
	}
	var again bool
	s.rawN, again, s.rawErr = sysRead(fd, s.buf[s.end:])
	if again {
		if s.off == s.end {
			s.release()
		}
		return false
	}
	return true
}

// release gives the buffer back, dropping anything read ahead. Only the
// reading goroutine may call it.
func (s *streamReader) release() {
	if s.buf != nil {
		putRx(s.buf)
		s.buf = nil
	}
	s.off, s.end = 0, 0
}

// held is the capacity of the buffer the reader holds, in bytes.
func (s *streamReader) held() int { return cap(s.buf) }

// tcpLink is a TCP (stream) link.
type tcpLink struct {
	c  net.Conn
	sr *streamReader
}

func newStreamLink(c net.Conn) *tcpLink {
	if tc, ok := netConnOf(c).(*net.TCPConn); ok {
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
	buf []byte // pooled on the first read, given back by releaseRead
}

// udpReadBuf is the read buffer of a dialled UDP link, in bytes: the
// largest batch we negotiate on UDP plus one, so that a longer datagram
// shows as such (it fails to decode) instead of being cut silently.
const udpReadBuf = DefaultUDPBatchSize + 1

func newUDPConnLink(c *net.UDPConn) *udpConnLink {
	return &udpConnLink{c: c}
}

func (l *udpConnLink) readBatch(deadline time.Time) ([]byte, error) {
	if err := l.c.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	if l.buf == nil {
		l.buf = getRx(udpReadBuf)
	}
	n, err := l.c.Read(l.buf)
	if err != nil {
		return nil, err
	}
	return l.buf[:n:n], nil
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
	in     chan []byte // datagrams in rxPool buffers
	cur    []byte      // the datagram handed out last, given back on the next read
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
	l.releaseCur()
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
		l.cur = b
		return b, nil
	case <-tc:
		return nil, timeoutError{}
	case <-l.closed:
		return nil, errLinkClosed
	}
}

// releaseCur gives the last datagram's buffer back (reader goroutine only).
func (l *udpPeerLink) releaseCur() {
	if l.cur != nil {
		putRx(l.cur)
		l.cur = nil
	}
}

// udpPeerQueue is the depth of a UDP peer link's datagram queue.
const udpPeerQueue = 256

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

// releaseRead gives l's receive buffers back to rxPool. Only the goroutine
// that reads l may call it, after its last use of a batch.
func releaseRead(l link) {
	switch l := l.(type) {
	case *tcpLink:
		l.sr.release()
	case *udpConnLink:
		if l.buf != nil {
			putRx(l.buf)
			l.buf = nil
		}
	case *udpPeerLink:
		l.releaseCur()
		for {
			select {
			case b := <-l.in:
				putRx(b)
				continue
			default:
			}
			break
		}
	}
}

// limitRead bounds the batches l accepts to n content bytes (0 = no bound
// beyond the link's own), checked before a buffer is taken. The accepting
// handshake uses it so that nothing large is held before INIT is
// validated.
func limitRead(l link, n int) {
	if l, ok := l.(*tcpLink); ok {
		l.sr.limit = n
	}
}
