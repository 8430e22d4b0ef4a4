package bridge

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware"
)

// fakeThreads is a threadSys that records every change and refuses what
// it is told to.
type fakeThreads struct {
	list      [][]osThread // one per threads() call; the last repeats
	calls     int
	fifoErr   error
	niceErr   error
	fifo      map[int]int // tid → priority set
	nice      map[int]int // tid → nice set
	listErr   error
	setCalled int
	group     int   // autogroup nice set
	groupErr  error // what setGroupNice returns
}

func (f *fakeThreads) threads() ([]osThread, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	i := min(f.calls, len(f.list)-1)
	f.calls++
	return f.list[i], nil
}

func (f *fakeThreads) setFIFO(tid, prio int) error {
	f.setCalled++
	if f.fifoErr != nil {
		return f.fifoErr
	}
	f.fifo[tid] = prio
	return nil
}

func (f *fakeThreads) setNice(tid, n int) error {
	f.setCalled++
	if f.niceErr != nil {
		return f.niceErr
	}
	f.nice[tid] = n
	return nil
}

func (f *fakeThreads) setGroupNice(n int) error {
	if f.groupErr != nil {
		return f.groupErr
	}
	f.group = n
	return nil
}

func newFake(list ...[]osThread) *fakeThreads {
	return &fakeThreads{list: list, fifo: map[int]int{}, nice: map[int]int{}}
}

func logTo(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

var threeThreads = []osThread{{10, RoleRuntime}, {11, RoleRuntime}, {12, RoleLibrary}}

func TestRealtimeApplied(t *testing.T) {
	for _, tc := range []struct {
		mode       RealtimeMode
		fifo, nice map[int]int
	}{
		{RealtimeFIFO, map[int]int{10: 10, 11: 10, 12: 10}, map[int]int{}},
		{RealtimeNice, map[int]int{}, map[int]int{10: -10, 11: -10, 12: -10}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			var log bytes.Buffer
			f := newFake(threeThreads)
			r := newRealtime(tc.mode, f, logTo(&log))
			r.raiseProcess()
			require.Equal(t, tc.fifo, f.fifo)
			require.Equal(t, tc.nice, f.nice)
			require.Empty(t, log.String(), "nothing refused: no log line")
			want := RealtimeThreads{Mode: tc.mode, Threads: []RealtimeThreadCount{
				{Role: RoleLibrary, Applied: tc.mode, Count: 1}, {Role: RoleRuntime, Applied: tc.mode, Count: 2}}}
			if tc.mode == RealtimeNice { // and its session's scheduling group
				want.AutogroupNice = RealtimeNiceValue
				require.Equal(t, RealtimeNiceValue, f.group)
			} else {
				require.Zero(t, f.group)
			}
			require.Equal(t, want, r.status())
			// a second call finds nothing new and changes nothing
			n := f.setCalled
			r.raiseProcess()
			require.Equal(t, n, f.setCalled)
		})
	}
}

// nice without autogroup (sched_autogroup_enabled 0): the threads alone,
// nothing logged; with its group nice refused: the threads keep theirs and
// the one WARN line says so.
func TestRealtimeAutogroup(t *testing.T) {
	var log bytes.Buffer
	f := newFake(threeThreads)
	f.groupErr = errNoAutogroup
	r := newRealtime(RealtimeNice, f, logTo(&log))
	r.raiseProcess()
	require.Empty(t, log.String())
	require.Zero(t, r.status().AutogroupNice)
	require.Len(t, f.nice, 3)

	f = newFake(threeThreads)
	f.groupErr = syscall.EPERM
	r = newRealtime(RealtimeNice, f, logTo(&log))
	r.raiseProcess()
	require.Equal(t, `level=WARN msg="policy.express.realtime: nice: autogroup nice -10 refused (operation not permitted): the threads are at nice -10 but the session shares the CPU with other sessions as an equal (sched(7)); allow it with CAP_SYS_NICE or an RLIMIT_NICE of at least 30 (ulimit -e 30), or use fifo"`+"\n", log.String())
	require.Len(t, f.nice, 3)
	require.Zero(t, r.status().AutogroupNice)
}

