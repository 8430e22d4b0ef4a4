package responder_test

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/responder"
	"github.com/picobridge/picobridge/internal/interop"
)

// skipMsg is what every test that needs zenoh-pico prints without it.
const skipMsg = "SKIP: set ZENOH_PICO_DIR=<zenoh-pico build dir> to build and run the C probe responder"

// pico returns the zenoh-pico build named by ZENOH_PICO_DIR, or skips.
func pico(t *testing.T) responder.Pico {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIP: -short skips the tests that compile and run C")
	}
	p, err := responder.PicoFromEnv()
	if errors.Is(err, responder.ErrNoPico) {
		t.Skip(skipMsg)
	}
	require.NoError(t, err)
	if _, err := exec.LookPath(responder.CC()); err != nil {
		t.Skipf("SKIP: no C compiler %q: %v", responder.CC(), err)
	}
	return p
}

// proc is a running C program whose stdout and stderr lines are collected.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
	exited  chan struct{}
}

func start(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, cmd: exec.Command(bin, args...), changed: make(chan struct{}), exited: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.cmd.Stderr = p.cmd.Stdout
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- %s output:\n%s", strings.Join(p.cmd.Args, " "), p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitLine waits for an output line containing s.
func (p *proc) waitLine(s string, timeout time.Duration) string {
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
				p.t.Fatalf("%s exited before printing %q:\n%s", p.cmd.Path, s, p.output())
			}
		case <-deadline:
			p.t.Fatalf("%s: no line with %q within %v:\n%s", p.cmd.Path, s, timeout, p.output())
		}
	}
}

// stop sends SIGINT, then SIGKILL after 3 s, and returns the exit code.
func (p *proc) stop() int {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(interop.Scale(3 * time.Second)):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	return p.cmd.ProcessState.ExitCode()
}
