package knobs

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Thresholds of the TX tuning decision tree (nano-ros tx-tuning.md, "The
// decision tree"), made numeric.
const (
	// comfortableShare: "comfortably under ~1 msg per socket window" means
	// the offered rate uses at most half of the sends the window allows.
	comfortableShare = 0.5
	// txBoundShare: batching alone is "still tx-bound" above 80 % use.
	txBoundShare = 0.8
	// headroom: a lowered socket window leaves 25 % spare sends.
	headroom = 1.25
	// minFlushMs: "drop toward 10–20 ms if your latency budget demands it".
	minFlushMs = 10
	// rxMessageOverhead: bytes a PUSH adds around a sample toward a device
	// (wire expression, PUT header, encoding, timestamp), for the size checks.
	rxMessageOverhead = 64
)

// socketWindowSteps are the socket timeouts advise picks from when lowering
// the window ("e.g. 5 ms", tx-tuning.md).
var socketWindowSteps = []int64{50, 20, 10, 5, 2, 1}

// Lane is how a device publishes one topic under a recommendation.
type Lane int

const (
	LanePerSample Lane = iota + 1 // no batching: one send per sample
	LaneBatched                   // coalesced by TX batching
	LaneExpress                   // tx_express: bypasses the batch
)

func (l Lane) String() string {
	switch l {
	case LaneBatched:
		return "batched"
	case LaneExpress:
		return "express"
	}
	return "per-sample"
}

// Recommendation is the advised value of one knob.
type Recommendation struct {
	Current Value
	Value   int64
	Reason  string
}

// Changed reports whether the recommendation differs from the resolved value.
func (r Recommendation) Changed() bool { return r.Value != r.Current.Value }

// TopicAdvice is the verdict on one topic.
type TopicAdvice struct {
	Topic  Topic
	Lane   Lane   // Pub topics
	Reason string // why this lane, or the RX verdict for Sub topics
}

// Throughput is the device TX model in samples per second. Capped is false
// on platforms without a per-fd TX ceiling, where the socket window does not
// bound TX and the model gives no number.
type Throughput struct {
	Capped      bool    `json:"capped"`
	Offered     float64 `json:"offered"`
	Untuned     float64 `json:"untuned"`     // every sample its own send, resolved window, no batching
	Current     float64 `json:"current"`     // the resolved knobs (no express publishers)
	Recommended float64 `json:"recommended"` // the recommended knobs and lanes
}

// Advice is the outcome of Advise.
type Advice struct {
	Resolved   *Resolved
	Traffic    *Traffic
	Settings   []Recommendation // registry order; only knobs advise reasons about
	Topics     []TopicAdvice
	Notes      []string
	Throughput Throughput
	// Capacity is the device capacity under the recommended knobs.
	Capacity Capacity
}

type txConfig struct {
	batch, split bool
	window       time.Duration
	lanes        map[string]Lane // Pub topic name → lane
}

// sendsNeeded is the socket sends per second the Pub topics need under cfg.
func sendsNeeded(cfg txConfig, batchSize int, pubs []Topic) float64 {
	var n float64
	for _, t := range pubs {
		batched := cfg.batch && cfg.lanes[t.Name] == LaneBatched
		n += t.RateHz / txSamplesPerSend(batchSize, t.SizeBytes, batched, cfg.split)
	}
	return n
}

// delivered is the samples per second the device gets out under cfg: the
// offered mix, scaled down when it needs more sends than the window allows.
func delivered(cfg txConfig, batchSize int, pubs []Topic, offered float64) float64 {
	need := sendsNeeded(cfg, batchSize, pubs)
	if need == 0 {
		return 0
	}
	return math.Min(offered, offered*sendRate(cfg.window)/need)
}

// Advise applies the TX tuning decision tree of nano-ros tx-tuning.md to the
// device's published topics and checks its subscribed topics against the
// capacity model:
//
//	total publish rate comfortably under ~1 msg per socket window → no tuning
//	  (and no batching: with ≤ 1 message per flush there is nothing to coalesce)
//	else: TX batching for topics whose budget covers a flush period
//	      (flush_ms lowered toward 10 ms when a budget demands it);
//	      + split lock when batching alone is still tx-bound;
//	      express (tx_express) for low-rate latency-critical topics;
//	      a lower socket timeout when everything is latency-critical at high
//	      rate or the sends still do not fit.
//
// The tree only applies where TX is capped by the window (capability
// per_fd_tx_ceiling); elsewhere it says so and recommends no TX change.
func Advise(r *Resolved, t *Traffic) *Advice {
	a := &Advice{Resolved: r, Traffic: t}
	var pubs, subs []Topic
	for _, tp := range t.Topics {
		if tp.Direction == Pub {
			pubs = append(pubs, tp)
			a.Throughput.Offered += tp.RateHz
		} else {
			subs = append(subs, tp)
		}
	}
	batchSize := int(r.Int(BatchUnicastSize))
	w0 := ms(r.Int(SocketTimeoutMs))
	f0 := r.Int(TxFlushMs)
	rec := map[string]Recommendation{}
	set := func(id string, v int64, reason string, args ...any) {
		rec[id] = Recommendation{Current: r.Get(id), Value: v, Reason: fmt.Sprintf(reason, args...)}
	}
	keep := func(id, reason string, args ...any) { set(id, r.Int(id), reason, args...) }

	cur := txConfig{batch: r.Bool(TxBatch), split: r.Bool(TxSplitLock), window: w0, lanes: map[string]Lane{}}
	untuned := txConfig{window: w0, lanes: map[string]Lane{}}
	for _, tp := range pubs {
		cur.lanes[tp.Name] = LaneBatched
		untuned.lanes[tp.Name] = LanePerSample
	}
	next := txConfig{batch: cur.batch, split: cur.split, window: w0, lanes: map[string]Lane{}}
	laneReason := map[string]string{}
	offered := a.Throughput.Offered
	sends0 := sendRate(w0)

	// lowerWindow applies the last branch of the tree: a shorter socket
	// window when the sends still do not fit (need per second) or a budget is
	// shorter than one window (every send on a per-fd platform may wait one).
	lowerWindow := func(need float64, budgets []time.Duration) {
		window := w0
		why := ""
		if need*headroom > sends0 {
			window = time.Duration(perFdSendEfficiency / (need * headroom) * float64(time.Second))
			why = fmt.Sprintf("the tuned traffic still needs %.1f sends/s, ~%.1f per %v window", need, need*w0.Seconds(), w0)
		}
		for _, b := range budgets {
			if b < window {
				window = b
				why = fmt.Sprintf("a latency-critical topic has a %v budget and each send may wait one window", b)
			}
		}
		if window >= w0 {
			return
		}
		step := int64(1)
		for _, st := range socketWindowSteps {
			if ms(st) <= window {
				step = st
				break
			}
		}
		next.window = ms(step)
		set(SocketTimeoutMs, step, "%s: more send windows per second, at the cost of read-task wakeups (model extrapolated from the 100 ms measurement)", why)
	}

	switch {
	case len(pubs) == 0:
		keep(TxBatch, "the device publishes nothing in this traffic")
	case !r.Cap(CapPerFdTxCeiling):
		a.Notes = append(a.Notes, fmt.Sprintf("platform %s has no per-socket TX ceiling (capabilities.per_fd_tx_ceiling = false): "+
			"the socket window does not cap TX, so the tuning tree does not apply", r.Platform.Name()))
		keep(TxBatch, "no per-fd TX ceiling on %s: no TX tuning needed", r.Platform.Name())
		for _, tp := range pubs {
			l := LanePerSample
			if cur.batch {
				l = LaneBatched
			}
			next.lanes[tp.Name] = l
			laneReason[tp.Name] = "no TX tuning needed"
		}
	case offered <= comfortableShare*sends0:
		var tight []time.Duration
		for _, tp := range pubs {
			next.lanes[tp.Name] = LanePerSample
			laneReason[tp.Name] = "total rate comfortably under one send per window"
			if tp.LatencyBudget < w0 {
				tight = append(tight, tp.LatencyBudget)
				laneReason[tp.Name] += fmt.Sprintf("; a send may wait one %v window, more than the budget", w0)
			}
		}
		lowerWindow(0, tight)
		if cur.batch && offered*float64(f0)/1000 <= 1 {
			next.batch, next.split = false, false
			set(TxBatch, 0, "%.1f msg/s is ≤ 1 message per %d ms flush: nothing to coalesce, and the flush overhead measurably hurts", offered, f0)
		} else {
			keep(TxBatch, "%.1f msg/s is comfortably under ~1 send per %v window (%.1f sends/s): no tuning needed", offered, w0, sends0)
			if cur.batch {
				for _, tp := range pubs {
					next.lanes[tp.Name] = LaneBatched
				}
			}
		}
	default:
		next.batch = true
		flush := f0
		var needWindow []time.Duration // budgets a lower window must serve
		for _, tp := range pubs {
			b := tp.LatencyBudget
			switch {
			case b >= ms(f0):
				next.lanes[tp.Name] = LaneBatched
				laneReason[tp.Name] = fmt.Sprintf("budget %v covers a %d ms flush", b, f0)
			case tp.RateHz*w0.Seconds() <= comfortableShare:
				next.lanes[tp.Name] = LaneExpress
				laneReason[tp.Name] = fmt.Sprintf("budget %v < %d ms flush, low rate (%.3g Hz ≤ 1 per 2 windows): bypass the batch", b, f0, tp.RateHz)
				if b < w0 {
					needWindow = append(needWindow, b)
					laneReason[tp.Name] += fmt.Sprintf("; an express send waits up to one socket window, so the window must be ≤ %v", b)
				}
			case b >= ms(minFlushMs):
				next.lanes[tp.Name] = LaneBatched
				flush = min(flush, b.Milliseconds())
				laneReason[tp.Name] = fmt.Sprintf("budget %v < %d ms flush at %.3g Hz (too fast for express): flush sooner", b, f0, tp.RateHz)
			default:
				next.lanes[tp.Name] = LaneExpress
				needWindow = append(needWindow, b)
				laneReason[tp.Name] = fmt.Sprintf("budget %v is below any flush period: express, with a shorter socket window", b)
			}
		}
		anyBatched := slices.ContainsFunc(pubs, func(tp Topic) bool { return next.lanes[tp.Name] == LaneBatched })
		if anyBatched {
			set(TxBatch, 1, "%.1f msg/s offered exceeds ~1 send per %v window (%.1f sends/s): coalesce samples into one send per flush", offered, w0, sends0)
		} else {
			next.batch = false
			set(TxBatch, 0, "every published topic is express: nothing left to batch")
		}
		if anyBatched && flush != f0 {
			set(TxFlushMs, flush, "a batched topic's latency budget is %d ms: a flush period must fit it", flush)
		}
		if anyBatched {
			next.split = cur.split // on already (Zephyr default): harmless, keep it
			noSplit := next
			noSplit.split = false
			if need := sendsNeeded(noSplit, batchSize, pubs); need > txBoundShare*sends0 {
				if r.Cap(CapThreads) {
					next.split = true
					set(TxSplitLock, 1, "batching alone needs %.1f sends/s of %.1f (still tx-bound): let publishers append while a flush is on the wire", need, sends0)
				} else {
					a.Notes = append(a.Notes, fmt.Sprintf("split lock would help (batching alone needs %.1f sends/s of %.1f) but platform %s has no threads", need, sends0, r.Platform.Name()))
				}
			}
		}
		lowerWindow(sendsNeeded(next, batchSize, pubs), needWindow)
	}
	if _, ok := rec[TxSplitLock]; !ok && len(pubs) > 0 {
		v := b2i(next.split && next.batch)
		if v != r.Int(TxSplitLock) {
			set(TxSplitLock, v, "follows batching: split lock needs TX batching")
		} else {
			keep(TxSplitLock, "no change needed")
		}
	}
	if _, ok := rec[TxFlushMs]; !ok && len(pubs) > 0 {
		keep(TxFlushMs, "no change needed")
	}
	if _, ok := rec[SocketTimeoutMs]; !ok && len(pubs) > 0 {
		keep(SocketTimeoutMs, "no change needed")
	}
	if next.batch && !r.Cap(CapFlushThread) && len(pubs) > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("platform %s has no flush thread: with batching on, the application's spin loop must flush", r.Platform.Name()))
	}

	// Throughput.
	a.Throughput.Capped = r.Cap(CapPerFdTxCeiling)
	if a.Throughput.Capped && len(pubs) > 0 {
		a.Throughput.Untuned = delivered(untuned, batchSize, pubs, offered)
		if !cur.batch {
			cur.lanes = untuned.lanes
		}
		a.Throughput.Current = delivered(cur, batchSize, pubs, offered)
		a.Throughput.Recommended = delivered(next, batchSize, pubs, offered)
	}

	if t.Observed != nil {
		a.Notes = append(a.Notes, txBoundNotes(r, pubs)...)
	}

	// RX: check subscribed topics against the capacity under the recommendation.
	over := map[string]int64{}
	for id, rc := range rec {
		over[id] = rc.Value
	}
	capa := CapacityOf(r.with(over))
	ring := int64(capa.RingDepth)
	frag := int64(0)
	slotSmall, slotLarge := int64(0), int64(0)
	// limit is a knob's maximum: advice never goes past it, and a topic that
	// needs more cannot be served at all, which its verdict says.
	limit := func(id string) int64 { return registry[byID[id]].Max }
	cannot := func(tp Topic, format string, args ...any) string {
		a.Notes = append(a.Notes, fmt.Sprintf("topic %s cannot be served: "+format, append([]any{tp.Name}, args...)...))
		return fmt.Sprintf("cannot be served: "+format, args...)
	}
	flush := t.GatewayFlush()
	for _, tp := range subs {
		var verdict []string
		msg := int64(tp.SizeBytes) + rxMessageOverhead
		if msg > int64(capa.MaxMessageBytes) {
			verdict = append(verdict, fmt.Sprintf("%d B message > %d B the device reassembles", msg, capa.MaxMessageBytes))
			if capa.Fragmentation {
				if top := limit(FragMaxSize); msg > top {
					verdict = append(verdict, cannot(tp, "%d B message > %s maximum %d B", msg, FragMaxSize, top))
				} else {
					frag = max(frag, min(roundUp(msg, 1024), top))
				}
			}
		}
		large := int64(tp.SizeBytes) > r.Int(SubscriberSizeThreshold) && capa.LargeSlots > 0
		slot := int64(capa.SlotBytes)
		if large {
			slot = int64(capa.LargeSlotBytes)
		}
		if int64(tp.SizeBytes) > slot {
			verdict = append(verdict, fmt.Sprintf("%d B sample > %d B subscriber slot", tp.SizeBytes, slot))
			id, step, need := SubscriberBufferSize, int64(256), &slotSmall
			if large {
				id, step, need = SubscriberLargeSize, 1024, &slotLarge
			}
			if top := limit(id); int64(tp.SizeBytes) > top {
				verdict = append(verdict, cannot(tp, "%d B sample > %s maximum %d B", tp.SizeBytes, id, top))
			} else {
				*need = max(*need, min(roundUp(int64(tp.SizeBytes), step), top))
			}
		}
		perFlush := tp.RateHz * flush.Seconds()
		if perFlush > float64(capa.RingDepth) {
			verdict = append(verdict, fmt.Sprintf("%.1f samples per %v flush > ring depth %d", perFlush, flush, capa.RingDepth))
			if top := limit(SubscriberRingDepth); perFlush > float64(top) {
				verdict = append(verdict, cannot(tp, "%.1f samples per %v flush > %s maximum %d", perFlush, flush, SubscriberRingDepth, top))
				ring = max(ring, top)
			} else {
				ring = max(ring, int64(math.Ceil(perFlush)))
			}
		}
		if len(verdict) == 0 {
			verdict = append(verdict, fmt.Sprintf("fits: %.1f per %v flush ≤ ring %d, %d B ≤ %d B", perFlush, flush, capa.RingDepth, tp.SizeBytes, capa.MaxSampleBytes(large)))
		}
		a.Topics = append(a.Topics, TopicAdvice{Topic: tp, Reason: strings.Join(verdict, "; ")})
	}
	if frag > 0 {
		set(FragMaxSize, frag, "a subscribed topic's message needs %d B reassembly (larger ones are dropped silently)", frag)
	}
	if slotSmall > 0 {
		set(SubscriberBufferSize, slotSmall, "a subscribed topic's sample needs a %d B slot (larger ones are dropped in the ring)", slotSmall)
	}
	if slotLarge > 0 {
		set(SubscriberLargeSize, slotLarge, "a large subscribed topic's sample needs a %d B slot", slotLarge)
	}
	if ring > int64(capa.RingDepth) {
		set(SubscriberRingDepth, ring, "a subscribed topic bursts %d samples per %v flush (a full ring drops the newest)", ring, flush)
	}
	if len(over) != len(rec) {
		for id, rc := range rec {
			over[id] = rc.Value
		}
		capa = CapacityOf(r.with(over))
	}
	a.Capacity = capa

	for _, tp := range pubs {
		a.Topics = append(a.Topics, TopicAdvice{Topic: tp, Lane: next.lanes[tp.Name], Reason: laneReason[tp.Name]})
	}
	if t.Observed != nil {
		a.Notes = append(a.Notes, observedNotes(t.Observed)...)
	}
	slices.SortStableFunc(a.Topics, func(x, y TopicAdvice) int { return x.Topic.Line - y.Topic.Line })
	for _, k := range registry {
		if rc, ok := rec[k.ID]; ok {
			// Never advise a value explain would reject.
			rc.Value = min(max(rc.Value, k.Min), k.Max)
			a.Settings = append(a.Settings, rc)
		}
	}
	return a
}

