package egress

// One scenario on one system (RunScenario): devices, publishers, drain, one row per
// (stream, device); and the helpers only it uses.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/eval/benchkit"
	"github.com/picobridge/picobridge/sim/linkemu"
	"github.com/picobridge/picobridge/zenohpath"
)

// RunScenario runs sc once on sys: start the system, attach the devices (impaired ones
// through linkemu), publish every stream for sc.Duration, drain, and return one row per
// (stream, device that subscribes to it).
func RunScenario(ctx context.Context, o Options, sc Scenario, sys System, dir string) ([]Row, error) {
	o.defaults()
	s, err := startSystem(o, sc, sys, dir)
	if err != nil {
		return nil, err
	}
	defer s.stop()

	queue := sc.LinkQueue
	if queue <= 0 {
		queue = o.LinkQueue
	}
	var proxy linkemu.Proxy
	needProxy := false
	for _, d := range sc.Devices {
		needProxy = needProxy || d.Impaired
	}
	if needProxy {
		imp := linkemu.Impairment{Rate: sc.Link}
		prof := linkemu.Profile{Name: fmt.Sprintf("rate-%.0fbps", float64(sc.Link)), ToDevice: imp, ToGateway: imp}
		px, err := linkemu.NewTCPProxy("127.0.0.1:0", s.addr, linkemu.Config{Profile: prof, Seed: o.Seed, QueueBytes: queue})
		if err != nil {
			return nil, fmt.Errorf("linkemu: %w", err)
		}
		defer px.Close()
		proxy = px
	}

	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Devices.
	recvs := map[[2]string]*recv{} // (stream name, device) → recv
	var sessions []*zenohpath.Session
	defer func() {
		for _, x := range sessions {
			_ = x.Close()
		}
	}()
	for _, d := range sc.Devices {
		ep := s.ep
		if d.Impaired {
			ep = "tcp/" + proxy.Addr()
		}
		ds, err := zenohpath.Open(octx, zenohpath.Config{Connect: []string{ep}})
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", d.Name, err)
		}
		sessions = append(sessions, ds)
		if _, err := server.DeclareProbeResponder(ds, d.Name); err != nil {
			return nil, fmt.Errorf("device %s: probe responder: %w", d.Name, err)
		}
		// Which streams each subscription covers: by exact key or "/**" prefix.
		byKey := map[string]*recv{}
		for _, st := range sc.Streams {
			for _, sub := range d.Subs {
				if covers(sub, st.Key) {
					r := &recv{seen: map[uint32]bool{}, lastSeq: -1, keep: o.KeepSeqs}
					recvs[[2]string{st.Name, d.Name}] = r
					byKey[st.Key] = r
					break
				}
			}
		}
		for _, sub := range d.Subs {
			if _, err := ds.DeclareSubscriber(sub, func(smp zenohpath.Sample) {
				now := time.Now()
				seq, sent, ok := decodePayload(smp.Payload())
				if !ok {
					return
				}
				if r := byKey[smp.KeyExpr()]; r != nil {
					r.add(seq, sent, now)
				}
			}); err != nil {
				return nil, fmt.Errorf("device %s: subscribe %s: %w", d.Name, sub, err)
			}
		}
	}
	if sys == Gateway {
		if err := waitDevices(ctx, s, sc); err != nil {
			return nil, err
		}
	} else {
		time.Sleep(500 * time.Millisecond) // declarations reach the router
	}

	// Publishers: one session per stream, so no stream waits behind another in the
	// publisher's own queue.
	type pubState struct {
		st   Stream
		pub  *zenohpath.Publisher
		sent int
		err  error
	}
	pubs := make([]*pubState, 0, len(sc.Streams))
	for _, st := range sc.Streams {
		ps, err := zenohpath.Open(octx, zenohpath.Config{Connect: []string{s.ep}})
		if err != nil {
			return nil, fmt.Errorf("publisher %s: %w", st.Name, err)
		}
		sessions = append(sessions, ps)
		po := zenohpath.PublisherOptions{Express: st.Express, Priority: st.Priority}
		if st.Block {
			po.CongestionControl = zenohpath.CongestionControlBlock
		}
		if st.BestEffort {
			po.Reliability = zenohpath.ReliabilityBestEffort
		}
		pub, err := ps.DeclarePublisher(st.Key, po)
		if err != nil {
			return nil, err
		}
		pubs = append(pubs, &pubState{st: st, pub: pub})
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, p := range pubs {
		for !p.pub.HasMatchingSubscribers() {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("publisher %s: no matching subscriber after 20 s", p.st.Name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	m0, err := s.scrape()
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	u0, err := benchkit.ReadUsage(s.proc.PID())
	if err != nil {
		return nil, err
	}
	watch := benchkit.WatchRSS(s.proc.PID(), 100*time.Millisecond)
	tStart := time.Now()
	fmt.Fprintf(o.Log, "%s / %s: publishing for %v\n", sc.ID, sys, sc.Duration)
	if sc.StepTo > 0 && proxy != nil {
		step := time.AfterFunc(sc.StepAt, func() {
			imp := linkemu.Impairment{Rate: sc.StepTo}
			if err := proxy.SetProfile(linkemu.Profile{Name: fmt.Sprintf("rate-%.0fbps", float64(sc.StepTo)), ToDevice: imp, ToGateway: imp}); err != nil {
				fmt.Fprintf(o.Log, "%s / %s: link step: %v\n", sc.ID, sys, err)
			}
		})
		defer step.Stop()
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, p := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, max(p.st.Size, PayloadHeader))
			period := time.Duration(float64(time.Second) / p.st.RateHz)
			next := time.Now()
			end := tStart.Add(sc.Duration)
			for seq := uint32(0); ; seq++ {
				if !next.Before(end) {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Until(next)):
				}
				encodePayload(buf, seq, time.Now())
				if err := p.pub.Put(buf, nil); err != nil && p.err == nil {
					p.err = err
				}
				p.sent++
				next = next.Add(period)
			}
		}()
	}
	select {
	case <-ctx.Done():
	case <-time.After(sc.Duration):
	}
	close(stop)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	totalSent := 0
	for _, p := range pubs {
		for _, d := range sc.Devices {
			if recvs[[2]string{p.st.Name, d.Name}] != nil {
				totalSent += p.sent
			}
		}
	}
	// Drain: until everything arrived, or nothing more arrives for 2 s, or sc.Drain.
	drain := sc.Drain
	if drain <= 0 {
		drain = 10 * time.Second
	}
	total := func() int {
		n := 0
		for _, r := range recvs {
			n += r.count()
		}
		return n
	}
	dEnd, last, lastAt := time.Now().Add(drain), total(), time.Now()
	for time.Now().Before(dEnd) && last < totalSent && time.Since(lastAt) < 2*time.Second {
		time.Sleep(100 * time.Millisecond)
		if n := total(); n != last {
			last, lastAt = n, time.Now()
		}
	}
	maxRSS, _ := watch.Stop()
	u1, _ := benchkit.ReadUsage(s.proc.PID())
	m1, err := s.scrape()
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var drops float64
	var reasons string
	var delta benchkit.Metrics
	if m1 != nil {
		delta = benchkit.Delta(m0, m1)
		drops, reasons = dropSummary(delta)
	}
	changes := map[string]int{}
	if sys == Gateway {
		dz, err := getDevicez(s)
		if err != nil {
			return nil, err
		}
		for _, d := range dz.Devices {
			for _, tr := range d.Classifier.History {
				if !tr.At.Before(tStart) && !strings.EqualFold(tr.From, "unknown") {
					changes[d.Name]++
				}
			}
		}
	}

	// One row per (stream or group, device), in stream order.
	type acc struct {
		name          string
		sent, dups, o int
		seen          int
		lat           []float64
		after         []float64 // latencies of samples sent from the step + grace
		bytes, offer  float64
		seqs          []uint32
		err           error
	}
	var order [][2]string
	accs := map[[2]string]*acc{}
	for _, p := range pubs {
		if p.err != nil {
			fmt.Fprintf(o.Log, "%s / %s: publisher %s: put error: %v\n", sc.ID, sys, p.st.Name, p.err)
		}
		name := p.st.Name
		if p.st.Group != "" {
			name = p.st.Group
		}
		for _, d := range sc.Devices {
			r := recvs[[2]string{p.st.Name, d.Name}]
			if r == nil {
				continue
			}
			k := [2]string{name, d.Name}
			a := accs[k]
			if a == nil {
				a = &acc{name: name}
				accs[k] = a
				order = append(order, k)
			}
			r.mu.Lock()
			a.sent += p.sent
			a.seen += len(r.seen)
			a.dups += r.dups
			a.o += r.ooo
			a.lat = append(a.lat, r.lat...)
			a.bytes += float64(len(r.seen) * p.st.Size)
			a.offer += float64(p.sent * p.st.Size)
			{
				from := tStart.Add(afterFrom(sc)).UnixNano()
				for i, at := range r.sentAt {
					if at >= from {
						a.after = append(a.after, r.lat[i])
					}
				}
			}
			a.seqs = append(a.seqs, r.seqs...)
			r.mu.Unlock()
			if a.err == nil {
				a.err = p.err
			}
		}
	}
	var rows []Row
	for _, k := range order {
		a := accs[k]
		row := Row{Scenario: sc.ID, Title: sc.Title, System: sys, Stream: a.name, Device: k[1],
			Sent: a.sent, Delivered: a.seen, Duplicates: a.dups, OutOfOrder: a.o,
			P50: benchkit.Percentile(a.lat, 0.50), P99: benchkit.Percentile(a.lat, 0.99), Max: benchkit.Percentile(a.lat, 1),
			Drops: drops, DropsKnown: m1 != nil, DropReasons: reasons,
			RSSBase: u0.RSS, RSSGrowth: max(maxRSS-u0.RSS, 0), PeakRSS: u1.PeakRSS, CPU: u1.CPU - u0.CPU,
			ClassChanges: -1, Seqs: a.seqs, Metrics: delta}
		row.Lost = row.Sent - row.Delivered
		secs := sc.Duration.Seconds()
		row.Goodput, row.Offered = a.bytes/secs, a.offer/secs
		row.LinkBps = float64(sc.Link) / 8
		row.P99AfterStep = -1
		if len(a.after) > 0 {
			row.P99AfterStep = benchkit.Percentile(a.after, 0.99)
		}
		if sc.StepTo > 0 {
			at := sc.StepAt.Seconds() / secs
			row.LinkBps = (at*float64(sc.Link) + (1-at)*float64(sc.StepTo)) / 8
		}
		if sys == Gateway {
			row.ClassChanges = changes[k[1]]
		}
		if a.err != nil {
			row.Err = "put: " + oneLine(a.err)
		}
		for _, t := range sc.Targets {
			if (t.Stream == "" || t.Stream == row.Stream) && (t.Device == "" || t.Device == row.Device) && (t.System == "" || t.System == sys) {
				row.Target = t.Text
				row.Met = "no"
				if t.Check(row) {
					row.Met = "yes"
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// LearnGrace is when the "p99 from" column starts in a scenario without a rate step: 2 s
// after publishing started, when a learned link budget (issue 30) has settled.
const LearnGrace = 2 * time.Second

// afterFrom is when the samples of the "p99 from" column start, after publishing started.
func afterFrom(sc Scenario) time.Duration {
	if sc.StepTo > 0 {
		return sc.StepAt + sc.StepGrace
	}
	return LearnGrace
}

// covers: sub is key itself or a "prefix/**" that includes it.
func covers(sub, key string) bool {
	if sub == key {
		return true
	}
	if p, ok := strings.CutSuffix(sub, "/**"); ok {
		return strings.HasPrefix(key, p+"/")
	}
	return false
}

// dropSummary sums the drop counter families of a metrics delta and lists the non-zero
// reasons, e.g. "router congestion=3; bridge queue_full=2".
func dropSummary(d benchkit.Metrics) (float64, string) {
	fams := []struct{ name, short string }{
		{"picobridge_router_dropped_total", "router"},
		{"picobridge_transport_dropped_total", "transport"},
		{"picobridge_bridge_samples_dropped_total", "bridge"},
	}
	var total float64
	var parts []string
	for _, f := range fams {
		by := d.By(f.name, "reason")
		keys := make([]string, 0, len(by))
		for k := range by {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			total += by[k]
			parts = append(parts, fmt.Sprintf("%s %s=%.0f", f.short, k, by[k]))
		}
	}
	return total, strings.Join(parts, "; ")
}
