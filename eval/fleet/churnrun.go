package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
	"github.com/picobridge/picobridge/zenohpath"
)

// ChurnOptions configure Churn (issue 29 item 2).
type ChurnOptions struct {
	FaultOptions
	JoinHz, LeaveHz float64       // sessions joining and leaving per second (default 10, 10)
	Duration        time.Duration // of the soak (default 30 min)
	Critical        int           // sessions that never leave; their critical samples are checked (default 100)
	Sample          time.Duration // sampling period of the gateway (default 5 s)
}

func (o *ChurnOptions) defaults() error {
	if err := o.FaultOptions.defaults(); err != nil {
		return err
	}
	if o.JoinHz <= 0 && o.LeaveHz <= 0 {
		o.JoinHz, o.LeaveHz = 10, 10
	}
	if o.Duration <= 0 {
		o.Duration = 30 * time.Minute
	}
	if o.Critical <= 0 {
		o.Critical = 100
	}
	o.Critical = min(o.Critical, o.Sessions)
	if o.Sample <= 0 {
		o.Sample = 5 * time.Second
	}
	return nil
}

// ChurnSample is one reading of the gateway during the soak.
type ChurnSample struct {
	At         time.Duration // since the churn started
	RSS        int64         // VmRSS, bytes
	FDs        int
	Goroutines float64 // go_goroutines
	Faces      int     // device faces (upstream excluded) in the route table
	Subs, Toks int     // their subscribers and liveliness tokens
}

// ChurnReport is the result of Churn.
type ChurnReport struct {
	Start          time.Time
	Load0, LoadEnd string
	O              ChurnOptions
	Samples        []ChurnSample
	// Slopes per hour: RSS (MiB), goroutines, fds, faces, subscribers, tokens, fitted to
	// the samples after Warmup.
	Warmup                                  time.Duration
	RSS, Goroutines, FDs, Faces, Subs, Toks Slope
	Joins, JoinFailed, Leaves, Live         int
	// After the soak: the route table's device faces, subscribers and tokens against the
	// load generator's open sessions (Live): equal when every leave's declarations were undone.
	EndFaces, EndSubs, EndToks int
	// The critical subset: samples sent to it (× sessions) and missed.
	CritSent, CritMissed, CritSessionsMissed int
	Duplicates                               int // samples a critical session received twice
	// Gateway's /metrics at the end: lane drops by reason (critical routes' drops by
	// reason), router drops by reason, supervisor mode changes.
	Drops, CritDrops, RouterDrops string
	SupervisorTransitions         float64
	Err                           string
}

