package linkemu

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// timeScale stretches test timeouts on slow machines (LINKEMU_TIMESCALE=5).
func timeScale() time.Duration {
	if v, err := strconv.Atoi(os.Getenv("LINKEMU_TIMESCALE")); err == nil && v > 0 {
		return time.Duration(v)
	}
	return 1
}

// checkFor polls f every step until it returns nil or total (scaled) has
// passed, then fails with f's last error.
func checkFor(t testing.TB, total, step time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total * timeScale())
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(step)
	}
	t.Fatalf("condition not met after %v: %v", total*timeScale(), err)
}

// startTCPProxy runs a TCP proxy to upstream, closed in t.Cleanup.
func startTCPProxy(t testing.TB, upstream string, cfg Config) *TCPProxy {
	t.Helper()
	p, err := NewTCPProxy("127.0.0.1:0", upstream, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// startUDPProxy runs a UDP proxy to upstream, closed in t.Cleanup.
func startUDPProxy(t testing.TB, upstream string, cfg Config) *UDPProxy {
	t.Helper()
	p, err := NewUDPProxy("127.0.0.1:0", upstream, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// tcpServer is an upstream that runs handle on every accepted connection.
type tcpServer struct {
	ln *net.TCPListener
	wg sync.WaitGroup
}

func startTCPServer(t testing.TB, handle func(c *net.TCPConn)) *tcpServer {
	t.Helper()
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	s := &tcpServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *tcpServer) addr() string { return s.ln.Addr().String() }

// udpEcho is an upstream that records every datagram and echoes it.
type udpEcho struct {
	conn *net.UDPConn
	mu   sync.Mutex
	got  [][]byte
	done chan struct{}
}

func startUDPEcho(t testing.TB) *udpEcho {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	require.NoError(t, c.SetReadBuffer(4<<20))
	e := &udpEcho{conn: c, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		buf := make([]byte, maxDatagram)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			e.mu.Lock()
			e.got = append(e.got, append([]byte(nil), buf[:n]...))
			e.mu.Unlock()
			c.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	t.Cleanup(func() {
		c.Close()
		<-e.done
	})
	return e
}

func (e *udpEcho) addr() string { return e.conn.LocalAddr().String() }

func (e *udpEcho) received() [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]byte(nil), e.got...)
}

// settled waits until both directions of a proxy have handled every
// packet they were offered (nothing left in flight) and offered is
// reached on the device → gateway side.
func settled(t testing.TB, p Proxy, offered uint64) Stats {
	t.Helper()
	var st Stats
	checkFor(t, 20*time.Second, 5*time.Millisecond, func() error {
		st = p.Stats()
		g, d := st.ToGateway, st.ToDevice
		if g.Packets != offered {
			return fmt.Errorf("to_gateway packets %d of %d", g.Packets, offered)
		}
		for _, ds := range []DirStats{g, d} {
			if ds.Delivered+ds.Dropped != ds.Packets {
				return fmt.Errorf("in flight: %+v", ds)
			}
		}
		return nil
	})
	return st
}

type netipAddrPort = netip.AddrPort

func parseAddrPort(s string) (netip.AddrPort, error) { return netip.ParseAddrPort(s) }
