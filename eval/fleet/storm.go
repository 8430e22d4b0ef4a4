package fleet

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
)

// StormOptions configure Storm (issue 29 item 1).
type StormOptions struct {
	FaultOptions
	Down   time.Duration // between the kill and the restart (default 1 s)
	After  time.Duration // the critical stream is watched this long after every device is back (default 10 s)
	Budget time.Duration // the longest a storm may take to settle (default 120 s)
	Idle   time.Duration // before the fault, after every device receives (default 3 s)
	// Drain: after the after-window, how long samples still in flight may take to arrive
	// before the rest count as missed (default 1 s). A sample that arrives later is counted
	// missed: raise it to tell delay from loss.
	Drain time.Duration
	// Faults to run in order: "gateway" (SIGKILL the gateway, restart it on the same
	// ports) and "upstream" (SIGKILL the upstream router, restart it). Default both.
	Faults []string
}

// StormRow is one fault.
type StormRow struct {
	Fault    string
	Sessions int
	// BackUp: sessions open again at the end (the load generator's count); UpSecs: from the
	// kill until all were open and declared (written); DataSecs: from the kill until every
	// session received a sample published after the restart (its declaration reached the
	// upstream router: declared end to end). -1: not within Budget.
	BackUp           int
	UpSecs, DataSecs float64
	Delivering       int // sessions that received a sample after the restart
	Reconnects       int // sessions the devices reopened
	Redials          int // failed open attempts (refused while the gateway was down, ...)
	IdleRSS, PeakRSS int64
	CPU              float64 // gateway CPU % of one core, restart → all delivering
	// Critical stream: sent and missed (summed over sessions) from the kill until every
	// session was delivering (window), and in the After seconds that followed.
	SentWindow, MissedWindow, MaxSessionWindow, SessionsMissedWindow int
	SentAfter, MissedAfter, SessionsMissedAfter                      int
	Duplicates                                                       int    // samples a session received twice, over the whole run so far
	PubFailed                                                        int64  // ticks the publisher could not send (upstream down)
	Deferred                                                         string // admission_deferred_total of the gateway by reason (new process for "gateway")
	DeferWait                                                        float64
	HSRefused                                                        float64 // handshake_failures_total{reason="refused"}
	Demotions                                                        float64 // class transitions to noncritical during the fault (run only)
	// Drops: the gateway's samples not forwarded to devices (lanes, by lane/reason) and
	// router drops (by reason) during the fault, "" when none.
	Drops string
	// UpstreamDrops: the upstream router's drops (by reason) over the same span, "" when
	// none (samples that never reached the gateway).
	UpstreamDrops string
	Err           string
}

// StormReport is the result of Storm.
type StormReport struct {
	Start          time.Time
	Env            string
	Rows           []StormRow
	Notes          []string
	Load0, LoadEnd string
}

func (o *StormOptions) defaults() error {
	if err := o.FaultOptions.defaults(); err != nil {
		return err
	}
	if o.Down <= 0 {
		o.Down = time.Second
	}
	if o.After <= 0 {
		o.After = 10 * time.Second
	}
	if o.Budget <= 0 {
		o.Budget = 120 * time.Second
	}
	if o.Idle <= 0 {
		o.Idle = 3 * time.Second
	}
	if o.Drain <= 0 {
		o.Drain = time.Second
	}
	if len(o.Faults) == 0 {
		o.Faults = []string{"gateway", "upstream"}
	}
	for _, f := range o.Faults {
		if f != "gateway" && f != "upstream" {
			return fmt.Errorf("storm fault %q: want gateway or upstream", f)
		}
	}
	return nil
}

