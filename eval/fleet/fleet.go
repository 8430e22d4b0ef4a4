// Package fleet is the fleet benchmark of issue 11 item 5: N pico-like sessions (raw Zenoh
// client sessions over TCP, one subscriber each, no INTEREST — as zenoh-pico opens them)
// from one load generator process, against `picobridge router` (or `picobridge run`) and
// the stock Rust router, each a child process started from a binary path. Per row it
// measures connect time, the router's idle RSS per session, fan-out latency and
// deliveries/s of a stamped sample sent to all N, router and load generator CPU, and the
// router's RSS after every session left. See docs/fleetbench.md.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
	"github.com/picobridge/picobridge/eval/zbench"
)

// System under test (benchkit.System).
type System = benchkit.System

// The systems: `picobridge router`, `picobridge run`, the stock Rust router.
const (
	GoRouter   = benchkit.GoRouter
	Gateway    = benchkit.Gateway
	RustRouter = benchkit.RustRouter
)

// Options configure Run.
type Options struct {
	Picobridge string   // binary for GoRouter and Gateway
	Python     string   // with eclipse-zenoh 1.x (default $PICOBRIDGE_PYTHON or python3)
	Systems    []System // default GoRouter, RustRouter
	Sessions   []int    // rows (default 100, 1000, 3000, 10000)
	// RateHz of the fan-out for a row of n sessions (default 30 Hz, 3 Hz from 10 000
	// sessions: the same aggregate as 1 000 × 30 Hz).
	RateHz   func(n int) float64
	Size     int           // fan-out payload bytes (default 1500; must fit Batch)
	Duration time.Duration // fan-out window (default 10 s)
	Drain    time.Duration // after the window, wait at most this long for the last deliveries (default 5 s)
	Idle     time.Duration // wait before reading the idle RSS and after leaving (default 3 s)
	Batch    int           // batch size the sessions announce (default 2048, pico's default)
	Sources  int           // 127.0.0.x source addresses (default 4)
	Dials    int           // concurrent dials of the load generator (default 32)
	// ConnectBudget bounds the connect phase of a row; sessions not open by then count as
	// failed and the row goes on with the others (default 180 s).
	ConnectBudget time.Duration
	// Loadgen is the command that runs the load generator (default: this executable with
	// ChildEnv=loadgen; it must call RunChildIfRequested).
	Loadgen     []string
	RouterArgs  []string // appended to `picobridge router`
	GatewayArgs []string // appended to `picobridge run`, e.g. --devices-all-clients
	// RouterCPUs and LoadgenCPUs, if set, pin the router under test and the load
	// generator to these CPUs (`taskset -c LIST`, e.g. "0" and "1"), so that on a small
	// host the load generator does not take the router's core (issue 25's fan-out goal
	// asks for the load generator on its own core). "" leaves the process unpinned.
	RouterCPUs, LoadgenCPUs string
	Log                     io.Writer
	// ProfileDir, if set, profiles the picobridge systems (GoRouter, Gateway): the child
	// gets `--pprof` on loopback and, from the start of the fan-out window, a CPU profile
	// and an allocs delta over Duration and an execution trace of at most 2 s are saved
	// as ProfileDir/fleet-<n>-sessions-<system>.{cpu,allocs,trace}
	// (benchkit.StartProfiles). The Rust router is not profiled.
	ProfileDir string
}

// pinned prefixes argv with `taskset -c cpus` when cpus is set. Errors: taskset
// missing from PATH.
func pinned(cpus string, argv []string) ([]string, error) {
	if cpus == "" {
		return argv, nil
	}
	ts, err := exec.LookPath("taskset")
	if err != nil {
		return nil, fmt.Errorf("pin to CPUs %q: %w (util-linux's taskset)", cpus, err)
	}
	return append([]string{ts, "-c", cpus}, argv...), nil
}

