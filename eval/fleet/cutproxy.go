package fleet

import (
	"net"
	"sync"
	"sync/atomic"
)

// cutProxy forwards TCP connections from its own address to a target, and can cut the
// link and heal it: the partition of the partition run. Two kinds of cut:
//
//   - cut closes every forwarded connection and refuses new ones (the listener is closed,
//     so a dial gets a reset): both ends notice at once;
//   - blackhole refuses new connections too but keeps the forwarded ones open and drops
//     every byte both ways, a close included (a FIN is not passed on): a silent partition
//     (a pulled cable, a dead switch) that each end notices only when its lease expires.
//
// heal listens again on the same address and forwards bytes again (on a connection that
// outlived a blackhole too).
type cutProxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]struct{}
	dropping     atomic.Bool // blackholed: read and drop, close nothing but the source
	wg           sync.WaitGroup
}

func newCutProxy(target string) (*cutProxy, error) {
	p := &cutProxy{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	return p, nil
}

func (p *cutProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[u] = struct{}{}, struct{}{}
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pipe(u, c)
			go p.pipe(c, u)
		}
	}()
}

// pipe forwards src to dst until src ends, then closes both; while blackholed it drops
// what it reads and, at the end, closes only src.
func (p *cutProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.dropping.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			break
		}
	}
	if !p.dropping.Load() {
		_ = dst.Close()
	}
	_ = src.Close()
}

// closeListener stops accepting: a dial is refused.
func (p *cutProxy) closeListener() {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
}

// cut closes the listener and every forwarded connection.
func (p *cutProxy) cut() {
	p.closeListener()
	p.mu.Lock()
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

// blackhole closes the listener and drops every byte of the forwarded connections,
// leaving them open.
func (p *cutProxy) blackhole() {
	p.dropping.Store(true)
	p.closeListener()
}

// heal listens again on the same address and forwards bytes again.
func (p *cutProxy) heal() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.dropping.Store(false)
	p.serve(ln)
	return nil
}

func (p *cutProxy) close() {
	p.cut()
	p.wg.Wait()
}
