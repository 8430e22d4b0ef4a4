package egress

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/eval/benchkit"
	"github.com/picobridge/picobridge/eval/zbench"
	"github.com/picobridge/picobridge/sim/linkemu"
	"github.com/picobridge/picobridge/zenohpath"
)

// PayloadHeader is the bytes every payload starts with: "PBE1", sequence number (u32 LE),
// send time (Unix ns, i64 LE); the rest is zero padding.
const PayloadHeader = 16

var magic = [4]byte{'P', 'B', 'E', '1'}

func encodePayload(b []byte, seq uint32, at time.Time) {
	copy(b, magic[:])
	binary.LittleEndian.PutUint32(b[4:], seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(at.UnixNano()))
}

func decodePayload(b []byte) (seq uint32, sent int64, ok bool) {
	if len(b) < PayloadHeader || [4]byte(b[:4]) != magic {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(b[4:]), int64(binary.LittleEndian.Uint64(b[8:])), true
}

// Options configure Run.
type Options struct {
	// Picobridge is the picobridge binary for GoRouter and Gateway (required for them).
	Picobridge string
	// Python with eclipse-zenoh 1.x for RustRouter (default $PICOBRIDGE_PYTHON or python3).
	Python string
	// Systems, if set, restricts every scenario to these systems.
	Systems []System
	// LinkQueue is linkemu's queue per direction in bytes for scenarios that do not set
	// one (0: 64 KiB, about one Zenoh batch).
	LinkQueue int
	// RouterArgs and GatewayArgs are appended to `picobridge router` / `picobridge run`.
	RouterArgs, GatewayArgs []string
	// Seed of linkemu.
	Seed uint64
	// Log receives progress lines (nil: none).
	Log io.Writer
	// KeepSeqs keeps every received sequence number in arrival order (Row.Seqs), for tests.
	KeepSeqs bool
}

// DefaultLinkQueue is linkemu's queue per direction unless set: 64 KiB, one full Zenoh
// batch. linkemu's own default (1 MiB) would hold 84 ms of bulk at 100 Mbit/s inside the
// link, out of any sender's reach (docs/egressbench.md).
const DefaultLinkQueue = 64 << 10

func (o *Options) defaults() {
	if o.Python == "" {
		o.Python = os.Getenv("PICOBRIDGE_PYTHON")
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.LinkQueue <= 0 {
		o.LinkQueue = DefaultLinkQueue
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
}

// Row is one (scenario, system, stream, device) line of the table.
type Row struct {
	Scenario, Title string
	System          System
	Stream, Device  string
	Sent            int
	Delivered       int // distinct sequence numbers received
	Duplicates      int
	OutOfOrder      int // arrivals with a sequence number below the previous one
	Lost            int // Sent − Delivered
	P50, P99, Max   float64
	// Drops: drop counters of the system's /metrics over the run (router, transport and
	// bridge families, all reasons); DropsKnown is false for the Rust router (no metrics).
	Drops        float64
	DropsKnown   bool
	DropReasons  string
	RSSBase      int64 // RSS of the system when publishing started, bytes
	RSSGrowth    int64 // largest RSS while publishing and draining − RSSBase
	PeakRSS      int64 // VmHWM at the end
	CPU          time.Duration
	ClassChanges int // gateway: transitions of the device's class while publishing (-1: n/a)
	// Goodput is the payload bytes delivered per second of publishing, Offered the payload
	// bytes sent per second, LinkBps the impaired link's mean rate in bytes/s (0: none).
	Goodput, Offered, LinkBps float64
	// P99AfterStep is the p99 latency of the samples sent from Scenario.StepAt +
	// StepGrace on, or, without a step, from LearnGrace on: after a learned link
	// budget settled (-1: none sent then).
	P99AfterStep float64
	Target       string
	Met          string // "yes", "no" or ""
	Err          string
	Seqs         []uint32 `json:"-"` // arrival order (Options.KeepSeqs)
	// Metrics is the system's /metrics delta over the run (nil for the Rust router).
	Metrics benchkit.Metrics `json:"-"`
}

// Report is the result of Run.
type Report struct {
	Start   time.Time
	Elapsed time.Duration
	Env     string
	Notes   []string
	Rows    []Row
}

// Run runs every scenario on every one of its systems (in the order given, alternating
// per scenario) and returns the table rows. A system that fails to start gives one ERROR
// row; Run fails only on a cancelled context.
func Run(ctx context.Context, o Options, scs []Scenario) (*Report, error) {
	o.defaults()
	rep := &Report{Start: time.Now(), Env: fmt.Sprintf("load average %s at start", benchkit.LoadAvg())}
	dir, err := os.MkdirTemp("", "egressbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for i, sc := range scs {
		systems := sc.Systems
		if len(o.Systems) > 0 {
			systems = intersect(sc.Systems, o.Systems)
		}
		if i%2 == 1 {
			systems = reversed(systems)
		}
		for _, sys := range systems {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			t0 := time.Now()
			rows, err := RunScenario(ctx, o, sc, sys, dir)
			if err != nil {
				fmt.Fprintf(o.Log, "%s / %s: ERROR %v\n", sc.ID, sys, err)
				rows = append(rows, Row{Scenario: sc.ID, Title: sc.Title, System: sys, Err: oneLine(err)})
			} else {
				fmt.Fprintf(o.Log, "%s / %s: done in %.1fs\n", sc.ID, sys, time.Since(t0).Seconds())
			}
			rep.Rows = append(rep.Rows, rows...)
		}
	}
	rep.Elapsed = time.Since(rep.Start)
	rep.Env += fmt.Sprintf(", %s at end", benchkit.LoadAvg())
	return rep, nil
}

func intersect(a, b []System) []System {
	var out []System
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}

func reversed(s []System) []System {
	out := make([]System, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

func oneLine(err error) string {
	s := strings.NewReplacer("\n", " ", "|", "/").Replace(err.Error())
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// system is a running system under test.
type system struct {
	kind    System
	proc    *benchkit.Proc
	ep      string // tcp/127.0.0.1:port
	addr    string // 127.0.0.1:port
	metrics string // http://127.0.0.1:port (Go systems)
}

func startSystem(o Options, sc Scenario, kind System, dir string) (*system, error) {
	port, err := benchkit.FreePort()
	if err != nil {
		return nil, err
	}
	s := &system{kind: kind, addr: fmt.Sprintf("127.0.0.1:%d", port)}
	s.ep = "tcp/" + s.addr
	switch kind {
	case GoRouter, Gateway:
		if o.Picobridge == "" {
			return nil, errors.New("no picobridge binary (--picobridge)")
		}
		hport, err := benchkit.FreePort()
		if err != nil {
			return nil, err
		}
		s.metrics = fmt.Sprintf("http://127.0.0.1:%d", hport)
		args := []string{"router", "-l", s.ep, "--metrics", s.metrics[len("http://"):], "--log-level", "warn"}
		args = append(args, o.RouterArgs...)
		ready := s.metrics + "/metrics"
		if kind == Gateway {
			cfg := filepath.Join(dir, "gateway-"+sc.ID+".yaml")
			if err := os.WriteFile(cfg, []byte(GatewayConfig(sc)), 0o644); err != nil {
				return nil, err
			}
			args = []string{"run", "--no-dds", "-c", cfg, "-l", s.ep, "--metrics", s.metrics[len("http://"):], "--log-level", "warn"}
			args = append(args, o.GatewayArgs...)
			ready = s.metrics + "/healthz"
		}
		if s.proc, err = benchkit.Start(string(kind), nil, append([]string{o.Picobridge}, args...)...); err != nil {
			return nil, err
		}
		if err := benchkit.WaitHTTP(ready, 30*time.Second, s.proc.Exited()); err != nil {
			s.stop()
			return nil, fmt.Errorf("%w; %s", err, s.proc.Tail())
		}
	case RustRouter:
		script, err := zbench.WriteDriver(dir)
		if err != nil {
			return nil, err
		}
		if s.proc, err = benchkit.Start(string(kind), nil, o.Python, "-u", script, "router", "--listen", s.ep); err != nil {
			return nil, err
		}
		if _, err := s.proc.WaitLine(30*time.Second, func(l string) bool { return strings.Contains(l, `"ready"`) || strings.Contains(l, `"error"`) }); err != nil {
			s.stop()
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown system %q", kind)
	}
	return s, nil
}

func (s *system) stop() {
	if s.kind == RustRouter {
		s.proc.Stop(3 * time.Second)
	} else {
		s.proc.Terminate(5 * time.Second)
	}
}

func (s *system) scrape() (benchkit.Metrics, error) {
	if s.metrics == "" {
		return nil, nil
	}
	return benchkit.Scrape(s.metrics + "/metrics")
}

// GatewayConfig is the YAML given to `picobridge run -c` for sc: its devices (posix-class
// with the scenario's knob overrides) and its critical streams' ROS names, then
// sc.GatewayYAML's keys laid over it (a repeated top-level key replaces the generated one).
func GatewayConfig(sc Scenario) string {
	var b strings.Builder
	b.WriteString("# generated by eval/egress for scenario " + sc.ID + "\nroutes:\n  critical: [")
	first := true
	for _, st := range sc.Streams {
		if st.Critical {
			if !first {
				b.WriteString(", ")
			}
			first = false
			fmt.Fprintf(&b, "%q", "/"+st.Key)
		}
	}
	b.WriteString("]\ndevices:\n  list:\n")
	for _, d := range sc.Devices {
		fmt.Fprintf(&b, "    - name: %s\n      platform: posix\n", d.Name)
		if d.LinkBudget && d.Impaired && sc.Link > 0 {
			fmt.Fprintf(&b, "      link_bytes_per_s: %.0f\n", float64(sc.Link)/8)
		}
		if len(d.Env) > 0 {
			b.WriteString("      env: {")
			keys := make([]string, 0, len(d.Env))
			for k := range d.Env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for i, k := range keys {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s: %q", k, d.Env[k])
			}
			b.WriteString("}\n")
		}
	}
	if sc.GatewayYAML != "" {
		b.WriteString(sc.GatewayYAML)
		if !strings.HasSuffix(sc.GatewayYAML, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// recv is what one device got on one stream.
type recv struct {
	mu      sync.Mutex
	seen    map[uint32]bool
	lastSeq int64
	dups    int
	ooo     int
	lat     []float64 // ms
	sentAt  []int64   // send time of each lat, Unix ns
	seqs    []uint32
	keep    bool
}

func (r *recv) add(seq uint32, sent int64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[seq] {
		r.dups++
		return
	}
	r.seen[seq] = true
	if int64(seq) < r.lastSeq {
		r.ooo++
	}
	r.lastSeq = int64(seq)
	r.lat = append(r.lat, float64(now.UnixNano()-sent)/1e6)
	r.sentAt = append(r.sentAt, sent)
	if r.keep {
		r.seqs = append(r.seqs, seq)
	}
}

func (r *recv) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// RunScenario runs sc once on sys: start the system, attach the devices (impaired ones
// through linkemu), publish every stream for sc.Duration, drain, and return one row per
// (stream, device that subscribes to it).
func RunScenario(ctx context.Context, o Options, sc Scenario, sys System, dir string) ([]Row, error) {
	o.defaults()
	s, err := startSystem(o, sc, sys, dir)
	if err != nil {
		return nil, err
	}
	defer s.stop()

	queue := sc.LinkQueue
	if queue <= 0 {
		queue = o.LinkQueue
	}
	var proxy linkemu.Proxy
	needProxy := false
	for _, d := range sc.Devices {
		needProxy = needProxy || d.Impaired
	}
	if needProxy {
		imp := linkemu.Impairment{Rate: sc.Link}
		prof := linkemu.Profile{Name: fmt.Sprintf("rate-%.0fbps", float64(sc.Link)), ToDevice: imp, ToGateway: imp}
		px, err := linkemu.NewTCPProxy("127.0.0.1:0", s.addr, linkemu.Config{Profile: prof, Seed: o.Seed, QueueBytes: queue})
		if err != nil {
			return nil, fmt.Errorf("linkemu: %w", err)
		}
		defer px.Close()
		proxy = px
	}

	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Devices.
	recvs := map[[2]string]*recv{} // (stream name, device) → recv
	var sessions []*zenohpath.Session
	defer func() {
		for _, x := range sessions {
			_ = x.Close()
		}
	}()
	for _, d := range sc.Devices {
		ep := s.ep
		if d.Impaired {
			ep = "tcp/" + proxy.Addr()
		}
		ds, err := zenohpath.Open(octx, zenohpath.Config{Connect: []string{ep}})
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", d.Name, err)
		}
		sessions = append(sessions, ds)
		if _, err := server.DeclareProbeResponder(ds, d.Name); err != nil {
			return nil, fmt.Errorf("device %s: probe responder: %w", d.Name, err)
		}
		// Which streams each subscription covers: by exact key or "/**" prefix.
		byKey := map[string]*recv{}
		for _, st := range sc.Streams {
			for _, sub := range d.Subs {
				if covers(sub, st.Key) {
					r := &recv{seen: map[uint32]bool{}, lastSeq: -1, keep: o.KeepSeqs}
					recvs[[2]string{st.Name, d.Name}] = r
					byKey[st.Key] = r
					break
				}
			}
		}
		for _, sub := range d.Subs {
			if _, err := ds.DeclareSubscriber(sub, func(smp zenohpath.Sample) {
				now := time.Now()
				seq, sent, ok := decodePayload(smp.Payload())
				if !ok {
					return
				}
				if r := byKey[smp.KeyExpr()]; r != nil {
					r.add(seq, sent, now)
				}
			}); err != nil {
				return nil, fmt.Errorf("device %s: subscribe %s: %w", d.Name, sub, err)
			}
		}
	}
	if sys == Gateway {
		if err := waitDevices(ctx, s, sc); err != nil {
			return nil, err
		}
	} else {
		time.Sleep(500 * time.Millisecond) // declarations reach the router
	}

	// Publishers: one session per stream, so no stream waits behind another in the
	// publisher's own queue.
	type pubState struct {
		st   Stream
		pub  *zenohpath.Publisher
		sent int
		err  error
	}
	pubs := make([]*pubState, 0, len(sc.Streams))
	for _, st := range sc.Streams {
		ps, err := zenohpath.Open(octx, zenohpath.Config{Connect: []string{s.ep}})
		if err != nil {
			return nil, fmt.Errorf("publisher %s: %w", st.Name, err)
		}
		sessions = append(sessions, ps)
		po := zenohpath.PublisherOptions{Express: st.Express, Priority: st.Priority}
		if st.Block {
			po.CongestionControl = zenohpath.CongestionControlBlock
		}
		if st.BestEffort {
			po.Reliability = zenohpath.ReliabilityBestEffort
		}
		pub, err := ps.DeclarePublisher(st.Key, po)
		if err != nil {
			return nil, err
		}
		pubs = append(pubs, &pubState{st: st, pub: pub})
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, p := range pubs {
		for !p.pub.HasMatchingSubscribers() {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("publisher %s: no matching subscriber after 20 s", p.st.Name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	m0, err := s.scrape()
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	u0, err := benchkit.ReadUsage(s.proc.PID())
	if err != nil {
		return nil, err
	}
	watch := benchkit.WatchRSS(s.proc.PID(), 100*time.Millisecond)
	tStart := time.Now()
	fmt.Fprintf(o.Log, "%s / %s: publishing for %v\n", sc.ID, sys, sc.Duration)
	if sc.StepTo > 0 && proxy != nil {
		step := time.AfterFunc(sc.StepAt, func() {
			imp := linkemu.Impairment{Rate: sc.StepTo}
			if err := proxy.SetProfile(linkemu.Profile{Name: fmt.Sprintf("rate-%.0fbps", float64(sc.StepTo)), ToDevice: imp, ToGateway: imp}); err != nil {
				fmt.Fprintf(o.Log, "%s / %s: link step: %v\n", sc.ID, sys, err)
			}
		})
		defer step.Stop()
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, p := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, max(p.st.Size, PayloadHeader))
			period := time.Duration(float64(time.Second) / p.st.RateHz)
			next := time.Now()
			end := tStart.Add(sc.Duration)
			for seq := uint32(0); ; seq++ {
				if !next.Before(end) {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Until(next)):
				}
				encodePayload(buf, seq, time.Now())
				if err := p.pub.Put(buf, nil); err != nil && p.err == nil {
					p.err = err
				}
				p.sent++
				next = next.Add(period)
			}
		}()
	}
	select {
	case <-ctx.Done():
	case <-time.After(sc.Duration):
	}
	close(stop)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	totalSent := 0
	for _, p := range pubs {
		for _, d := range sc.Devices {
			if recvs[[2]string{p.st.Name, d.Name}] != nil {
				totalSent += p.sent
			}
		}
	}
	// Drain: until everything arrived, or nothing more arrives for 2 s, or sc.Drain.
	drain := sc.Drain
	if drain <= 0 {
		drain = 10 * time.Second
	}
	total := func() int {
		n := 0
		for _, r := range recvs {
			n += r.count()
		}
		return n
	}
	dEnd, last, lastAt := time.Now().Add(drain), total(), time.Now()
	for time.Now().Before(dEnd) && last < totalSent && time.Since(lastAt) < 2*time.Second {
		time.Sleep(100 * time.Millisecond)
		if n := total(); n != last {
			last, lastAt = n, time.Now()
		}
	}
	maxRSS, _ := watch.Stop()
	u1, _ := benchkit.ReadUsage(s.proc.PID())
	m1, err := s.scrape()
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var drops float64
	var reasons string
	var delta benchkit.Metrics
	if m1 != nil {
		delta = benchkit.Delta(m0, m1)
		drops, reasons = dropSummary(delta)
	}
	changes := map[string]int{}
	if sys == Gateway {
		dz, err := getDevicez(s)
		if err != nil {
			return nil, err
		}
		for _, d := range dz.Devices {
			for _, tr := range d.Classifier.History {
				if !tr.At.Before(tStart) && !strings.EqualFold(tr.From, "unknown") {
					changes[d.Name]++
				}
			}
		}
	}

	// One row per (stream or group, device), in stream order.
	type acc struct {
		name          string
		sent, dups, o int
		seen          int
		lat           []float64
		after         []float64 // latencies of samples sent from the step + grace
		bytes, offer  float64
		seqs          []uint32
		err           error
	}
	var order [][2]string
	accs := map[[2]string]*acc{}
	for _, p := range pubs {
		if p.err != nil {
			fmt.Fprintf(o.Log, "%s / %s: publisher %s: put error: %v\n", sc.ID, sys, p.st.Name, p.err)
		}
		name := p.st.Name
		if p.st.Group != "" {
			name = p.st.Group
		}
		for _, d := range sc.Devices {
			r := recvs[[2]string{p.st.Name, d.Name}]
			if r == nil {
				continue
			}
			k := [2]string{name, d.Name}
			a := accs[k]
			if a == nil {
				a = &acc{name: name}
				accs[k] = a
				order = append(order, k)
			}
			r.mu.Lock()
			a.sent += p.sent
			a.seen += len(r.seen)
			a.dups += r.dups
			a.o += r.ooo
			a.lat = append(a.lat, r.lat...)
			a.bytes += float64(len(r.seen) * p.st.Size)
			a.offer += float64(p.sent * p.st.Size)
			{
				from := tStart.Add(afterFrom(sc)).UnixNano()
				for i, at := range r.sentAt {
					if at >= from {
						a.after = append(a.after, r.lat[i])
					}
				}
			}
			a.seqs = append(a.seqs, r.seqs...)
			r.mu.Unlock()
			if a.err == nil {
				a.err = p.err
			}
		}
	}
	var rows []Row
	for _, k := range order {
		a := accs[k]
		row := Row{Scenario: sc.ID, Title: sc.Title, System: sys, Stream: a.name, Device: k[1],
			Sent: a.sent, Delivered: a.seen, Duplicates: a.dups, OutOfOrder: a.o,
			P50: benchkit.Percentile(a.lat, 0.50), P99: benchkit.Percentile(a.lat, 0.99), Max: benchkit.Percentile(a.lat, 1),
			Drops: drops, DropsKnown: m1 != nil, DropReasons: reasons,
			RSSBase: u0.RSS, RSSGrowth: max(maxRSS-u0.RSS, 0), PeakRSS: u1.PeakRSS, CPU: u1.CPU - u0.CPU,
			ClassChanges: -1, Seqs: a.seqs, Metrics: delta}
		row.Lost = row.Sent - row.Delivered
		secs := sc.Duration.Seconds()
		row.Goodput, row.Offered = a.bytes/secs, a.offer/secs
		row.LinkBps = float64(sc.Link) / 8
		row.P99AfterStep = -1
		if len(a.after) > 0 {
			row.P99AfterStep = benchkit.Percentile(a.after, 0.99)
		}
		if sc.StepTo > 0 {
			at := sc.StepAt.Seconds() / secs
			row.LinkBps = (at*float64(sc.Link) + (1-at)*float64(sc.StepTo)) / 8
		}
		if sys == Gateway {
			row.ClassChanges = changes[k[1]]
		}
		if a.err != nil {
			row.Err = "put: " + oneLine(a.err)
		}
		for _, t := range sc.Targets {
			if (t.Stream == "" || t.Stream == row.Stream) && (t.Device == "" || t.Device == row.Device) && (t.System == "" || t.System == sys) {
				row.Target = t.Text
				row.Met = "no"
				if t.Check(row) {
					row.Met = "yes"
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// LearnGrace is when the "p99 from" column starts in a scenario without a rate step: 2 s
// after publishing started, when a learned link budget (issue 30) has settled.
const LearnGrace = 2 * time.Second

// afterFrom is when the samples of the "p99 from" column start, after publishing started.
func afterFrom(sc Scenario) time.Duration {
	if sc.StepTo > 0 {
		return sc.StepAt + sc.StepGrace
	}
	return LearnGrace
}

// covers: sub is key itself or a "prefix/**" that includes it.
func covers(sub, key string) bool {
	if sub == key {
		return true
	}
	if p, ok := strings.CutSuffix(sub, "/**"); ok {
		return strings.HasPrefix(key, p+"/")
	}
	return false
}

// dropSummary sums the drop counter families of a metrics delta and lists the non-zero
// reasons, e.g. "router congestion=3; bridge queue_full=2".
func dropSummary(d benchkit.Metrics) (float64, string) {
	fams := []struct{ name, short string }{
		{"picobridge_router_dropped_total", "router"},
		{"picobridge_transport_dropped_total", "transport"},
		{"picobridge_bridge_samples_dropped_total", "bridge"},
	}
	var total float64
	var parts []string
	for _, f := range fams {
		by := d.By(f.name, "reason")
		keys := make([]string, 0, len(by))
		for k := range by {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			total += by[k]
			parts = append(parts, fmt.Sprintf("%s %s=%.0f", f.short, k, by[k]))
		}
	}
	return total, strings.Join(parts, "; ")
}

// devicez is the part of /devicez the runner reads (a loose subset, so that old and new
// builds both decode).
type devicez struct {
	Devices []struct {
		Name       string `json:"name"`
		Classifier struct {
			State   string `json:"state"` // from readings (UNKNOWN until min_samples)
			Class   string `json:"class"`
			History []struct {
				At   time.Time `json:"at"`
				From string    `json:"from"`
				To   string    `json:"to"`
			} `json:"transitions"`
		} `json:"classifier"`
		Lanes map[string]struct {
			Forwarded uint64            `json:"forwarded"`
			Dropped   map[string]uint64 `json:"dropped"`
		} `json:"lanes"`
	} `json:"devices"`
}

func getDevicez(s *system) (devicez, error) {
	var dz devicez
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(s.metrics + "/devicez?transitions=1")
	if err != nil {
		return dz, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return dz, err
	}
	if err := json.Unmarshal(b, &dz); err != nil {
		return dz, fmt.Errorf("/devicez: %w", err)
	}
	return dz, nil
}

// waitDevices waits until the gateway lists every device of sc, then up to sc.Settle
// (default 2 s) for each to leave UNKNOWN.
func waitDevices(ctx context.Context, s *system, sc Scenario) error {
	settle := sc.Settle
	if settle <= 0 {
		settle = 2 * time.Second
	}
	attachBy := time.Now().Add(20 * time.Second)
	settleBy := time.Time{}
	for {
		dz, err := getDevicez(s)
		if err != nil {
			return err
		}
		found, known := 0, 0
		for _, want := range sc.Devices {
			for _, d := range dz.Devices {
				if d.Name == want.Name {
					found++
					if c := strings.ToLower(d.Classifier.State); c != "" && c != "unknown" {
						known++
					}
				}
			}
		}
		now := time.Now()
		if found == len(sc.Devices) {
			if settleBy.IsZero() {
				settleBy = now.Add(settle)
			}
			if known == len(sc.Devices) || now.After(settleBy) {
				return nil
			}
		} else if now.After(attachBy) {
			return fmt.Errorf("gateway: %d of %d devices attached after 20 s", found, len(sc.Devices))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fmtMS prints a latency in ms ("—" for NaN).
func fmtMS(v float64) string {
	if v != v {
		return "—"
	}
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
