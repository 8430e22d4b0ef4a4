// Package server assembles the picobridge gateway (`picobridge run`): the
// Zenoh router (zenohpath) that zenoh-pico devices and Zenoh clients connect
// to, the DDS side (ddspath: discovery, raw-CDR readers and writers), the
// policy core (bridge: per-device express/batched lanes, probe classifier,
// supervisor) and the HTTP endpoints /metrics, /healthz, /devicez, /routez.
//
// Data paths:
//
//   - DDS → Zenoh: every discovered DDS publication on a ROS topic that the
//     route table allows gets a raw-CDR reader; each sample is published on
//     the route's key to the faces that subscribed to it: plain Zenoh
//     sessions (Rust/Python/Go clients, upstream routers) through the
//     router as a plain router would, devices through their lanes
//     (bridge.Gateway.Publish).
//   - Zenoh → DDS: every discovered DDS subscription gets a raw-CDR writer and
//     a subscriber on the route's key; what devices or clients publish there
//     is written to DDS unchanged.
//   - Zenoh ↔ Zenoh: the router routes between faces (device to device,
//     device to upstream) as any router does.
//
// A face is a device when its zid is listed in devices.list or when its
// probe responder announces a name (a subscription to
// @picobridge/probe/<name>/ping); the gateway then probes it at
// classifier.probe_interval and serves it through its two lanes. Other
// sessions are routed plainly.
package server

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// PathRoutez serves the bridged routes as JSON.
const PathRoutez = "/routez"

// DiagnosticsKey is where the gateway publishes its diagnostics (JSON) when
// the supervisor enters EMERGENCY.
const DiagnosticsKey = "@picobridge/diagnostics"

// Options configure a Server.
type Options struct {
	// Config is the validated gateway configuration (bridge.DefaultConfig,
	// bridge.LoadConfig, then flags). Required.
	Config *bridge.Config
	// DDS is the Cyclone network configuration (interface, multicast,
	// peers); DomainID is taken from Config.DDS.Domain.
	DDS ddspath.Config
	// DisableDDS runs the Zenoh side only.
	DisableDDS bool
	// AttachAllClients makes every client session accepted on a listener a
	// device from the start (devices.default profile, named zid-<hex>,
	// until its zid or its responder's name identifies it): what the
	// gateway serves to it then always goes through its lanes. Default:
	// only sessions identified by zid (devices.list) or by a probe
	// responder are devices; other sessions are routed plainly.
	AttachAllClients bool
	// Logger; nil: discard.
	Logger *slog.Logger
	// Version and Revision label picobridge_build_info.
	Version, Revision string
	// Transport overrides the Zenoh transport settings (lease, batch size).
	Transport transport.Config
}

// Server is a running gateway.
type Server struct {
	cfg  *bridge.Config
	opts Options
	log  *slog.Logger

	reg       *prometheus.Registry
	router    *zenohpath.Router
	gw        *bridge.Gateway
	data      *zenohpath.Session // DDS↔Zenoh samples (publishes remote-only, subscribes for DDS writers)
	probes    *zenohpath.Session // pong subscriber
	devs      *devices
	dds       *ddsBridge
	http      *http.Server
	httpLn    net.Listener
	eps       []string
	stats     *serverMetrics
	svcStats  *svcMetrics
	graph     *graph // rmw_zenoh liveliness tokens (graph.go); nil: plain key style
	admin     *zenohpath.AdminSpace
	histStats *historyMetrics

	closeOnce sync.Once
	wg        sync.WaitGroup
	cancel    context.CancelFunc
}

