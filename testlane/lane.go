package testlane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath"
)

// DefaultListen is where the lane listens for the device: zenoh-pico's
// default router locator (tcp/127.0.0.1:7447), which a Zephyr native_sim
// build with offloaded sockets reaches on the host.
const DefaultListen = "127.0.0.1:7447"

// EndpointPlaceholder in a device command's arguments is replaced with the
// lane's endpoint (tcp/host:port); the command also gets it in EndpointEnv.
const (
	EndpointPlaceholder = "{endpoint}"
	EndpointEnv         = "PICOBRIDGE_LANE_ENDPOINT"
)

// Probe timing (docs/lane.md): each ping waits probeTimeout for its pong;
// before counting, pings are sent every warmupEvery until one is answered,
// for at most warmupFor (a zenoh-pico publisher sends nothing until the
// router told it a subscriber matches).
const (
	probeTimeout = time.Second
	probeSpacing = 50 * time.Millisecond
	warmupEvery  = 300 * time.Millisecond
	warmupDrain  = 300 * time.Millisecond
	warmupFor    = 5 * time.Second
	// stopGrace is how long the device command gets after SIGTERM.
	stopGrace = 2 * time.Second
	// deviceOutputCap bounds the device output kept for the report, bytes.
	deviceOutputCap = 64 << 10
)

// Config is one lane run.
type Config struct {
	// Expect is the expectations file, parsed.
	Expect *Expectations
	// Resolved are the device's knobs (Resolve).
	Resolved *knobs.Resolved
	// Listen is the host:port the device connects to. Default DefaultListen.
	Listen string
	// Command starts the device (argv); empty = wait for a device started
	// elsewhere. EndpointPlaceholder in an argument becomes the endpoint.
	Command []string
	// DeviceOutput receives a copy of the device command's output (nil = none).
	DeviceOutput io.Writer
	// Logger receives the lane's progress; nil = discard.
	Logger *slog.Logger
	// Ready, when set, is called with the endpoint once the lane listens.
	Ready func(endpoint string)
}

