package benchkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Profile file suffixes written by [StartProfiles]: DIR/<slug>.cpu, .allocs, .trace.
var ProfileKinds = []string{"cpu", "allocs", "trace"}

// MaxTraceWindow bounds the execution trace of [StartProfiles]: a trace of a busy
// router grows by megabytes a second, and 2 s hold thousands of messages.
const MaxTraceWindow = 2 * time.Second

// Profiling is a set of profiles being collected from a pprof endpoint
// (internal/pprofserve, `picobridge router --pprof`).
type Profiling struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

// StartProfiles starts collecting, from the pprof server at base
// ("http://127.0.0.1:6060"), over window: a CPU profile
// (/debug/pprof/profile?seconds=N, N = window rounded to whole seconds, at least 1: the
// endpoint takes whole seconds), an allocs delta over the same N seconds
// (/debug/pprof/allocs?seconds=N) and an execution trace of min(window, MaxTraceWindow)
// (/debug/pprof/trace). It writes DIR/<slug>.cpu, .allocs and .trace (pprof protobuf,
// trace binary: `go tool pprof`, `go tool trace`), creating dir. The three run at once,
// so the CPU profile includes the tracer's own cost (a few %). Wait blocks until all
// three are written.
func StartProfiles(base, dir, slug string, window time.Duration) *Profiling {
	p := &Profiling{}
	secs := max(int(math.Round(window.Seconds())), 1)
	tr := min(window, MaxTraceWindow).Seconds()
	urls := map[string]string{
		"cpu":    fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs),
		"allocs": fmt.Sprintf("%s/debug/pprof/allocs?seconds=%d", base, secs),
		"trace":  fmt.Sprintf("%s/debug/pprof/trace?seconds=%.3f", base, tr),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.errs = append(p.errs, err)
		return p
	}
	for _, kind := range ProfileKinds {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			// the server answers after the profile's seconds; a stuck one is cut off
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second+30*time.Second)
			defer cancel()
			if err := fetchTo(ctx, urls[kind], filepath.Join(dir, slug+"."+kind)); err != nil {
				p.mu.Lock()
				p.errs = append(p.errs, fmt.Errorf("profile %s: %w", kind, err))
				p.mu.Unlock()
			}
		}()
	}
	return p
}

// Wait waits for every profile and returns their errors joined (nil when all were written).
func (p *Profiling) Wait() error {
	if p == nil {
		return nil
	}
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.errs...)
}

// fetchTo GETs url into file; a non-200 answer or an empty body is an error.
func fetchTo(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n == 0 {
		err = fmt.Errorf("%s: empty answer", url)
	}
	return err
}

// Slug makes a file name part of free text: lower case letters and digits, every other
// run of characters one '-' ("throughput, Go pub → Go sub" → "throughput-go-pub-go-sub").
func Slug(parts ...string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.Join(parts, " ")) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}
