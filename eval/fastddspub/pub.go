// Package fastddspub builds and drives fastddspub (src/pub.cpp, embedded): a Fast DDS 2.9
// RELIABLE KEEP_ALL publisher with a chosen resource_limits.max_samples and
// max_blocking_time, fed sample by sample over stdin. picoeval uses it for the Fast DDS
// variant of experiment 1, whose writer QoS the general-purpose internal/fastddspeer cannot set.
package fastddspub

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/picobridge/picobridge/internal/fastddspeer"
)

// Source is the C++ source of the publisher.
//
//go:embed src/pub.cpp
var Source []byte

// Check reports whether the publisher can be built here (g++ and libfastrtps-dev).
func Check() error { return fastddspeer.Check() }

// Build compiles the publisher into dir once per source version and returns its path.
func Build(dir string) (string, error) {
	if _, err := exec.LookPath("g++"); err != nil {
		return "", fastddspeer.ErrMissing
	}
	return fastddspeer.Compile(dir, "fastddspub", Source)
}

// Options are the writer's settings.
type Options struct {
	Domain      int
	Topic       string        // DDS topic, e.g. "rt/scan"
	Type        string        // DDS type name
	MaxSamples  int           // writer resource_limits.max_samples (KEEP_ALL capacity)
	MaxBlocking time.Duration // reliability.max_blocking_time; 0 = fail at once
	HeartbeatMs int           // 0 = Fast DDS default (3 s)
}

// ErrWriteFailed is returned by Write when Fast DDS's write() returned false (history full
// beyond max_blocking_time).
var ErrWriteFailed = errors.New("fastddspub: write failed (history full)")

// Publisher is a running fastddspub process.
type Publisher struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer

	mu      sync.Mutex
	cond    *sync.Cond
	matched int
	results []string // pending write answers
	eof     bool
	buf     []byte
}

// Start runs the publisher and waits for "ready".
func Start(bin string, o Options) (*Publisher, error) {
	args := []string{"--domain", strconv.Itoa(o.Domain), "--max-samples", strconv.Itoa(o.MaxSamples),
		"--max-blocking-ms", strconv.FormatFloat(float64(o.MaxBlocking)/1e6, 'f', 3, 64)}
	if o.Topic != "" {
		args = append(args, "--topic", o.Topic)
	}
	if o.Type != "" {
		args = append(args, "--type", o.Type)
	}
	if o.HeartbeatMs > 0 {
		args = append(args, "--heartbeat-ms", strconv.Itoa(o.HeartbeatMs))
	}
	p := &Publisher{cmd: exec.Command(bin, args...)}
	p.cond = sync.NewCond(&p.mu)
	p.cmd.Stderr = &p.stderr
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
	ready := make(chan struct{})
	go p.read(out, ready)
	select {
	case <-ready:
		return p, nil
	case <-time.After(20 * time.Second):
		p.Close()
		return nil, fmt.Errorf("fastddspub: no ready line: %s", p.stderr.String())
	}
}

func (p *Publisher) read(r io.Reader, ready chan struct{}) {
	sc := bufio.NewScanner(r)
	once := sync.OnceFunc(func() { close(ready) })
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		switch {
		case line == "ready":
			once()
		case strings.HasPrefix(line, "matched "):
			p.matched, _ = strconv.Atoi(strings.TrimPrefix(line, "matched "))
		default:
			p.results = append(p.results, line)
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.eof = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Matched is the current matched reader count.
func (p *Publisher) Matched() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.matched
}

// Write sends one sample and waits for the writer's verdict; it returns how long Fast DDS's
// write() took and ErrWriteFailed when it returned false.
func (p *Publisher) Write(cdr []byte) (time.Duration, error) {
	p.buf = binary.LittleEndian.AppendUint32(p.buf[:0], uint32(len(cdr)))
	p.buf = append(p.buf, cdr...)
	if _, err := p.stdin.Write(p.buf); err != nil {
		return 0, err
	}
	p.mu.Lock()
	for len(p.results) == 0 && !p.eof {
		p.cond.Wait()
	}
	if len(p.results) == 0 {
		p.mu.Unlock()
		return 0, fmt.Errorf("fastddspub: exited: %s", p.stderr.String())
	}
	line := p.results[0]
	p.results = p.results[1:]
	p.mu.Unlock()
	verdict, ns, _ := strings.Cut(line, " ")
	n, _ := strconv.ParseInt(ns, 10, 64)
	if verdict != "ok" {
		return time.Duration(n), ErrWriteFailed
	}
	return time.Duration(n), nil
}

// Pid is the process id.
func (p *Publisher) Pid() int { return p.cmd.Process.Pid }

// Close ends the publisher (EOF on stdin) and waits up to 5 s before killing it.
func (p *Publisher) Close() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		return <-done
	}
}