// Churn keeps Sessions devices on the gateway while JoinHz join and LeaveHz leave per
// second for Duration, publishes the critical stream (RateHz) to the upstream router for
// all of them, checks that the first Critical sessions (which never leave) receive every
// sample, samples the gateway every Sample, and fits slopes per hour.
func Churn(ctx context.Context, o ChurnOptions) (*ChurnReport, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	rep := &ChurnReport{Start: time.Now(), Load0: benchkit.LoadAvg(), O: o}
	if _, err := benchkit.RaiseNoFile(1 << 20); err != nil {
		return nil, err
	}
	topo, err := startTopology(o.FaultOptions)
	if err != nil {
		return rep, err
	}
	defer topo.stop()
	maxSeq := uint32((o.Duration+2*time.Minute).Seconds()*o.RateHz) + 1024
	lg, err := startLoadgen(o.FaultOptions, topo.gw.addr, false, maxSeq)
	if err != nil {
		return rep, err
	}
	defer lg.p.Stop(10 * time.Second)
	ev, err := lg.cmd("connect", "connected", 4*time.Minute)
	if err != nil {
		return rep, err
	}
	pctx, stopPub := context.WithCancel(ctx)
	pub := startCritPub(pctx, topo.up.addr, o.Size, o.Batch, o.RateHz)
	defer func() { stopPub(); pub.stop() }()
	if d, n, err := waitAllData(lg, 0, ev.OK, 60*time.Second); err != nil {
		return rep, err
	} else if n < ev.OK {
		return rep, fmt.Errorf("only %d of %d sessions received the critical stream within %v", n, ev.OK, d)
	}
	time.Sleep(time.Second)
	seqA := pub.next()
	t0 := time.Now()
	done := make(chan lgEvent, 1)
	errc := make(chan error, 1)
	go func() {
		e, err := lg.cmd(fmt.Sprintf("churn %g %g %g %d", o.JoinHz, o.LeaveHz, o.Duration.Seconds(), o.Critical), "churned", o.Duration+5*time.Minute)
		if err != nil {
			errc <- err
			return
		}
		done <- e
	}()
	tick := time.NewTicker(o.Sample)
	defer tick.Stop()
	var end lgEvent
loop:
	for {
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case err := <-errc:
			return rep, err
		case end = <-done:
			break loop
		case <-tick.C:
			if s, err := sampleGateway(topo.gw, o.Gateway); err == nil {
				s.At = time.Since(t0)
				rep.Samples = append(rep.Samples, s)
			} else {
				fmt.Fprintf(o.Log, "churn: sample: %v\n", err)
			}
		}
	}
	seqC := pub.next()
	rep.Joins, rep.JoinFailed, rep.Leaves, rep.Live = end.Joins, end.JoinFailed, end.Leaves, end.Live
	time.Sleep(3 * time.Second) // the last leaves' sessions end at the gateway
	if s, err := sampleGateway(topo.gw, o.Gateway); err == nil {
		rep.EndFaces, rep.EndSubs, rep.EndToks = s.Faces, s.Subs, s.Toks
	} else {
		return rep, err
	}
	if m, err := topo.gw.metrics(); err == nil {
		rep.Drops = reasons(m.By("picobridge_bridge_samples_dropped_total", "reason"))
		rep.CritDrops = reasons(m.By("picobridge_bridge_critical_samples_dropped_total", "reason"))
		rep.RouterDrops = reasons(m.By("picobridge_router_dropped_total", "reason"))
		rep.SupervisorTransitions = m.Sum("picobridge_bridge_supervisor_transitions_total", nil)
	}
	ls, err := lg.cmd(fmt.Sprintf("losses %d %d %d %d", seqA, seqA, seqC, o.Critical), "losses", 30*time.Second)
	if err != nil {
		return rep, err
	}
	rep.CritSent, rep.CritMissed, rep.CritSessionsMissed = ls.SentBC, ls.MissedBC, ls.SessionsMissedBC
	rep.Duplicates = ls.Duplicates
	rep.Warmup = Warmup(o.Duration)
	fit := func(f func(ChurnSample) float64) Slope {
		var x, y []float64
		for _, s := range rep.Samples {
			if s.At >= rep.Warmup {
				x, y = append(x, s.At.Hours()), append(y, f(s))
			}
		}
		return FitSlope(x, y)
	}
	rep.RSS = fit(func(s ChurnSample) float64 { return float64(s.RSS) / (1 << 20) })
	rep.Goroutines = fit(func(s ChurnSample) float64 { return s.Goroutines })
	rep.FDs = fit(func(s ChurnSample) float64 { return float64(s.FDs) })
	rep.Faces = fit(func(s ChurnSample) float64 { return float64(s.Faces) })
	rep.Subs = fit(func(s ChurnSample) float64 { return float64(s.Subs) })
	rep.Toks = fit(func(s ChurnSample) float64 { return float64(s.Toks) })
	rep.LoadEnd = benchkit.LoadAvg()
	return rep, nil
}

// Warmup is the part of a soak of d left out of the slopes: the first fifth, at most
// 2 minutes (the heap and the pools grow to their working size while the first
// joins and leaves go through).
func Warmup(d time.Duration) time.Duration { return min(d/5, 2*time.Minute) }