// Report is the outcome of a run.
type Report struct {
	Expect       *Expectations
	Resolved     *knobs.Resolved
	Endpoint     string // tcp/host:port
	Started      time.Time
	Observed     time.Duration // from the first OPEN to the end of the observation
	Sessions     []SessionObs
	Results      []Result
	DeviceOutput string // the device command's output, last deviceOutputCap bytes
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool {
	for _, c := range r.Results {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

// Counts returns passed, failed and skipped checks.
func (r *Report) Counts() (pass, fail, skip int) {
	for _, c := range r.Results {
		switch c.Status {
		case Pass:
			pass++
		case Fail:
			fail++
		default:
			skip++
		}
	}
	return
}

// Resolve resolves the device's knobs as the expectations select them
// (extra, when not nil, is added on the env rung after the file's env, e.g.
// the process environment).
func Resolve(e *Expectations, extra *knobs.Env) (*knobs.Resolved, error) {
	cat, err := catalog()
	if err != nil {
		return nil, err
	}
	env := &knobs.Env{}
	for _, name := range e.Knobs.EnvFiles {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, &knobs.ConfigError{Problems: []*knobs.Problem{{File: e.File, Key: "knobs.env_files",
				Msg: fmt.Sprintf("cannot read %s: %v", name, unwrapPath(err)), Err: knobs.ErrSyntax}}}
		}
		ev, err := knobs.ParseEnvFile(name, data)
		if err != nil {
			return nil, err
		}
		env.Add(ev)
	}
	if len(e.Knobs.Env) > 0 {
		ev := &knobs.Env{}
		for _, k := range sortedKeys(e.Knobs.Env) {
			ev.Vars = append(ev.Vars, knobs.EnvVar{Name: k, Value: e.Knobs.Env[k], File: e.File + " knobs.env"})
		}
		env.Add(ev)
	}
	if extra != nil {
		env.Add(extra)
	}
	r, err := cat.Resolve(knobs.Options{Platform: e.Knobs.Platform, Board: e.Knobs.Board, Env: env})
	var ce *knobs.ConfigError
	if errors.As(err, &ce) {
		// A platform or board the file names: say which file and key.
		for _, p := range ce.Problems {
			if p.File == "" && (p.Key == "platform" || p.Key == "board") {
				p.File, p.Key = e.File, "knobs."+p.Key
			}
		}
	}
	return r, err
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

type probeOutcome struct {
	declared               bool
	warmup, sent, answered int
}

type faultOutcome struct {
	injected    time.Time
	notInjected string
}

type exitOutcome struct {
	startErr string
	running  bool
	code     int
	detail   string
}

// Run runs one lane: it starts a router behind the tap on cfg.Listen,
// starts the device command (if any), waits for the device's session
// (Expect.Wait), observes it for Expect.Duration while it sends probes and
// injects faults, then judges what it saw. The error is for the lane
// itself failing (the address in use); the device's failures are in the
// report's results.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	e := cfg.Expect
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	listen := cfg.Listen
	if listen == "" {
		listen = DefaultListen
	}
	rep := &Report{Expect: e, Resolved: cfg.Resolved, Started: time.Now()}
	rt := &routers{log: log}
	if err := rt.start(ctx); err != nil {
		return nil, err
	}
	defer rt.close()
	rec := NewRecorder(nil)
	tp, err := startTap(ctx, listen, rec, rt.addr)
	if err != nil {
		return nil, fmt.Errorf("lane: listen %s: %w", listen, err)
	}
	defer tp.close()
	rep.Endpoint = "tcp/" + tp.addr()
	log.Info("lane listening", "endpoint", rep.Endpoint, "router", rt.addr())
	if cfg.Ready != nil {
		cfg.Ready(rep.Endpoint)
	}

	var dev *device
	if len(cfg.Command) > 0 {
		dev = startDevice(cfg.Command, rep.Endpoint, cfg.DeviceOutput)
		defer dev.stop()
	}

	f := &facts{exp: e, r: cfg.Resolved, capa: knobs.CapacityOf(cfg.Resolved), endpoint: tp.addr(),
		faults: make([]faultOutcome, len(e.Faults))}

	// Wait for the first OPEN.
	start, ok := waitOpen(ctx, rec, e.Wait, dev)
	if ok {
		f.start = start
		log.Info("device session open", "after", time.Since(rep.Started).Round(time.Millisecond))
		f.end = observe(ctx, f, rec, tp, rt, dev, log)
	} else {
		f.start, f.end = time.Now(), time.Now()
	}
	if dev != nil {
		f.exit = dev.stop()
		rep.DeviceOutput = dev.output()
	}
	tp.close()
	rep.Sessions = rec.Sessions()
	f.sessions = rep.Sessions
	rep.Observed = f.end.Sub(f.start)
	rep.Results = evaluate(f)
	return rep, nil
}

// waitOpen waits up to wait for a session to complete OPEN; it gives up
// early when the device command exits.
func waitOpen(ctx context.Context, rec *Recorder, wait time.Duration, dev *device) (time.Time, bool) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var exited <-chan struct{}
	if dev != nil {
		exited = dev.done
	}
	for {
		ch := rec.Changed()
		for _, s := range rec.Sessions() {
			if !s.Opened.IsZero() {
				return s.Opened, true
			}
		}
		select {
		case <-ch:
		case <-exited:
			exited = nil
			// Let the tap record what the device sent before it went.
			time.Sleep(100 * time.Millisecond)
			for _, s := range rec.Sessions() {
				if !s.Opened.IsZero() {
					return s.Opened, true
				}
			}
			return time.Time{}, false
		case <-deadline.C:
			return time.Time{}, false
		case <-ctx.Done():
			return time.Time{}, false
		}
	}
}

// observe runs the observation window: probes, faults, and the end at
// Duration after the first OPEN (earlier when the device command exits).
func observe(ctx context.Context, f *facts, rec *Recorder, tp *tap, rt *routers, dev *device, log *slog.Logger) time.Time {
	e := f.exp
	end := f.start.Add(e.Duration)
	octx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	if e.Responder {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.probes = runProbes(octx, rt.current(), rec, e)
		}()
	}
	var mu sync.Mutex
	onMid := func(at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		for i, fl := range e.Faults {
			if fl.Kind == FaultCloseMidFragment && f.faults[i].injected.IsZero() && !f.start.Add(fl.At).After(at) {
				f.faults[i].injected = at
				log.Info("fault injected", "kind", fl.Kind, "at", at.Sub(f.start).Round(time.Millisecond))
				return
			}
		}
	}
	tp.onMidFrag.Store(&onMid)
	for i, fl := range e.Faults {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTimer(time.Until(f.start.Add(fl.At)))
			defer t.Stop()
			select {
			case <-octx.Done():
				mu.Lock()
				if f.faults[i].injected.IsZero() {
					f.faults[i].notInjected = fmt.Sprintf("the observation ended before +%s", fl.At)
				}
				mu.Unlock()
				return
			case <-t.C:
			}
			now := time.Now()
			switch fl.Kind {
			case FaultStallReads:
				tp.stall(fl.For)
			case FaultRestartRouter:
				// The new router lives until Run ends, not until the observation does.
				if err := rt.restart(context.WithoutCancel(octx), tp); err != nil {
					mu.Lock()
					f.faults[i].notInjected = "the router did not restart: " + err.Error()
					mu.Unlock()
					return
				}
			case FaultCloseMidFragment:
				tp.midFrag.Store(true)
				<-octx.Done()
				mu.Lock()
				if f.faults[i].injected.IsZero() {
					f.faults[i].notInjected = fmt.Sprintf("no fragmented message passed between +%s and the end of the observation", fl.At)
				}
				mu.Unlock()
				return
			}
			mu.Lock()
			f.faults[i].injected = now
			mu.Unlock()
			log.Info("fault injected", "kind", fl.Kind, "at", now.Sub(f.start).Round(time.Millisecond))
		}()
	}
	var exited <-chan struct{}
	if dev != nil {
		exited = dev.done
	}
	select {
	case <-octx.Done():
		if ctx.Err() != nil {
			return time.Now()
		}
		return end
	case <-exited:
		// Let the tap see the link close.
		t := time.NewTimer(500 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-octx.Done():
		}
		cancel()
		return time.Now()
	}
}