// A thread that appears while a pass runs (created by one not yet raised)
// is raised by the next pass; passes stop when nothing is new.
func TestRealtimeLateThread(t *testing.T) {
	f := newFake(threeThreads[:2], threeThreads, threeThreads)
	r := newRealtime(RealtimeNice, f, logTo(&bytes.Buffer{}))
	r.raiseProcess()
	require.Equal(t, map[int]int{10: -10, 11: -10, 12: -10}, f.nice)
	require.Equal(t, 3, f.calls)
}

func TestRealtimeOffTouchesNothing(t *testing.T) {
	f := newFake(threeThreads)
	r := newRealtime(RealtimeOff, f, logTo(&bytes.Buffer{}))
	r.raiseProcess()
	require.Zero(t, f.calls)
	require.Zero(t, f.setCalled)
	require.Equal(t, RealtimeThreads{Mode: RealtimeOff}, r.status())
	require.Equal(t, RealtimeThreads{Mode: RealtimeOff}, newRealtime("", f, nil).status())
}

// Refused: the gateway runs on with what it got, and one WARN line for the
// whole process says what was refused and how to allow it.
func TestRealtimeRefused(t *testing.T) {
	for _, tc := range []struct {
		name             string
		mode             RealtimeMode
		fifoErr, niceErr error
		applied          RealtimeMode
		line             string
	}{
		{"fifo refused, nice applied", RealtimeFIFO, syscall.EPERM, nil, RealtimeNice,
			`level=WARN msg="policy.express.realtime: fifo: SCHED_FIFO 10 refused (operation not permitted): allow it with CAP_SYS_NICE (setcap cap_sys_nice+ep, systemd AmbientCapabilities=CAP_SYS_NICE) or an RLIMIT_RTPRIO of at least 10 (ulimit -r 10, systemd LimitRTPRIO=10); the gateway runs at nice -10 instead"`},
		{"fifo and nice refused", RealtimeFIFO, syscall.EPERM, syscall.EPERM, RealtimeOff,
			`level=WARN msg="policy.express.realtime: fifo: SCHED_FIFO 10 refused (operation not permitted) and nice -10 refused (operation not permitted): allow it with CAP_SYS_NICE (setcap cap_sys_nice+ep, systemd AmbientCapabilities=CAP_SYS_NICE) or an RLIMIT_NICE of at least 30 (ulimit -e 30, systemd LimitNICE=-10) or RLIMIT_RTPRIO ≥ 10 (ulimit -r 10); the gateway runs at normal priority"`},
		{"nice refused", RealtimeNice, nil, syscall.EACCES, RealtimeOff,
			`level=WARN msg="policy.express.realtime: nice: nice -10 refused (permission denied): allow it with CAP_SYS_NICE (setcap cap_sys_nice+ep, systemd AmbientCapabilities=CAP_SYS_NICE) or an RLIMIT_NICE of at least 30 (ulimit -e 30, systemd LimitNICE=-10); the gateway runs at normal priority"`},
		{"not Linux", RealtimeNice, nil, errRealtimeUnsupported, RealtimeOff,
			`level=WARN msg="policy.express.realtime: nice: per-thread scheduling is not supported on ` + runtime.GOOS + `; the gateway runs at normal priority"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			f := newFake(threeThreads)
			f.fifoErr, f.niceErr, f.groupErr = tc.fifoErr, tc.niceErr, tc.niceErr
			if errors.Is(tc.niceErr, errRealtimeUnsupported) {
				f.groupErr = errNoAutogroup
			}
			r := newRealtime(tc.mode, f, logTo(&log))
			r.raiseProcess()
			require.Equal(t, tc.line+"\n", log.String(), "exactly one line for three threads")
			want := RealtimeThreads{Mode: tc.mode}
			if tc.applied != RealtimeOff {
				want.Threads = []RealtimeThreadCount{{Role: RoleLibrary, Applied: tc.applied, Count: 1}, {Role: RoleRuntime, Applied: tc.applied, Count: 2}}
			}
			require.Equal(t, want, r.status())
		})
	}
	var log bytes.Buffer
	f := newFake()
	f.listErr = errors.New("open /proc/self/task: no such file or directory")
	r := newRealtime(RealtimeFIFO, f, logTo(&log))
	r.raiseProcess()
	r.raiseProcess()
	require.Equal(t, `level=WARN msg="policy.express.realtime: fifo: the process's threads cannot be listed (open /proc/self/task: no such file or directory); the gateway runs at normal priority"`+"\n", log.String())
}

// threadSched reads policy (field 41), rt_priority (40) and nice (19) of
// thread tid from /proc/self/task/<tid>/stat (proc(5)).
func threadSched(t *testing.T, tid int) (policy, rtprio, nice int) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	require.NoError(t, err)
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // f[0] is field 3
	at := func(n int) int {
		v, err := strconv.Atoi(f[n-3])
		require.NoError(t, err)
		return v
	}
	return at(41), at(40), at(19)
}

// The real kernel: a thread of this process raised by apply shows the
// policy and priority (fifo) or the nice (nice) in /proc. Each case runs on a locked thread that ends with its goroutine, so no
// raised thread is left to the rest of the tests.
func TestRealtimeRealThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("per-thread scheduling is Linux only")
	}
	for _, tc := range []struct {
		mode                  RealtimeMode
		policy, rtprio, niceV int
	}{
		{RealtimeNice, 0, 0, RealtimeNiceValue},      // SCHED_OTHER
		{RealtimeFIFO, 1, RealtimeFIFOPriority, -99}, // SCHED_FIFO; its nice (unused) is left as it was
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			type result struct {
				applied  RealtimeMode
				log      string
				tid      int
				p, rp, n int
			}
			done := make(chan result)
			go func() { // never unlocked: the thread ends with the goroutine
				runtime.LockOSThread()
				var log bytes.Buffer
				r := newRealtime(tc.mode, osThreads(), logTo(&log))
				tid := syscall.Gettid()
				res := result{applied: r.apply(tid), log: log.String(), tid: tid}
				res.p, res.rp, res.n = threadSched(t, tid)
				done <- res
			}()
			res := <-done
			if res.applied != tc.mode {
				t.Skipf("this process may not set %s (CAP_SYS_NICE / RLIMIT_RTPRIO / RLIMIT_NICE; got %q): %s", tc.mode, res.applied, res.log)
			}
			require.Empty(t, res.log)
			if tc.niceV == -99 {
				res.n = -99
			}
			require.Equal(t, []int{tc.policy, tc.rtprio, tc.niceV}, []int{res.p, res.rp, res.n}, "policy, rt_priority, nice of tid %d", res.tid)
		})
	}
}

// The process's threads as Linux lists them: this test's own thread is
// among them, named like the process (a Go runtime thread).
func TestRealtimeThreadList(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ts, err := osThreads().threads()
	require.NoError(t, err)
	require.Contains(t, ts, osThread{tid: syscall.Gettid(), role: RoleRuntime})
}

// The gateway raises the process's threads at Run, once, and reports what
// it applied in /devicez and as picobridge_bridge_realtime_threads.
func TestGatewayRealtimeAtRun(t *testing.T) {
	cat, err := firmware.Catalog()
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Policy.Express.Realtime = RealtimeFIFO
	reg := prometheus.NewPedanticRegistry()
	g, err := New(cfg, Options{Catalog: cat, Registerer: reg})
	require.NoError(t, err)
	f := newFake(threeThreads)
	f.fifoErr = syscall.EPERM // falls back to nice
	g.rt.sys = f
	require.Equal(t, RealtimeThreads{Mode: RealtimeFIFO}, g.Devicez(DevicezOptions{}).Realtime, "nothing before Run")
	g.Run()
	g.Run()
	defer g.Close()
	require.Equal(t, 2, f.calls, "the second pass finds nothing new; the second Run does nothing")
	want := RealtimeThreads{Mode: RealtimeFIFO, Threads: []RealtimeThreadCount{
		{Role: RoleLibrary, Applied: RealtimeNice, Count: 1}, {Role: RoleRuntime, Applied: RealtimeNice, Count: 2}}}
	require.Equal(t, want, g.Devicez(DevicezOptions{}).Realtime)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP picobridge_bridge_realtime_threads Threads of the gateway raised when it started, for the critical express path (policy.express.realtime), by role (runtime: Go threads, library: C threads) and by what the kernel allowed (nice, fifo).
# TYPE picobridge_bridge_realtime_threads gauge
picobridge_bridge_realtime_threads{applied="nice",role="library"} 1
picobridge_bridge_realtime_threads{applied="nice",role="runtime"} 2
`), MetricRealtimeThreads))
}
