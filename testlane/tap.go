package testlane

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tap is the lane's TCP front: the device connects to it, and it forwards
// every byte to the router behind it (whichever router is current, so the
// router can restart) while the Recorder parses the batch framing in both
// directions (zenoh-wire.md §3.1). It is also where faults are injected:
// stalled reads and a link closed mid-fragment.
type tap struct {
	ln     net.Listener
	rec    *Recorder
	target func() string // the current router's host:port

	stallUntil atomic.Int64 // unix ns; reads from the device wait until then
	midFrag    atomic.Bool  // close the link after the next FRAGMENT with More
	onMidFrag  atomic.Pointer[func(at time.Time)]

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[int][2]net.Conn
	next   int
	closed bool
}

func startTap(ctx context.Context, addr string, rec *Recorder, target func() string) (*tap, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	t := &tap{ln: ln, rec: rec, target: target, conns: map[int][2]net.Conn{}}
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// addr is the host:port the tap listens on.
func (t *tap) addr() string { return t.ln.Addr().String() }

func (t *tap) accept() {
	defer t.wg.Done()
	for {
		dev, err := t.ln.Accept()
		if err != nil {
			return
		}
		rtr, err := net.DialTimeout("tcp", t.target(), 5*time.Second)
		if err != nil {
			_ = dev.Close()
			continue
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			_ = dev.Close()
			_ = rtr.Close()
			return
		}
		id := t.next
		t.next++
		t.conns[id] = [2]net.Conn{dev, rtr}
		t.mu.Unlock()
		s := t.rec.open(id)
		var once sync.Once
		end := func(reason string) {
			once.Do(func() {
				_ = dev.Close()
				_ = rtr.Close()
				t.rec.end(s, reason)
				t.mu.Lock()
				delete(t.conns, id)
				t.mu.Unlock()
			})
		}
		t.wg.Add(2)
		go func() {
			defer t.wg.Done()
			end(t.pump(s, FromDevice, dev, rtr))
		}()
		go func() {
			defer t.wg.Done()
			end(t.pump(s, ToDevice, rtr, dev))
		}()
	}
}

// pump copies batches from src to dst, recording each; it returns why it
// stopped.
func (t *tap) pump(s *SessionObs, d Dir, src, dst net.Conn) string {
	buf := make([]byte, 2+65535)
	for {
		if _, err := io.ReadFull(src, buf[:2]); err != nil {
			return endReason(d, err)
		}
		n := int(binary.LittleEndian.Uint16(buf[:2]))
		if _, err := io.ReadFull(src, buf[2:2+n]); err != nil {
			return endReason(d, err)
		}
		info := t.rec.batch(s, d, buf[2:2+n])
		if d == FromDevice {
			// A stall holds this batch and reads nothing more until it
			// ends: the device's sends back up in its socket.
			if until := t.stallUntil.Load(); until != 0 {
				if w := time.Until(time.Unix(0, until)); w > 0 {
					time.Sleep(w)
					t.rec.resumed(s)
				}
			}
		}
		if _, err := dst.Write(buf[:2+n]); err != nil {
			return endReason(1-d, err)
		}
		if info.midFragment && t.midFrag.CompareAndSwap(true, false) {
			if fn := t.onMidFrag.Load(); fn != nil {
				(*fn)(time.Now())
			}
			return "closed by the lane mid-fragment (" + d.String() + ")"
		}
	}
}

func endReason(d Dir, err error) string {
	side := "device"
	if d == ToDevice {
		side = "router"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return side + " closed the link"
	}
	if errors.Is(err, net.ErrClosed) {
		return "link closed"
	}
	return side + ": " + err.Error()
}

// stall makes reads from the device wait for d from now.
func (t *tap) stall(d time.Duration) {
	t.stallUntil.Store(time.Now().Add(d).UnixNano())
}

// dropAll closes every link (a router restart).
func (t *tap) dropAll() {
	t.mu.Lock()
	cs := make([][2]net.Conn, 0, len(t.conns))
	for _, c := range t.conns {
		cs = append(cs, c)
	}
	t.mu.Unlock()
	for _, c := range cs {
		_ = c[0].Close()
		_ = c[1].Close()
	}
}

// close stops the tap and waits for its goroutines.
func (t *tap) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	_ = t.ln.Close()
	t.dropAll()
	t.wg.Wait()
}