// runProbes pings the device's responder (docs/probe.md) through an
// in-process session on the router.
func runProbes(ctx context.Context, r *zenohpath.Router, rec *Recorder, e *Expectations) probeOutcome {
	var out probeOutcome
	pingKey := probe.PingKey(e.Device)
	for !declaredSub(rec, pingKey) {
		ch := rec.Changed()
		select {
		case <-ch:
		case <-ctx.Done():
			return out
		}
	}
	out.declared = true
	sess, err := zenohpath.Open(ctx, zenohpath.Config{Router: r})
	if err != nil {
		return out
	}
	defer sess.Close()
	pongs := make(chan probe.Message, 64)
	if _, err := sess.DeclareSubscriber(probe.PongKey(e.Device), func(s zenohpath.Sample) {
		if p, err := probe.Decode(s.Payload()); err == nil && p.Kind == probe.Pong {
			select {
			case pongs <- p:
			default:
			}
		}
	}); err != nil {
		return out
	}
	pub, err := sess.DeclarePublisher(pingKey, zenohpath.PublisherOptions{Express: true, Priority: zenohpath.PriorityRealTime,
		CongestionControl: zenohpath.CongestionControlDrop, Reliability: zenohpath.ReliabilityBestEffort})
	if err != nil {
		return out
	}
	t0 := time.Now()
	ping := func(seq uint32) {
		_ = pub.Put(probe.Message{Kind: probe.Ping, Seq: seq, GwSend: uint64(time.Since(t0))}.Append(nil), nil)
	}
	wait := func(seq uint32, d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		for {
			select {
			case p := <-pongs:
				if p.Seq == seq {
					return true
				}
			case <-t.C:
				return false
			case <-ctx.Done():
				return false
			}
		}
	}
	// Warm-up: until any pong comes back, then the late ones are drained.
	warm := time.Now().Add(warmupFor)
	for seq := uint32(0xF0000000); ctx.Err() == nil && time.Now().Before(warm); seq++ {
		ping(seq)
		out.warmup++
		if anyPong(ctx, pongs, warmupEvery) {
			for anyPong(ctx, pongs, warmupDrain) {
			}
			break
		}
	}
	for i := range e.Probes {
		if ctx.Err() != nil {
			break
		}
		s := uint32(i + 1)
		ping(s)
		out.sent++
		if wait(s, probeTimeout) {
			out.answered++
		}
		t := time.NewTimer(probeSpacing)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return out
}

// anyPong waits up to d for a pong.
func anyPong(ctx context.Context, pongs <-chan probe.Message, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-pongs:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func declaredSub(rec *Recorder, key string) bool {
	for _, s := range rec.Sessions() {
		if s.Declared[KindSubscriber][key] && s.Ended.IsZero() {
			return true
		}
	}
	return false
}

// routers is the lane's current router; a restart replaces it.
type routers struct {
	log *slog.Logger
	mu  sync.Mutex
	r   *zenohpath.Router
	ep  string
}

// start starts a router with the lane's sink: an in-process session
// subscribed to ** (what a real router's consumers would be), so the
// device's write filters open and its publications flow.
func (rs *routers) start(ctx context.Context) error {
	r := zenohpath.NewRouter(zenohpath.RouterConfig{Logger: rs.log.With("component", "router")})
	ln, err := r.Listen(ctx, "tcp/127.0.0.1:0")
	if err != nil {
		_ = r.Close()
		return err
	}
	sink, err := zenohpath.Open(ctx, zenohpath.Config{Router: r})
	if err == nil {
		_, err = sink.DeclareSubscriber("**", func(zenohpath.Sample) {})
	}
	if err != nil {
		_ = r.Close()
		return err
	}
	rs.mu.Lock()
	rs.r, rs.ep = r, strings.TrimPrefix(ln.Endpoint(), "tcp/")
	rs.mu.Unlock()
	return nil
}

func (rs *routers) addr() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.ep
}

func (rs *routers) current() *zenohpath.Router {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.r
}

// restart closes the router (every session ends) and starts a new one.
func (rs *routers) restart(ctx context.Context, tp *tap) error {
	rs.mu.Lock()
	old := rs.r
	rs.mu.Unlock()
	_ = old.Close()
	tp.dropAll()
	return rs.start(ctx)
}

func (rs *routers) close() {
	rs.mu.Lock()
	r := rs.r
	rs.mu.Unlock()
	if r != nil {
		_ = r.Close()
	}
}

// device is the device command.
type device struct {
	cmd     *exec.Cmd
	done    chan struct{}
	out     *tailBuffer
	waitErr error
	err     error // start error
	once    sync.Once
	res     *exitOutcome
	started time.Time
}

func startDevice(argv []string, endpoint string, copyTo io.Writer) *device {
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = strings.ReplaceAll(a, EndpointPlaceholder, endpoint)
	}
	d := &device{done: make(chan struct{}), out: &tailBuffer{cap: deviceOutputCap}, started: time.Now()}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), EndpointEnv+"="+endpoint)
	var w io.Writer = d.out
	if copyTo != nil {
		w = io.MultiWriter(d.out, &lockedWriter{w: copyTo})
	}
	cmd.Stdout, cmd.Stderr = w, w
	d.cmd = cmd
	if err := cmd.Start(); err != nil {
		d.err = err
		close(d.done)
		return d
	}
	go func() {
		d.waitErr = cmd.Wait()
		close(d.done)
	}()
	return d
}

// stop ends the device command (SIGTERM, then SIGKILL after stopGrace)
// and reports how it ended. Safe to call more than once.
func (d *device) stop() *exitOutcome {
	d.once.Do(func() {
		res := &exitOutcome{}
		d.res = res
		if d.err != nil {
			res.startErr = d.err.Error()
			return
		}
		select {
		case <-d.done:
		default:
			res.running = true
			_ = d.cmd.Process.Signal(syscall.SIGTERM)
			t := time.NewTimer(stopGrace)
			select {
			case <-d.done:
			case <-t.C:
				_ = d.cmd.Process.Kill()
				<-d.done
			}
			t.Stop()
		}
		res.code = d.cmd.ProcessState.ExitCode()
		res.detail = fmt.Sprintf("%s: %s after %s", d.cmd.Path, d.cmd.ProcessState, time.Since(d.started).Round(time.Millisecond))
	})
	return d.res
}

func (d *device) output() string { return d.out.String() }

// tailBuffer keeps the last cap bytes written. Safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	cap int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.cap; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
