package linkemu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// zenohStream builds n Zenoh-framed batches (u16 LE length, then the
// payload) of random sizes up to maxLen, from a seeded source.
func zenohStream(seed uint64, n, maxLen int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0))
	var out []byte
	for range n {
		l := 1 + rng.IntN(maxLen)
		out = binary.LittleEndian.AppendUint16(out, uint16(l))
		for range l {
			out = append(out, byte(rng.Uint32()))
		}
	}
	return out
}

// echoAfterEOF reads the whole stream, then writes it back and closes: it
// exercises the half-close in both directions.
func echoAfterEOF(got chan<- []byte) func(c *net.TCPConn) {
	return func(c *net.TCPConn) {
		b, err := io.ReadAll(c)
		got <- b
		if err == nil {
			c.Write(b)
		}
	}
}

func dialTCP(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp4", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// tcpLossy loses often, with a short RTO so that the test is quick.
var tcpLossy = Profile{Name: "tcp-lossy",
	ToDevice:  Impairment{Loss: GE{P: 0.05, R: 0.2, LossGood: 0.02, LossBad: 0.4}, Delay: Jitter{Mean: 2 * time.Millisecond, SD: time.Millisecond}},
	ToGateway: Impairment{Loss: GE{P: 0.05, R: 0.2, LossGood: 0.02, LossBad: 0.4}, Delay: Jitter{Mean: 2 * time.Millisecond, SD: time.Millisecond}},
}

func TestTCPProxyDeliversEveryByteInOrderUnderLoss(t *testing.T) {
	for _, framing := range []Framing{FramingZenoh, FramingChunk} {
		t.Run(framing.String(), func(t *testing.T) {
			got := make(chan []byte, 1)
			srv := startTCPServer(t, echoAfterEOF(got))
			p := startTCPProxy(t, srv.addr(), Config{Profile: tcpLossy, Seed: 3, Framing: framing, ChunkSize: 100,
				RTO: RTOConfig{Initial: 5 * time.Millisecond, Max: 40 * time.Millisecond}})
			const batches = 2000
			stream := zenohStream(1, batches, 300)
			c := dialTCP(t, p.Addr())
			go func() {
				// Many small writes, as a Zenoh session does.
				for b := stream; len(b) > 0; {
					k := min(len(b), 777)
					if _, err := c.Write(b[:k]); err != nil {
						return
					}
					b = b[k:]
				}
				c.CloseWrite()
			}()
			c.SetReadDeadline(time.Now().Add(30 * time.Second * timeScale()))
			back, err := io.ReadAll(c) // ends when the upstream's close arrives
			require.NoError(t, err)
			require.Equal(t, stream, <-got, "upstream got every byte, in order")
			require.True(t, bytes.Equal(stream, back), "device got the echo, every byte, in order")

			var st Stats
			checkFor(t, 5*time.Second, 5*time.Millisecond, func() error {
				if st = p.Stats(); st.Active != 0 {
					return errString("pair still open")
				}
				return nil
			})
			for _, d := range []DirStats{st.ToGateway, st.ToDevice} {
				t.Logf("%s: %+v produced loss %.4f", framing, d, d.ProducedLoss())
				require.EqualValues(t, len(stream), d.BytesIn)
				require.EqualValues(t, len(stream), d.BytesOut)
				require.Equal(t, d.Packets, d.Delivered)
				require.Equal(t, d.Packets+d.Retransmits, d.Sent)
				require.Equal(t, d.Lost, d.Retransmits)
				require.Positive(t, d.Stalled)
				require.Zero(t, d.Dropped)
				require.InDelta(t, tcpLossy.ToDevice.ExpectedLoss(), d.ProducedLoss(), 0.04)
			}
			if framing == FramingZenoh {
				require.EqualValues(t, batches, st.ToGateway.Packets, "one packet per Zenoh batch")
			}
			require.EqualValues(t, 1, st.Sessions)
		})
	}
}

// TestTCPProxyLatencyShowsRTOStalls sends timestamped batches at a steady
// pace and measures one-way latency at the upstream: most batches see the
// configured delay, lost ones (and those queued behind them) an RTO more
// (RepairRTO).
func TestTCPProxyLatencyShowsRTOStalls(t *testing.T) {
	const (
		n     = 300
		gap   = 2 * time.Millisecond
		delay = 5 * time.Millisecond
		rto   = 100 * time.Millisecond
	)
	var mu sync.Mutex
	var lat []time.Duration
	srv := startTCPServer(t, func(c *net.TCPConn) {
		hdr := make([]byte, 2+8)
		for {
			if _, err := io.ReadFull(c, hdr); err != nil {
				return
			}
			sent := time.Unix(0, int64(binary.LittleEndian.Uint64(hdr[2:])))
			mu.Lock()
			lat = append(lat, time.Since(sent))
			mu.Unlock()
		}
	})
	pr := Profile{Name: "stall", ToGateway: Impairment{Loss: GE{LossGood: 0.03}, Delay: Jitter{Mean: delay}}}
	p := startTCPProxy(t, srv.addr(), Config{Profile: pr, Seed: 5, RTO: RTOConfig{Initial: rto, Repair: RepairRTO}})
	c := dialTCP(t, p.Addr())
	msg := make([]byte, 10)
	binary.LittleEndian.PutUint16(msg, 8)
	next := time.Now()
	for range n {
		time.Sleep(time.Until(next))
		next = next.Add(gap)
		binary.LittleEndian.PutUint64(msg[2:], uint64(time.Now().UnixNano()))
		_, err := c.Write(msg)
		require.NoError(t, err)
	}
	checkFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(lat) < n {
			return errString("batches in flight")
		}
		return nil
	})
	st := p.Stats().ToGateway
	mu.Lock()
	sorted := slices.Sorted(slices.Values(lat))
	mu.Unlock()
	stalled := 0
	for _, l := range sorted {
		if l >= rto {
			stalled++
		}
	}
	q := func(f float64) time.Duration { return sorted[int(f*float64(len(sorted)-1))] }
	t.Logf("latency p10 %v p50 %v p90 %v p99 %v max %v; %d of %d batches >= RTO; lost %d, stalled %d",
		q(0.1), q(0.5), q(0.9), q(0.99), sorted[len(sorted)-1], stalled, n, st.Lost, st.Stalled)
	require.Positive(t, st.Stalled, "seed 5 loses some of 300 batches at 3 %")
	require.GreaterOrEqual(t, sorted[0], delay, "no batch beats the delay")
	require.Less(t, q(0.1), rto/2, "most batches are not stalled")
	require.GreaterOrEqual(t, sorted[len(sorted)-1], rto+delay, "a lost batch waits an RTO")
	// Head-of-line blocking: each stall also holds the batches sent during
	// the RTO behind it (about rto/gap of them), so far more batches than
	// were lost see a large latency.
	require.Greater(t, stalled, int(st.Stalled), "batches behind a lost one wait too")
	require.GreaterOrEqual(t, st.AddedDelayMax, rto)
}

