package bridge

// Raised scheduling priority for the gateway's threads, and so for the
// critical express path (policy.express.realtime; issue 25 item 5). On a
// busy host the kernel shares the cores between the gateway's threads and
// every other runnable task at the same nice level: each thread wake-up on
// the path from the DDS socket to the device's socket (Cyclone's receive
// thread; the Go thread that the netpoller wakes for the reader, which then
// runs the forward and express goroutines one after another in its run-next
// slot down to the write(2)) may wait a scheduler slice behind a CPU hog.
//
// Raised are threads, not goroutines: every thread of the process at Run
// (Go's and Cyclone's), and, since a new thread inherits its creator's
// scheduling, every thread created after. Goroutines on locked threads
// (runtime.LockOSThread) were measured far worse (critical p99 5–192 ms
// against 0.4–1.0 ms, docs/perf.md "Busy host"): a locked goroutine runs
// only on its thread, so each hand-off on the path became a wake-up of
// that thread, readied through an unlocked thread at normal priority,
// instead of a run-next switch on the running one.

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sort"
	"sync"
)

// RealtimeMode is policy.express.realtime: how the critical express path's
// threads are scheduled.
type RealtimeMode string

const (
	// RealtimeOff (the default): the threads keep the priority the
	// process was started with.
	RealtimeOff RealtimeMode = "off"
	// RealtimeNice: every thread at nice RealtimeNiceValue (SCHED_OTHER),
	// and the session's autogroup too where the kernel groups sessions.
	// Needs CAP_SYS_NICE or RLIMIT_NICE ≥ 20 − RealtimeNiceValue.
	RealtimeNice RealtimeMode = "nice"
	// RealtimeFIFO: every thread at SCHED_FIFO priority
	// RealtimeFIFOPriority. Needs CAP_SYS_NICE or RLIMIT_RTPRIO ≥ that
	// priority. Refused, a thread falls back to nice, then to none.
	RealtimeFIFO RealtimeMode = "fifo"
)

func (RealtimeMode) allowed() []string { return []string{"off", "nice", "fifo"} }

// RealtimeNiceValue is the nice of a thread under RealtimeNice (and the
// fallback of a refused RealtimeFIFO): -10, weight 9548 against 1024 at
// nice 0 (kernel/sched/core.c sched_prio_to_weight), so a nice-0 CPU hog
// beside it gets about a tenth of the core while the thread is runnable.
const RealtimeNiceValue = -10

// RealtimeFIFOPriority is the SCHED_FIFO priority under RealtimeFIFO: low
// in 1..99, so kernel threads and audio/IRQ threads configured higher keep
// precedence; any SCHED_FIFO priority runs before every SCHED_OTHER task.
// The kernel's RT throttle (sched_rt_runtime_us, 95 % by default) bounds
// what a runaway thread can take.
const RealtimeFIFOPriority = 10

// Realtime thread roles (label role of MetricRealtimeThreads).
const (
	RoleRuntime = "runtime" // the Go runtime's threads (they run every goroutine)
	RoleLibrary = "library" // threads a C library started (Cyclone DDS: recvUC, dq.user, tev, ...)
)

// threadSys is the kernel's per-thread scheduling (realtime_linux.go;
// tests fake it). The setters leave SCHED_RESET_ON_FORK off: a thread the
// raised one creates inherits its scheduling.
type threadSys interface {
	// threads lists the process's threads now.
	threads() ([]osThread, error)
	// setFIFO puts thread tid in SCHED_FIFO at priority prio.
	setFIFO(tid, prio int) error
	// setNice puts thread tid in SCHED_OTHER at nice n.
	setNice(tid, n int) error
	// setGroupNice sets the nice of the process's autogroup (its session's
	// scheduling group, sched(7)) to n; errNoAutogroup when the kernel
	// does not group by session.
	setGroupNice(n int) error
}

// errNoAutogroup: the kernel does not schedule sessions as groups
// (sched_autogroup_enabled 0, or not Linux), so a thread's nice ranks it
// against every other thread and there is no group nice to set.
var errNoAutogroup = errors.New("no autogroup")

// osThread is one thread of the process.
type osThread struct {
	tid  int
	role string // RoleRuntime or RoleLibrary
}

// errRealtimeUnsupported is what threadSys returns where threads have no
// scheduling of their own to set (not Linux).
var errRealtimeUnsupported = errors.New("per-thread scheduling is not supported on " + runtime.GOOS)

