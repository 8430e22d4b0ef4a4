package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
)

// PartitionOptions configure Partition (issue 29 item 3).
type PartitionOptions struct {
	FaultOptions               // Sessions: devices in all, half on each gateway
	Zenohd       string        // zenohd binary (default $PICOBRIDGE_ANCHORS/bin/zenohd, scripts/anchors.sh)
	Cut          time.Duration // how long the Z1–Z2 link stays cut (default 2 min)
	After        time.Duration // watched after every device delivers again (default 10 s)
	Budget       time.Duration // the longest the heal may take (default 60 s)
}

// PartitionReport is the result of Partition.
type PartitionReport struct {
	Start          time.Time
	Load0, LoadEnd string
	O              PartitionOptions
	// HealSecs: from the heal until every device behind Z2 received a sample published
	// after it (subscriptions propagated again); -1: not within Budget.
	HealSecs float64
	// Per side (A: gateway 1 on Z1, with the publisher; B: gateway 2 on Z2, across the cut):
	// samples sent × devices and missed during cut+heal (window) and after.
	A, B       lgEvent
	ADevUp     int // device sessions open at the end, per side
	BDevUp     int
	ALost      int // device sessions the gateways closed
	BLost      int
	Loops      float64   // the gateways' picobridge_router_dropped_total{reason="loop"}
	Drops      [2]string // per gateway: lane drops of critical routes by reason, router drops by reason
	ZenohdNote string
}

func (o *PartitionOptions) defaults() error {
	if err := o.FaultOptions.defaults(); err != nil {
		return err
	}
	if o.Zenohd == "" {
		if d := os.Getenv("PICOBRIDGE_ANCHORS"); d != "" {
			o.Zenohd = filepath.Join(d, "bin", "zenohd")
		}
	}
	if o.Zenohd == "" {
		return errors.New("partition: no zenohd (--zenohd, or PICOBRIDGE_ANCHORS from scripts/anchors.sh)")
	}
	if o.Cut <= 0 {
		o.Cut = 2 * time.Minute
	}
	if o.After <= 0 {
		o.After = 10 * time.Second
	}
	if o.Budget <= 0 {
		o.Budget = 60 * time.Second
	}
	o.Sessions = max(o.Sessions, 2)
	return nil
}

