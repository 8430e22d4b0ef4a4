// Package devcheck measures the same device figures on real zenoh-pico and on
// devsim, side by side (docs/devsim.md, "devsim against real zenoh-pico";
// issue 24 item 4): receive latency publisher → device per sample
// (p50/p95/p99) and the device's TX rate in a tight publish loop, at socket
// timeouts of 100 ms and 5 ms, with and without a 30 Hz inbound stream.
//
// Both run against picobridge's Go router (zenohpath, in-process, loopback).
// The inbound stream comes from a zenohpath client session (express,
// reliable): payload = LE CDR std_msgs/Header stamped at publish time
// (CLOCK_REALTIME via time.Now), padded to Options.Size. A zenohpath
// subscriber on devcheck/out/** takes the device's samples, so its write
// filter is open.
//
//   - "pico": firmware/rxtx built against ZENOH_PICO_DIR, run under the
//     firmware/zephyrfd shim (Zephyr's per-fd lock) with the locator's tout
//     = the window. Latency: CLOCK_REALTIME in the subscriber callback (the
//     read task) − stamp.
//   - "devsim": a sim/devsim device in this process, platform zephyr,
//     board native_sim, knobs matching the pico build: socket_timeout_ms =
//     the window, TX batch and split lock off (upstream zenoh-pico has no
//     flush thread), batch 2048, frag 4096. Latency: SampleEvent.Received
//     (its read task hands the sample to the subscriber) − stamp; the
//     delivery to the application is reported beside it.
package devcheck

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/firmware/responder"
	"github.com/picobridge/picobridge/firmware/rxtx"
	"github.com/picobridge/picobridge/firmware/zephyrfd"
	"github.com/picobridge/picobridge/sim/devsim"
	"github.com/picobridge/picobridge/zenohpath"
)

// Keys used on the router.
const (
	InKey   = "devcheck/in"
	OutKeys = "devcheck/out/**"
)

// Modes of a cell.
const (
	ModeRx   = "rx"    // inbound stream only: receive latency
	ModeTx   = "tx"    // tight publish loop only: TX rate
	ModeRxTx = "rx+tx" // both at once
)

// Targets.
const (
	TargetPico   = "pico"
	TargetDevsim = "devsim"
)

// Options configure Run. Zero values take the defaults in brackets.
type Options struct {
	// PicoDir is a zenoh-pico build (responder.FindPico; env
	// ZENOH_PICO_DIR), PicoSrc its source tree when needed. Without PicoDir
	// the pico cells are skipped with a note.
	PicoDir, PicoSrc string
	// Duration is the measured phase of each cell [10s].
	Duration time.Duration
	// Warmup runs before it: the device connects and declares, the inbound
	// stream starts [1s].
	Warmup time.Duration
	// Windows are the socket timeouts [100ms, 5ms].
	Windows []time.Duration
	// Modes [rx, tx, rx+tx].
	Modes []string
	// Targets [pico, devsim].
	Targets []string
	// InboundHz is the rate of the inbound stream [30].
	InboundHz float64
	// Size of every sample, bytes [64].
	Size int
	// WorkDir receives the compiled shim and program [a temporary directory].
	WorkDir string
	// Log receives progress lines (nil: none).
	Log io.Writer
}

func (o *Options) defaults() {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	if len(o.Windows) == 0 {
		o.Windows = []time.Duration{100 * time.Millisecond, 5 * time.Millisecond}
	}
	if len(o.Modes) == 0 {
		o.Modes = []string{ModeRx, ModeTx, ModeRxTx}
	}
	if len(o.Targets) == 0 {
		o.Targets = []string{TargetPico, TargetDevsim}
	}
	if o.InboundHz <= 0 {
		o.InboundHz = 30
	}
	if o.Size < 24 {
		o.Size = 64
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Latency is a receive-latency summary, ms (nearest-rank quantiles).
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// Summarize returns the nearest-rank quantiles of v (ms); v is sorted in
// place. The same rule as rxtx.c's rank().
func Summarize(v []float64) Latency {
	if len(v) == 0 {
		return Latency{}
	}
	slices.Sort(v)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(v)))) - 1
		return v[max(i, 0)]
	}
	return Latency{Count: len(v), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: v[len(v)-1]}
}

