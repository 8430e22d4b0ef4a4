// Package zbench compares the Go router (zenohpath) with the real Rust Zenoh router
// (eclipse-zenoh in router mode, through Python) in one run: every row runs the same clients
// once through each router, on loopback, and reports Go, Rust and the Go/Rust ratio.
//
// Both routers run as child processes started fresh for every row and measurement, so their
// CPU time and peak RSS can be read from /proc: the Go router is this very executable
// re-executed with [ChildEnv] set (it runs zenohpath.NewRouter + Listen, the code behind
// `picobridge router`, with default settings), the Rust router is testdata/zbench.py in
// router mode. A binary embedding this package must call [RunChildIfRequested] first thing
// in main (and in TestMain). See docs/zbench.md.
package zbench

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
	"github.com/picobridge/picobridge/internal/pprofserve"
	"github.com/picobridge/picobridge/internal/testpki"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

//go:embed testdata/zbench.py
var driverScript []byte

// ChildEnv, when set to "router" in the environment, makes [RunChildIfRequested] run a Go
// router listening on the endpoint in ListenEnv.
const (
	ChildEnv  = "ZBENCH_CHILD"
	ListenEnv = "ZBENCH_LISTEN"
	// PicoEnv names the folder of zenoh-pico's built examples (z_pub_thr, z_sub_thr,
	// z_ping, z_pong).
	PicoEnv = "ZENOH_PICO_EXAMPLES"
	// PythonEnv selects the Python interpreter (default python3), as in internal/interop.
	PythonEnv = "PICOBRIDGE_PYTHON"
	// TLSCertEnv and TLSKeyEnv give the Go router child its TLS listen certificate and
	// key (Options.TLS).
	TLSCertEnv = "ZBENCH_TLS_CERT"
	TLSKeyEnv  = "ZBENCH_TLS_KEY"
	// PprofEnv gives the built-in Go router child a pprof listen address
	// (internal/pprofserve), as --pprof gives `picobridge router` one (Options.ProfileDir).
	PprofEnv = "ZBENCH_PPROF"
)

// RunChildIfRequested runs the Go router child and exits if this process was started as
// one (see the package comment); otherwise it returns at once.
func RunChildIfRequested() {
	if os.Getenv(ChildEnv) != "router" {
		return
	}
	var rc zenohpath.RouterConfig
	if c := os.Getenv(TLSCertEnv); c != "" {
		rc.Transport.TLS = &transport.TLSConfig{ListenCertificate: c, ListenPrivateKey: os.Getenv(TLSKeyEnv)}
	}
	if a := os.Getenv(PprofEnv); a != "" {
		s, err := pprofserve.Start(a)
		if err != nil {
			fmt.Printf("{\"ev\":\"error\",\"msg\":%q}\n", "pprof: "+err.Error())
			os.Exit(1)
		}
		defer s.Close()
	}
	r := zenohpath.NewRouter(rc)
	if _, err := r.Listen(context.Background(), os.Getenv(ListenEnv)); err != nil {
		fmt.Printf("{\"ev\":\"error\",\"msg\":%q}\n", err.Error())
		os.Exit(1)
	}
	fmt.Println(`{"ev":"ready"}`)
	_, _ = io.Copy(io.Discard, os.Stdin) // the runner closes stdin to stop us
	_ = r.Close()
	os.Exit(0)
}