// startZenohd starts zenohd listening on a free port with args, and waits until the port
// accepts.
func startZenohd(bin, name string, args ...string) (*benchkit.Proc, string, error) {
	port, err := benchkit.FreePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := benchkit.Start(name, nil, append([]string{bin, "-l", "tcp/" + addr, "--no-multicast-scouting"}, args...)...)
	if err != nil {
		return nil, "", err
	}
	for t0 := time.Now(); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return p, addr, nil
		}
		if time.Since(t0) > 30*time.Second {
			p.Stop(3 * time.Second)
			return nil, "", fmt.Errorf("%s: not listening on %s after 30 s: %s", name, addr, p.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Partition runs two zenohd routers Z1 and Z2 (Z2 connects to Z1 through a proxy this
// process controls), gateway 1 on Z1 and gateway 2 on Z2, half the devices on each, and the
// critical stream published on Z1. It cuts the Z1–Z2 link for Cut, heals it, and measures
// how long the devices behind Z2 take to receive again, what each side missed, duplicates
// and the gateways' loop drops.
func Partition(ctx context.Context, o PartitionOptions) (*PartitionReport, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	rep := &PartitionReport{Start: time.Now(), Load0: benchkit.LoadAvg(), O: o, HealSecs: -1}
	if _, err := benchkit.RaiseNoFile(1 << 20); err != nil {
		return nil, err
	}
	z1, z1addr, err := startZenohd(o.Zenohd, "zenohd-1")
	if err != nil {
		return rep, err
	}
	defer z1.Stop(5 * time.Second)
	px, err := newCutProxy(z1addr)
	if err != nil {
		return rep, err
	}
	defer px.close()
	z2, z2addr, err := startZenohd(o.Zenohd, "zenohd-2", "-e", "tcp/"+px.addr)
	if err != nil {
		return rep, err
	}
	defer z2.Stop(5 * time.Second)
	g1, err := startGateway(o.FaultOptions, "gateway-1", "fa2901", "tcp/"+z1addr)
	if err != nil {
		return rep, err
	}
	defer g1.stop()
	g2, err := startGateway(o.FaultOptions, "gateway-2", "fa2902", "tcp/"+z2addr)
	if err != nil {
		return rep, err
	}
	defer g2.stop()
	half := o.FaultOptions
	half.Sessions = o.Sessions / 2
	maxSeq := uint32((o.Cut+o.Budget+o.After+2*time.Minute).Seconds()*o.RateHz) + 1024
	la, err := startLoadgen(half, g1.addr, true, maxSeq)
	if err != nil {
		return rep, err
	}
	defer la.p.Stop(10 * time.Second)
	lb, err := startLoadgen(half, g2.addr, true, maxSeq)
	if err != nil {
		return rep, err
	}
	defer lb.p.Stop(10 * time.Second)
	for _, lg := range []loadgenProc{la, lb} {
		ev, err := lg.cmd("connect", "connected", 4*time.Minute)
		if err != nil {
			return rep, err
		}
		if ev.OK != half.Sessions {
			return rep, fmt.Errorf("partition: %d of %d devices connected: %s", ev.OK, half.Sessions, ev.FirstError)
		}
	}
	pctx, stopPub := context.WithCancel(ctx)
	pub := startCritPub(pctx, z1addr, o.Size, o.Batch, o.RateHz)
	defer func() { stopPub(); pub.stop() }()
	for side, lg := range []loadgenProc{la, lb} {
		if d, n, err := waitAllData(lg, 0, half.Sessions, 60*time.Second); err != nil {
			return rep, err
		} else if n < half.Sessions {
			return rep, fmt.Errorf("partition: side %c: %d of %d devices received within %v", 'A'+side, n, half.Sessions, d)
		}
	}
	time.Sleep(2 * time.Second)
	seqCut := pub.next()
	px.cut()
	fmt.Fprintf(o.Log, "partition: Z1–Z2 cut for %v\n", o.Cut)
	select {
	case <-ctx.Done():
		return rep, ctx.Err()
	case <-time.After(o.Cut):
	}
	seqHeal := pub.next()
	tHeal := time.Now()
	if err := px.heal(); err != nil {
		return rep, err
	}
	if _, n, err := waitAllData(lb, seqHeal, half.Sessions, o.Budget); err != nil {
		return rep, err
	} else if n >= half.Sessions {
		rep.HealSecs = time.Since(tHeal).Seconds()
	}
	seqBack := pub.next()
	time.Sleep(o.After)
	seqEnd := pub.next()
	time.Sleep(time.Second)
	q := fmt.Sprintf("losses %d %d %d", seqCut, seqBack, seqEnd)
	if rep.A, err = la.cmd(q, "losses", 30*time.Second); err != nil {
		return rep, err
	}
	if rep.B, err = lb.cmd(q, "losses", 30*time.Second); err != nil {
		return rep, err
	}
	sa, err := la.cmd("status", "status", 10*time.Second)
	if err != nil {
		return rep, err
	}
	sb, err := lb.cmd("status", "status", 10*time.Second)
	if err != nil {
		return rep, err
	}
	rep.ADevUp, rep.BDevUp, rep.ALost, rep.BLost = sa.Up, sb.Up, sa.LostSessions, sb.LostSessions
	for i, g := range []*node{g1, g2} {
		if m, err := g.metrics(); err == nil {
			rep.Loops += m.Sum("picobridge_router_dropped_total", map[string]string{"reason": "loop"})
			rep.Drops[i] = fmt.Sprintf("lanes (critical routes): %s; router: %s",
				orNone(reasons(m.By("picobridge_bridge_critical_samples_dropped_total", "reason"))),
				orNone(reasons(m.By("picobridge_router_dropped_total", "reason"))))
		}
	}
	out, _ := benchkit.Start("zenohd-version", nil, o.Zenohd, "--version")
	if out != nil {
		_ = out.Wait(10 * time.Second)
		for _, l := range out.Lines() {
			if strings.HasPrefix(l.Text, "zenohd v") {
				rep.ZenohdNote = strings.TrimSpace(l.Text)
			}
		}
	}
	rep.LoadEnd = benchkit.LoadAvg()
	return rep, nil
}

// Markdown prints the partition table.
func (r *PartitionReport) Markdown() string {
	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	o := r.O
	p("## Partition and heal (%s UTC)\n\n", r.Start.UTC().Format("2006-01-02 15:04"))
	p("Two zenohd routers (%s), Z2 connected to Z1 through a TCP proxy; gateway 1 (%s) on Z1 with %d devices (side A), gateway 2 on Z2 with %d (side B); critical stream %g Hz published on Z1. Link cut for %v, then healed. Load average at start %s, at end %s.\n\n",
		r.ZenohdNote, o.Gateway, o.Sessions/2, o.Sessions/2, o.RateHz, o.Cut, r.Load0, r.LoadEnd)
	p("| side | devices open at end (lost) | missed cut → all delivering | missed after (of sent) | duplicates |\n|---|---|---|---|---|\n")
	row := func(name string, e lgEvent, up, lost int) {
		p("| %s | %d (%d) | %d / %d (%.1f %%) | %d / %d | %d |\n", name, up, lost, e.MissedAB, e.SentAB, pct(e.MissedAB, e.SentAB), e.MissedBC, e.SentBC, e.Duplicates)
	}
	row("A (with the publisher)", r.A, r.ADevUp, r.ALost)
	row("B (across the cut)", r.B, r.BDevUp, r.BLost)
	p("\nHeal → every side-B device delivering: %s s (lease 10 s). Loop drops at the gateways: %.0f. Gateway 1 drops over the run: %s. Gateway 2: %s.\n",
		secs(r.HealSecs), r.Loops, r.Drops[0], r.Drops[1])
	return b.String()
}
