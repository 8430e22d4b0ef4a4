// Package picotest is test support for running zenoh-pico example binaries
// (and other C programs) as child processes: it finds the examples folders
// named by ZENOH_PICO_EXAMPLES / ZENOH_PICO_EXAMPLES_2048 (skipping the test,
// with a SKIP line naming them, when unset) and runs a program with its
// output collected line by line, stopped and logged in t.Cleanup.
package picotest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/picobridge/picobridge/internal/interop"
)

// Environment variables naming folders of zenoh-pico example binaries (built
// outside the repository, e.g. <zenoh-pico>/build/examples). The folder name
// tells the build: a path containing "2048" is the CMake-default build
// (Z_BATCH_UNICAST_SIZE=2048, Z_FRAG_MAX_SIZE=4096), anything else the
// GNUmakefile build (65535).
const (
	ExamplesEnv     = "ZENOH_PICO_EXAMPLES"
	Examples2048Env = "ZENOH_PICO_EXAMPLES_2048"
)

// Examples returns the zenoh-pico examples folder from ZENOH_PICO_EXAMPLES,
// or skips the test.
func Examples(t testing.TB) string {
	t.Helper()
	d := os.Getenv(ExamplesEnv)
	if d == "" {
		t.Skip("SKIP: set ZENOH_PICO_EXAMPLES=<zenoh-pico build>/examples to run against real zenoh-pico")
	}
	return d
}

// Build is one zenoh-pico examples folder and the name of its build
// ("batch65535" or "batch2048"). Batch and FragMax are the build's
// Z_BATCH_UNICAST_SIZE and Z_FRAG_MAX_SIZE: from the CMakeCache.txt of the
// build tree above the folder (BATCH_UNICAST_SIZE, FRAG_MAX_SIZE), else the
// defaults its name says (65535 and 300000 for the GNUmakefile build, 2048
// and 4096 for the CMake default).
type Build struct {
	Name, Dir      string
	Batch, FragMax int
}

// buildOf names the build of an examples folder and reads its sizes.
func buildOf(dir string) Build {
	b := Build{Name: "batch65535", Dir: dir, Batch: 65535, FragMax: 300000}
	if strings.Contains(dir, "2048") {
		b = Build{Name: "batch2048", Dir: dir, Batch: 2048, FragMax: 4096}
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Clean(dir)), "CMakeCache.txt"))
	if err != nil {
		return b
	}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			continue
		}
		switch k {
		case "BATCH_UNICAST_SIZE:STRING":
			b.Batch = n
		case "FRAG_MAX_SIZE:STRING":
			b.FragMax = n
		}
	}
	if b.Batch == 2048 {
		b.Name = "batch2048"
	} else if b.Batch == 65535 {
		b.Name = "batch65535"
	}
	return b
}

// Builds returns the examples folders named by ZENOH_PICO_EXAMPLES and
// ZENOH_PICO_EXAMPLES_2048 (each once), or skips the test when neither is
// set. A folder without z_sub fails the test.
func Builds(t testing.TB) []Build {
	t.Helper()
	var out []Build
	seen := map[string]bool{}
	for _, env := range []string{ExamplesEnv, Examples2048Env} {
		dir := os.Getenv(env)
		if dir == "" || seen[dir] {
			continue
		}
		seen[dir] = true
		if _, err := os.Stat(filepath.Join(dir, "z_sub")); err != nil {
			t.Fatalf("%s=%s: no z_sub there: %v", env, dir, err)
		}
		out = append(out, buildOf(dir))
	}
	if len(out) == 0 {
		t.Skipf("SKIP: set %s (and %s) to folders of built zenoh-pico examples (%s: Z_BATCH_UNICAST_SIZE 65535, %s: the CMake default 2048)",
			ExamplesEnv, Examples2048Env, ExamplesEnv, Examples2048Env)
	}
	return out
}