// Options configure [Run].
type Options struct {
	// Duration of each throughput measurement window (default 5 s); latency rows do
	// Duration×400 round trips (50 to 5000).
	Duration time.Duration
	// Warmup before each throughput window (default Duration/5, at most 1 s).
	Warmup time.Duration
	// Sizes of the throughput rows, bytes (default 8, 1024, 65536).
	Sizes []int
	// LatencySizes of the latency rows, bytes (default 64, 1024).
	LatencySizes []int
	// PicoDir is the folder of zenoh-pico's examples; "" skips the pico rows (SKIP line).
	PicoDir string
	// PicoSizes of the pico throughput rows (default 8, 1024).
	PicoSizes []int
	// Python interpreter with eclipse-zenoh 1.x (default $PICOBRIDGE_PYTHON or python3).
	Python string
	// GoRouter is the command that runs the Go router child (default: this executable,
	// with ChildEnv set).
	GoRouter []string
	// Picobridge, if set, is a picobridge binary: the Go router child is then
	// `Picobridge router -l EP --metrics ADDR --log-level error` (ready once /metrics
	// answers) instead of this executable, so one zbench measures an old and a new build.
	Picobridge string
	// Repeat each measurement this many times per router and report the median (default 1).
	Repeat int
	// Log receives progress lines (nil: none).
	Log io.Writer
	// Only, if set, keeps the scenarios whose name contains one of these strings.
	Only []string
	// TLS runs every router and client over tls/ links instead of tcp/: a CA and a
	// certificate for 127.0.0.1 are made at start (internal/testpki), the Go and the
	// Rust router get the same listen certificate and key (the Go router child through
	// TLSCertEnv/TLSKeyEnv, `picobridge router` through --cfg transport/link/tls/...,
	// the Rust router through zbench.py --tls-*), and every client trusts the CA. The
	// pico rows are skipped (zenoh-pico needs a TLS build).
	TLS bool
	// ProfileDir, if set, profiles the Go router of every row: the child gets a pprof
	// listener on loopback (`--pprof` with Picobridge, PprofEnv otherwise) and, from the
	// start of the measurement window, a CPU profile and an allocs delta over Duration
	// and an execution trace of at most 2 s are saved as
	// ProfileDir/<scenario>-<size>b[-runN].{cpu,allocs,trace} (benchkit.StartProfiles).
	// Latency rows open their window when the ping client starts. Rust rows are not
	// profiled.
	ProfileDir string
}

func (o *Options) defaults() {
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = min(o.Duration/5, time.Second)
	}
	if len(o.Sizes) == 0 {
		o.Sizes = []int{8, 1024, 65536}
	}
	if len(o.LatencySizes) == 0 {
		o.LatencySizes = []int{64, 1024}
	}
	if len(o.PicoSizes) == 0 {
		o.PicoSizes = []int{8, 1024}
	}
	if o.Python == "" {
		o.Python = os.Getenv(PythonEnv)
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Kind tells which router a measurement used.
type Kind int

const (
	GoRouter Kind = iota
	RustRouter
)

func (k Kind) String() string {
	if k == GoRouter {
		return "go"
	}
	return "rust"
}

// Row is one line of the table.
type Row struct {
	Scenario string
	Size     int    // payload bytes
	Metric   string // e.g. "msgs/s", "p50 µs"
	Go, Rust float64
	// Err, when set, replaces the numbers (a side failed, or "SKIP: ..." when skipped).
	Err string
}

// Ratio is Go/Rust (0 if Rust is 0).
func (r Row) Ratio() float64 {
	if r.Rust == 0 {
		return 0
	}
	return r.Go / r.Rust
}

// Report is the result of [Run].
type Report struct {
	Start    time.Time
	Elapsed  time.Duration
	Options  Options
	Env      string // one line: cores, load, versions
	Rows     []Row
	Commands []string
}

// bench is one run.
type bench struct {
	o    Options
	dir  string // temp dir with zbench.py
	rep  *Report
	rows int // measured rows so far (alternates the router order)
	run  int // 0-based repeat of the row being measured (profile file names)
	// with Options.TLS: the CA and the routers' certificate (tls.go)
	ca   *testpki.CA
	cert testpki.Leaf
}

// measurement is what one side of a row produced: metric -> value, in row order.
type measurement struct {
	metrics []string
	values  map[string]float64
}

func (m *measurement) set(metric string, v float64) {
	if m.values == nil {
		m.values = map[string]float64{}
	}
	if _, ok := m.values[metric]; !ok {
		m.metrics = append(m.metrics, metric)
	}
	m.values[metric] = v
}

// Run runs every scenario and returns the table. Errors of single rows are recorded in
// the rows; Run itself fails only when nothing can run (no Python, no temp dir).
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	dir, err := os.MkdirTemp("", "zbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "zbench.py"), driverScript, 0o644); err != nil {
		return nil, err
	}
	ver, err := exec.CommandContext(ctx, o.Python, "-c",
		"import zenoh, importlib.metadata as m; print(m.version('eclipse-zenoh'))").Output()
	if err != nil {
		return nil, fmt.Errorf("zbench: %s cannot import zenoh (pip install eclipse-zenoh==1.10.2): %w", o.Python, err)
	}
	if len(o.GoRouter) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.GoRouter = []string{exe}
	}
	b := &bench{o: o, dir: dir, rep: &Report{Start: time.Now(), Options: o}}
	b.rep.Env = envLine(strings.TrimSpace(string(ver)))
	if o.TLS {
		if err := b.makeCerts(); err != nil {
			return nil, err
		}
		b.rep.Env += ", links tls/ (ECDSA P-256 certificate, no mTLS)"
	}
	for _, sc := range b.scenarios() {
		if err := ctx.Err(); err != nil {
			return b.rep, err
		}
		if !o.keep(sc.name) {
			continue
		}
		if sc.skip != "" {
			b.rep.Rows = append(b.rep.Rows, Row{Scenario: sc.name, Err: sc.skip})
			fmt.Fprintf(o.Log, "%s: %s\n", sc.name, sc.skip)
			continue
		}
		for _, size := range sc.sizes {
			b.runRow(ctx, sc, size)
		}
	}
	b.rep.Elapsed = time.Since(b.rep.Start)
	return b.rep, nil
}

