// Package fastddspeer builds and drives fastddspeer, a small Fast DDS 2.9
// program (src/peer.cpp, embedded) that publishes or subscribes raw CDR samples
// of any type name. picobridge uses it as the cross-vendor peer in tests, in
// replay checks and in cmd/ddsbench. See docs/dds.md for its flags.
package fastddspeer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Source is the C++ source of the peer.
//
//go:embed src/peer.cpp
var Source []byte

// RawTypeHeader is src/rawtype.hpp, the opaque-bytes Fast DDS type the peer
// includes; other programs (eval/fastddspub) compile against it through Compile.
//
//go:embed src/rawtype.hpp
var RawTypeHeader []byte

// EnvBinary names an environment variable that may point to a prebuilt peer;
// Build then returns it without compiling.
const EnvBinary = "FASTDDSPEER"

// ErrMissing is returned by Check and Build when g++ or the Fast DDS
// development files (Debian: libfastrtps-dev) are not installed.
var ErrMissing = errors.New("fastddspeer: g++ or Fast DDS headers missing (apt-get install g++ libfastrtps-dev)")

const probeHeader = "/usr/include/fastdds/dds/domain/DomainParticipantFactory.hpp"

// Check reports whether the peer can be built here.
func Check() error {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("fastddspeer: %s=%s: %w", EnvBinary, p, err)
		}
		return nil
	}
	if _, err := exec.LookPath("g++"); err != nil {
		return ErrMissing
	}
	if _, err := os.Stat(probeHeader); err != nil {
		return ErrMissing
	}
	return nil
}

// Build compiles the peer into dir (once per source version: a binary named
// after the source hash is reused) and returns its path; $FASTDDSPEER wins.
func Build(dir string) (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		return p, Check()
	}
	if err := Check(); err != nil {
		return "", err
	}
	return Compile(dir, "fastddspeer", Source)
}

// Compile builds one C++ Fast DDS program from source (which may include
// "rawtype.hpp") into dir, once per version of source and header, and returns
// the binary's path. Errors: g++'s output when it fails.
func Compile(dir, name string, source []byte) (string, error) {
	h := sha256.New()
	h.Write(source)
	h.Write(RawTypeHeader)
	sum := hex.EncodeToString(h.Sum(nil)[:6])
	bin := filepath.Join(dir, name+"-"+sum)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	srcDir := bin + ".src"
	if err := os.MkdirAll(srcDir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(srcDir, name+".cpp")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(srcDir, "rawtype.hpp"), RawTypeHeader, 0o644); err != nil {
		return "", err
	}
	tmp := bin + ".tmp"
	cmd := exec.Command("g++", "-std=c++17", "-O2", src, "-o", tmp, "-lfastrtps", "-lfastcdr", "-lpthread")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: g++: %v\n%s", name, err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// Peer is a running fastddspeer process. Its stdout lines are collected by
// one goroutine that ends when the process closes stdout.
type Peer struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   bytes.Buffer
	mu       sync.Mutex
	lines    []string
	notify   chan struct{} // closed and replaced on every new line
	eof      bool
	readDone chan struct{}
	waitOnce sync.Once
	waitErr  error
}

// Start runs the peer binary with args.
func Start(bin string, args ...string) (*Peer, error) {
	p := &Peer{cmd: exec.Command(bin, args...), notify: make(chan struct{}), readDone: make(chan struct{})}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go p.readLoop(out)
	return p, nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *Peer) readLoop(r io.Reader) {
	defer close(p.readDone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20) // --hex lines of large samples
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		close(p.notify)
		p.notify = make(chan struct{})
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.eof = true
	close(p.notify)
	p.mu.Unlock()
}

// WaitLine waits until a stdout line starting with prefix appears and
// returns the first such line.
func (p *Peer) WaitLine(prefix string, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if strings.HasPrefix(l, prefix) {
				p.mu.Unlock()
				return l, nil
			}
		}
		ch, eof := p.notify, p.eof
		p.mu.Unlock()
		if eof {
			return "", fmt.Errorf("fastddspeer exited before %q\n%s", prefix, p.Output())
		}
		select {
		case <-ch:
		case <-deadline:
			return "", fmt.Errorf("fastddspeer: no %q after %v\n%s", prefix, timeout, p.Output())
		}
	}
}

