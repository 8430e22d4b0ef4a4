package interop

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

//go:embed testdata/zpeer.py
var zpeerScript []byte

// LogEnv names the environment variable that turns on Rust logging in every zpeer process.
const LogEnv = "PICOBRIDGE_ZPEER_LOG"

// stopGrace is how long (nominal) a stopped process gets to close its session before SIGKILL.
const stopGrace = 5 * time.Second

// liveProcs counts zpeer processes started and not yet reaped; see [LiveProcs].
var liveProcs atomic.Int64

// LiveProcs returns how many zpeer processes started by this test binary have not exited
// and been reaped yet. A TestMain can check that it is 0 after m.Run.
func LiveProcs() int { return int(liveProcs.Load()) }

// Event is one JSON line printed by zpeer.py. The common fields are decoded; the whole
// line stays in Raw for [Event.Decode].
type Event struct {
	Ev         string  `json:"ev"`
	Key        string  `json:"key,omitempty"`
	Kind       string  `json:"kind,omitempty"`    // "put" or "delete" (sample, liveliness, reply)
	Seq        *uint64 `json:"seq,omitempty"`     // sequence number carried by zpeer payloads
	PayloadLen int     `json:"payload_len"`       // sample, reply, query
	Payload    *string `json:"payload,omitempty"` // short UTF-8 payloads without a seq
	Attachment *string `json:"attachment,omitempty"`
	Count      int     `json:"count"` // sent, done
	OK         bool    `json:"ok"`    // reply: true for a sample, false for an error reply
	ZID        string  `json:"zid,omitempty"`
	Msg        string  `json:"msg,omitempty"` // error

	// Raw is the JSON line as printed. At is when the line was read, since Start.
	Raw json.RawMessage `json:"-"`
	At  time.Duration   `json:"-"`
}

// Decode unmarshals the whole event line into v (for fields Event does not name).
func (e Event) Decode(v any) error { return json.Unmarshal(e.Raw, v) }

func (e Event) String() string { return string(e.Raw) }

// SubSummary is the "done" event of the sub action.
type SubSummary struct {
	Count      int     `json:"count"`
	Expected   int     `json:"expected"`
	Complete   bool    `json:"complete"`
	Puts       int     `json:"puts"`
	Deletes    int     `json:"deletes"`
	WithSeq    int     `json:"with_seq"`
	Unique     int     `json:"unique"`
	Dups       int     `json:"dups"`
	OutOfOrder int     `json:"out_of_order"`
	InOrder    bool    `json:"in_order"`
	FirstSeq   *uint64 `json:"first_seq"`
	LastSeq    *uint64 `json:"last_seq"`
	Bytes      int     `json:"bytes"`
	SpanS      float64 `json:"span_s"` // first to last sample, seconds
	RateHz     float64 `json:"rate_hz"`
	// FirstAnomaly is {"after":N,"got":M} for the first sample whose seq was not last+1.
	FirstAnomaly map[string]uint64 `json:"first_anomaly"`
}

// Proc is one running zpeer.py process.
type Proc struct {
	t     testing.TB
	name  string
	args  []string
	cmd   *exec.Cmd
	start time.Time

	stdinMu sync.Mutex
	stdin   io.WriteCloser // nil once closed

	stderr SyncBuffer

	mu      sync.Mutex
	lines   []string // every stdout line
	events  []Event
	taken   []bool        // taken[i]: events[i] was returned by a wait
	scan    int           // events before it are all taken
	changed chan struct{} // closed and replaced whenever events or eof change
	eof     bool          // stdout closed

	exited  chan struct{} // closed once the process has been reaped
	waitErr error         // valid after exited
}

