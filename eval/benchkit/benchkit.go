// Package benchkit holds what the benchmark runners (eval/egress, eval/fleet) share: child
// processes whose stdout is kept as lines, /proc readings of a process (CPU time, RSS, peak
// RSS, open file descriptors), a Prometheus text scrape, percentiles and free loopback ports.
//
// Systems under test run as child processes started from a binary path, so that the same
// runner measures an old build, a new build and the stock Rust router beside them, each with
// its own CPU and memory.
package benchkit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one child process. Stdout lines are kept (with the time each was read); stderr
// is kept up to 1 MiB for error messages. Closing stdin asks zbench.py and the load
// generators to exit; Stop escalates to SIGTERM and SIGKILL.
type Proc struct {
	Name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex
	lines   []Line
	next    int
	changed chan struct{}
	eof     bool
	stderr  strings.Builder

	exited  chan struct{}
	waitErr error
}

// Line is one stdout line of a child and when it was read.
type Line struct {
	Text string
	At   time.Time
}

// Start runs argv with the environment extended by env.
func Start(name string, env []string, argv ...string) (*Proc, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("%s: no command", name)
	}
	p := &Proc{Name: name, changed: make(chan struct{}), exited: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = stderrWriter{p}
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
			p.lines = append(p.lines, Line{Text: sc.Text(), At: time.Now()})
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
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

type stderrWriter struct{ p *Proc }

func (w stderrWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.stderr.Len() < 1<<20 {
		w.p.stderr.Write(b)
	}
	return len(b), nil
}

func (p *Proc) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// PID of the process.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Stdin is the write end of the child's stdin.
func (p *Proc) Stdin() io.Writer { return p.stdin }

// Tail is the end of stdout and stderr, for error messages.
func (p *Proc) Tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := strings.TrimSpace(p.stderr.String())
	if len(s) > 800 {
		s = "…" + s[len(s)-800:]
	}
	out := make([]string, 0, 5)
	for i := max(0, len(p.lines)-5); i < len(p.lines); i++ {
		out = append(out, p.lines[i].Text)
	}
	return fmt.Sprintf("%s: stdout tail %q, stderr tail %q", p.Name, strings.Join(out, " | "), s)
}

// ErrExited: the child ended before the awaited line.
var ErrExited = errors.New("process exited")

// WaitLine returns the first line after the previously returned one that match accepts.
func (p *Proc) WaitLine(timeout time.Duration, match func(string) bool) (Line, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		for ; p.next < len(p.lines); p.next++ {
			if match(p.lines[p.next].Text) {
				l := p.lines[p.next]
				p.next++
				p.mu.Unlock()
				return l, nil
			}
		}
		ch, eof := p.changed, p.eof
		p.mu.Unlock()
		if eof {
			return Line{}, fmt.Errorf("%s: %w before the expected line; %s", p.Name, ErrExited, p.Tail())
		}
		select {
		case <-ch:
		case <-deadline.C:
			return Line{}, fmt.Errorf("%s: timeout after %v; %s", p.Name, timeout, p.Tail())
		}
	}
}

