package fleet

import (
	"io"
	"net"
	"sync"
)

// cutProxy forwards TCP connections from its own address to a target, and can cut the
// link (close every forwarded connection and refuse new ones) and heal it: the partition of
// the partition run. Refused while cut: the listener is closed, so a dial gets a reset.
type cutProxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]struct{}
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
			pipe := func(dst, src net.Conn) {
				defer p.wg.Done()
				_, _ = io.Copy(dst, src)
				_ = dst.Close()
				_ = src.Close()
			}
			p.wg.Add(2)
			go pipe(u, c)
			go pipe(c, u)
		}
	}()
}

// cut closes the listener and every forwarded connection.
func (p *cutProxy) cut() {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for c := range conns {
		_ = c.Close()
	}
}

// heal listens again on the same address.
func (p *cutProxy) heal() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

func (p *cutProxy) close() {
	p.cut()
	p.wg.Wait()
}