// dropHints say, per drop reason of the bridge, what made the gateway drop
// (docs/metrics.md, picobridge_bridge_samples_dropped_total).
var dropHints = []struct{ reason, hint string }{
	{"oversize", "larger than the device can receive: frag_max_size, batch size or subscriber slot"},
	{"ring_budget", "more samples of one key per flush than subscriber_ring_depth"},
	{"rate_limit", "the batched lane's token bucket (gateway policy.batched, not a device knob)"},
	{"stale", "older than policy.batched.stale_after when their flush came"},
	{"queue_full", "the batched lane held its maximum of distinct keys"},
	{"congestion", "replaced by a newer sample before the device's link took it, or refused by the link"},
	{"suspended", "forwarding suspended by the supervisor"},
	{"link_budget", "held back by the device's link budget (policy.link)"},
	{"closed", "the device's session had closed (it left or lost its link) with samples pending"},
}

// observedNotes are the notes on what a gateway measured: how long, the
// drops by reason, the batched flushes' occupancy of the ring budget.
func observedNotes(o *Observed) []string {
	notes := []string{fmt.Sprintf("traffic observed at the gateway for %v: rates weighted over %v, sizes the largest payload", o.Window.Round(100*time.Millisecond), o.RateTau)}
	seen := map[string]bool{}
	for _, h := range dropHints {
		seen[h.reason] = true
		if n := o.Dropped[h.reason]; n > 0 {
			notes = append(notes, fmt.Sprintf("the gateway dropped %d samples (%s): %s", n, h.reason, h.hint))
		}
	}
	var other []string
	for r, n := range o.Dropped {
		if !seen[r] && n > 0 {
			other = append(other, r)
		}
	}
	slices.Sort(other)
	for _, r := range other {
		notes = append(notes, fmt.Sprintf("the gateway dropped %d samples (%s)", o.Dropped[r], r))
	}
	if o.Flushes > 0 {
		notes = append(notes, fmt.Sprintf("batched flushes: %d, %d of them with a full ring budget (%d samples of one subscription); recent mean occupancy %.0f%% of the ring",
			o.Flushes, o.FullFlushes, o.RingDepth, 100*o.FlushOccupancy))
	}
	if o.Unmetered > 0 {
		notes = append(notes, fmt.Sprintf("%d samples of subscriptions beyond the gateway's per-device key limit are in no topic above", o.Unmetered))
	}
	return notes
}