// realtime applies policy.express.realtime to the process's threads and
// keeps what was applied, per role, for metrics and status. Safe for
// concurrent use.
type realtime struct {
	mode RealtimeMode
	sys  threadSys
	log  *slog.Logger

	warnOnce sync.Once // one WARN line per process, at the first refusal
	mu       sync.Mutex
	raised   map[int]bool        // tids seen by raiseProcess
	threads  map[realtimeKey]int // threads raised, by role and what was applied
	group    bool                // the autogroup's nice was set
}

type realtimeKey struct {
	role    string
	applied RealtimeMode
}

func newRealtime(mode RealtimeMode, sys threadSys, log *slog.Logger) *realtime {
	if mode == "" {
		mode = RealtimeOff
	}
	return &realtime{mode: mode, sys: sys, log: log, raised: map[int]bool{}, threads: map[realtimeKey]int{}}
}

// on reports whether threads are to be raised at all.
func (r *realtime) on() bool { return r.mode != RealtimeOff }

// realtimePasses bounds raiseProcess's passes over the thread list: a
// thread created by one not yet raised, while a pass ran, is found by the
// next.
const realtimePasses = 3

// raiseProcess raises every thread of the process (see apply) and counts
// it by role; passes repeat while they find new threads. With the mode off
// it does nothing. It never fails: a refusal is logged once (apply), a
// thread list that cannot be read is logged at WARN.
func (r *realtime) raiseProcess() {
	if !r.on() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.raiseThreads()
	if r.mode == RealtimeNice && !r.group {
		// With autogroup (sched(7)) a thread's nice ranks it only within
		// its session: across sessions the CPU is shared per session, and
		// a hog in another session takes its share whatever our nice.
		switch err := r.sys.setGroupNice(RealtimeNiceValue); {
		case err == nil:
			r.group = true
		case !errors.Is(err, errNoAutogroup):
			r.warnOnce.Do(func() {
				r.log.Warn(fmt.Sprintf("policy.express.realtime: nice: autogroup nice %d refused (%v): the threads are at nice %d but the session shares the CPU with other sessions as an equal (sched(7)); allow it with CAP_SYS_NICE or an RLIMIT_NICE of at least %d (ulimit -e %d), or use fifo",
					RealtimeNiceValue, err, RealtimeNiceValue, 20-RealtimeNiceValue, 20-RealtimeNiceValue))
			})
		}
	}
}

// raiseThreads is raiseProcess's passes over the thread list. Caller holds r.mu.
func (r *realtime) raiseThreads() {
	for range realtimePasses {
		ts, err := r.sys.threads()
		if err != nil {
			r.warnOnce.Do(func() {
				r.log.Warn(fmt.Sprintf("policy.express.realtime: %s: the process's threads cannot be listed (%v); the gateway runs at normal priority", r.mode, err))
			})
			return
		}
		found := false
		for _, t := range ts {
			if r.raised[t.tid] {
				continue
			}
			found = true
			r.raised[t.tid] = true
			if a := r.apply(t.tid); a != RealtimeOff {
				r.threads[realtimeKey{t.role, a}]++
			}
		}
		if !found {
			return
		}
	}
}

// apply raises thread tid as the mode says and returns what was applied:
// the mode, RealtimeNice when FIFO was refused and nice was not,
// RealtimeOff when both were refused (logged once per process at WARN with
// what to allow; the gateway runs on).
func (r *realtime) apply(tid int) RealtimeMode {
	var fifoErr error
	if r.mode == RealtimeFIFO {
		if fifoErr = r.sys.setFIFO(tid, RealtimeFIFOPriority); fifoErr == nil {
			return RealtimeFIFO
		}
	}
	niceErr := r.sys.setNice(tid, RealtimeNiceValue)
	if niceErr == nil {
		r.refused(fifoErr, nil)
		return RealtimeNice
	}
	r.refused(fifoErr, niceErr)
	return RealtimeOff
}

