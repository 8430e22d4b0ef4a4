// Package pprofserve serves the Go runtime profiles (net/http/pprof) on a listener of
// their own, apart from /metrics, so that profiling is opt-in and never exposed on the
// metrics address. nats-server's prof_port is the model: one flag, one listener, off by
// default, bound where it is told (use a loopback address: the endpoints are unauthenticated
// and /debug/pprof/profile costs CPU while it runs).
//
// Endpoints (Go's net/http/pprof, docs/perf.md): /debug/pprof/ (index),
// /debug/pprof/profile?seconds=N (CPU), /debug/pprof/trace?seconds=N (execution trace),
// /debug/pprof/{allocs,heap,goroutine,mutex,block,threadcreate}[?seconds=N for a delta].
package pprofserve

import (
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Server is a running pprof listener.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Start listens on addr (host:port; port 0 picks one) and serves the pprof handlers
// there until Close. The handlers are mounted on a mux of their own: importing this
// package adds nothing to http.DefaultServeMux users rely on (net/http/pprof's init
// does register there, but picobridge serves no DefaultServeMux).
// Errors: addr empty, or the listen error (address in use, bad host).
func Start(addr string) (*Server, error) {
	if addr == "" {
		return nil, errors.New("pprof: empty address")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: Handler(), ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Handler is the pprof mux: /debug/pprof/ and its named profiles, cmdline, profile,
// symbol and trace.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // named profiles: allocs, heap, goroutine, ...
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// Addr is the address the listener is bound to (host:port, the port resolved).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the listener and every open request (a running CPU profile ends).
func (s *Server) Close() error { return s.srv.Close() }
