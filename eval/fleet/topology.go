package fleet

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
)

// FaultOptions configure the fault runs (Storm, Churn): an upstream `picobridge router`,
// the gateway under test connected to it (`picobridge run --no-dds` or `picobridge
// router`), the critical stream published to the upstream, the devices on the gateway.
type FaultOptions struct {
	Picobridge string // binary
	// Gateway is the system under test: Gateway (`run --no-dds --devices-all-clients
	// --critical /fleet/fan`, the default) or GoRouter (`router`).
	Gateway     System
	Sessions    int
	RateHz      float64 // critical stream (default 30)
	Size        int     // its payload, bytes (default 64)
	Batch       int     // batch the sessions announce (default 2048)
	Sources     int     // default 4
	Dials       int     // default 32
	GatewayArgs []string
	LoadgenCPUs string
	RouterCPUs  string // the gateway's CPUs
	Loadgen     []string
	Jitter      time.Duration // PicoReconnect.Jitter (0: zenoh-pico as it is)
	Seed        uint64
	Log         io.Writer
}

func (o *FaultOptions) defaults() error {
	if o.Picobridge == "" {
		return errors.New("no picobridge binary (--picobridge)")
	}
	if o.Gateway == "" {
		o.Gateway = Gateway
	}
	if o.Gateway != Gateway && o.Gateway != GoRouter {
		return fmt.Errorf("fault runs: gateway %q: want run or router", o.Gateway)
	}
	if o.Sessions <= 0 {
		o.Sessions = 100
	}
	if o.RateHz <= 0 {
		o.RateHz = 30
	}
	if o.Size <= 0 {
		o.Size = 64
	}
	o.Size = max(o.Size, fanHeader)
	if o.Batch <= 0 {
		o.Batch = 2048
	}
	if o.Sources <= 0 {
		o.Sources = 4
	}
	if o.Dials <= 0 {
		o.Dials = 32
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if len(o.Loadgen) == 0 {
		base := Options{}
		if err := base.defaults(); err != nil {
			return err
		}
		o.Loadgen = base.Loadgen
	}
	return nil
}

// node is one picobridge child at fixed ports, restartable.
type node struct {
	name    string
	argv    []string
	addr    string // Zenoh host:port
	http    string // metrics host:port
	ready   string // URL polled after start
	p       *benchkit.Proc
	started time.Time
}

func newNode(name string, bin string, cpus string, args func(ep, http string) []string, readyPath string) (*node, error) {
	zp, err := benchkit.FreePort()
	if err != nil {
		return nil, err
	}
	hp, err := benchkit.FreePort()
	if err != nil {
		return nil, err
	}
	n := &node{name: name, addr: "127.0.0.1:" + strconv.Itoa(zp), http: "127.0.0.1:" + strconv.Itoa(hp)}
	n.ready = "http://" + n.http + readyPath
	if n.argv, err = pinned(cpus, append([]string{bin}, args("tcp/"+n.addr, n.http)...)); err != nil {
		return nil, err
	}
	return n, n.start()
}

func (n *node) start() error {
	p, err := benchkit.Start(n.name, nil, n.argv...)
	if err != nil {
		return err
	}
	n.p, n.started = p, time.Now()
	if err := benchkit.WaitHTTP(n.ready, 30*time.Second, p.Exited()); err != nil {
		p.Terminate(3 * time.Second)
		return fmt.Errorf("%s: %w; %s", n.name, err, p.Tail())
	}
	return nil
}

// kill sends SIGKILL (a crash: no CLOSE to anyone) and waits for the exit.
func (n *node) kill() { n.p.Kill() }

func (n *node) stop() {
	if n != nil && n.p != nil {
		n.p.Terminate(10 * time.Second)
	}
}

func (n *node) metrics() (benchkit.Metrics, error) {
	return benchkit.Scrape("http://" + n.http + "/metrics")
}

// gatewayZID is the gateway's Zenoh id in the fault runs: its in-process sessions (the
// bridge, the admin space) are faces with this id, not devices.
const gatewayZID = "fa29"

// topology is the upstream router and the gateway of a fault run.
type topology struct {
	up, gw *node
}

func startTopology(o FaultOptions) (*topology, error) {
	up, err := newNode("upstream", o.Picobridge, "", func(ep, h string) []string {
		return []string{"router", "-l", ep, "--metrics", h, "--log-level", "error"}
	}, "/metrics")
	if err != nil {
		return nil, err
	}
	t := &topology{up: up}
	t.gw, err = startGateway(o, "gateway", gatewayZID, "tcp/"+up.addr)
	if err != nil {
		up.stop()
		return nil, err
	}
	return t, nil
}

// startGateway starts the system under test with zid, connected to upEP.
func startGateway(o FaultOptions, name, zid, upEP string) (*node, error) {
	if o.Gateway == GoRouter {
		return newNode(name, o.Picobridge, o.RouterCPUs, func(ep, h string) []string {
			return append([]string{"router", "-l", ep, "-e", upEP, "--metrics", h, "--log-level", "error", "-i", zid}, o.GatewayArgs...)
		}, "/metrics")
	}
	return newNode(name, o.Picobridge, o.RouterCPUs, func(ep, h string) []string {
		return append([]string{"run", "--no-dds", "-l", ep, "-e", upEP, "--metrics", h, "--log-level", "error", "-i", zid,
			"--devices-all-clients", "--critical", "/" + fanKey}, o.GatewayArgs...)
	}, "/healthz")
}

func (t *topology) stop() {
	t.gw.stop()
	t.up.stop()
}

// startLoadgen starts the device sessions' process towards addr (not connected yet).
func startLoadgen(o FaultOptions, addr string, reconnect bool, maxSeq uint32) (loadgenProc, error) {
	rc := ""
	if reconnect {
		rc = "pico"
	}
	env := []string{ChildEnv + "=loadgen", addrEnv + "=" + addr, nEnv + "=" + strconv.Itoa(o.Sessions),
		sourcesEnv + "=" + strconv.Itoa(o.Sources), keyEnv + "=" + fanKey, batchEnv + "=" + strconv.Itoa(o.Batch), leaseEnv + "=10s",
		dialsEnv + "=" + strconv.Itoa(o.Dials), connectEnv + "=180s", reconnectEnv + "=" + rc, tokenEnv + "=1",
		maxSeqEnv + "=" + strconv.FormatUint(uint64(maxSeq), 10), seedEnv + "=" + strconv.FormatUint(o.Seed, 10),
		jitterEnv + "=" + o.Jitter.String()}
	argv, err := pinned(o.LoadgenCPUs, o.Loadgen)
	if err != nil {
		return loadgenProc{}, err
	}
	p, err := benchkit.Start("loadgen", env, argv...)
	return loadgenProc{p}, err
}

// waitAllData polls the load generator until every one of want sessions received a
// sample with sequence number ≥ from (counters reset first), or budget passes; it
// returns the time that took and whether all did.
func waitAllData(lg loadgenProc, from uint32, want int, budget time.Duration) (time.Duration, int, error) {
	t0 := time.Now()
	if _, err := lg.cmd("reset "+strconv.FormatUint(uint64(from), 10), "reset", 10*time.Second); err != nil {
		return 0, 0, err
	}
	for {
		r, err := lg.cmd("report", "report", 10*time.Second)
		if err != nil {
			return 0, 0, err
		}
		if r.SessionsWithData >= want {
			return time.Since(t0), r.SessionsWithData, nil
		}
		if time.Since(t0) > budget {
			return time.Since(t0), r.SessionsWithData, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}