func roundUp(v, step int64) int64 { return (v + step - 1) / step * step }

// with returns a copy of r with some knob values replaced (source unchanged).
func (r *Resolved) with(over map[string]int64) *Resolved {
	c := *r
	c.Values = slices.Clone(r.Values)
	for id, v := range over {
		c.Values[byID[id]].Value = v
	}
	return &c
}

// WriteAdvice prints the advice: the recommended settings with the reason
// for each, the lane of each topic, the expected throughput, and the lines to
// put in prj.conf (Zephyr) or the build environment.
func WriteAdvice(w io.Writer, a *Advice) error {
	var b strings.Builder
	r := a.Resolved
	fmt.Fprintf(&b, "platform: %s (%s)\n", r.Platform.Name(), r.Platform.File)
	if r.Board != nil {
		fmt.Fprintf(&b, "board:    %s (%s)\n", r.Board.Name(), r.Board.File)
	}
	var nPub, nSub int
	var rx float64
	for _, t := range a.Traffic.Topics {
		if t.Direction == Pub {
			nPub++
		} else {
			nSub++
			rx += t.RateHz
		}
	}
	fmt.Fprintf(&b, "traffic:  %s: %d published (%.1f msg/s), %d subscribed (%.1f msg/s)\n\n", a.Traffic.File, nPub, a.Throughput.Offered, nSub, rx)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KNOB\tNOW\tSET BY\tADVISE\tREASON")
	for _, s := range a.Settings {
		adv := s.Current.Knob.Format(s.Value)
		if !s.Changed() {
			adv = "keep"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Current.Knob.ID, s.Current, s.Current.Source.Rung, adv, s.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tDIR\tRATE\tSIZE\tBUDGET\tLANE\tWHY")
	for _, t := range a.Topics {
		lane := "-"
		if t.Topic.Direction == Pub {
			lane = t.Lane.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%g Hz\t%d B\t%v\t%s\t%s\n", t.Topic.Name, t.Topic.Direction, t.Topic.RateHz, t.Topic.SizeBytes, t.Topic.LatencyBudget, lane, t.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var express []string
	for _, t := range a.Topics {
		if t.Topic.Direction == Pub && t.Lane == LaneExpress {
			express = append(express, t.Topic.Name)
		}
	}
	if len(express) > 0 {
		fmt.Fprintf(&b, "\nexpress publishers (set tx_express in their QoS): %s\n", strings.Join(express, ", "))
	}

	tp := a.Throughput
	b.WriteString("\nexpected device TX throughput:\n")
	switch {
	case tp.Offered == 0:
		b.WriteString("  the device publishes nothing\n")
	case !tp.Capped:
		fmt.Fprintf(&b, "  offered %.1f msg/s; not capped by the socket window on %s (no per-fd TX ceiling)\n", tp.Offered, r.Platform.Name())
	default:
		fmt.Fprintf(&b, "  offered %.1f msg/s; untuned ~%.1f; current knobs ~%.1f; advised ~%.1f msg/s", tp.Offered, tp.Untuned, tp.Current, tp.Recommended)
		if tp.Recommended+1e-9 >= tp.Offered {
			b.WriteString(" (fits)\n")
		} else {
			fmt.Fprintf(&b, " (saturated: %.0f%% of offered)\n", 100*tp.Recommended/tp.Offered)
		}
	}
	c := a.Capacity
	fmt.Fprintf(&b, "device RX capacity (advised): message ≤ %d B, slot %d B (large %d B x%d), ring %d per burst (gateway flush %v); receive is not paced by the socket window\n",
		c.MaxMessageBytes, c.SlotBytes, c.LargeSlotBytes, c.LargeSlots, c.RingDepth, a.Traffic.GatewayFlush())
	for _, n := range a.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}

	var changed []Recommendation
	for _, s := range a.Settings {
		if s.Changed() {
			changed = append(changed, s)
		}
	}
	if len(changed) == 0 {
		b.WriteString("\nno knob changes advised\n")
	} else {
		kconfig := r.Platform.HasName("zephyr")
		if kconfig {
			b.WriteString("\nset it (prj.conf):\n")
		} else {
			b.WriteString("\nset it (build environment):\n")
		}
		for _, s := range changed {
			fmt.Fprintf(&b, "  %s\n", buildLine(s.Current.Knob, s.Value, kconfig))
		}
		b.WriteString("or as a board delta (TOML):\n")
		table := ""
		for _, s := range changed {
			if t := s.Current.Knob.Table(); t != table {
				table = t
				fmt.Fprintf(&b, "  [%s]\n", t)
			}
			fmt.Fprintf(&b, "  %s = %s\n", s.Current.Knob.Key(), s.Current.Knob.Format(s.Value))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// buildLine spells one setting for the build: a Kconfig line on Zephyr when
// the knob has a Kconfig symbol, else the canonical environment variable.
func buildLine(k Knob, v int64, kconfig bool) string {
	if kconfig {
		if names := k.EnvNames(EnvKconfig); len(names) > 0 {
			val := k.Format(v)
			if k.Type == Bool {
				val = map[bool]string{true: "y", false: "n"}[v != 0]
			}
			return names[0] + "=" + val
		}
	}
	if names := k.EnvNames(EnvCanonical); len(names) > 0 {
		return names[0] + "=" + strconv.FormatInt(v, 10) // bools as 1/0
	}
	return k.ID + " = " + k.Format(v)
}

// txBoundShareObserved: a device whose observed sends reach this share of
// its TX capacity is reported as likely TX-bound.
const txBoundShareObserved = 0.8

// txBoundNotes compares what a gateway saw a device send with the TX
// capacity of its knobs (Capacity.TxCapacity): at or near the capacity the
// image is TX-bound, and what its application publishes beyond it never
// reaches the gateway (nano-ros tx-tuning.md: ~9 msg/s untuned at 100 ms).
func txBoundNotes(r *Resolved, pubs []Topic) []string {
	c := CapacityOf(r)
	var notes []string
	for _, tp := range pubs {
		capa := c.TxCapacity(tp.SizeBytes)
		if capa <= 0 || tp.RateHz < txBoundShareObserved*capa {
			continue
		}
		n := fmt.Sprintf("%s: the device sent %.1f msg/s of %d B, %.0f%% of the ~%.1f msg/s its TX knobs allow (%s %v with a per-socket lock",
			tp.Name, tp.RateHz, tp.SizeBytes, 100*tp.RateHz/capa, capa, SocketTimeoutMs, c.SocketWindow)
		switch {
		case !c.TxBatch:
			b := c
			b.TxBatch = true
			n += fmt.Sprintf(", no TX batching): it is likely TX-bound, and what its application publishes beyond that never leaves it; %s=true gives ~%.0f msg/s", TxBatch, b.TxCapacity(tp.SizeBytes))
		case !c.SplitLock:
			b := c
			b.SplitLock = true
			n += fmt.Sprintf(", TX batching without split lock): it is likely TX-bound; %s=true gives ~%.0f msg/s", TxSplitLock, b.TxCapacity(tp.SizeBytes))
		default:
			n += ", TX batching and split lock): it is likely TX-bound; a shorter socket window raises it"
		}
		notes = append(notes, n)
	}
	return notes
}
