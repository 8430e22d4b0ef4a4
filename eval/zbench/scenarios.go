package zbench

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
	"github.com/picobridge/picobridge/zenohpath"
)

const startTimeout = 30 * time.Second

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// roundTrips is how many measured round trips a latency row does.
func (b *bench) roundTrips() int {
	return min(max(int(b.o.Duration.Seconds()*400), 50), 5000)
}

// pyThroughput: zbench.py sub and pub (Python, Rust Zenoh client) through the router; the
// subscriber counts samples for Duration after Warmup.
func (b *bench) pyThroughput(ctx context.Context, ep string, size int, w *window) (measurement, error) {
	var m measurement
	sub, err := benchkit.Start("py sub", nil, b.python("sub", "--connect", ep, "--key", "bench/thr",
		"--warmup", secs(b.o.Warmup), "--duration", secs(b.o.Duration))...)
	if err != nil {
		return m, err
	}
	defer sub.Stop(3 * time.Second)
	if _, err := waitEvent(sub, "ready", startTimeout); err != nil {
		return m, err
	}
	pub, err := benchkit.Start("py pub", nil, b.python("pub", "--connect", ep, "--key", "bench/thr", "--size", strconv.Itoa(size))...)
	if err != nil {
		return m, err
	}
	defer pub.Stop(3 * time.Second)
	if _, err := waitEvent(sub, "window", startTimeout+b.o.Warmup); err != nil {
		return m, err
	}
	w.begin()
	done, err := waitEvent(sub, "done", startTimeout+b.o.Duration)
	if err != nil {
		return m, err
	}
	w.end()
	m.set("msgs/s", done.Rate)
	m.set("MB/s", done.Rate*float64(size)/1e6)
	return m, nil
}

// goThroughput: the same with two zenohpath client sessions in this process.
func (b *bench) goThroughput(ctx context.Context, ep string, size int, w *window) (measurement, error) {
	var m measurement
	open := func() (*zenohpath.Session, error) {
		octx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		return zenohpath.Open(octx, zenohpath.Config{Connect: []string{ep}, TLS: b.clientTLS()})
	}
	subS, err := open()
	if err != nil {
		return m, fmt.Errorf("go sub: %w", err)
	}
	defer subS.Close()
	var count atomic.Int64
	first := make(chan struct{})
	if _, err := subS.DeclareSubscriber("bench/thr", func(zenohpath.Sample) {
		if count.Add(1) == 1 {
			close(first)
		}
	}); err != nil {
		return m, err
	}
	pubS, err := open()
	if err != nil {
		return m, fmt.Errorf("go pub: %w", err)
	}
	defer pubS.Close()
	pub, err := pubS.DeclarePublisher("bench/thr", zenohpath.PublisherOptions{CongestionControl: zenohpath.CongestionControlBlock})
	if err != nil {
		return m, err
	}
	if err := waitUntil(startTimeout, pub.HasMatchingSubscribers); err != nil {
		return m, fmt.Errorf("go pub: no matching subscriber: %w", err)
	}
	stop := make(chan struct{})
	pubDone := make(chan error, 1)
	go func() {
		payload := make([]byte, size)
		for {
			select {
			case <-stop:
				pubDone <- nil
				return
			default:
			}
			for range 64 {
				if err := pub.Put(payload, nil); err != nil {
					pubDone <- err
					return
				}
			}
		}
	}()
	defer func() { close(stop); <-pubDone }()
	select {
	case <-first:
	case err := <-pubDone:
		return m, fmt.Errorf("go pub: %w", err)
	case <-time.After(startTimeout):
		return m, fmt.Errorf("go sub: no sample within %v", startTimeout)
	}
	time.Sleep(b.o.Warmup)
	w.begin()
	c0, t0 := count.Load(), time.Now()
	time.Sleep(b.o.Duration)
	c1, t1 := count.Load(), time.Now()
	w.end()
	rate := float64(c1-c0) / t1.Sub(t0).Seconds()
	m.set("msgs/s", rate)
	m.set("MB/s", rate*float64(size)/1e6)
	return m, nil
}