// Cell is one measurement.
type Cell struct {
	Target   string  `json:"target"`
	WindowMs float64 `json:"window_ms"`
	Mode     string  `json:"mode"`
	// Rx: receive latency in the measured phase (modes rx, rx+tx).
	Rx Latency `json:"rx"`
	// RxApp: devsim only, latency to the application's delivery.
	RxApp *Latency `json:"rx_app,omitempty"`
	// TxRate: the device's publishes per second (modes tx, rx+tx).
	TxRate float64 `json:"tx_msg_per_s"`
	// InboundSent: samples the inbound publisher sent during the cell.
	InboundSent int64 `json:"inbound_sent"`
	// SendsWaited, SendWaitMs, ResvLapsed: pico only, the shim's stats of
	// the session socket (whole process life).
	SendsWaited uint64  `json:"sends_waited,omitempty"`
	SendWaitMs  float64 `json:"send_wait_ms,omitempty"`
	ResvLapsed  uint64  `json:"resv_lapsed,omitempty"`
	// Err says why the cell has no figures.
	Err string `json:"error,omitempty"`
}

// Report is the result of Run.
type Report struct {
	Started time.Time `json:"started"`
	// LoadStart, LoadEnd: /proc/loadavg's 1, 5 and 15 min averages at the
	// start and the end ("" where unreadable).
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end"`
	// Commit is picobridge's (build info, else git in the working
	// directory); PicoCommit the zenoh-pico source tree's ("" when unknown).
	Commit     string `json:"commit"`
	PicoCommit string `json:"pico_commit"`
	Options    struct {
		DurationS float64 `json:"duration_s"`
		InboundHz float64 `json:"inbound_hz"`
		Size      int     `json:"size"`
		PicoDir   string  `json:"pico_dir,omitempty"`
	} `json:"options"`
	Cells []Cell `json:"cells"`
}

// Run measures every cell of o, one after the other, against one
// in-process router. A cell that fails carries its error; Run itself fails
// only when the router or the client sessions cannot start.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	rep := &Report{Started: time.Now().UTC(), LoadStart: loadAvg(), Commit: ourCommit()}
	defer func() { rep.LoadEnd = loadAvg() }()
	rep.Options.DurationS, rep.Options.InboundHz, rep.Options.Size, rep.Options.PicoDir = o.Duration.Seconds(), o.InboundHz, o.Size, o.PicoDir

	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	defer r.Close()
	ln, err := r.Listen(ctx, "tcp/127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ep := ln.Endpoint()
	pubS, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	if err != nil {
		return nil, err
	}
	defer pubS.Close()
	pub, err := pubS.DeclarePublisher(InKey, zenohpath.PublisherOptions{Express: true})
	if err != nil {
		return nil, err
	}
	sinkS, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	if err != nil {
		return nil, err
	}
	defer sinkS.Close()
	var sunk atomic.Int64
	if _, err := sinkS.DeclareSubscriber(OutKeys, func(zenohpath.Sample) { sunk.Add(1) }); err != nil {
		return nil, err
	}
	in := &inbound{pub: pub, hz: o.InboundHz, size: o.Size}

	var pico picoBins
	for _, target := range o.Targets {
		if target == TargetPico {
			pico, err = buildPico(ctx, o)
			if err != nil {
				fmt.Fprintf(o.Log, "devcheck: pico cells skipped: %v\n", err)
			}
			rep.PicoCommit = pico.commit
		}
	}
	for _, w := range o.Windows {
		for _, mode := range o.Modes {
			for _, target := range o.Targets {
				c := Cell{Target: target, WindowMs: float64(w) / float64(time.Millisecond), Mode: mode}
				fmt.Fprintf(o.Log, "devcheck: %s window %v %s ...\n", target, w, mode)
				switch target {
				case TargetPico:
					if pico.err != nil {
						c.Err = pico.err.Error()
						break
					}
					runPico(ctx, o, pico, ep, w, in, &c)
				case TargetDevsim:
					runDevsim(ctx, o, ep, w, in, &c)
				default:
					c.Err = fmt.Sprintf("unknown target %q", target)
				}
				fmt.Fprintf(o.Log, "devcheck:   rx %+v tx %.1f msg/s %s\n", c.Rx, c.TxRate, c.Err)
				rep.Cells = append(rep.Cells, c)
				if ctx.Err() != nil {
					return rep, ctx.Err()
				}
			}
		}
	}
	return rep, nil
}

// inbound is the 30 Hz stream toward the device.
type inbound struct {
	pub  *zenohpath.Publisher
	hz   float64
	size int
}

