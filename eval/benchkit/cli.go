package benchkit

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// System is a system under test of the benchmark runners (eval/egress, eval/fleet).
type System string

// The systems the runners start as child processes.
const (
	// GoRouter is `picobridge router` (the plain Go router, no lanes).
	GoRouter System = "picobridge router"
	// Gateway is `picobridge run` with a generated configuration (devices, lanes).
	Gateway System = "picobridge run"
	// RustRouter is eclipse-zenoh 1.x in router mode (Python process hosting the Rust
	// runtime), as zbench and internal/interop start it.
	RustRouter System = "rust router"
)

// ParseSystems reads a --systems flag: comma-separated router, run (or gateway), rust;
// empty items are skipped. The error names the flag and the allowed values.
func ParseSystems(list string) ([]System, error) {
	var out []System
	for _, s := range SplitList(list) {
		switch s {
		case "router":
			out = append(out, GoRouter)
		case "run", "gateway":
			out = append(out, Gateway)
		case "rust":
			out = append(out, RustRouter)
		default:
			return nil, fmt.Errorf("--systems: unknown system %q (allowed: router, run, rust)", s)
		}
	}
	return out, nil
}

// SplitList splits a comma-separated flag value, trimming spaces and dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Repeated is a flag.Value that collects every occurrence of a repeatable flag
// (--router-arg, --run-arg).
type Repeated []string

func (r *Repeated) String() string     { return strings.Join(*r, " ") }
func (r *Repeated) Set(s string) error { *r = append(*r, s); return nil }

// SignalContext is cancelled on SIGINT or SIGTERM, so that a runner stops its children and
// still prints what it measured.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Emit prints a runner's Markdown report on stdout and, when out is not empty, also writes
// it to the file out.
func Emit(md, out string) error {
	fmt.Print(md)
	if out == "" {
		return nil
	}
	return os.WriteFile(out, []byte(md), 0o644)
}

// Fail prints "cmd: err" on stderr and exits with code (2 for usage errors, 1 for a failed
// run, as every picobridge command).
func Fail(cmd string, code int, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", cmd, err)
	os.Exit(code)
}
