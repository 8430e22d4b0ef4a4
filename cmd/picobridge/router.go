package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

func init() { subcommands = append(subcommands, newRouterCommand) }

// routerOptions are the flags of `picobridge router` (zenohd-style).
type routerOptions struct {
	listen   []string
	connect  []string
	id       string
	lease    time.Duration
	batch    uint16
	maxMsg   int
	logLevel string
	metrics  string
	pprof    string       // --pprof ADDR: net/http/pprof on a listener of its own (pprof.go)
	gc       gcOptions    // --gogc, --memory-limit (gc.go)
	admit    admitOptions // --admit-rate, --admit-burst (admit.go)
	cfg      []string     // --cfg KEY:VALUE: scouting (scout.go), security (security.go), transport weights (routing.go)
	// connectAs: the role -e dials with, "client" (default) or "router"
	// (zenohd's way: link-state with a router, docs/router.md).
	connectAs string
	// configFile is -c/--config: zenohd's JSON5 configuration
	// (routerconfig.go), laid under the flags and --cfg.
	configFile string
	// noMulticast is --no-multicast-scouting (zenohd's flag): multicast
	// scouting off whatever the file or --cfg says.
	noMulticast bool
	// changed reports whether a flag was given (the file does not
	// override it); nil: none was.
	changed func(string) bool
}

