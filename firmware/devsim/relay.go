package devsim

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
)

// relay is the device's socket on platforms with a per-socket lock: the
// session dials it on loopback and it forwards to the router. Toward the
// device it reads one stream batch from the router per receive window
// (window.acquireRx), through a receive buffer as small as an MCU's, so the
// router sees the back-pressure a real device gives: its TX queue fills
// and it batches or drops. Toward the router it copies at once (sends are
// paced where the device sends, so that publishers block as on the device).
type relay struct {
	ln     net.Listener
	up     string // router address host:port
	win    *window
	rcvBuf int
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// startRelay listens on 127.0.0.1:0 and serves one connection at a time
// until close. Its goroutines are counted in wg (the device's).
func startRelay(ctx context.Context, up string, win *window, rcvBuf int) (*relay, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, up: up, win: win, rcvBuf: rcvBuf}
	r.wg.Add(1)
	go r.accept(ctx)
	return r, nil
}

// endpoint is the locator the device dials.
func (r *relay) endpoint() string { return "tcp/" + r.ln.Addr().String() }

func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		_ = c.Close()
		return false
	}
	r.conns = append(r.conns, c)
	return true
}

func (r *relay) accept(ctx context.Context) {
	defer r.wg.Done()
	for {
		dev, err := r.ln.Accept()
		if err != nil {
			return
		}
		if !r.track(dev) {
			return
		}
		var d net.Dialer
		router, err := d.DialContext(ctx, "tcp", r.up)
		if err != nil {
			_ = dev.Close()
			continue
		}
		if tc, ok := router.(*net.TCPConn); ok && r.rcvBuf > 0 {
			_ = tc.SetReadBuffer(r.rcvBuf)
		}
		if !r.track(router) {
			_ = dev.Close()
			return
		}
		stop := make(chan struct{})
		var once sync.Once
		end := func() {
			once.Do(func() {
				close(stop)
				_ = dev.Close()
				_ = router.Close()
			})
		}
		r.wg.Add(2)
		go func() { // device → router
			defer r.wg.Done()
			defer end()
			_, _ = io.Copy(router, dev)
		}()
		go func() { // router → device, one batch per receive window
			defer r.wg.Done()
			defer end()
			buf := make([]byte, 2+65535)
			for {
				if !r.win.acquireRx(ctx, stop, 1) {
					return
				}
				if _, err := io.ReadFull(router, buf[:2]); err != nil {
					return
				}
				n := int(binary.LittleEndian.Uint16(buf[:2]))
				if _, err := io.ReadFull(router, buf[2:2+n]); err != nil {
					return
				}
				if _, err := dev.Write(buf[:2+n]); err != nil {
					return
				}
			}
		}()
	}
}

// close stops the relay and waits for its goroutines.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	conns := r.conns
	r.conns = nil
	r.mu.Unlock()
	_ = r.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	r.wg.Wait()
}