// Start builds and starts every part of the gateway. It returns once the
// listeners, the HTTP endpoint and DDS discovery are up; Close stops it.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	if opts.Config == nil {
		return nil, errors.New("server: Options.Config is required")
	}
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, opts: opts, log: log, reg: prometheus.NewRegistry()}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	if cfg.Metrics.Listen != "" {
		// Bound first: an address in use fails the start before DDS or a
		// listener starts (and before either logs anything).
		if s.httpLn, err = net.Listen("tcp", cfg.Metrics.Listen); err != nil {
			return nil, fmt.Errorf("metrics.listen %s: %w", cfg.Metrics.Listen, err)
		}
	}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.stats = newServerMetrics(s.reg)
	s.svcStats = newSvcMetrics(s.reg)
	s.histStats = newHistoryMetrics(s.reg)

	rc := zenohpath.RouterConfig{Logger: log.With("part", "router"), Transport: opts.Transport}
	if rc.Transport.MaxMessageSize == 0 { // transport.max_message_size (Options.Transport wins)
		rc.Transport.MaxMessageSize = opts.Config.Transport.MaxMessageSize
	}
	// TLS, usrpwd and access control (docs/security.md; Options.Transport wins).
	sec, err := cfg.Security()
	if err != nil {
		return nil, err
	}
	if rc.Transport.TLS == nil {
		rc.Transport.TLS = sec.TLS
	}
	if rc.Transport.UsrPwd == nil {
		rc.Transport.UsrPwd = sec.UsrPwd
	}
	rc.ACL = sec.ACL
	switch cfg.Zenoh.Mode {
	case bridge.ModePeer:
		rc.WhatAmI, rc.DialAs = wire.WhatAmIPeer, wire.WhatAmIPeer
	default:
		rc.WhatAmI, rc.DialAs = wire.WhatAmIRouter, wire.WhatAmIClient
		// zenoh.connect_as router: zenoh.connect dials router↔router
		// links (mesh faces with link-state, zenohpath/mesh.go).
		rc.DialAsRouter = cfg.Zenoh.ConnectAs == bridge.ConnectAsRouter
		if rc.TransportWeights, err = cfg.Zenoh.Routing.TransportWeightMap(); err != nil {
			return nil, err
		}
	}
	if cfg.Zenoh.ID != "" {
		if rc.ZID, err = ParseZID(cfg.Zenoh.ID); err != nil {
			return nil, err
		}
	}
	if rc.Metrics, err = zenohpath.NewMetrics(s.reg); err != nil {
		return nil, err
	}
	if rc.Transport.Metrics, err = transport.NewMetrics(s.reg); err != nil {
		return nil, err
	}
	// The router's own log without the gateway's in-process faces (routerlog.go).
	routerLog := newRouterLogHandler(log.Handler())
	rc.Logger = slog.New(routerLog).With("part", "router")
	s.router = zenohpath.NewRouter(rc)
	routerLog.setSelf(s.router.ZID().String())

	cat, err := firmware.Catalog()
	if err != nil {
		return nil, fmt.Errorf("server: device catalog: %w", err)
	}
	s.gw, err = bridge.New(cfg, bridge.Options{
		Catalog: cat, Registerer: s.reg, Logger: log.With("part", "bridge"),
		Version: opts.Version, Revision: opts.Revision,
		KeyIncludes:  keyexpr.Includes,
		OnModeChange: s.onModeChange,
	})
	if err != nil {
		return nil, err
	}
	s.gw.Run()

	if s.data, err = zenohpath.Open(ctx, zenohpath.Config{Router: s.router}); err != nil {
		return nil, err
	}
	if s.probes, err = zenohpath.Open(ctx, zenohpath.Config{Router: s.router}); err != nil {
		return nil, err
	}
	if _, err = s.probes.DeclareSubscriber(probe.PongSubscription, func(smp zenohpath.Sample) {
		if err := s.gw.HandlePong(smp.KeyExpr(), smp.Payload()); err != nil {
			log.Debug("pong refused", "key", smp.KeyExpr(), "err", err)
		}
	}); err != nil {
		return nil, err
	}
	if _, err = s.probes.DeclareSubscriber(probe.KnobsSubscription, func(smp zenohpath.Sample) {
		if err := s.gw.HandleKnobs(smp.KeyExpr(), smp.Payload()); err != nil {
			log.Warn("knob announcement refused", "key", smp.KeyExpr(), "err", err)
		}
	}); err != nil {
		return nil, err
	}
	s.devs = newDevices(s)
	if s.admin, err = s.serveAdmin(); err != nil { // @/<zid>/router and @/<zid>/picobridge (admin.go)
		return nil, err
	}

	var shown []string // as configured, with the port a ":0" got
	if cfg.Zenoh.Mode == bridge.ModeClient {
		log.Info("client mode: not listening; devices reach the gateway through its upstream router")
	} else {
		for _, ep := range cfg.Zenoh.Listen {
			ln, err := s.router.ListenObserved(ctx, ep, s.devs)
			if err != nil {
				return nil, err
			}
			s.eps = append(s.eps, ln.Endpoint())
			shown = append(shown, shownEndpoint(ep, ln.Endpoint()))
		}
		if _, err = s.router.StartScouting(cfg.Zenoh.Scouting); err != nil { // zenoh.scouting (off unless set)
			return nil, err
		}
	}
	for _, ep := range cfg.Zenoh.Connect {
		if err := s.router.Connect(ctx, ep, false); err != nil {
			return nil, err
		}
	}

	s.graph = newGraph(s)
	if !opts.DisableDDS {
		dc := opts.DDS
		dc.DomainID = uint32(cfg.DDS.Domain)
		s.dds, err = startDDS(runCtx, s, dc)
		if errors.Is(err, ddspath.ErrUnavailable) {
			log.Warn("DDS is not available in this build (rebuild with -tags cyclonedds): running the Zenoh side only")
			s.dds, err = nil, nil
		}
		if err != nil {
			return nil, err
		}
	}

	if s.httpLn != nil {
		s.serveHTTP()
	}
	log.Info("picobridge running", "zid", s.router.ZID().String(), "mode", string(cfg.Zenoh.Mode),
		"listen", strings.Join(shown, ","), "connect", strings.Join(cfg.Zenoh.Connect, ","), "connect_as", connectAsShown(cfg.Zenoh.ConnectAs),
		"dds_domain", cfg.DDS.Domain, "key_style", string(cfg.Routes.KeyStyle), "http", s.HTTPAddr())
	return s, nil
}