func newRouterCommand() *cobra.Command {
	var o routerOptions
	cmd := &cobra.Command{
		Use:   "router",
		Short: "Run a plain Zenoh router for zenoh-pico devices and Zenoh clients",
		Long: `Runs a Zenoh 1.x (protocol 0x09) router. zenoh-pico devices and Zenoh clients
connect to its listen endpoints; with -e it also connects, as a client, to
upstream routers and forwards both ways. SIGINT or SIGTERM stops it gracefully.`,
		Example: `  picobridge router -l tcp/0.0.0.0:7447
  picobridge router -l tcp/0.0.0.0:7447 -l udp/0.0.0.0:7447 -e tcp/10.0.0.1:7447 --id 1234abcd
  picobridge router --cfg scouting/multicast/enabled:true --cfg scouting/multicast/interface:eth0
  picobridge router -e tcp/10.0.0.1:7447 --connect-as router --cfg 'routing/router/linkstate/transport_weights:[{"dst_zid":"1a2b","weight":500}]'
  picobridge router -l tls/0.0.0.0:7447 --cfg transport/link/tls/listen_certificate:cert.pem \
      --cfg transport/link/tls/listen_private_key:key.pem --cfg transport/auth/usrpwd/dictionary_file:users.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.changed = cmd.Flags().Changed
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runRouter(ctx, o, cmd.ErrOrStderr(), nil)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.configFile, "config", "c", "", "zenohd's JSON5 configuration file (mode, id, listen/connect endpoints, scouting, transport, access_control; docs/router.md); flags and --cfg are laid over it")
	f.BoolVar(&o.noMulticast, "no-multicast-scouting", false, "do not answer multicast scouting, whatever the file or --cfg says (zenohd's flag; off unless enabled anyway)")
	f.StringArrayVarP(&o.listen, "listen", "l", []string{"tcp/0.0.0.0:7447"}, "endpoint to listen on (repeatable): tcp/HOST:PORT, udp/HOST:PORT or tls/HOST:PORT (certificate: --cfg transport/link/tls/...)")
	f.StringArrayVarP(&o.connect, "connect", "e", nil, "upstream router endpoint to connect to (repeatable), in the role --connect-as says")
	f.StringVar(&o.connectAs, "connect-as", "client", "role for -e: client (we are the upstream's client) or router (zenohd's way: a router↔router link with link-state)")
	f.StringVarP(&o.id, "id", "i", "", "Zenoh ID in hex as zenohd prints it (1 to 32 hex digits); default random")
	f.DurationVar(&o.lease, "lease", transport.DefaultLease, "lease announced to peers")
	f.Uint16Var(&o.batch, "batch-size", transport.DefaultBatchSize, "largest batch accepted, bytes (2-byte TCP prefix included)")
	f.IntVar(&o.maxMsg, "max-message-size", transport.DefaultMaxMessageSize,
		fmt.Sprintf("largest network message sent or reassembled, bytes (%d to %d; zenohd's transport max message size)", minMaxMessageSize, maxMaxMessageSize))
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&o.metrics, "metrics", "", "serve Prometheus /metrics and the JSON status /routerz on this address (e.g. 127.0.0.1:9464); off when empty")
	addPprofFlag(f, &o.pprof)
	addGCFlags(f, &o.gc)
	addAdmitFlags(f, &o.admit)
	f.StringArrayVar(&o.cfg, "cfg", nil, "set a configuration key, zenohd style KEY:VALUE (repeatable); keys: "+strings.Join(cfgKeyNames(), ", ")+
		" (multicast scouting answers only on the interfaces named, none by default; access_control takes a JSON object, docs/security.md; "+
		transportWeightsKey+` a JSON list of {"dst_zid": "<zid hex>", "weight": 1..65535}, docs/router.md)`)
	return cmd
}

// parseZID parses a ZID written as zenohd prints it: the 128-bit integer in
// hex, most significant digit first (wire.ZID.String).
func parseZID(in string) (wire.ZID, error) {
	bad := func() (wire.ZID, error) {
		return wire.ZID{}, fmt.Errorf("--id %q: want 1 to 32 hex digits (0-9, a-f, optional 0x prefix), not all zero", in)
	}
	s := strings.TrimPrefix(strings.ToLower(in), "0x")
	if s == "" || len(s) > 32 {
		return bad()
	}
	if len(s)%2 == 1 {
		s = "0" + s
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return bad()
	}
	for len(b) > 1 && b[0] == 0 {
		b = b[1:]
	}
	if len(b) == 1 && b[0] == 0 {
		return bad()
	}
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return wire.NewZID(b)
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, cli.Usagef("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// Bounds of the router flags.
const (
	// minRouterLease is the smallest --lease: with less, keep-alives
	// (lease/4) go out every few ms and pico peers, which poll their lease
	// at a coarse tick, expire us. zenohd's default is 10 s; 1 s is the
	// shortest lease in common use.
	minRouterLease = time.Second
	maxRouterLease = transport.MaxLease
	// minMaxMessageSize and maxMaxMessageSize bound --max-message-size:
	// below 1 KiB not even a declaration with a long key fits; 1 GiB is
	// Rust Zenoh's default and the most one session could ever buffer.
	minMaxMessageSize = 1 << 10
	maxMaxMessageSize = 1 << 30
)

// validate checks every flag before anything starts.
func (o *routerOptions) validate() error {
	if err := o.admit.validate(); err != nil {
		return err
	}
	if o.lease < minRouterLease || o.lease > maxRouterLease {
		return fmt.Errorf("--lease %s: want %s to %s", o.lease, minRouterLease, maxRouterLease)
	}
	if o.batch < transport.MinBatchSize {
		return fmt.Errorf("--batch-size %d: want %d to 65535 bytes", o.batch, transport.MinBatchSize)
	}
	if o.maxMsg < minMaxMessageSize || o.maxMsg > maxMaxMessageSize {
		return fmt.Errorf("--max-message-size %d: want %d to %d bytes", o.maxMsg, minMaxMessageSize, maxMaxMessageSize)
	}
	if o.connectAs != "" && o.connectAs != "client" && o.connectAs != "router" {
		return fmt.Errorf("--connect-as %q: want client or router", o.connectAs)
	}
	for _, ep := range o.listen {
		if err := zenohpath.CheckEndpoint(ep); err != nil {
			return fmt.Errorf("--listen: %w %s", err, allowedEndpoints)
		}
	}
	for _, ep := range o.connect {
		if err := zenohpath.CheckEndpoint(ep); err != nil {
			return fmt.Errorf("--connect: %w %s", err, allowedEndpoints)
		}
	}
	if _, err := o.scouting(); err != nil {
		return err
	}
	if _, err := o.transportWeights(); err != nil {
		return err
	}
	_, err := o.security()
	return err
}

// allowedEndpoints ends an endpoint error of --listen and --connect, as
// `picobridge run` ends its zenoh.listen errors.
const allowedEndpoints = "(allowed: tcp/<host>:<port>, udp/<host>:<port>, tls/<host>:<port>)"

// validateAddrs checks --metrics and --id before anything starts.
func (o *routerOptions) validateAddrs() error {
	if o.metrics != "" {
		if err := checkHostPort(o.metrics); err != nil {
			return fmt.Errorf("--metrics %q: %w", o.metrics, err)
		}
	}
	if o.id != "" {
		if _, err := parseZID(o.id); err != nil {
			return err
		}
	}
	return nil
}

// checkHostPort checks a TCP listen address: host:port, port 0 to 65535.
func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want HOST:PORT, e.g. 127.0.0.1:9464")
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q: want 0 to 65535", port)
	}
	return nil
}

// runRouter runs the router until ctx is done. ready, if set, receives the
// router once every listener is up (tests).
func runRouter(ctx context.Context, o routerOptions, logOut interface{ Write([]byte) (int, error) }, ready func(*zenohpath.Router, []string)) error {
	level, err := parseLevel(o.logLevel)
	if err != nil {
		return err
	}
	if err := o.applyConfig(); err != nil {
		return cli.Usage(err)
	}
	if o.maxMsg == 0 {
		o.maxMsg = transport.DefaultMaxMessageSize
	}
	if err := o.validate(); err != nil {
		return cli.Usage(err) // exit status 2
	}
	if err := o.validateAddrs(); err != nil {
		return cli.Usage(err)
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	sec, err := o.security()
	if err != nil {
		return cli.Usage(err)
	}
	weights, _ := o.transportWeights() // validated above
	cfg := zenohpath.RouterConfig{Logger: log, ACL: sec.acl, DialAsRouter: o.connectAs == "router", TransportWeights: weights,
		Transport: transport.Config{Lease: o.lease, BatchSize: o.batch, MaxMessageSize: o.maxMsg, TLS: sec.tls, UsrPwd: sec.usrpwd}}
	o.admit.apply(&cfg.Transport)
	if o.id != "" {
		if cfg.ZID, err = parseZID(o.id); err != nil {
			return err
		}
	}
	stopPprof, err := startRuntime(o.gc, o.pprof, log)
	if err != nil {
		return err
	}
	defer stopPprof()
	reg := prometheus.NewRegistry()
	// go_goroutines and the process_ series (open fds, RSS), as `run` serves them: the
	// churn soak's leak check reads them (docs/fleetbench.md).
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.Metrics, err = zenohpath.NewMetrics(reg); err != nil {
		return err
	}
	if cfg.Transport.Metrics, err = transport.NewMetrics(reg); err != nil {
		return err
	}
	r := zenohpath.NewRouter(cfg)
	defer r.Close()
	short, _ := buildVersion()
	log.Info("picobridge router starting", "zid", r.ZID().String(), "version", short)
	adm, err := r.ServeAdminSpace(zenohpath.AdminConfig{Version: "picobridge " + short})
	if err != nil {
		return err
	}
	defer adm.Close()
	// --metrics is bound first: an address in use fails the start before
	// any Zenoh listener opens (as `picobridge run`, docs/run.md).
	if o.metrics != "" {
		ln, err := net.Listen("tcp", o.metrics)
		if err != nil {
			return fmt.Errorf("--metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc(zenohpath.StatusPath, r.HandleStatus)
		mux.HandleFunc("/healthz", routerHealthz(ctx, r, time.Now())) // as `run` serves it (bridge.PathHealthz)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		log.Info("metrics", "addr", ln.Addr().String())
	}
	var eps []string
	for _, ep := range o.listen {
		ln, err := r.Listen(ctx, ep)
		if err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		eps = append(eps, ln.Endpoint())
	}
	for _, ep := range o.connect {
		if err := r.Connect(ctx, ep, false); err != nil {
			return err
		}
	}
	sc, _ := o.scouting() // validated above
	if _, err := r.StartScouting(sc); err != nil {
		return fmt.Errorf("--cfg: %w", err)
	}
	if ready != nil {
		ready(r, eps)
	}
	<-ctx.Done()
	log.Info("shutting down", "cause", context.Cause(ctx))
	if err := r.Close(); err != nil && !errors.Is(err, zenohpath.ErrClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// routerHealthzResponse is the router's /healthz: "ok" while it runs.
type routerHealthzResponse struct {
	Status string        `json:"status"`
	ZID    string        `json:"zid"`
	Uptime time.Duration `json:"uptime_ns"`
}

// routerHealthz serves /healthz: 200 {"status": "ok", ...} while the
// router runs, 503 {"status": "shutting down"} once ctx is done.
func routerHealthz(ctx context.Context, r *zenohpath.Router, start time.Time) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		resp, code := routerHealthzResponse{Status: "ok", ZID: r.ZID().String(), Uptime: time.Since(start)}, http.StatusOK
		if ctx.Err() != nil {
			resp.Status, code = "shutting down", http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(resp)
	}
}