// refused logs the one WARN line: what the kernel refused, how to allow it,
// and what the gateway runs with instead. Nothing when nothing was refused.
func (r *realtime) refused(fifoErr, niceErr error) {
	if fifoErr == nil && niceErr == nil {
		return
	}
	r.warnOnce.Do(func() {
		var msg string
		switch {
		case errors.Is(fifoErr, errRealtimeUnsupported) || errors.Is(niceErr, errRealtimeUnsupported):
			msg = fmt.Sprintf("policy.express.realtime: %s: %v; the gateway runs at normal priority", r.mode, errRealtimeUnsupported)
		case fifoErr != nil && niceErr == nil:
			msg = fmt.Sprintf("policy.express.realtime: fifo: SCHED_FIFO %d refused (%v): allow it with CAP_SYS_NICE (setcap cap_sys_nice+ep, systemd AmbientCapabilities=CAP_SYS_NICE) or an RLIMIT_RTPRIO of at least %d (ulimit -r %d, systemd LimitRTPRIO=%d); the gateway runs at nice %d instead",
				RealtimeFIFOPriority, fifoErr, RealtimeFIFOPriority, RealtimeFIFOPriority, RealtimeFIFOPriority, RealtimeNiceValue)
		default:
			what := fmt.Sprintf("nice %d refused (%v)", RealtimeNiceValue, niceErr)
			if fifoErr != nil {
				what = fmt.Sprintf("SCHED_FIFO %d refused (%v) and %s", RealtimeFIFOPriority, fifoErr, what)
			}
			allow := fmt.Sprintf("CAP_SYS_NICE (setcap cap_sys_nice+ep, systemd AmbientCapabilities=CAP_SYS_NICE) or an RLIMIT_NICE of at least %d (ulimit -e %d, systemd LimitNICE=%d)",
				20-RealtimeNiceValue, 20-RealtimeNiceValue, RealtimeNiceValue)
			if r.mode == RealtimeFIFO {
				allow += fmt.Sprintf(" or RLIMIT_RTPRIO ≥ %d (ulimit -r %d)", RealtimeFIFOPriority, RealtimeFIFOPriority)
			}
			msg = fmt.Sprintf("policy.express.realtime: %s: %s: allow it with %s; the gateway runs at normal priority", r.mode, what, allow)
		}
		r.log.Warn(msg)
	})
}

// RealtimeThreads is what policy.express.realtime applied: the threads now
// raised, by role and by what each got.
type RealtimeThreads struct {
	// Mode is the configured policy.express.realtime.
	Mode RealtimeMode `json:"mode"`
	// AutogroupNice is the nice set on the process's autogroup (its
	// session's scheduling group, sched(7)) under nice; 0: not set.
	AutogroupNice int `json:"autogroup_nice,omitempty"`
	// Threads counts the threads raised when the gateway started, per
	// role and applied mode (RealtimeNice for a FIFO request the kernel
	// refused); threads created after inherit it and are not counted.
	Threads []RealtimeThreadCount `json:"threads,omitempty"`
}

// RealtimeThreadCount is the number of threads of one role raised one way.
type RealtimeThreadCount struct {
	Role    string       `json:"role"`
	Applied RealtimeMode `json:"applied"`
	Count   int          `json:"count"`
}

func (r *realtime) status() RealtimeThreads {
	st := RealtimeThreads{Mode: r.mode}
	r.mu.Lock()
	if r.group {
		st.AutogroupNice = RealtimeNiceValue
	}
	for k, n := range r.threads {
		st.Threads = append(st.Threads, RealtimeThreadCount{Role: k.role, Applied: k.applied, Count: n})
	}
	r.mu.Unlock()
	sort.Slice(st.Threads, func(i, j int) bool {
		a, b := st.Threads[i], st.Threads[j]
		return a.Role < b.Role || a.Role == b.Role && a.Applied < b.Applied
	})
	return st
}

// Realtime reports what policy.express.realtime applied, per thread role.
func (g *Gateway) Realtime() RealtimeThreads { return g.rt.status() }

// RaiseThreads raises every thread of this process now, as
// policy.express.realtime would (mode off: nothing), but with
// SCHED_RESET_ON_FORK: a thread or process they start later runs at normal
// priority. For a harness that runs its own publisher and devices beside a
// gateway it starts as a child (picoeval --harness-realtime), so that only
// the system under test competes with the CPU hogs. A refusal is logged
// once on log; it never fails.
func RaiseThreads(mode RealtimeMode, log *slog.Logger) RealtimeThreads {
	r := newRealtime(mode, osThreadsResetOnFork(), log)
	r.raiseProcess()
	return r.status()
}