func (o *Options) defaults() error {
	if o.Python == "" {
		o.Python = os.Getenv("PICOBRIDGE_PYTHON")
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if len(o.Systems) == 0 {
		o.Systems = []System{GoRouter, RustRouter}
	}
	if len(o.Sessions) == 0 {
		o.Sessions = []int{100, 1000, 3000, 10000}
	}
	if o.RateHz == nil {
		o.RateHz = func(n int) float64 {
			if n >= 10000 {
				return 3
			}
			return 30
		}
	}
	if o.Size <= 0 {
		o.Size = 1500
	}
	if o.Size < fanHeader {
		o.Size = fanHeader
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Drain <= 0 {
		o.Drain = 5 * time.Second
	}
	if o.Idle <= 0 {
		o.Idle = 3 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 2048
	}
	if o.Sources <= 0 {
		o.Sources = 4
	}
	if o.Dials <= 0 {
		o.Dials = 32
	}
	if o.ConnectBudget <= 0 {
		o.ConnectBudget = 180 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if len(o.Loadgen) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.Loadgen = []string{exe}
	}
	return nil
}

// Row is one (sessions, system) line.
type Row struct {
	Sessions int
	System   System
	// Connected sessions and the load generator's time to open them all (handshake +
	// subscriber declaration written).
	Connected, Failed int
	Retries           int // handshakes redialled (refused or closed by the router)
	ConnectSecs       float64
	// ReachSecs: from the start of connecting until a sample (published at the row's rate,
	// at most 10 Hz) had reached every session (the router had processed every declaration); -1 when not all were reached
	// within 60 s.
	ReachSecs                         float64
	RSSBefore, RSSIdle, RSSAfterLeave int64 // router VmRSS, bytes
	PeakRSS                           int64 // router VmHWM at the end
	RateHz                            float64
	Sent                              int   // fan-out samples published in the window
	Deliveries                        int64 // samples the sessions received in the window (+ drain)
	P50, P99, Max                     float64
	DeliveriesPerSec                  float64
	RouterCPU, LoadgenCPU             time.Duration // during the fan-out window
	Window                            time.Duration
	LeaveSecs                         float64
	LostSessions                      int    // sessions the router closed before they left
	CloseReasons                      string // Go systems: picobridge_transport_closed_total by reason, when sessions were lost
	RouterFDs                         int    // open fds of the router at idle
	Err                               string
}

// Report is the result of Run.
type Report struct {
	Start   time.Time
	Elapsed time.Duration
	Env     string
	Notes   []string
	Rows    []Row
}

// Run measures every row on every system; a failed row is an ERROR line.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	rep := &Report{Start: time.Now()}
	lim, err := benchkit.RaiseNoFile(1 << 20)
	if err != nil {
		return nil, err
	}
	rep.Env = fmt.Sprintf("RLIMIT_NOFILE %d, load average %s at start", lim, benchkit.LoadAvg())
	if need := uint64(maxInt(o.Sessions) + 100); lim < need {
		fmt.Fprintf(o.Log, "fleetbench: RLIMIT_NOFILE %d is below the %d a row needs per process\n", lim, need)
	}
	dir, err := os.MkdirTemp("", "fleetbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for i, n := range o.Sessions {
		systems := o.Systems
		if i%2 == 1 {
			systems = reversedSys(systems)
		}
		for _, sys := range systems {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			t0 := time.Now()
			row, err := runRow(ctx, o, sys, n, dir)
			if err != nil {
				row.Err = strings.NewReplacer("\n", " ", "|", "/").Replace(err.Error())
				fmt.Fprintf(o.Log, "%d sessions / %s: ERROR %v\n", n, sys, err)
			} else {
				fmt.Fprintf(o.Log, "%d sessions / %s: done in %.1fs\n", n, sys, time.Since(t0).Seconds())
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	rep.Elapsed = time.Since(rep.Start)
	rep.Env += fmt.Sprintf(", %s at end", benchkit.LoadAvg())
	return rep, nil
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func reversedSys(s []System) []System {
	out := make([]System, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

const fanKey = "fleet/fan"

type lgEvent struct {
	Ev               string  `json:"ev"`
	OK               int     `json:"ok"`
	Failed           int     `json:"failed"`
	Secs             float64 `json:"secs"`
	FirstError       string  `json:"first_error"`
	Retries          int     `json:"retries"`
	Deliveries       int64   `json:"deliveries"`
	SessionsWithData int     `json:"sessions_with_data"`
	LostSessions     int     `json:"lost_sessions"`
	P50              float64 `json:"p50_ms"`
	P99              float64 `json:"p99_ms"`
	Max              float64 `json:"max_ms"`
	// Fault runs (faults.go, churn.go).
	Up               int `json:"up"`
	Reconnects       int `json:"reconnects"`
	Redials          int `json:"redials"`
	SentAB           int `json:"sent_ab"`
	SentBC           int `json:"sent_bc"`
	MissedAB         int `json:"missed_ab"`
	MissedBC         int `json:"missed_bc"`
	MaxSessionAB     int `json:"max_session_ab"`
	MaxSessionBC     int `json:"max_session_bc"`
	SessionsMissedAB int `json:"sessions_missed_ab"`
	SessionsMissedBC int `json:"sessions_missed_bc"`
	Joins            int `json:"joins"`
	JoinFailed       int `json:"join_failed"`
	Leaves           int `json:"leaves"`
	Live             int `json:"live"`
	Duplicates       int `json:"duplicates"`
}

type loadgenProc struct{ p *benchkit.Proc }

func (l loadgenProc) cmd(c, ev string, timeout time.Duration) (lgEvent, error) {
	if _, err := io.WriteString(l.p.Stdin(), c+"\n"); err != nil {
		return lgEvent{}, fmt.Errorf("loadgen %s: %w", c, err)
	}
	var e lgEvent
	_, err := l.p.WaitLine(timeout, func(s string) bool {
		var x lgEvent
		if json.Unmarshal([]byte(s), &x) != nil || x.Ev != ev {
			return false
		}
		e = x
		return true
	})
	return e, err
}

// startRouter starts sys and returns it, its address and its /metrics URL ("" for the Rust
// router). pprof, if set, is the picobridge systems' --pprof address.
func startRouter(o Options, sys System, dir, pprof string) (*benchkit.Proc, string, string, error) {
	port, err := benchkit.FreePort()
	if err != nil {
		return nil, "", "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ep := "tcp/" + addr
	switch sys {
	case GoRouter, Gateway:
		if o.Picobridge == "" {
			return nil, "", "", errors.New("no picobridge binary (--picobridge)")
		}
		hport, err := benchkit.FreePort()
		if err != nil {
			return nil, "", "", err
		}
		h := fmt.Sprintf("127.0.0.1:%d", hport)
		args := append([]string{"router", "-l", ep, "--metrics", h, "--log-level", "error"}, o.RouterArgs...)
		ready := "http://" + h + "/metrics"
		if sys == Gateway {
			args = append([]string{"run", "--no-dds", "-l", ep, "--metrics", h, "--log-level", "error"}, o.GatewayArgs...)
			ready = "http://" + h + "/healthz"
		}
		if pprof != "" {
			args = append(args, "--pprof", pprof)
		}
		argv, err := pinned(o.RouterCPUs, append([]string{o.Picobridge}, args...))
		if err != nil {
			return nil, "", "", err
		}
		p, err := benchkit.Start(string(sys), nil, argv...)
		if err != nil {
			return nil, "", "", err
		}
		if err := benchkit.WaitHTTP(ready, 30*time.Second, p.Exited()); err != nil {
			p.Terminate(3 * time.Second)
			return nil, "", "", fmt.Errorf("%w; %s", err, p.Tail())
		}
		return p, addr, "http://" + h + "/metrics", nil
	case RustRouter:
		script, err := zbench.WriteDriver(dir)
		if err != nil {
			return nil, "", "", err
		}
		// zenohd refuses sessions beyond transport/unicast/max_sessions (default 1000).
		maxSess := strconv.Itoa(max(maxInt(o.Sessions)+100, 1000))
		argv, err := pinned(o.RouterCPUs, []string{o.Python, "-u", script, "router", "--listen", ep, "--max-sessions", maxSess})
		if err != nil {
			return nil, "", "", err
		}
		p, err := benchkit.Start(string(sys), nil, argv...)
		if err != nil {
			return nil, "", "", err
		}
		if _, err := p.WaitLine(30*time.Second, func(l string) bool { return strings.Contains(l, `"ready"`) || strings.Contains(l, `"error"`) }); err != nil {
			p.Stop(3 * time.Second)
			return nil, "", "", err
		}
		return p, addr, "", nil
	}
	return nil, "", "", fmt.Errorf("unknown system %q", sys)
}

func stopRouter(p *benchkit.Proc, sys System) {
	if sys == RustRouter {
		p.Stop(5 * time.Second)
	} else {
		p.Terminate(10 * time.Second)
	}
}

func runRow(ctx context.Context, o Options, sys System, n int, dir string) (Row, error) {
	row := Row{Sessions: n, System: sys, RateHz: o.RateHz(n), ReachSecs: -1}
	pprof := ""
	if o.ProfileDir != "" && sys != RustRouter {
		port, err := benchkit.FreePort()
		if err != nil {
			return row, err
		}
		pprof = fmt.Sprintf("127.0.0.1:%d", port)
	}
	rp, addr, metricsURL, err := startRouter(o, sys, dir, pprof)
	if err != nil {
		return row, err
	}
	defer stopRouter(rp, sys)
	time.Sleep(500 * time.Millisecond)
	u0, err := benchkit.ReadUsage(rp.PID())
	if err != nil {
		return row, err
	}
	row.RSSBefore = u0.RSS

	env := []string{ChildEnv + "=loadgen", addrEnv + "=" + addr, nEnv + "=" + strconv.Itoa(n),
		sourcesEnv + "=" + strconv.Itoa(o.Sources), keyEnv + "=" + fanKey, batchEnv + "=" + strconv.Itoa(o.Batch), leaseEnv + "=10s",
		dialsEnv + "=" + strconv.Itoa(o.Dials), connectEnv + "=" + o.ConnectBudget.String()}
	largv, err := pinned(o.LoadgenCPUs, o.Loadgen)
	if err != nil {
		return row, err
	}
	lp, err := benchkit.Start("loadgen", env, largv...)
	if err != nil {
		return row, err
	}
	defer lp.Stop(10 * time.Second)
	lg := loadgenProc{lp}
	ev, err := lg.cmd("connect", "connected", o.ConnectBudget+time.Minute)
	if err != nil {
		return row, err
	}
	row.Connected, row.Failed, row.ConnectSecs, row.Retries = ev.OK, ev.Failed, ev.Secs, ev.Retries
	if ev.Retries > 0 {
		fmt.Fprintf(o.Log, "%d sessions / %s: %d handshakes redialled, first error: %s\n", n, sys, ev.Retries, ev.FirstError)
	}
	if ev.Failed > 0 {
		fmt.Fprintf(o.Log, "%d sessions / %s: %d failed to connect, first: %s\n", n, sys, ev.Failed, ev.FirstError)
	}
	if ev.OK == 0 {
		return row, fmt.Errorf("no session connected: %s", ev.FirstError)
	}

	// The publisher: one raw session (no interest, no declaration; PUSH on the full key).
	pub, err := dialRaw(nil, addr, uint16(max(o.Batch, o.Size+64)), 10*time.Second, 20*time.Second)
	if err != nil {
		return row, fmt.Errorf("publisher: %w", err)
	}
	defer pub.close()
	go func() { // drain what the router sends the publisher (keep-alives)
		var b []byte
		for {
			var err error
			if b, err = readStreamBatch(pub.br, b); err != nil {
				return
			}
		}
	}()
	payload := make([]byte, o.Size)
	seq := uint32(0)
	put := func() error {
		encodeFan(payload, seq, time.Now())
		seq++
		return pub.put(fanKey, payload, time.Now().Add(5*time.Second))
	}
	// Reach: every session got at least one sample.
	if _, err := lg.cmd("reset", "reset", 10*time.Second); err != nil {
		return row, err
	}
	// Samples at the row's rate (at most 10 Hz), so that this phase loads the router no
	// more than the fan-out window will; the load generator is polled every 100 ms.
	t0 := time.Now()
	reachPeriod := time.Duration(float64(time.Second) / min(row.RateHz, 10))
	var lastPut time.Time
	for time.Since(t0) < 60*time.Second {
		if time.Since(lastPut) >= reachPeriod {
			if err := put(); err != nil {
				return row, fmt.Errorf("publisher: %w", err)
			}
			lastPut = time.Now()
		}
		time.Sleep(100 * time.Millisecond)
		r, err := lg.cmd("report", "report", 10*time.Second)
		if err != nil {
			return row, err
		}
		if r.SessionsWithData >= ev.OK {
			row.ReachSecs = ev.Secs + time.Since(t0).Seconds()
			break
		}
	}
	// Idle.
	time.Sleep(o.Idle)
	ui, err := benchkit.ReadUsage(rp.PID())
	if err != nil {
		return row, err
	}
	row.RSSIdle, row.RouterFDs = ui.RSS, ui.FDs

	// Fan-out window: samples of the reach phase still in flight are not counted.
	if _, err := lg.cmd("reset "+strconv.FormatUint(uint64(seq), 10), "reset", 10*time.Second); err != nil {
		return row, err
	}
	var prof *benchkit.Profiling
	if pprof != "" {
		prof = benchkit.StartProfiles("http://"+pprof, o.ProfileDir, benchkit.Slug("fleet", strconv.Itoa(n), "sessions", string(sys)), o.Duration)
	}
	ur0, _ := benchkit.ReadUsage(rp.PID())
	ul0, _ := benchkit.ReadUsage(lp.PID())
	start := time.Now()
	period := time.Duration(float64(time.Second) / row.RateHz)
	next := start
	for next.Before(start.Add(o.Duration)) {
		select {
		case <-ctx.Done():
			return row, ctx.Err()
		case <-time.After(time.Until(next)):
		}
		if err := put(); err != nil {
			return row, fmt.Errorf("publisher: %w", err)
		}
		row.Sent++
		next = next.Add(period)
	}
	// Drain: up to o.Drain for the last samples.
	want := int64(row.Sent) * int64(ev.OK)
	var rep lgEvent
	for end := time.Now().Add(o.Drain); ; {
		if rep, err = lg.cmd("report", "report", 10*time.Second); err != nil {
			return row, err
		}
		if rep.Deliveries >= want || time.Now().After(end) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	row.Window = time.Since(start)
	ur1, _ := benchkit.ReadUsage(rp.PID())
	ul1, _ := benchkit.ReadUsage(lp.PID())
	if err := prof.Wait(); err != nil {
		return row, err
	}
	row.Deliveries, row.P50, row.P99, row.Max = rep.Deliveries, rep.P50, rep.P99, rep.Max
	row.DeliveriesPerSec = float64(rep.Deliveries) / row.Window.Seconds()
	row.RouterCPU, row.LoadgenCPU = ur1.CPU-ur0.CPU, ul1.CPU-ul0.CPU
	row.LostSessions = rep.LostSessions
	if metricsURL != "" && rep.LostSessions > 0 {
		if m, err := benchkit.Scrape(metricsURL); err == nil {
			row.CloseReasons = reasons(m.By("picobridge_transport_closed_total", "reason"))
		}
	}

	// Leave.
	lv, err := lg.cmd("leave", "left", 5*time.Minute)
	if err != nil {
		return row, err
	}
	row.LeaveSecs = lv.Secs
	time.Sleep(o.Idle)
	ua, err := benchkit.ReadUsage(rp.PID())
	if err != nil {
		return row, err
	}
	row.RSSAfterLeave, row.PeakRSS = ua.RSS, ua.PeakRSS
	return row, nil
}

// reasons prints a by-reason map as "a=1 b=2" (sorted).
func reasons(by map[string]float64) string {
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.0f", k, by[k]))
	}
	return strings.Join(parts, " ")
}