// run publishes stamped samples until ctx ends and returns how many.
func (in *inbound) run(ctx context.Context) int64 {
	t := time.NewTicker(time.Duration(float64(time.Second) / in.hz))
	defer t.Stop()
	var n int64
	for {
		select {
		case <-ctx.Done():
			return n
		case <-t.C:
			if in.pub.Put(Payload(time.Now(), in.size), nil) == nil {
				n++
			}
		}
	}
}

// Payload is a LE CDR std_msgs/Header stamped now (frame_id "devcheck"),
// zero-padded to size bytes: what rxtx.c and devsim read the stamp from.
func Payload(now time.Time, size int) []byte {
	b := ros2.Marshal(&ros2.Header{Stamp: ros2.TimeOf(now), FrameID: "devcheck"})
	for len(b) < size {
		b = append(b, 0)
	}
	return b
}

type picoBins struct {
	shim, prog, commit string
	err                error
}

// ErrNoPico: Options.PicoDir is empty.
var ErrNoPico = errors.New("SKIP: set " + responder.DirEnv + "=<zenoh-pico build dir> for the real zenoh-pico cells")

func buildPico(ctx context.Context, o Options) (picoBins, error) {
	var b picoBins
	if o.PicoDir == "" {
		b.err = ErrNoPico
		return b, b.err
	}
	p, err := responder.FindPico(o.PicoDir, o.PicoSrc)
	if err != nil {
		b.err = err
		return b, err
	}
	if n := len(p.Include); n > 0 { // the last one is the source tree's include/
		b.commit = gitHead(filepath.Dir(p.Include[n-1]))
	}
	dir := o.WorkDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "devcheck"); err != nil {
			b.err = err
			return b, err
		}
	}
	if b.shim, err = zephyrfd.Build(ctx, dir); err != nil {
		b.err = err
		return b, err
	}
	if b.prog, err = rxtx.Build(ctx, p, dir); err != nil {
		b.err = err
	}
	return b, b.err
}

