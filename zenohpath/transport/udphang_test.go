package transport

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// withHangGuard runs body on its own goroutine and fails the test with a
// dump of every goroutine if it has not returned within d, so that a lock
// cycle fails fast instead of blocking the suite until its timeout.
func withHangGuard(t *testing.T, d time.Duration, body func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- body() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("hung for %v; goroutines:\n%s", d, buf)
	}
}

// udpInitSyn sends garbage (optionally) then a valid InitSyn from a fresh
// socket and waits for the InitAck; it never sends an OpenSyn, leaving a
// half-open handshake on ln. The socket is returned open.
func udpInitSyn(ln *Listener, garbage bool) (*net.UDPConn, error) {
	c, err := net.DialUDP("udp", nil, ln.Addr().(*net.UDPAddr))
	if err != nil {
		return nil, err
	}
	if garbage {
		if _, err := c.Write([]byte{0xff, 0xff, 0xff, 0x00}); err != nil {
			c.Close()
			return nil, err
		}
	}
	syn := wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: testZID(),
		Resolution: wire.DefaultResolution, BatchSize: 2048}
	if _, err := c.Write(wire.AppendBatch(nil, &syn)); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 0xffff)
	n, err := c.Read(buf)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("no InitAck: %w", err)
	}
	m, _, err := wire.ParseTransport(buf[:n])
	if err != nil {
		c.Close()
		return nil, err
	}
	if _, ok := m.(*wire.InitAck); !ok {
		c.Close()
		return nil, fmt.Errorf("got %T, want InitAck", m)
	}
	return c, nil
}

// TestUDPHalfOpenHandshakes: InitSyn without OpenSyn from many fresh
// sockets (with and without a garbage datagram first), then Listener.Close
// while those handshakes are pending. Close used to deadlock: it held
// Listener.mu while closing each link in handshake, and closing a UDP peer
// link runs its onEnd, which takes Listener.mu; every handshake goroutine
// then blocked on Listener.mu too.
func TestUDPHalfOpenHandshakes(t *testing.T) {
	for _, garbage := range []bool{false, true} {
		t.Run(fmt.Sprintf("garbage=%v", garbage), func(t *testing.T) {
			cfg := testConfig()
			cfg.OpenTimeout = time.Minute // the handshakes stay pending until Close
			ln, err := Listen(context.Background(), "udp/127.0.0.1:0", cfg, func(*Session) Handler { return newRecorder() })
			if err != nil {
				t.Fatal(err)
			}
			withHangGuard(t, 10*time.Second, func() error {
				var conns []*net.UDPConn
				defer func() {
					for _, c := range conns {
						c.Close()
					}
				}()
				for i := 0; i < 20; i++ {
					c, err := udpInitSyn(ln, garbage)
					if err != nil {
						_ = ln.Close()
						return fmt.Errorf("round %d: %w", i, err)
					}
					conns = append(conns, c)
				}
				ln.mu.Lock()
				pending := len(ln.links)
				ln.mu.Unlock()
				if pending != 20 {
					_ = ln.Close()
					return fmt.Errorf("%d handshakes pending, want 20", pending)
				}
				if err := ln.Close(); err != nil {
					return err
				}
				ln.mu.Lock()
				defer ln.mu.Unlock()
				if len(ln.links) != 0 || len(ln.peers) != 0 {
					return fmt.Errorf("after Close: %d links, %d peers left", len(ln.links), len(ln.peers))
				}
				return nil
			})
		})
	}
}

// TestUDPHalfOpenHandshakeTimeout: half-open handshakes that time out
// release their peer entries, and the listener still accepts afterwards.
func TestUDPHalfOpenHandshakeTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.OpenTimeout = 200 * time.Millisecond
	ln, err := Listen(context.Background(), "udp/127.0.0.1:0", cfg, func(*Session) Handler { return newRecorder() })
	if err != nil {
		t.Fatal(err)
	}
	withHangGuard(t, 10*time.Second, func() error {
		defer ln.Close()
		for i := 0; i < 20; i++ {
			c, err := udpInitSyn(ln, i%2 == 0)
			if err != nil {
				return fmt.Errorf("round %d: %w", i, err)
			}
			defer c.Close()
		}
		deadline := time.Now().Add(3 * time.Second)
		for {
			ln.mu.Lock()
			n, p := len(ln.links), len(ln.peers)
			ln.mu.Unlock()
			if n == 0 && p == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("timed-out handshakes left %d links, %d peers", n, p)
			}
			time.Sleep(10 * time.Millisecond)
		}
		c, err := udpInitSyn(ln, true)
		if err != nil {
			return fmt.Errorf("after timeouts: %w", err)
		}
		c.Close()
		return ln.Close()
	})
}