// Proc is a running child process whose stdout and stderr lines are collected.
type Proc struct {
	t       testing.TB
	name    string
	args    []string
	Cmd     *exec.Cmd
	mu      sync.Mutex
	lines   []string
	partial []byte // output after the last newline
	changed chan struct{}
	exited  chan struct{}
}

// StartExample runs <dir>/<example> args..., line-buffered (stdbuf -oL -eL,
// when stdbuf is there); see Start.
func StartExample(t testing.TB, dir, example string, args ...string) *Proc {
	t.Helper()
	bin := filepath.Join(dir, example)
	var cmd *exec.Cmd
	if sb, err := exec.LookPath("stdbuf"); err == nil {
		cmd = exec.Command(sb, append([]string{"-oL", "-eL", bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	return start(t, example, args, cmd)
}

// Start runs bin args... with stdout and stderr collected. In t.Cleanup it
// is stopped (Stop) and, if the test failed, its output is logged.
func Start(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	return start(t, bin, args, exec.Command(bin, args...))
}

func start(t testing.TB, name string, args []string, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{t: t, name: name, args: args, Cmd: cmd, changed: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stdout = p
	cmd.Stderr = p
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait() // returns once all output has been written to p
		p.mu.Lock()
		if len(p.partial) > 0 {
			p.lines = append(p.lines, string(p.partial))
			p.partial = nil
		}
		p.mu.Unlock()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- %s %s output:\n%s", name, strings.Join(args, " "), p.Output())
		}
	})
	return p
}

// Write collects output (cmd.Stdout and cmd.Stderr); lines are unlimited in length.
func (p *Proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	added := false
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		line := string(append(p.partial, b[:i]...))
		p.partial = nil
		p.lines = append(p.lines, strings.TrimSuffix(line, "\r"))
		b = b[i+1:]
		added = true
	}
	p.partial = append(p.partial, b...)
	if added {
		close(p.changed)
		p.changed = make(chan struct{})
	}
	return n, nil
}

// Output is all output so far, lines joined with "\n".
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := strings.Join(p.lines, "\n")
	if len(p.partial) > 0 {
		if s != "" {
			s += "\n"
		}
		s += string(p.partial)
	}
	return s
}

// Done is closed when the process has exited and all its output is collected.
func (p *Proc) Done() <-chan struct{} { return p.exited }

// WaitLine waits (timeout scaled by interop.Scale) for an output line
// containing s and returns it; it fails the test on timeout or when the
// process exits without printing one.
func (p *Proc) WaitLine(s string, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.After(interop.Scale(timeout))
	seen := 0
	for {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if strings.Contains(p.lines[seen], s) {
				l := p.lines[seen]
				p.mu.Unlock()
				return l
			}
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-p.exited:
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if n == seen {
				p.t.Fatalf("%s exited before printing %q:\n%s", p.name, s, p.Output())
			}
		case <-deadline:
			p.t.Fatalf("%s: no line with %q within %v:\n%s", p.name, s, timeout, p.Output())
		}
	}
}

// Wait waits (timeout scaled) for the process to exit by itself and returns
// its exit code; it fails the test on timeout.
func (p *Proc) Wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.Cmd.ProcessState.ExitCode()
	case <-time.After(interop.Scale(timeout)):
		p.t.Fatalf("%s did not exit within %v:\n%s", p.name, timeout, p.Output())
		return -1
	}
}

// Exited waits up to d (not scaled) for the process to exit and reports
// whether it has.
func (p *Proc) Exited(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// Stop sends SIGINT (zenoh-pico examples undeclare and close on it), then
// SIGKILL after 3 s (scaled), and returns the exit code.
func (p *Proc) Stop() int {
	select {
	case <-p.exited:
		return p.Cmd.ProcessState.ExitCode()
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(interop.Scale(3 * time.Second)):
		_ = p.Cmd.Process.Kill()
		<-p.exited
	}
	return p.Cmd.ProcessState.ExitCode()
}