// Start runs zpeer.py with args (an action and its flags, see docs/interop.md), e.g.
//
//	interop.Start(t, "router", "--listen", ep)
//	interop.Start(t, "sub", "demo/**", "--connect", ep, "--count", "100", "--quiet")
//
// and returns at once; wait for its "ready" event before relying on it ([StartReady] does
// both). The process gets --stdin, so it also exits if this test binary dies. It is stopped
// in t.Cleanup (closing stdin, then SIGKILL after a grace period), and its stdout and stderr
// are logged there when the test has failed.
func Start(t testing.TB, args ...string) *Proc {
	t.Helper()
	python := FindPython(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "zpeer.py")
	if err := os.WriteFile(script, zpeerScript, 0o644); err != nil {
		t.Fatalf("interop: write zpeer.py: %v", err)
	}
	full := append([]string{"-u", script}, args...)
	full = append(full, "--stdin")
	if lvl := os.Getenv(LogEnv); lvl != "" {
		full = append(full, "--log", lvl)
	}
	p := &Proc{
		t:       t,
		name:    procName(args),
		args:    args,
		changed: make(chan struct{}),
		exited:  make(chan struct{}),
	}
	p.cmd = exec.Command(python, full...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	p.cmd.Stderr = &p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("interop: %v", err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatalf("interop: %v", err)
	}
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("interop: start %s: %v", p.name, err)
	}
	liveProcs.Add(1)
	readDone := make(chan struct{})
	go p.readStdout(stdout, readDone)
	go func() {
		<-readDone // Wait must not run before reads from the pipe have finished
		p.waitErr = p.cmd.Wait()
		liveProcs.Add(-1)
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s", p.Output())
		}
	})
	return p
}

// StartReady is [Start] followed by waiting (nominally 20 s) for the "ready" event.
func StartReady(t testing.TB, args ...string) *Proc {
	t.Helper()
	p := Start(t, args...)
	p.WaitEvent("ready", 20*time.Second)
	return p
}

func procName(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "--") {
			switch a {
			case "--mode", "--connect", "--listen", "--linger", "--log", "--cfg":
				i++ // skip the flag's value
			}
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			return a + " " + args[i+1]
		}
		return a
	}
	return "zpeer"
}

func (p *Proc) readStdout(r io.Reader, done chan<- struct{}) {
	defer close(done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		var ev Event
		isEvent := strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &ev) == nil && ev.Ev != ""
		p.mu.Lock()
		p.lines = append(p.lines, line)
		if isEvent {
			ev.Raw = json.RawMessage(line)
			ev.At = time.Since(p.start)
			p.events = append(p.events, ev)
			p.taken = append(p.taken, false)
			p.notifyLocked()
		}
		p.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r) // a line over 4 MiB: drain so the process never blocks
	p.mu.Lock()
	p.eof = true
	p.notifyLocked()
	p.mu.Unlock()
}

func (p *Proc) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Name is a short label: the action and its first argument ("sub demo/**").
func (p *Proc) Name() string { return p.name }

// Events returns a copy of every event received so far, in order.
func (p *Proc) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// Count returns how many events named ev were received so far.
func (p *Proc) Count(ev string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.events {
		if e.Ev == ev {
			n++
		}
	}
	return n
}

// WaitEvent returns the first event named ev that no earlier wait returned, failing the test
// if none arrives within the nominal timeout (scaled by [Timescale]), if the process exits
// first, or if an "error" event comes. Events of other kinds are left for later waits (a
// liveliness subscriber with history can report a token before its "ready"). Call it from
// the test goroutine.
func (p *Proc) WaitEvent(ev string, timeout time.Duration) Event {
	p.t.Helper()
	return p.WaitFor(fmt.Sprintf("event %q", ev), timeout, func(e Event) bool { return e.Ev == ev })
}

// WaitFor is [Proc.WaitEvent] with a predicate; what describes it in the failure message.
func (p *Proc) WaitFor(what string, timeout time.Duration, match func(Event) bool) Event {
	p.t.Helper()
	e, err := p.Next(timeout, match)
	if err != nil {
		p.t.Fatalf("interop: %s: waiting for %s: %v\n%s", p.name, what, err, p.Output())
	}
	return e
}

// ErrExited is returned by [Proc.Next] when stdout ended before a matching event.
var ErrExited = errors.New("process exited")