// connectAsShown is zenoh.connect_as for the start log ("" = client).
func connectAsShown(c bridge.ConnectAs) string {
	if c == "" {
		return string(bridge.ConnectAsClient)
	}
	return string(c)
}

// Close stops the gateway: HTTP, DDS, sessions, lanes, router; it waits for
// every goroutine it started.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.http != nil {
			_ = s.http.Close()
		} else if s.httpLn != nil {
			_ = s.httpLn.Close() // bound, never served: Start failed
		}
		if s.cancel != nil {
			s.cancel()
		}
		if s.dds != nil {
			s.dds.close()
		}
		s.wg.Wait()
		if s.data != nil {
			_ = s.data.Close()
		}
		if s.probes != nil {
			_ = s.probes.Close()
		}
		if s.admin != nil {
			_ = s.admin.Close()
		}
		if s.router != nil {
			_ = s.router.Close()
		}
		if s.gw != nil {
			_ = s.gw.Close()
		}
	})
	return nil
}

// Router is the Zenoh router.
func (s *Server) Router() *zenohpath.Router { return s.router }

// Gateway is the policy core.
func (s *Server) Gateway() *bridge.Gateway { return s.gw }

// Endpoints are the Zenoh endpoints listened on (ports resolved).
func (s *Server) Endpoints() []string { return append([]string(nil), s.eps...) }

// HTTPAddr is the address /metrics, /healthz, /devicez and /routez are
// served on, or "".
func (s *Server) HTTPAddr() string {
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// Registry holds every collector of the gateway.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Handler serves /metrics, /healthz, /devicez and /routez.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(bridge.PathMetrics, promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc(bridge.PathHealthz, s.gw.HandleHealthz)
	mux.HandleFunc(bridge.PathDevicez, s.gw.HandleDevicez)
	mux.HandleFunc(bridge.PathKnobz, s.gw.HandleKnobz)
	mux.HandleFunc(bridge.PathAdvicez, s.gw.HandleAdvicez)
	mux.HandleFunc(PathRoutez, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Routez())
	})
	return mux
}

// serveHTTP serves Handler on s.httpLn, bound at the start of Start.
func (s *Server) serveHTTP() {
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.http.Serve(s.httpLn)
	}()
}

// Routez lists the bridged routes with their counters.
func (s *Server) Routez() RoutezResponse {
	r := RoutezResponse{Routes: []RouteStatus{}}
	if s.dds != nil {
		r.DDS = true
		r.Domain = s.cfg.DDS.Domain
		r.Routes = s.dds.status()
		r.Services = s.dds.svc.status()
	}
	r.Faces = s.router.Faces()
	return r
}

// RoutezResponse is the answer of /routez.
type RoutezResponse struct {
	DDS    bool          `json:"dds"`
	Domain int           `json:"domain"`
	Routes []RouteStatus `json:"routes"`
	// Services are the bridged ROS 2 services (and action parts), services.go.
	Services []ServiceStatus      `json:"services,omitempty"`
	Faces    []zenohpath.FaceInfo `json:"faces"`
}

