package zbench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// line is one stdout line of a child process and when it was read.
type line struct {
	text string
	at   time.Time
}

// event is a JSON line ({"ev": ...}) printed by zbench.py or the Go router child.
type event struct {
	Ev     string    `json:"ev"`
	Msg    string    `json:"msg"`
	Rate   float64   `json:"rate"`
	RTTus  []float64 `json:"rtt_us"`
	parsed bool
}

// proc is one child process: stdout lines are collected, stderr is kept for error
// messages, stdin is a pipe whose closing asks zbench.py and the router child to exit.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex
	lines   []line
	next    int // first line not yet returned by waitLine
	changed chan struct{}
	eof     bool
	stderr  strings.Builder

	exited chan struct{}
}

func startProc(name string, env []string, argv ...string) (*proc, error) {
	p := &proc{name: name, changed: make(chan struct{}), exited: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &lockedWriter{p: p}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, line{text: sc.Text(), at: time.Now()})
			p.notifyLocked()
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.mu.Lock()
		p.eof = true
		p.notifyLocked()
		p.mu.Unlock()
	}()
	go func() {
		<-readDone
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

type lockedWriter struct{ p *proc }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.stderr.Len() < 1<<20 {
		w.p.stderr.Write(b)
	}
	return len(b), nil
}

func (p *proc) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// pid of the process.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// tail is the end of the process's stderr, for error messages.
func (p *proc) tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := strings.TrimSpace(p.stderr.String())
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	out := make([]string, 0, 5)
	for i := max(0, len(p.lines)-5); i < len(p.lines); i++ {
		out = append(out, p.lines[i].text)
	}
	return fmt.Sprintf("stdout tail %q, stderr tail %q", strings.Join(out, " | "), s)
}

var errExited = errors.New("process exited")

// waitLine returns the first line after the previously returned one that match accepts.
func (p *proc) waitLine(timeout time.Duration, match func(string) bool) (line, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		for ; p.next < len(p.lines); p.next++ {
			if match(p.lines[p.next].text) {
				l := p.lines[p.next]
				p.next++
				p.mu.Unlock()
				return l, nil
			}
		}
		ch, eof := p.changed, p.eof
		p.mu.Unlock()
		if eof {
			return line{}, fmt.Errorf("%s: %w before the expected line; %s", p.name, errExited, p.tail())
		}
		select {
		case <-ch:
		case <-deadline.C:
			return line{}, fmt.Errorf("%s: timeout after %v; %s", p.name, timeout, p.tail())
		}
	}
}

// waitEvent waits for the JSON event ev; an "error" event fails at once.
func (p *proc) waitEvent(ev string, timeout time.Duration) (event, error) {
	var got event
	_, err := p.waitLine(timeout, func(s string) bool {
		var e event
		if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &e) != nil {
			return false
		}
		if e.Ev == ev || e.Ev == "error" {
			got = e
			got.parsed = true
			return true
		}
		return false
	})
	if err != nil {
		return event{}, err
	}
	if got.Ev == "error" {
		return event{}, fmt.Errorf("%s: error: %s; %s", p.name, got.Msg, p.tail())
	}
	return got, nil
}

// allLines returns a copy of every stdout line read so far.
func (p *proc) allLines() []line {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]line(nil), p.lines...)
}

// wait waits for the process to exit on its own.
func (p *proc) wait(timeout time.Duration) error {
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s: still running after %v", p.name, timeout)
	}
}

// stop closes stdin, then sends SIGTERM after grace and SIGKILL after another grace.
func (p *proc) stop(grace time.Duration) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// kill stops the process at once (pico examples have no clean way out).
func (p *proc) kill() {
	_ = p.stdin.Close()
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// usage is a process's CPU time and peak resident set, read from /proc.
type usage struct {
	cpu     time.Duration // user + system
	peakRSS int64         // bytes (VmHWM)
}

// clockTicks is USER_HZ; 100 on every Linux architecture Go supports.
const clockTicks = 100

func readUsage(pid int) (usage, error) {
	var u usage
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return u, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return u, err
	}
	u.cpu = time.Duration(ut+st) * time.Second / clockTicks
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return u, err
			}
			u.peakRSS = kb * 1024
		}
	}
	return u, nil
}