// PicoArgs are rxtx's arguments for one cell.
func PicoArgs(ep string, w time.Duration, mode string, o Options) []string {
	args := []string{"-e", ep + "#tout=" + strconv.FormatInt(w.Milliseconds(), 10),
		"-z", strconv.Itoa(o.Size), "-d", secs(o.Duration), "-w", secs(o.Warmup)}
	if mode != ModeTx {
		args = append(args, "-s", InKey)
	}
	if mode != ModeRx {
		args = append(args, "-p", "devcheck/out/pico")
	}
	return args
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

func runPico(ctx context.Context, o Options, b picoBins, ep string, w time.Duration, in *inbound, c *Cell) {
	cctx, cancel := context.WithTimeout(ctx, o.Warmup+o.Duration+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, b.prog, PicoArgs(ep, w, c.Mode, o)...)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+b.shim, zephyrfd.StatsEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.Err = err.Error()
		return
	}
	if err := cmd.Start(); err != nil {
		c.Err = err.Error()
		return
	}
	var stdout strings.Builder
	sc := bufio.NewScanner(out)
	ready := false
	for !ready && sc.Scan() {
		stdout.WriteString(sc.Text() + "\n")
		ready = sc.Text() == "ready"
	}
	var wg sync.WaitGroup
	sctx, stop := context.WithCancel(cctx)
	if ready && c.Mode != ModeTx {
		wg.Add(1)
		go func() { defer wg.Done(); c.InboundSent = in.run(sctx) }()
	}
	for sc.Scan() {
		stdout.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	stop()
	wg.Wait()
	if err != nil {
		c.Err = fmt.Sprintf("rxtx: %v: %s", err, lastLines(stderr.String(), 5))
		return
	}
	res, err := rxtx.ParseResult([]byte(stdout.String()))
	if err != nil {
		c.Err = err.Error()
		return
	}
	if !res.Shim {
		c.Err = "rxtx ran without the zephyrfd shim"
		return
	}
	if c.Mode != ModeTx {
		c.Rx = Latency{Count: int(res.RX.Stamped), P50: res.RX.P50Ms, P95: res.RX.P95Ms, P99: res.RX.P99Ms, Max: res.RX.MaxMs}
	}
	if c.Mode != ModeRx {
		c.TxRate = res.TX.MsgPerS
	}
	st, err := zephyrfd.ParseStats([]byte(stderr.String()))
	if err == nil && len(st) > 0 {
		s := st[0]
		for _, x := range st[1:] { // the session socket is the busiest one
			if x.Recvs+x.Sends > s.Recvs+s.Sends {
				s = x
			}
		}
		c.SendsWaited, c.SendWaitMs, c.ResvLapsed = s.SendsWaited, s.SendWaitMs, s.ResvLapsed
	}
}

// DevsimConfig is the devsim device of one cell: knobs matching a POSIX
// zenoh-pico build under the zephyrfd shim (per-fd lock, the window, no TX
// batch, no split lock, batch 2048, frag 4096).
func DevsimConfig(w time.Duration, mode string, size int) devsim.DeviceConfig {
	cfg := devsim.DeviceConfig{
		Name: "devcheck", Platform: "zephyr", Board: "native_sim", NoProbeResponder: true,
		Env: map[string]string{
			"NROS_ZENOH_SOCKET_TIMEOUT_MS":  strconv.FormatInt(w.Milliseconds(), 10),
			"NROS_ZENOH_TX_BATCH":           "0",
			"NROS_ZENOH_TX_SPLIT_LOCK":      "0",
			"NROS_ZENOH_BATCH_UNICAST_SIZE": "2048",
			"NROS_ZENOH_FRAG_MAX_SIZE":      "4096",
		},
	}
	if mode != ModeTx {
		cfg.Subscriptions = []devsim.Subscription{{Key: InKey}}
	}
	if mode != ModeRx {
		// devsim has no tight-loop mode: its fastest rate stands for one.
		cfg.Publications = []devsim.Publication{{Key: "devcheck/out/devsim", RateHz: devsim.MaxRateHz, Size: size}}
	}
	return cfg
}

func runDevsim(ctx context.Context, o Options, ep string, w time.Duration, in *inbound, c *Cell) {
	var mu sync.Mutex
	var t0, t1 time.Time
	var rx, app []float64
	cfg := DevsimConfig(w, c.Mode, o.Size)
	d, err := devsim.NewDevice(cfg, devsim.Options{Endpoint: ep, OnSample: func(e devsim.SampleEvent) {
		mu.Lock()
		defer mu.Unlock()
		if t0.IsZero() || e.Stamp.IsZero() || e.Received.Before(t0) || (!t1.IsZero() && e.Received.After(t1)) {
			return
		}
		rx = append(rx, ms(e.Received.Sub(e.Stamp)))
		if !e.Delivered.IsZero() {
			app = append(app, ms(e.Delivered.Sub(e.Stamp)))
		}
	}})
	if err != nil {
		c.Err = err.Error()
		return
	}
	if err := d.Start(ctx); err != nil {
		c.Err = err.Error()
		return
	}
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if c.Mode != ModeTx {
		wg.Add(1)
		go func() { defer wg.Done(); c.InboundSent = in.run(sctx) }()
	}
	sent := func() uint64 { return d.Stats().Publications["devcheck/out/devsim"].Sent }
	sleep(ctx, o.Warmup)
	mu.Lock()
	t0 = time.Now()
	mu.Unlock()
	s0 := sent()
	sleep(ctx, o.Duration)
	s1 := sent()
	mu.Lock()
	t1 = time.Now()
	mu.Unlock()
	stop()
	wg.Wait()
	connected := d.Stats().Connects > 0
	d.Stop()
	if !connected {
		c.Err = "devsim device never connected"
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if c.Mode != ModeTx {
		c.Rx = Summarize(rx)
		a := Summarize(app)
		c.RxApp = &a
	}
	if c.Mode != ModeRx {
		c.TxRate = float64(s1-s0) / t1.Sub(t0).Seconds()
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// loadAvg returns the first three fields of /proc/loadavg, "" when unreadable.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// ourCommit is the vcs.revision this binary was built from (12 digits,
// "-dirty" when modified), else the HEAD of the working directory's git
// checkout, else "".
func ourCommit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, st := range bi.Settings {
			switch st.Key {
			case "vcs.revision":
				rev = st.Value
			case "vcs.modified":
				if st.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if rev != "" {
			return rev[:min(12, len(rev))] + dirty
		}
	}
	return gitHead(".")
}

// gitHead is `git -C dir rev-parse HEAD`, "" on any error.
func gitHead(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(len(l)-n, 0):], "\n")
}