// WaitPrefix waits for a line starting with prefix and returns it.
func (p *Proc) WaitPrefix(timeout time.Duration, prefix string) (Line, error) {
	return p.WaitLine(timeout, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// Exited is closed when the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Lines returns a copy of every stdout line read so far.
func (p *Proc) Lines() []Line {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// Wait waits up to timeout for the process to exit on its own; an error when it is still
// running.
func (p *Proc) Wait(timeout time.Duration) error {
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s: still running after %v", p.Name, timeout)
	}
}

// Kill closes stdin and sends SIGKILL at once (for children with no clean way out, such as
// the zenoh-pico examples), then waits for the exit.
func (p *Proc) Kill() {
	_ = p.stdin.Close()
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Stop closes stdin, then sends SIGTERM after grace and SIGKILL after another grace, and
// waits for the exit.
func (p *Proc) Stop(grace time.Duration) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	p.Terminate(grace)
}

// Terminate sends SIGTERM at once (picobridge stops on it), then SIGKILL after grace.
func (p *Proc) Terminate(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Usage is a process's CPU time and memory, read from /proc.
type Usage struct {
	CPU     time.Duration // utime + stime
	RSS     int64         // VmRSS, bytes
	PeakRSS int64         // VmHWM, bytes
	FDs     int           // open file descriptors (-1 if unreadable)
}

// clockTicks is USER_HZ; 100 on every Linux architecture Go supports.
const clockTicks = 100

// ReadUsage reads /proc/PID/stat (utime, stime) and /proc/PID/status (VmRSS, VmHWM).
func ReadUsage(pid int) (Usage, error) {
	var u Usage
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	if u.CPU, err = ParseStatCPU(string(b)); err != nil {
		return u, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	u.RSS, u.PeakRSS = parseStatusKB(string(b), "VmRSS:"), parseStatusKB(string(b), "VmHWM:")
	u.FDs = -1
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		u.FDs = len(ents)
	}
	return u, nil
}

// ParseStatCPU returns utime+stime of a /proc/PID/stat line (the command name may hold
// spaces and parentheses: fields are counted after the last ')').
func ParseStatCPU(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("no ')'")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 { // f[0] is field 3 (state); utime and stime are fields 14 and 15
		return 0, fmt.Errorf("%d fields", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

func parseStatusKB(status, key string) int64 {
	for _, l := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(l, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// RSSWatch samples a process's RSS every period until Stop; Max is the largest sample.
type RSSWatch struct {
	pid  int
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	max  int64
	last int64
}

// WatchRSS starts sampling pid's VmRSS every period.
func WatchRSS(pid int, period time.Duration) *RSSWatch {
	w := &RSSWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	w.sample()
	go func() {
		defer close(w.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				w.sample()
				return
			case <-t.C:
				w.sample()
			}
		}
	}()
	return w
}

func (w *RSSWatch) sample() {
	u, err := ReadUsage(w.pid)
	if err != nil {
		return
	}
	w.mu.Lock()
	w.last = u.RSS
	w.max = max(w.max, u.RSS)
	w.mu.Unlock()
}

// Stop ends the sampling and returns the largest and the last RSS seen, bytes.
func (w *RSSWatch) Stop() (maxRSS, last int64) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max, w.last
}

// Metrics is one scrape of a Prometheus text endpoint: series ("name{labels}" exactly as
// exposed) → value.
type Metrics map[string]float64

// Scrape GETs url and parses the Prometheus text format (comments skipped).
func Scrape(url string) (Metrics, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return ParseMetrics(string(b)), nil
}

// ParseMetrics parses Prometheus text exposition: "series value [timestamp]" per line.
func ParseMetrics(text string) Metrics {
	m := Metrics{}
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' {
			continue
		}
		series, value := l, ""
		if i := strings.LastIndexByte(l, '}'); i >= 0 {
			series, value = l[:i+1], strings.TrimSpace(l[i+1:])
		} else if f := strings.Fields(l); len(f) >= 2 {
			series, value = f[0], f[1]
		}
		if f := strings.Fields(value); len(f) > 0 {
			value = f[0]
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		m[series] = v
	}
	return m
}

// Name of a series: the part before '{'.
func seriesName(s string) string {
	if i := strings.IndexByte(s, '{'); i >= 0 {
		return s[:i]
	}
	return s
}

// Label returns the value of label in series ("" if absent).
func Label(series, label string) string {
	i := strings.IndexByte(series, '{')
	if i < 0 {
		return ""
	}
	rest := series[i+1:]
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq < 0 || eq+1 >= len(rest) || rest[eq+1] != '"' {
			return ""
		}
		name := strings.TrimLeft(rest[:eq], ", ")
		val := rest[eq+2:]
		end := 0
		for end < len(val) && val[end] != '"' {
			if val[end] == '\\' {
				end++
			}
			end++
		}
		if end > len(val) {
			return ""
		}
		if name == label {
			return val[:end]
		}
		if end+1 > len(val) {
			return ""
		}
		rest = val[end+1:]
	}
	return ""
}

// Sum adds every series of the family name whose labels match all of where (label →
// value).
func (m Metrics) Sum(name string, where map[string]string) float64 {
	var s float64
	for k, v := range m {
		if seriesName(k) != name {
			continue
		}
		ok := true
		for l, want := range where {
			if Label(k, l) != want {
				ok = false
				break
			}
		}
		if ok {
			s += v
		}
	}
	return s
}

// By sums the family name per value of label (only non-zero sums).
func (m Metrics) By(name, label string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if seriesName(k) == name && v != 0 {
			out[Label(k, label)] += v
		}
	}
	return out
}

// Delta is after − before per series (series absent before count from 0).
func Delta(before, after Metrics) Metrics {
	d := Metrics{}
	for k, v := range after {
		d[k] = v - before[k]
	}
	return d
}

// Percentile of xs by linear interpolation between closest ranks (numpy's default), NaN
// for no data. xs is sorted in place.
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (xs[hi]-xs[lo])*(pos-float64(lo))
}

// handedOut remembers the ports FreePort returned lately: the kernel may
// hand the same ephemeral port to two listen-and-close calls in a row, and a
// router child given the same port for -l and --metrics fails to bind
// (zbench 2026-12-03: "bind: address already in use", one row lost).
var handedOut struct {
	sync.Mutex
	recent []int
}

// FreePort returns a free TCP port on 127.0.0.1, never one of the last 256
// it returned in this process. Errors: no listener, or 32 tries in a row
// gave a port it had handed out.
func FreePort() (int, error) {
	for range 32 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		handedOut.Lock()
		dup := slices.Contains(handedOut.recent, port)
		if !dup {
			handedOut.recent = append(handedOut.recent, port)
			if len(handedOut.recent) > 256 {
				handedOut.recent = handedOut.recent[1:]
			}
		}
		handedOut.Unlock()
		if !dup {
			return port, nil
		}
	}
	return 0, errors.New("benchkit: every free port tried was handed out lately")
}

// WaitHTTP polls url until it answers 200 or timeout passes; it also fails when exited
// is closed first.
func WaitHTTP(url string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	c := http.Client{Timeout: time.Second}
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET %s: not ready after %v (last: %v)", url, timeout, err)
		}
		select {
		case <-exited:
			return fmt.Errorf("GET %s: %w", url, ErrExited)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// LoadAvg is /proc/loadavg's first three fields.
func LoadAvg() string {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			return strings.Join(f[:3], " ")
		}
	}
	return "?"
}

// RaiseNoFile raises this process's RLIMIT_NOFILE soft limit to want (at most the hard
// limit) and returns the resulting soft limit. Children inherit it.
func RaiseNoFile(want uint64) (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	if r.Cur >= want {
		return r.Cur, nil
	}
	r.Cur = min(want, r.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	return r.Cur, nil
}