// Storm brings Sessions devices up on the gateway (subscriber + liveliness token each,
// zenoh-pico's reconnect), publishes the critical stream to the upstream router, and for
// each fault kills and restarts a process and measures how the fleet comes back.
func Storm(ctx context.Context, o StormOptions) (*StormReport, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	rep := &StormReport{Start: time.Now(), Load0: benchkit.LoadAvg()}
	lim, err := benchkit.RaiseNoFile(1 << 20)
	if err != nil {
		return nil, err
	}
	rep.Env = fmt.Sprintf("RLIMIT_NOFILE %d", lim)
	topo, err := startTopology(o.FaultOptions)
	if err != nil {
		return rep, err
	}
	defer topo.stop()
	// Sequence numbers for the whole run: connect + idle + per fault (budget + after), with room.
	total := o.Idle + 60*time.Second + time.Duration(len(o.Faults))*(o.Budget+o.After+o.Down+10*time.Second)
	maxSeq := uint32(total.Seconds()*o.RateHz) + 1024
	lg, err := startLoadgen(o.FaultOptions, topo.gw.addr, true, maxSeq)
	if err != nil {
		return rep, err
	}
	defer lg.p.Stop(10 * time.Second)
	ev, err := lg.cmd("connect", "connected", 4*time.Minute)
	if err != nil {
		return rep, err
	}
	fmt.Fprintf(o.Log, "storm: %d sessions connected in %.1fs (%d failed)\n", ev.OK, ev.Secs, ev.Failed)
	pctx, stopPub := context.WithCancel(ctx)
	pub := startCritPub(pctx, topo.up.addr, o.Size, o.Batch, o.RateHz)
	defer func() { stopPub(); pub.stop() }()
	if d, n, err := waitAllData(lg, 0, ev.OK, 60*time.Second); err != nil {
		return rep, err
	} else if n < ev.OK {
		return rep, fmt.Errorf("only %d of %d sessions received the critical stream within %v", n, ev.OK, d)
	}
	for _, f := range o.Faults {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		time.Sleep(o.Idle)
		row, err := stormFault(o, f, topo, lg, pub, ev.OK)
		if err != nil {
			row.Err = err.Error()
			fmt.Fprintf(o.Log, "storm %s: ERROR %v\n", f, err)
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.LoadEnd = benchkit.LoadAvg()
	return rep, nil
}

// usageWatch samples a process's RSS every period (peak) and its CPU between start and stop.
type usageWatch struct {
	pid  int
	cpu0 time.Duration
	t0   time.Time
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak int64
}

func watchUsage(pid int, period time.Duration) *usageWatch {
	w := &usageWatch{pid: pid, t0: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	if u, err := benchkit.ReadUsage(pid); err == nil {
		w.cpu0, w.peak = u.CPU, u.RSS
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				if u, err := benchkit.ReadUsage(pid); err == nil {
					w.mu.Lock()
					w.peak = max(w.peak, u.RSS)
					w.mu.Unlock()
				}
			}
		}
	}()
	return w
}

// end stops the sampling: peak RSS (bytes, VmHWM included) and CPU % of one core.
func (w *usageWatch) end() (int64, float64) {
	close(w.stop)
	<-w.done
	u, err := benchkit.ReadUsage(w.pid)
	if err != nil {
		return w.peak, -1
	}
	return max(w.peak, u.PeakRSS, u.RSS), 100 * (u.CPU - w.cpu0).Seconds() / time.Since(w.t0).Seconds()
}

func stormFault(o StormOptions, fault string, topo *topology, lg loadgenProc, pub *critPub, n int) (StormRow, error) {
	row := StormRow{Fault: fault, Sessions: n, UpSecs: -1, DataSecs: -1}
	ui, err := benchkit.ReadUsage(topo.gw.p.PID())
	if err != nil {
		return row, err
	}
	row.IdleRSS = ui.RSS
	st0, err := lg.cmd("status", "status", 10*time.Second)
	if err != nil {
		return row, err
	}
	m0, _ := topo.gw.metrics()
	u0, _ := topo.up.metrics()
	if d := m0.By("picobridge_bridge_samples_dropped_total", "reason"); len(d) > 0 {
		fmt.Fprintf(o.Log, "storm %s: the gateway dropped before the fault: %s\n", fault, reasons(d))
	}
	fails0 := pub.fails.Load()
	target := topo.gw
	if fault == "upstream" {
		target = topo.up
	}
	seqKill := pub.next()
	tKill := time.Now()
	target.kill()
	time.Sleep(o.Down)
	if err := target.start(); err != nil {
		return row, err
	}
	w := watchUsage(topo.gw.p.PID(), 100*time.Millisecond)
	seqRestart := pub.next()
	// Every session open again (the load generator's count); for the upstream fault no
	// device session should have been lost at all.
	for time.Since(tKill) < o.Budget {
		st, err := lg.cmd("status", "status", 10*time.Second)
		if err != nil {
			return row, err
		}
		row.BackUp = st.Up
		if st.Up >= n {
			row.UpSecs = time.Since(tKill).Seconds()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Every session received a sample published after the restart.
	_, got, err := waitAllData(lg, seqRestart, n, o.Budget-time.Since(tKill))
	if err != nil {
		return row, err
	}
	row.Delivering = got
	if got >= n {
		row.DataSecs = time.Since(tKill).Seconds()
	}
	seqBack := pub.next()
	row.PeakRSS, row.CPU = w.end()
	time.Sleep(o.After)
	seqEnd := pub.next()
	time.Sleep(o.Drain) // the last samples in flight
	ls, err := lg.cmd(fmt.Sprintf("losses %d %d %d", seqKill, seqBack, seqEnd), "losses", 30*time.Second)
	if err != nil {
		return row, err
	}
	row.SentWindow, row.MissedWindow, row.MaxSessionWindow, row.SessionsMissedWindow = ls.SentAB, ls.MissedAB, ls.MaxSessionAB, ls.SessionsMissedAB
	row.SentAfter, row.MissedAfter, row.SessionsMissedAfter = ls.SentBC, ls.MissedBC, ls.SessionsMissedBC
	row.Duplicates = ls.Duplicates
	st1, err := lg.cmd("status", "status", 10*time.Second)
	if err != nil {
		return row, err
	}
	row.Reconnects, row.Redials = st1.Reconnects-st0.Reconnects, st1.Redials-st0.Redials
	if row.Redials > 0 {
		fmt.Fprintf(o.Log, "storm %s: %d failed opens, the last: %s\n", fault, row.Redials, st1.FirstError)
	}
	row.PubFailed = pub.fails.Load() - fails0
	m1, err := topo.gw.metrics()
	if err == nil {
		if fault == "upstream" { // same gateway process: the fault's share
			m1 = benchkit.Delta(m0, m1)
		}
		row.Deferred = reasons(m1.By("picobridge_transport_admission_deferred_total", "reason"))
		row.DeferWait = m1.Sum("picobridge_transport_admission_wait_seconds_total", nil)
		row.HSRefused = m1.Sum("picobridge_transport_handshake_failures_total", map[string]string{"reason": "refused"})
		row.Demotions = m1.Sum("picobridge_device_class_transitions_total", map[string]string{"to": "noncritical"})
		by := map[string]float64{}
		for k, v := range m1.By("picobridge_bridge_samples_dropped_total", "reason") {
			by["lane:"+k] += v
		}
		for k, v := range m1.By("picobridge_router_dropped_total", "reason") {
			by["router:"+k] += v
		}
		row.Drops = reasons(by)
	}
	// The upstream router's drops (toward the gateway, a full link there): what the
	// gateway cannot see. Over the fault and the after window; a restarted upstream
	// counts from its restart.
	if u1, err := topo.up.metrics(); err == nil {
		if fault != "upstream" {
			u1 = benchkit.Delta(u0, u1)
		}
		by := map[string]float64{}
		for k, v := range u1.By("picobridge_router_dropped_total", "reason") {
			by[k] += v
		}
		row.UpstreamDrops = reasons(by)
	}
	fmt.Fprintf(o.Log, "storm %s: %d/%d up after %.1fs, all delivering after %.1fs; missed %d/%d in the window, %d/%d after\n",
		fault, row.BackUp, n, row.UpSecs, row.DataSecs, row.MissedWindow, row.SentWindow, row.MissedAfter, row.SentAfter)
	return row, nil
}

// Markdown prints the storm table.
func (r *StormReport) Markdown() string {
	var b []byte
	p := func(f string, a ...any) { b = fmt.Appendf(b, f, a...) }
	p("## Reconnect storm (%s UTC)\n\n", r.Start.UTC().Format("2006-01-02 15:04"))
	p("Load average at start %s, at end %s; %s.\n\n", r.Load0, r.LoadEnd, r.Env)
	p("| fault | sessions | back up | all open s | all delivering s | reconnects | failed opens | idle RSS MiB | peak RSS MiB | gateway CPU %% | critical missed in window | sessions missing any | max per session | missed after (of sent) | duplicates | publisher ticks lost | admission deferred (wait s) | handshakes refused | demotions | gateway drops | upstream router drops |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Rows {
		if x.Err != "" {
			p("| %s | %d | ERROR: %s ||||||||||||||||||||\n", x.Fault, x.Sessions, x.Err)
			continue
		}
		p("| %s | %d | %d | %s | %s | %d | %d | %s | %s | %.0f | %d / %d (%.2f %%) | %d | %d | %d / %d | %d | %d | %s (%.1f s) | %.0f | %.0f | %s | %s |\n",
			x.Fault, x.Sessions, x.BackUp, secs(x.UpSecs), secs(x.DataSecs), x.Reconnects, x.Redials,
			mib(x.IdleRSS), mib(x.PeakRSS), x.CPU, x.MissedWindow, x.SentWindow, pct(x.MissedWindow, x.SentWindow),
			x.SessionsMissedWindow, x.MaxSessionWindow, x.MissedAfter, x.SentAfter, x.Duplicates, x.PubFailed, x.Deferred, x.DeferWait, x.HSRefused, x.Demotions, x.Drops, x.UpstreamDrops)
	}
	for _, n := range r.Notes {
		p("\n%s\n", n)
	}
	return string(b)
}

func secs(s float64) string {
	if s < 0 {
		return "not within budget"
	}
	return strconv.FormatFloat(s, 'f', 1, 64)
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