// Go releases a publisher started with --go-on-stdin.
func (p *Peer) Go() error {
	_, err := io.WriteString(p.stdin, "go\n")
	return err
}

// Wait waits for the process to exit (killing it after timeout).
func (p *Peer) Wait(timeout time.Duration) error {
	t := time.AfterFunc(timeout, func() { _ = p.cmd.Process.Kill() })
	defer t.Stop()
	p.waitOnce.Do(func() {
		<-p.readDone
		p.waitErr = p.cmd.Wait()
	})
	if p.waitErr != nil {
		return fmt.Errorf("fastddspeer: %w\n%s", p.waitErr, p.Output())
	}
	return nil
}

// Kill stops the process and waits for it; safe to call after Wait.
func (p *Peer) Kill() {
	_ = p.cmd.Process.Kill()
	_ = p.Wait(time.Second)
}

// Lines returns the stdout lines so far.
func (p *Peer) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Output returns stdout and stderr so far, for failure messages.
func (p *Peer) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "stdout:\n" + strings.Join(p.lines, "\n") + "\nstderr:\n" + p.stderr.String()
}

// Sample is one "sample" line of a subscriber.
type Sample struct {
	Index  int
	Size   int
	SrcNs  int64  // source timestamp, ns since epoch
	RecvNs int64  // receive time (CLOCK_REALTIME), ns since epoch
	Bytes  []byte // payload when run with --hex
}

// Summary is a subscriber's "summary" line.
type Summary struct {
	Count      int
	Bytes      int64
	FirstSrcNs int64
	LastRecvNs int64
	P50us      float64
	P99us      float64
	MaxUs      float64
}

func fields(line string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

// ParseSample parses "sample <i> size=<n> src_ns=<ns> recv_ns=<ns> [hex=<…>]".
func ParseSample(line string) (Sample, error) {
	var s Sample
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "sample" {
		return s, fmt.Errorf("fastddspeer: not a sample line: %q", line)
	}
	var err error
	if s.Index, err = strconv.Atoi(f[1]); err != nil {
		return s, err
	}
	m := fields(line)
	if s.Size, err = strconv.Atoi(m["size"]); err != nil {
		return s, err
	}
	if s.SrcNs, err = strconv.ParseInt(m["src_ns"], 10, 64); err != nil {
		return s, err
	}
	if s.RecvNs, err = strconv.ParseInt(m["recv_ns"], 10, 64); err != nil {
		return s, err
	}
	if h, ok := m["hex"]; ok {
		if s.Bytes, err = hex.DecodeString(h); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Samples returns every parsed "sample" line so far.
func (p *Peer) Samples() ([]Sample, error) {
	var out []Sample
	for _, l := range p.Lines() {
		if strings.HasPrefix(l, "sample ") {
			s, err := ParseSample(l)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// ParseSummary parses a subscriber's "summary count=… …" line.
func ParseSummary(line string) (Summary, error) {
	var s Summary
	m := fields(line)
	if !strings.HasPrefix(line, "summary ") || m["count"] == "" {
		return s, fmt.Errorf("fastddspeer: not a subscriber summary: %q", line)
	}
	var errs []error
	num := func(k string) int64 {
		v, err := strconv.ParseInt(m[k], 10, 64)
		errs = append(errs, err)
		return v
	}
	flt := func(k string) float64 {
		v, err := strconv.ParseFloat(m[k], 64)
		errs = append(errs, err)
		return v
	}
	s.Count = int(num("count"))
	s.Bytes = num("bytes")
	s.FirstSrcNs = num("first_src_ns")
	s.LastRecvNs = num("last_recv_ns")
	s.P50us, s.P99us, s.MaxUs = flt("p50_us"), flt("p99_us"), flt("max_us")
	return s, errors.Join(errs...)
}