// TestTCPProxyRACKRepairsWithinARoundTrip is the same stream with Linux's
// loss detection (RepairLinux, the default): a batch followed by others is
// resent one round trip (5 ms) plus one gap after it left, never after the
// RTO; the added delays are the model's (Stats), not the scheduler's.
func TestTCPProxyRACKRepairsWithinARoundTrip(t *testing.T) {
	const (
		n     = 300
		gap   = 2 * time.Millisecond
		delay = 5 * time.Millisecond
		rto   = 100 * time.Millisecond
	)
	var mu sync.Mutex
	got := 0
	srv := startTCPServer(t, func(c *net.TCPConn) {
		hdr := make([]byte, 2+8)
		for {
			if _, err := io.ReadFull(c, hdr); err != nil {
				return
			}
			mu.Lock()
			got++
			mu.Unlock()
		}
	})
	pr := Profile{Name: "stall", ToGateway: Impairment{Loss: GE{LossGood: 0.03}, Delay: Jitter{Mean: delay}}}
	p := startTCPProxy(t, srv.addr(), Config{Profile: pr, Seed: 5, RTO: RTOConfig{Initial: rto}})
	c := dialTCP(t, p.Addr())
	msg := make([]byte, 10)
	binary.LittleEndian.PutUint16(msg, 8)
	next := time.Now()
	for range n {
		time.Sleep(time.Until(next))
		next = next.Add(gap)
		_, err := c.Write(msg)
		require.NoError(t, err)
	}
	checkFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if got < n {
			return errString("batches in flight")
		}
		return nil
	})
	st := p.Stats().ToGateway
	t.Logf("lost %d, stalled %d, fast repairs %d, timeouts %d, largest added delay %v", st.Lost, st.Stalled, st.FastRepairs, st.Timeouts, st.AddedDelayMax)
	require.Positive(t, st.Stalled, "seed 5 loses some of 300 batches at 3 %")
	require.Equal(t, st.Retransmits, st.FastRepairs)
	require.Zero(t, st.Timeouts)
	// srtt 5 ms + max(gap, srtt/4) per loss, plus the delay.
	require.GreaterOrEqual(t, st.AddedDelayMax, delay+srttPlus(5*time.Millisecond, gap))
	require.Less(t, st.AddedDelayMax, rto/2, "no batch waits an RTO")
}