// sampleGateway reads the gateway's RSS and fds (/proc), goroutines (/metrics) and its
// route table's device faces with their subscribers and tokens (/routez of run, /routerz
// of router: the JSON the admin space serves too).
func sampleGateway(gw *node, sys System) (ChurnSample, error) {
	var s ChurnSample
	u, err := benchkit.ReadUsage(gw.p.PID())
	if err != nil {
		return s, err
	}
	s.RSS, s.FDs = u.RSS, u.FDs
	m, err := gw.metrics()
	if err != nil {
		return s, err
	}
	s.Goroutines = m.Sum("go_goroutines", nil)
	path := "/routez"
	if sys == GoRouter {
		path = zenohpath.StatusPath
	}
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + gw.http + path)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	var st struct {
		Faces []zenohpath.FaceInfo `json:"faces"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	for _, f := range st.Faces {
		if f.Upstream || f.WhatAmI != "client" || strings.TrimLeft(strings.ToLower(f.ZID), "0") == gatewayZID {
			continue
		}
		s.Faces++
		s.Subs += f.Subscribers
		s.Toks += f.Tokens
	}
	return s, nil
}

// Markdown prints the churn tables.
func (r *ChurnReport) Markdown() string {
	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	o := r.O
	p("## Churn soak (%s UTC)\n\n", r.Start.UTC().Format("2006-01-02 15:04"))
	p("%d sessions, %g joins/s and %g leaves/s for %v, critical stream %g Hz to all (the first %d never leave and are checked), gateway %s sampled every %v (%d samples). Load average at start %s, at end %s.\n\n",
		o.Sessions, o.JoinHz, o.LeaveHz, o.Duration, o.RateHz, o.Critical, o.Gateway, o.Sample, len(r.Samples), r.Load0, r.LoadEnd)
	p("Slopes: least squares over the samples after the first %v (warm-up).\n\n", r.Warmup)
	p("| series | first | last | slope per hour | ± 2 s.e. |\n|---|---|---|---|---|\n")
	first, last := ChurnSample{}, ChurnSample{}
	if len(r.Samples) > 0 {
		first, last = r.Samples[0], r.Samples[len(r.Samples)-1]
	}
	row := func(name string, a, z float64, s Slope) {
		p("| %s | %.1f | %.1f | %+.2f | %s |\n", name, a, z, s.PerX, se2(s))
	}
	row("RSS MiB", float64(first.RSS)/(1<<20), float64(last.RSS)/(1<<20), r.RSS)
	row("goroutines", first.Goroutines, last.Goroutines, r.Goroutines)
	row("open fds", float64(first.FDs), float64(last.FDs), r.FDs)
	row("device faces", float64(first.Faces), float64(last.Faces), r.Faces)
	row("subscribers", float64(first.Subs), float64(last.Subs), r.Subs)
	row("liveliness tokens", float64(first.Toks), float64(last.Toks), r.Toks)
	agree := r.EndFaces == r.Live && r.EndSubs == r.Live && r.EndToks == r.Live
	p("\nJoins %d (failed %d), leaves %d. After the soak: %d sessions open at the load generator; the route table holds %d device faces, %d subscribers, %d tokens: %s.\n",
		r.Joins, r.JoinFailed, r.Leaves, r.Live, r.EndFaces, r.EndSubs, r.EndToks, map[bool]string{true: "every leave's declarations undone", false: "**they disagree**"}[agree])
	p("Critical subset: %d of %d samples missed (%d sessions missed any), %d received twice.\n", r.CritMissed, r.CritSent, r.CritSessionsMissed, r.Duplicates)
	p("Gateway drops over the run (lanes by reason): %s; of critical routes: %s; router: %s; supervisor mode changes: %.0f.\n",
		orNone(r.Drops), orNone(r.CritDrops), orNone(r.RouterDrops), r.SupervisorTransitions)
	if r.Err != "" {
		p("\nERROR: %s\n", r.Err)
	}
	return b.String()
}

func se2(s Slope) string {
	if math.IsNaN(s.StdErr) {
		return "—"
	}
	return fmt.Sprintf("%.2f", 2*s.StdErr)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