func (o *Options) keep(name string) bool {
	if len(o.Only) == 0 {
		return true
	}
	for _, s := range o.Only {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// scenario is one kind of row, run for each size.
type scenario struct {
	name  string
	sizes []int
	skip  string
	// run measures one side; the router is up at ep.
	run func(ctx context.Context, ep string, size int, w *window) (measurement, error)
	// routerUsage adds the router's CPU and peak RSS rows.
	routerUsage bool
}

func (b *bench) scenarios() []scenario {
	o := b.o
	pico := scenario{name: "pico z_pub_thr → z_sub_thr", sizes: o.PicoSizes, run: b.picoThroughput, routerUsage: true}
	picoLat := scenario{name: "pico z_ping ↔ z_pong", sizes: o.LatencySizes, run: b.picoLatency}
	if o.PicoDir == "" {
		pico.skip = "SKIP: " + PicoEnv + " not set"
		picoLat.skip = pico.skip
	} else if o.TLS {
		pico.skip = "SKIP: --tls (zenoh-pico needs a TLS build, Z_FEATURE_LINK_TLS)"
		picoLat.skip = pico.skip
	}
	return []scenario{
		{name: "throughput, Python pub → Python sub", sizes: o.Sizes, run: b.pyThroughput, routerUsage: true},
		{name: "throughput, Go pub → Go sub", sizes: o.Sizes, run: b.goThroughput, routerUsage: true},
		{name: "latency, Python ping ↔ pong", sizes: o.LatencySizes, run: b.pyLatency},
		{name: "latency, Go ping ↔ pong", sizes: o.LatencySizes, run: b.goLatency},
		pico,
		picoLat,
	}
}

// runRow measures sc at size through the Go router, then through the Rust router, and
// appends the rows.
func (b *bench) runRow(ctx context.Context, sc scenario, size int) {
	var runs [2][]measurement
	var errs [2]error
	for rep := range b.o.Repeat {
		// Alternate which router goes first, so drifting machine load favours neither.
		order := []Kind{GoRouter, RustRouter}
		if b.rows%2 == 1 {
			order = []Kind{RustRouter, GoRouter}
		}
		b.rows++
		b.run = rep
		for _, k := range order {
			if errs[k] != nil {
				continue
			}
			t0 := time.Now()
			m, err := b.measure(ctx, sc, k, size)
			if err != nil {
				errs[k] = err
				fmt.Fprintf(b.o.Log, "%s, %d B, %s router: ERROR %v\n", sc.name, size, k, err)
				continue
			}
			runs[k] = append(runs[k], m)
			fmt.Fprintf(b.o.Log, "%s, %d B, %s router, run %d: %s (%.1fs)\n", sc.name, size, k, rep+1, m.summary(), time.Since(t0).Seconds())
		}
	}
	if errs[0] != nil || errs[1] != nil || len(runs[0]) == 0 || len(runs[1]) == 0 {
		msg := []string{}
		for k, err := range errs {
			if err != nil {
				msg = append(msg, fmt.Sprintf("%s: %v", Kind(k), oneLine(err)))
			}
		}
		b.rep.Rows = append(b.rep.Rows, Row{Scenario: sc.name, Size: size, Err: "ERROR " + strings.Join(msg, "; ")})
		return
	}
	for _, m := range runs[0][0].metrics {
		b.rep.Rows = append(b.rep.Rows, Row{Scenario: sc.name, Size: size, Metric: m,
			Go: median(runs[GoRouter], m), Rust: median(runs[RustRouter], m)})
	}
}

// median of metric over the runs.
func median(runs []measurement, metric string) float64 {
	xs := make([]float64, 0, len(runs))
	for _, r := range runs {
		if v, ok := r.values[metric]; ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func (m measurement) summary() string {
	parts := make([]string, 0, len(m.metrics))
	for _, k := range m.metrics {
		parts = append(parts, fmt.Sprintf("%s=%s", k, formatValue(k, m.values[k])))
	}
	return strings.Join(parts, " ")
}

func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// measure starts a fresh router of kind k, runs one side of the row and stops it.
func (b *bench) measure(ctx context.Context, sc scenario, k Kind, size int) (measurement, error) {
	ep, err := b.freeEndpoint()
	if err != nil {
		return measurement{}, err
	}
	var r *benchkit.Proc
	var prof *profileTarget
	if k == GoRouter && b.o.ProfileDir != "" {
		if prof, err = b.profileTarget(sc.name, size); err != nil {
			return measurement{}, err
		}
	}
	if k == GoRouter && b.o.Picobridge != "" {
		hport, err := freeEndpoint()
		if err != nil {
			return measurement{}, err
		}
		h := strings.TrimPrefix(hport, "tcp/")
		args := append([]string{b.o.Picobridge, "router", "-l", ep, "--metrics", h, "--log-level", "error"}, b.routerTLSFlags()...)
		if prof != nil {
			args = append(args, "--pprof", prof.addr)
		}
		if r, err = benchkit.Start("picobridge router", nil, args...); err != nil {
			return measurement{}, err
		}
		defer r.Stop(3 * time.Second)
		if err := benchkit.WaitHTTP("http://"+h+"/metrics", 30*time.Second, r.Exited()); err != nil {
			return measurement{}, fmt.Errorf("%w; %s", err, r.Tail())
		}
		return b.measureOn(ctx, sc, r, ep, size, prof)
	}
	if k == GoRouter {
		argv := b.o.GoRouter
		env := append([]string{ChildEnv + "=router", ListenEnv + "=" + ep}, b.childTLSEnv()...)
		if prof != nil {
			env = append(env, PprofEnv+"="+prof.addr)
		}
		r, err = benchkit.Start("go router", env, argv...)
	} else {
		r, err = benchkit.Start("rust router", nil, b.python("router", "--listen", ep)...)
	}
	if err != nil {
		return measurement{}, err
	}
	defer r.Stop(3 * time.Second)
	if _, err := waitEvent(r, "ready", 30*time.Second); err != nil {
		return measurement{}, err
	}
	return b.measureOn(ctx, sc, r, ep, size, prof)
}

// measureOn runs one side of sc on the router r listening at ep; prof, if set, is
// where to profile it (Options.ProfileDir).
func (b *bench) measureOn(ctx context.Context, sc scenario, r *benchkit.Proc, ep string, size int, prof *profileTarget) (measurement, error) {
	w := &window{pid: r.PID(), prof: prof, span: b.o.Duration}
	m, err := sc.run(ctx, ep, size, w)
	if perr := w.profiling.Wait(); err == nil && perr != nil {
		err = perr // the router runs until its profiles are written
	}
	if err != nil {
		return m, err
	}
	if sc.routerUsage {
		if w.err != nil {
			return m, w.err
		}
		if !w.ended {
			return m, fmt.Errorf("%s: measurement window not marked", sc.name)
		}
		cpu := (w.after.CPU - w.before.CPU).Seconds()
		wall := w.t1.Sub(w.t0).Seconds()
		m.set("router CPU %", 100*cpu/wall)
		if rate := m.values["msgs/s"]; rate > 0 {
			m.set("router CPU µs/msg", 1e6*cpu/(rate*wall))
		}
		m.set("router peak RSS MiB", float64(w.after.PeakRSS)/(1<<20))
	}
	return m, nil
}

// window reads the router's CPU time and peak RSS when the measurement window of a
// throughput row begins and ends.
type window struct {
	pid           int
	before, after benchkit.Usage
	t0, t1        time.Time
	ended         bool
	err           error
	// prof, if set, is profiled for span from begin (Options.ProfileDir)
	prof      *profileTarget
	span      time.Duration
	profiling *benchkit.Profiling
}

func (w *window) begin() {
	if w.prof != nil && w.profiling == nil {
		w.profiling = benchkit.StartProfiles("http://"+w.prof.addr, w.prof.dir, w.prof.slug, w.span)
	}
	w.t0 = time.Now()
	u, err := benchkit.ReadUsage(w.pid)
	w.before, w.err = u, err
}

func (w *window) end() {
	w.t1 = time.Now()
	u, err := benchkit.ReadUsage(w.pid)
	w.after, w.ended = u, true
	if w.err == nil {
		w.err = err
	}
}

func (b *bench) python(args ...string) []string {
	return append(append([]string{b.o.Python, "-u", filepath.Join(b.dir, "zbench.py")}, args...), b.pyTLSFlags()...)
}

// profileTarget is where one Go-router measurement is profiled: the child's pprof
// address and the files' folder and name.
type profileTarget struct{ addr, dir, slug string }

func (b *bench) profileTarget(scenario string, size int) (*profileTarget, error) {
	ep, err := freeEndpoint()
	if err != nil {
		return nil, err
	}
	slug := benchkit.Slug(scenario, fmt.Sprintf("%dB", size))
	if b.o.Repeat > 1 {
		slug += fmt.Sprintf("-run%d", b.run+1)
	}
	return &profileTarget{addr: strings.TrimPrefix(ep, "tcp/"), dir: b.o.ProfileDir, slug: slug}, nil
}

// freeEndpoint picks a free loopback TCP port.
func freeEndpoint() (string, error) {
	port, err := benchkit.FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("tcp/127.0.0.1:%d", port), nil
}

func envLine(zenohVersion string) string {
	return fmt.Sprintf("%d cores, load average %s at start, eclipse-zenoh %s", numCPU(), benchkit.LoadAvg(), zenohVersion)
}

// WriteDriver writes the embedded zbench.py (the Rust Zenoh side: router, pub, sub, ping,
// pong roles; see its docstring) into dir and returns its path. Other harnesses
// (eval/egress, eval/fleet) start the stock Rust router with it the same way zbench does:
// `python3 -u zbench.py router --listen tcp/127.0.0.1:PORT`.
func WriteDriver(dir string) (string, error) {
	p := filepath.Join(dir, "zbench.py")
	return p, os.WriteFile(p, driverScript, 0o644)
}