func srttPlus(srtt, gap time.Duration) time.Duration { return srtt + max(gap, srtt/4) }

func TestTCPProxyBandwidthCap(t *testing.T) {
	const (
		rate  = 2000 * Kbit // 250 000 bytes/s
		total = 250_000     // one second at the rate
	)
	var first, last time.Time
	var n int
	done := make(chan struct{})
	srv := startTCPServer(t, func(c *net.TCPConn) {
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			k, err := c.Read(buf)
			if k > 0 {
				if n == 0 {
					first = time.Now()
				}
				n += k
				last = time.Now()
			}
			if err != nil {
				return
			}
		}
	})
	pr := Profile{Name: "rate", ToGateway: Impairment{Rate: rate}}
	p := startTCPProxy(t, srv.addr(), Config{Profile: pr, Framing: FramingChunk, ChunkSize: 1000})
	c := dialTCP(t, p.Addr())
	start := time.Now()
	_, err := c.Write(make([]byte, total))
	require.NoError(t, err)
	require.NoError(t, c.CloseWrite())
	select {
	case <-done:
	case <-time.After(10 * time.Second * timeScale()):
		t.Fatal("stream did not end")
	}
	require.Equal(t, total, n)
	elapsed := last.Sub(start)
	got := float64(n) * 8 / last.Sub(first).Seconds()
	t.Logf("%d bytes in %v (first→last %v): %.0f bit/s for a cap of %d", n, elapsed, last.Sub(first), got, rate)
	// Never faster than the cap; slower only by what a loaded machine adds.
	require.LessOrEqual(t, got, float64(rate)*1.05, "never faster than the cap")
	require.LessOrEqual(t, float64(n)*8/elapsed.Seconds(), float64(rate)*1.05)
	require.GreaterOrEqual(t, float64(n)*8/elapsed.Seconds(), float64(rate)*0.85/float64(timeScale()), "the cap, not something slower")
}

func TestTCPProxyPropagatesCloses(t *testing.T) {
	// Upstream closes first: the device sees EOF after the data.
	srv := startTCPServer(t, func(c *net.TCPConn) { c.Write([]byte{0, 0}) })
	p := startTCPProxy(t, srv.addr(), Config{})
	c := dialTCP(t, p.Addr())
	c.SetReadDeadline(time.Now().Add(5 * time.Second * timeScale()))
	b, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0}, b)
	// The proxy only forwarded a FIN (it cannot tell a close from a
	// half-close): the pair lives until the device closes too.
	require.Equal(t, 1, p.Stats().Active)
	require.NoError(t, c.Close())

	// Device half-closes and the upstream still answers.
	srv2 := startTCPServer(t, func(c *net.TCPConn) {
		b, _ := io.ReadAll(c)
		c.Write(append([]byte{byte(len(b)), 0}, b...))
	})
	p2 := startTCPProxy(t, srv2.addr(), Config{})
	c2 := dialTCP(t, p2.Addr())
	_, err = c2.Write([]byte{1, 0, 'x'})
	require.NoError(t, err)
	require.NoError(t, c2.CloseWrite())
	c2.SetReadDeadline(time.Now().Add(5 * time.Second * timeScale()))
	b, err = io.ReadAll(c2)
	require.NoError(t, err)
	require.Equal(t, []byte{3, 0, 1, 0, 'x'}, b)
	checkFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if p2.Stats().Active != 0 || p.Stats().Active != 0 {
			return errString("pairs still open")
		}
		return nil
	})

	// Nothing listening upstream: the device's connection is closed.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	ln.Close()
	p3 := startTCPProxy(t, dead, Config{})
	c3, err := net.Dial("tcp4", p3.Addr())
	if err == nil { // else the reset already beat the end of connect
		defer c3.Close()
		c3.SetReadDeadline(time.Now().Add(5 * time.Second * timeScale()))
		_, err = c3.Read(make([]byte, 1))
	}
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "closed, not timed out: %v", err)
}

func TestTCPProxyCloseLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	// An upstream that never reads and never closes, so pairs are busy
	// (stalled writes, queued packets, blocked readers) when Close comes.
	var hold sync.WaitGroup
	release := make(chan struct{})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	hold.Add(1)
	go func() {
		defer hold.Done()
		var conns []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		<-release
		for _, c := range conns {
			c.Close()
		}
	}()
	strong, err := LookupProfile("strong")
	require.NoError(t, err)
	p, err := NewTCPProxy("127.0.0.1:0", ln.Addr().String(), Config{Profile: strong, QueueBytes: 4096})
	require.NoError(t, err)
	var clients []net.Conn
	for range 4 {
		c, err := net.Dial("tcp4", p.Addr())
		require.NoError(t, err)
		clients = append(clients, c)
		go c.Write(make([]byte, 1<<20)) // more than every buffer on the way
	}
	checkFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if p.Stats().Active != 4 {
			return errString("pairs not up")
		}
		return nil
	})
	require.NoError(t, p.Close())
	require.Zero(t, p.Stats().Active)
	for _, c := range clients {
		c.Close()
	}
	ln.Close()
	close(release)
	hold.Wait()
	goleak.VerifyNone(t, before)
}

func TestTCPProxySetProfileRecordsTimeline(t *testing.T) {
	srv := startTCPServer(t, func(c *net.TCPConn) { io.Copy(io.Discard, c) })
	p := startTCPProxy(t, srv.addr(), Config{})
	moderate, err := LookupProfile("moderate")
	require.NoError(t, err)
	require.NoError(t, p.SetProfile(moderate))
	require.Equal(t, "moderate", p.Profile().Name)
	require.NoError(t, p.SetProfile(Clean))
	require.Error(t, p.SetProfile(Profile{Name: "bad", ToDevice: Impairment{Loss: GE{P: 2}}}))
	st := p.Stats()
	require.Equal(t, "clean", st.Profile)
	require.Len(t, st.Timeline, 3)
	require.Equal(t, []string{"clean", "moderate", "clean"}, []string{st.Timeline[0].Profile, st.Timeline[1].Profile, st.Timeline[2].Profile})
	require.Equal(t, []bool{false, true, false}, []bool{st.Timeline[0].Impaired, st.Timeline[1].Impaired, st.Timeline[2].Impaired})
	require.False(t, st.Timeline[1].At.Before(st.Timeline[0].At))
}

func TestProxiesRefuseNonLoopback(t *testing.T) {
	_, err := NewTCPProxy("0.0.0.0:0", "127.0.0.1:7447", Config{})
	require.ErrorIs(t, err, ErrNotLoopback)
	_, err = NewTCPProxy("127.0.0.1:0", "192.0.2.1:7447", Config{})
	require.ErrorIs(t, err, ErrNotLoopback)
	_, err = NewUDPProxy("127.0.0.1:0", "10.0.0.1:7447", Config{})
	require.ErrorIs(t, err, ErrNotLoopback)
	_, err = NewUDPProxy("127.0.0.1:0", "127.0.0.1:7447", Config{Profile: Profile{Name: "x", ToDevice: Impairment{Rate: -1}}})
	require.ErrorContains(t, err, "rate")
}