// Next is the non-failing form of [Proc.WaitFor]: it returns the first matching event no
// earlier wait returned, or an error (timeout, [ErrExited], or an "error" event that match
// did not accept). Safe to call from any goroutine.
func (p *Proc) Next(timeout time.Duration, match func(Event) bool) (Event, error) {
	timer := time.NewTimer(Scale(timeout))
	defer timer.Stop()
	for {
		p.mu.Lock()
		for p.scan < len(p.events) && p.taken[p.scan] {
			p.scan++
		}
		for i := p.scan; i < len(p.events); i++ {
			e := p.events[i]
			if p.taken[i] {
				continue
			}
			if match(e) {
				p.taken[i] = true
				p.mu.Unlock()
				return e, nil
			}
			if e.Ev == "error" {
				p.mu.Unlock()
				return Event{}, fmt.Errorf("error event: %s", e.Msg)
			}
		}
		changed, eof := p.changed, p.eof
		p.mu.Unlock()
		if eof {
			select { // stdout ends when the process exits; give the reaper a moment
			case <-p.exited:
			case <-timer.C:
			}
			return Event{}, fmt.Errorf("%w (%s)", ErrExited, p.exitStatus())
		}
		select {
		case <-changed:
		case <-timer.C:
			return Event{}, fmt.Errorf("timed out after %v", Scale(timeout))
		}
	}
}

// Send writes one command line to the process's stdin: "undeclare" drops the action's
// entity (token, subscriber, queryable, publisher) and answers with an "undeclared" event;
// "exit" closes the session and exits.
func (p *Proc) Send(cmd string) {
	p.t.Helper()
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		p.t.Fatalf("interop: %s: Send(%q) after Stop", p.name, cmd)
	}
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		p.t.Fatalf("interop: %s: Send(%q): %v\n%s", p.name, cmd, err, p.Output())
	}
}

func (p *Proc) closeStdin() {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin != nil {
		_ = p.stdin.Close()
		p.stdin = nil
	}
}

// Wait waits (nominal timeout, scaled) for the process to exit by itself and returns its
// exit code; it fails the test on timeout.
func (p *Proc) Wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(Scale(timeout)):
		p.t.Fatalf("interop: %s did not exit within %v\n%s", p.name, Scale(timeout), p.Output())
		return -1
	}
}

// Exited reports whether the process has exited and been reaped.
func (p *Proc) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Stop ends the process gracefully: it closes stdin, which makes zpeer close its Zenoh
// session (undeclaring its entities, sending CLOSE) and exit; after a grace period it is
// killed. It returns once the process is reaped. Safe to call more than once.
func (p *Proc) Stop() {
	p.closeStdin()
	select {
	case <-p.exited:
		return
	case <-time.After(Scale(stopGrace)):
	}
	p.Kill()
}

// Freeze sends SIGSTOP: the process keeps its sockets open but reads and
// sends nothing, as a hung router does, so peers find out only when their
// lease expires. The process is killed at cleanup (SIGKILL ends a stopped
// process too).
func (p *Proc) Freeze() {
	if !p.Exited() {
		_ = p.cmd.Process.Signal(syscall.SIGSTOP)
	}
	p.t.Cleanup(p.Kill)
}

// Kill sends SIGKILL (the Zenoh session ends without CLOSE: the router sees the TCP link
// drop) and returns once the process is reaped.
func (p *Proc) Kill() {
	p.closeStdin()
	if !p.Exited() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.exited
}

func (p *Proc) exitStatus() string {
	select {
	case <-p.exited:
	default:
		return "running"
	}
	if p.waitErr != nil {
		return p.waitErr.Error()
	}
	return "exit status 0"
}

// Output describes the process for a failure message: its command line, exit status, the
// last 80 stdout lines and the last 16 KiB of stderr.
func (p *Proc) Output() string {
	p.mu.Lock()
	lines := p.lines
	if len(lines) > 80 {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-80)}, lines[len(lines)-80:]...)
	}
	stdout := strings.Join(lines, "\n")
	p.mu.Unlock()
	stderr := p.stderr.String()
	if len(stderr) > 16<<10 {
		stderr = "...\n" + stderr[len(stderr)-16<<10:]
	}
	return fmt.Sprintf("--- zpeer %s (%s) [%s]\n--- stdout:\n%s\n--- stderr:\n%s\n--- end %s",
		p.name, strings.Join(p.args, " "), p.exitStatus(), stdout, stderr, p.name)
}
