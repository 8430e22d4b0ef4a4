package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/internal/pprofserve"
)

// pprofFlagUsage is the --pprof help of `router` and `run` (docs/perf.md).
const pprofFlagUsage = "serve Go's net/http/pprof (CPU, allocs, trace, ...) on this address, on a listener of its own; off when empty. " +
	"It binds exactly where told and has no authentication: give a loopback address, e.g. 127.0.0.1:6060 (docs/perf.md)"

func addPprofFlag(f *pflag.FlagSet, addr *string) { f.StringVar(addr, "pprof", "", pprofFlagUsage) }

// startPprof starts the --pprof listener when addr is set and logs one line
// with its address; the returned stop closes it (a no-op when off).
// Errors: a malformed address (usage, exit 2) or the listen error.
func startPprof(addr string, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	if err := checkHostPort(addr); err != nil {
		return nil, cli.Usage(fmt.Errorf("--pprof %q: %w", addr, err))
	}
	s, err := pprofserve.Start(addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	log.Info("pprof", "addr", s.Addr(), "endpoints", "/debug/pprof/")
	return func() { _ = s.Close() }, nil
}

// startRuntime is what `router` and `run` set up before their work: the GC
// settings (applyGC: flag > $GOGC/$GOMEMLIMIT > default) and the pprof
// listener (startPprof; "" none). stop ends the listener. Errors: a bad GC
// value, a pprof address that does not listen.
func startRuntime(gc gcOptions, pprofAddr string, log *slog.Logger) (stop func(), err error) {
	if err := applyGC(gc, os.Getenv, log); err != nil {
		return nil, err
	}
	return startPprof(pprofAddr, log)
}