func waitUntil(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timeout after %v", timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func percentiles(m *measurement, rtts []float64) error {
	if len(rtts) == 0 {
		return fmt.Errorf("no round trips")
	}
	slices.Sort(rtts)
	m.set("RTT p50 µs", quantile(rtts, 0.50))
	m.set("RTT p99 µs", quantile(rtts, 0.99))
	return nil
}

// quantile of sorted xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// pyLatency: zbench.py ping and pong (express publishers) through the router.
func (b *bench) pyLatency(ctx context.Context, ep string, size int, w *window) (measurement, error) {
	var m measurement
	pong, err := benchkit.Start("py pong", nil, b.python("pong", "--connect", ep)...)
	if err != nil {
		return m, err
	}
	defer pong.Stop(3 * time.Second)
	if _, err := waitEvent(pong, "ready", startTimeout); err != nil {
		return m, err
	}
	n := b.roundTrips()
	w.begin()
	ping, err := benchkit.Start("py ping", nil, b.python("ping", "--connect", ep, "--size", strconv.Itoa(size),
		"--count", strconv.Itoa(n), "--warmup", strconv.Itoa(max(n/10, 10)))...)
	if err != nil {
		return m, err
	}
	defer ping.Stop(3 * time.Second)
	done, err := waitEvent(ping, "done", startTimeout+time.Duration(n)*10*time.Millisecond)
	if err != nil {
		return m, err
	}
	w.end()
	return m, percentiles(&m, done.RTTus)
}

// goLatency: ping and pong as zenohpath client sessions in this process (express).
func (b *bench) goLatency(ctx context.Context, ep string, size int, w *window) (measurement, error) {
	var m measurement
	open := func() (*zenohpath.Session, error) {
		octx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		return zenohpath.Open(octx, zenohpath.Config{Connect: []string{ep}, TLS: b.clientTLS()})
	}
	pongS, err := open()
	if err != nil {
		return m, fmt.Errorf("go pong: %w", err)
	}
	defer pongS.Close()
	opts := zenohpath.PublisherOptions{Express: true, CongestionControl: zenohpath.CongestionControlBlock}
	pongPub, err := pongS.DeclarePublisher("bench/pong", opts)
	if err != nil {
		return m, err
	}
	if _, err := pongS.DeclareSubscriber("bench/ping", func(s zenohpath.Sample) {
		_ = pongPub.Put(s.Payload(), nil)
	}); err != nil {
		return m, err
	}
	pingS, err := open()
	if err != nil {
		return m, fmt.Errorf("go ping: %w", err)
	}
	defer pingS.Close()
	got := make(chan struct{}, 1)
	if _, err := pingS.DeclareSubscriber("bench/pong", func(zenohpath.Sample) {
		select {
		case got <- struct{}{}:
		default:
		}
	}); err != nil {
		return m, err
	}
	pingPub, err := pingS.DeclarePublisher("bench/ping", opts)
	if err != nil {
		return m, err
	}
	if err := waitUntil(startTimeout, func() bool {
		return pingPub.HasMatchingSubscribers() && pongPub.HasMatchingSubscribers()
	}); err != nil {
		return m, fmt.Errorf("go ping/pong: not matched: %w", err)
	}
	n := b.roundTrips()
	warm := max(n/10, 10)
	payload := make([]byte, size)
	rtts := make([]float64, 0, n)
	w.begin()
	defer w.end()
	for i := range warm + n {
		t0 := time.Now()
		if err := pingPub.Put(payload, nil); err != nil {
			return m, err
		}
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			return m, fmt.Errorf("go ping: pong lost after %d round trips", i)
		}
		if i >= warm {
			rtts = append(rtts, float64(time.Since(t0).Nanoseconds())/1e3)
		}
	}
	return m, percentiles(&m, rtts)
}

