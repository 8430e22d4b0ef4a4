package benchkit

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const sample = `# HELP picobridge_router_dropped_total Dropped.
# TYPE picobridge_router_dropped_total counter
picobridge_router_dropped_total{reason="congestion"} 3
picobridge_router_dropped_total{reason="queue_full"} 2
picobridge_bridge_samples_dropped_total{device="A",lane="express",reason="congestion"} 1
picobridge_bridge_samples_dropped_total{device="B",lane="batched",reason="rate_limit"} 7
picobridge_bridge_samples_dropped_total{device="A",lane="batched",reason="rate_limit"} 5
process_resident_memory_bytes 1.5e+07
weird{a="x\"y}",b="z"} 4 1700000000
not a metric line
`

func TestParseMetricsSumBy(t *testing.T) {
	m := ParseMetrics(sample)
	require.Len(t, m, 7)
	require.Equal(t, 5.0, m.Sum("picobridge_router_dropped_total", nil))
	require.Equal(t, 6.0, m.Sum("picobridge_bridge_samples_dropped_total", map[string]string{"device": "A"}))
	require.Equal(t, 5.0, m.Sum("picobridge_bridge_samples_dropped_total", map[string]string{"device": "A", "lane": "batched"}))
	require.Equal(t, map[string]float64{"congestion": 1, "rate_limit": 12}, m.By("picobridge_bridge_samples_dropped_total", "reason"))
	require.Equal(t, 1.5e7, m["process_resident_memory_bytes"])
	require.Equal(t, 4.0, m.Sum("weird", map[string]string{"b": "z"}))
	require.Equal(t, `x\"y}`, Label(`weird{a="x\"y}",b="z"}`, "a"))
	require.Equal(t, "", Label("plain", "a"))
	d := Delta(ParseMetrics(`x{r="a"} 1`), ParseMetrics("x{r=\"a\"} 4\nx{r=\"b\"} 2"))
	require.Equal(t, Metrics{`x{r="a"}`: 3, `x{r="b"}`: 2}, d)
}

func TestPercentile(t *testing.T) {
	require.True(t, math.IsNaN(Percentile(nil, 0.5)))
	xs := []float64{4, 1, 3, 2}
	require.Equal(t, 2.5, Percentile(xs, 0.5))
	require.Equal(t, 4.0, Percentile(xs, 1))
	require.Equal(t, 1.0, Percentile(xs, 0))
	require.InDelta(t, 3.97, Percentile(xs, 0.99), 1e-9)
}

func TestParseStatCPU(t *testing.T) {
	// comm with spaces and parentheses; utime 150, stime 50 ticks = 2 s.
	line := "1234 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 150 50 0 0 20 0 1 0 100 0 0"
	d, err := ParseStatCPU(line)
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, d)
	_, err = ParseStatCPU("no paren")
	require.Error(t, err)
	_, err = ParseStatCPU("1 (x) S 1 2")
	require.Error(t, err)
}

func TestReadUsageSelfAndWatch(t *testing.T) {
	u, err := ReadUsage(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, u.RSS)
	require.GreaterOrEqual(t, u.PeakRSS, u.RSS)
	require.Positive(t, u.FDs)
	w := WatchRSS(os.Getpid(), 10*time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	mx, last := w.Stop()
	require.Positive(t, last)
	require.GreaterOrEqual(t, mx, last)
}

func TestProcLinesAndStop(t *testing.T) {
	p, err := Start("sh", nil, "sh", "-c", "echo one; echo two; cat >/dev/null; echo bye >&2")
	require.NoError(t, err)
	l, err := p.WaitPrefix(5*time.Second, "tw")
	require.NoError(t, err)
	require.Equal(t, "two", l.Text)
	p.Stop(2 * time.Second)
	require.Contains(t, p.Tail(), "bye")
	_, err = p.WaitPrefix(time.Second, "never")
	require.ErrorIs(t, err, ErrExited)
}

// TestProcWaitLinesKill: Wait returns when the child exits by itself and errs while it
// runs; Lines keeps every stdout line in order; Kill ends a child that ignores stdin.
func TestProcWaitLinesKill(t *testing.T) {
	p, err := Start("sh", nil, "sh", "-c", "echo one; echo two; echo three")
	require.NoError(t, err)
	require.NoError(t, p.Wait(30*time.Second))
	var got []string
	for _, l := range p.Lines() {
		got = append(got, l.Text)
	}
	require.Equal(t, []string{"one", "two", "three"}, got)

	s, err := Start("sleeper", nil, "sh", "-c", "trap '' TERM; echo up; exec sleep 300")
	require.NoError(t, err)
	_, err = s.WaitPrefix(30*time.Second, "up")
	require.NoError(t, err)
	require.ErrorContains(t, s.Wait(20*time.Millisecond), "sleeper: still running after 20ms")
	s.Kill()
	select {
	case <-s.Exited():
	default:
		t.Fatal("Kill returned before the child exited")
	}
}

func TestRaiseNoFile(t *testing.T) {
	n, err := RaiseNoFile(64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, uint64(64))
}

func FuzzParseMetrics(f *testing.F) {
	f.Add(sample)
	f.Add(`x{a="\\"} 1`)
	f.Fuzz(func(t *testing.T, s string) {
		m := ParseMetrics(s)
		for k := range m {
			_ = Label(k, "reason")
			_ = m.Sum(seriesName(k), map[string]string{"a": "b"})
			require.False(t, strings.HasPrefix(k, "#"))
		}
	})
}

func FuzzLabel(f *testing.F) {
	f.Add(`x{a="1",b="2"}`, "b")
	f.Add(`x{a="\`, "a")
	f.Fuzz(func(t *testing.T, series, label string) { _ = Label(series, label) })
}

// TestFreePortNeverRepeats: ports handed out one after another are all
// different (a router given the same port for two listeners fails to bind).
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for i := range 200 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("call %d: port %d handed out twice", i, p)
		}
		seen[p] = true
	}
}