// RouteStatus is one bridged route.
type RouteStatus struct {
	bridge.Route
	Direction string `json:"direction"` // "dds_to_zenoh" or "zenoh_to_dds"
	QoS       string `json:"qos"`
	Endpoints int    `json:"dds_endpoints"` // remote writers (dds_to_zenoh) or readers (zenoh_to_dds)
	Samples   uint64 `json:"samples"`
	Errors    uint64 `json:"errors"`
	Dropped   uint64 `json:"dropped,omitempty"` // DDS-input drops (dds_to_zenoh): lost, rejected, sequence gaps, reader queue full
}

func (s *Server) onModeChange(c bridge.ModeChange) {
	if c.To != bridge.Emergency {
		return
	}
	b, err := json.Marshal(s.gw.Diagnostics())
	if err != nil {
		return
	}
	if _, err := s.data.PublishRemote(DiagnosticsKey, b, &zenohpath.PutOptions{Priority: zenohpath.PriorityRealTime}, nil); err != nil {
		s.log.Warn("diagnostics not published", "err", err)
	}
}

// ParseZID parses a Zenoh id written as zenohd prints it: the 128-bit
// number in hex, most significant digit first.
func ParseZID(s string) (wire.ZID, error) {
	s = strings.TrimPrefix(strings.ToLower(s), "0x")
	if s == "" || len(s) > 32 {
		return wire.ZID{}, fmt.Errorf("zid %q: want 1 to 32 hex digits", s)
	}
	if len(s)%2 == 1 {
		s = "0" + s
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return wire.ZID{}, fmt.Errorf("zid %q: %w", s, err)
	}
	for len(b) > 1 && b[0] == 0 {
		b = b[1:]
	}
	if len(b) == 1 && b[0] == 0 {
		return wire.ZID{}, errors.New("zid must not be zero")
	}
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return wire.NewZID(b)
}

// serverMetrics are the assembly's own collectors.
type serverMetrics struct {
	samples *prometheus.CounterVec
	errors  *prometheus.CounterVec
	routes  *prometheus.GaugeVec
	dropped *prometheus.CounterVec
	devices prometheus.Gauge
	// graphTokens counts rmw_zenoh liveliness tokens seen (graphin.go).
	graphTokens *prometheus.CounterVec
}

func newServerMetrics(reg prometheus.Registerer) *serverMetrics {
	m := &serverMetrics{
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picobridge", Subsystem: "dds", Name: "samples_total",
			Help: "Samples bridged between DDS and Zenoh, by direction (dds_to_zenoh, zenoh_to_dds).",
		}, []string{"direction"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picobridge", Subsystem: "dds", Name: "sample_errors_total",
			Help: "Samples that could not be bridged, by direction.",
		}, []string{"direction"}),
		routes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "picobridge", Subsystem: "dds", Name: "routes",
			Help: "Bridged DDS topics, by direction.",
		}, []string{"direction"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picobridge", Subsystem: "dds", Name: "samples_dropped_total",
			Help: "Samples lost at a route's DDS input before they were bridged, by direction, ROS topic and reason (dds_sample_lost, dds_sample_rejected, dds_seq_gap, queue_full, max_frequency).",
		}, []string{"direction", "topic", "reason"}),
		devices: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "picobridge", Subsystem: "router", Name: "device_faces",
			Help: "Router faces identified as devices (served through the bridge lanes).",
		}),
		graphTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "picobridge", Subsystem: "graph", Name: "tokens_total",
			Help: "rmw_zenoh liveliness token events seen by the gateway, by result (bridged: DDS endpoints made; removed: token gone; own, node: not acted on; malformed, bad_type: refused).",
		}, []string{"result"}),
	}
	for _, d := range []string{dirToZenoh, dirToDDS} {
		m.samples.WithLabelValues(d)
		m.errors.WithLabelValues(d)
		m.routes.WithLabelValues(d)
	}
	for _, r := range []string{tokenBridged, tokenRemoved, tokenOwn, tokenNode, tokenBad, tokenType} {
		m.graphTokens.WithLabelValues(r)
	}
	reg.MustRegister(m.samples, m.errors, m.routes, m.dropped, m.devices, m.graphTokens)
	return m
}

const (
	dirToZenoh = "dds_to_zenoh"
	dirToDDS   = "zenoh_to_dds"
)