func (b *bench) pico(name string, args ...string) (*benchkit.Proc, error) {
	bin := filepath.Join(b.o.PicoDir, name)
	if _, err := os.Stat(bin); err != nil {
		return nil, err
	}
	// pico's examples printf to a pipe: line-buffer them so killed processes lose nothing.
	argv := append([]string{bin}, args...)
	if sb, err := exec.LookPath("stdbuf"); err == nil {
		argv = append([]string{sb, "-oL"}, argv...)
	}
	return benchkit.Start(name, nil, argv...)
}

func picoEP(ep string) string { return ep } // pico takes tcp/HOST:PORT as we write it

// picoThroughput: z_sub_thr (prints msgs/s every 100 ms) and z_pub_thr -s size through the
// router; the row is what z_sub_thr received inside the window.
func (b *bench) picoThroughput(ctx context.Context, ep string, size int, w *window) (measurement, error) {
	var m measurement
	sub, err := b.pico("z_sub_thr", "-e", picoEP(ep), "-f", "10")
	if err != nil {
		return m, err
	}
	defer sub.Kill()
	time.Sleep(500 * time.Millisecond) // z_sub_thr prints nothing once declared
	pub, err := b.pico("z_pub_thr", "-e", picoEP(ep), "-s", strconv.Itoa(size))
	if err != nil {
		return m, err
	}
	defer pub.Kill()
	isNum := func(s string) bool { _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); return err == nil }
	first, err := sub.WaitLine(startTimeout, isNum)
	if err != nil {
		return m, fmt.Errorf("z_sub_thr reported nothing: %w (%s)", err, pub.Tail())
	}
	from := first.At.Add(b.o.Warmup)
	to := from.Add(b.o.Duration)
	time.Sleep(time.Until(from))
	w.begin()
	time.Sleep(time.Until(to))
	w.end()
	time.Sleep(50 * time.Millisecond)
	// z_sub_thr prints count/elapsed every 100 ms, and nothing for an interval without a
	// sample: the delivered total is the sum of rate×100 ms, and stalls count as zero.
	var total float64
	var n int
	for _, l := range sub.Lines() {
		if l.At.Before(from) || l.At.After(to) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(l.Text), 64); err == nil {
			total += v * picoInterval.Seconds()
			n++
		}
	}
	rate := total / to.Sub(from).Seconds()
	m.set("msgs/s", rate)
	m.set("MB/s", rate*float64(size)/1e6)
	m.set("sub intervals with data %", 100*float64(n)*picoInterval.Seconds()/to.Sub(from).Seconds())
	return m, nil
}

// picoInterval is z_sub_thr's report period (-f 10).
const picoInterval = 100 * time.Millisecond

// picoLatency: z_pong and z_ping -n N -s size -w 200 through the router.
func (b *bench) picoLatency(ctx context.Context, ep string, size int, w *window) (measurement, error) {
	var m measurement
	pong, err := b.pico("z_pong", "-e", picoEP(ep))
	if err != nil {
		return m, err
	}
	defer pong.Kill()
	if _, err := pong.WaitLine(startTimeout, func(s string) bool { return strings.Contains(s, "Pong app is running") }); err != nil {
		return m, err
	}
	n := b.roundTrips()
	w.begin()
	ping, err := b.pico("z_ping", "-e", picoEP(ep), "-n", strconv.Itoa(n), "-s", strconv.Itoa(size), "-w", "200")
	if err != nil {
		return m, err
	}
	defer ping.Kill()
	if err := ping.Wait(startTimeout + time.Duration(n)*10*time.Millisecond); err != nil {
		return m, err
	}
	w.end()
	var rtts []float64
	for _, l := range ping.Lines() {
		s := strings.TrimSpace(l.Text)
		if s != "" && strings.Trim(s, "0123456789") == "" {
			v, _ := strconv.ParseFloat(s, 64)
			rtts = append(rtts, v)
		}
	}
	if len(rtts) != n {
		return m, fmt.Errorf("z_ping printed %d round trips, want %d; %s", len(rtts), n, ping.Tail())
	}
	return m, percentiles(&m, rtts)
}
