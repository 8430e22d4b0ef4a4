package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// payloadOf is a payload that makes a sample of key cost exactly size bytes
// of link budget.
func payloadOf(key string, size int) []byte { return make([]byte, size-MessageOverhead(key)) }

// linkSim drives one egress with synthetic time, 1 ms steps: express
// samples of expSize bytes at expHz, bulkKeys keys of bulkSize bytes at
// bulkHz each, express drained every step, a flush every FlushInterval.
type linkSim struct {
	e                     *egress
	expHz, bulkHz         int
	expSize, bulkSize     int
	bulkKeys              int
	expSent, bulkSent     int
	expOffered, bulkOffer int
	bytes                 int
	expWaitMax            time.Duration
	expQueued             []time.Time
	flushEvery            time.Duration
	nextFlush             time.Time
}

func (s *linkSim) run(d time.Duration) {
	for t := time.Duration(0); t < d; t += ms {
		now := t0.Add(t)
		if s.expHz > 0 && int(t/ms)*s.expHz/1000 != int((t-ms)/ms)*s.expHz/1000 || t == 0 && s.expHz > 0 {
			s.e.offerExpress(Sample{Key: "crit", Payload: payloadOf("crit", s.expSize), Time: now}, now)
			s.expOffered++
			s.expQueued = append(s.expQueued, now)
		}
		if s.bulkHz > 0 && (t == 0 || int(t/ms)*s.bulkHz/1000 != int((t-ms)/ms)*s.bulkHz/1000) {
			for k := range s.bulkKeys {
				key := fmt.Sprintf("bulk/%d", k)
				s.e.offerBatched(Sample{Key: key, Payload: payloadOf(key, s.bulkSize), Time: now}, now)
				s.bulkOffer++
			}
		}
		for {
			x, ok, _ := s.e.nextExpress(now)
			if !ok {
				break
			}
			s.expSent++
			s.bytes += sampleBytes(x)
			s.expWaitMax = max(s.expWaitMax, now.Sub(x.Time))
		}
		if !now.Before(s.nextFlush) {
			out := s.e.flush(now, nil)
			s.bulkSent += len(out)
			for _, x := range out {
				s.bytes += sampleBytes(x)
			}
			s.nextFlush = now.Add(s.flushEvery)
		}
	}
}

func shapingEgress(t *testing.T, budget float64) (*egress, *bytes.Buffer) {
	pol := testPolicy()
	pol.Batched.RateHz = 1000 // the link budget, not the token bucket, is under test
	pol.Batched.StaleAfter = time.Second
	e, logs := newTestEgress(t, pol, Shaping{MaxMessageBytes: 16384, RingDepth: 4, FlushInterval: 10 * ms})
	e.link.set(budget, 1, 20*ms, t0)
	return e, logs
}

// One link budget per device, shared by both lanes, critical first: 30 kB/s
// of critical samples and 400 kB/s of bulk offered to a 100 kB/s budget.
// Every critical sample goes out the instant it is offered (the express
// lane borrows ahead), bulk gets the rest of the budget, and the bytes of
// both lanes together never exceed the budget (plus one bucket and one
// message).
func TestLinkBudgetSharedCriticalFirst(t *testing.T) {
	e, _ := shapingEgress(t, 100_000) // depth 2000 B
	sim := &linkSim{e: e, expHz: 30, expSize: 1000, bulkHz: 10, bulkKeys: 10, bulkSize: 4000, flushEvery: 10 * ms}
	sim.run(10 * time.Second)
	require.Equal(t, 300, sim.expOffered)
	require.Equal(t, 300, sim.expSent, "every critical sample sent")
	require.Zero(t, sim.expWaitMax, "no critical sample waited for bulk bytes")
	require.LessOrEqual(t, sim.bytes, 100_000*10+2000+4000, "both lanes within the one budget")
	bulkBytes := sim.bytes - 300*1000
	require.GreaterOrEqual(t, bulkBytes, (100_000-30_000)*10*9/10, "bulk gets the rest of the budget")
	// exact accounting: every bulk sample forwarded, dropped with a reason, or pending
	pending := e.batchedPending()
	dropped := 0
	for _, r := range DropReasons() {
		dropped += int(e.dropped(LaneBatched, r))
	}
	require.Equal(t, sim.bulkOffer, sim.bulkSent+dropped+pending)
	require.Positive(t, e.dropped(LaneBatched, DropLinkBudget), "bulk beyond the budget is shed as link_budget")
	require.Zero(t, e.stats.critDropped[DropCongestion].Load())
}

// Shedding order: noncritical first, then older critical samples per key.
// Critical traffic alone (30 kB/s) exceeds a 20 kB/s budget: bulk gets
// nothing beyond the first full bucket, the express lane is paced by the
// budget and keeps the latest samples of its key (the oldest pending one is
// dropped, counted as a critical congestion drop), and every critical
// sample is forwarded, pending or counted.
func TestSheddingOrderNoncriticalFirst(t *testing.T) {
	e, _ := shapingEgress(t, 20_000) // depth 1500 B (the floor)
	sim := &linkSim{e: e, expHz: 30, expSize: 1000, bulkHz: 10, bulkKeys: 1, bulkSize: 1000, flushEvery: 10 * ms}
	sim.run(10 * time.Second)
	require.LessOrEqual(t, sim.bulkSent, 2, "noncritical shed first")
	require.InDelta(t, 200, sim.expSent, 3, "the budget goes to the critical route")
	crit := int(e.stats.critDropped[DropCongestion].Load())
	require.Positive(t, crit, "then older critical samples (keep-latest)")
	ex, _, _ := e.depth(t0.Add(10 * time.Second))
	require.Equal(t, 300, sim.expSent+crit+ex, "critical: forwarded + dropped + pending = offered")
	require.EqualValues(t, crit, e.dropped(LaneExpress, DropCongestion))
}

// subsList is a device's subscription list for the ring budget.
type subsList struct {
	subs  []string
	gen   uint64
	large []string // subscriptions with a large-class slot
}

func (l *subsList) largeFor(key string) bool {
	for _, s := range l.large {
		if KeyIncludes(s, key) {
			return true
		}
	}
	return false
}

func (l *subsList) subsGen() uint64 { return l.gen }
func (l *subsList) subsFor(key string) []int {
	out := []int{}
	for i, s := range l.subs {
		if KeyIncludes(s, key) {
			out = append(out, i)
		}
	}
	return out
}

// The ring budget counts per subscription: one wildcard subscription over
// 10 keys gets at most RingDepth (4) samples per flush window, not 4 per
// key (issue 10: one wildcard over 10 keys overran a device ring); the rest
// wait for the next window, keys taking turns, and a held sample replaced
// by a newer one is counted as ring_budget.
func TestRingBudgetPerSubscription(t *testing.T) {
	pol := testPolicy()
	pol.Batched.RateHz = 1000
	shape := Shaping{MaxMessageBytes: 1024, RingDepth: 4, FlushInterval: 50 * ms}
	offer := func(e *egress, now time.Time) {
		for k := range 10 {
			e.offerBatched(Sample{Key: fmt.Sprintf("bulk/%d", k), Payload: []byte{byte(k)}, Time: now}, now)
		}
	}
	e, _ := newTestEgress(t, pol, shape)
	e.subsOf = &subsList{subs: []string{"bulk/**", "bulk/3"}}
	offer(e, t0)
	require.Equal(t, []string{"bulk/0=\x00", "bulk/1=\x01", "bulk/2=\x02", "bulk/3=\x03"}, keys(e.flush(t0, nil)))
	require.Empty(t, e.flush(t0.Add(10*ms), nil), "same window: the subscription's ring is full")
	e.offerBatched(Sample{Key: "bulk/9", Payload: []byte{9}, Time: t0.Add(20 * ms)}, t0.Add(20*ms))
	require.EqualValues(t, 1, e.dropped(LaneBatched, DropRingBudget), "a held sample replaced: ring_budget")
	require.Equal(t, []string{"bulk/4=\x04", "bulk/5=\x05", "bulk/6=\x06", "bulk/7=\x07"}, keys(e.flush(t0.Add(50*ms), nil)))
	require.Equal(t, []string{"bulk/8=\x08", "bulk/9=\x09"}, keys(e.flush(t0.Add(100*ms), nil)))
	require.Zero(t, e.batchedPending())

	// a key in two subscriptions counts in both: bulk/3 fills "bulk/3"'s ring alone
	e, _ = newTestEgress(t, pol, shape)
	e.subsOf = &subsList{subs: []string{"bulk/3", "other/**"}}
	for i := range 6 {
		now := t0.Add(time.Duration(i) * ms)
		e.offerBatched(Sample{Key: "other/x", Payload: []byte{byte(i)}, Time: now}, now)
	}
	require.Len(t, e.flush(t0.Add(6*ms), nil), 1, "history 1: one sample per key")

	// without a subscription list every key is its own subscription (the per-key budget)
	e, _ = newTestEgress(t, pol, shape)
	offer(e, t0)
	require.Len(t, e.flush(t0, nil), 10)
}

// Dropped critical samples are logged rate-limited: per device and reason
// the first drop at once, then at most one line per interval with the
// count since the previous line; a count left over is written by the next
// tick after the interval. Exact lines and counts.
func TestCriticalDropLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	c := &critLogger{log: slog.New(slog.NewJSONHandler(&buf, nil)).With("device", "arm"), interval: 10 * time.Second}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	c.note(DropCongestion, 1, at(0))
	c.note(DropCongestion, 2, at(1))
	c.note(DropStale, 1, at(2))
	c.note(DropCongestion, 3, at(5))
	c.tick(at(9))
	c.tick(at(10))
	c.tick(at(15))
	c.note(DropCongestion, 4, at(16))
	c.tick(at(19))
	c.tick(at(20))
	c.tick(at(30))
	c.note(DropRateLimit, 7, at(31))
	type line struct {
		Msg, Device, Reason string
		Count               int
	}
	var lines []line
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var x struct {
			Msg    string `json:"msg"`
			Device string `json:"device"`
			Reason string `json:"reason"`
			Count  int    `json:"count"`
		}
		require.NoError(t, json.Unmarshal(l, &x))
		lines = append(lines, line{x.Msg, x.Device, x.Reason, x.Count})
	}
	m := "critical samples dropped"
	require.Equal(t, []line{
		{m, "arm", "congestion", 1}, // t=0: the first at once
		{m, "arm", "stale", 1},      // t=2: another reason has its own interval
		{m, "arm", "congestion", 5}, // t=10: 2+3 since the first line
		{m, "arm", "congestion", 4}, // t=20: the drop at 16 waited for the interval
		{m, "arm", "rate_limit", 7},
	}, lines)

	// through the lanes: every keep-latest drop of the express lane is counted
	// as a critical drop and reaches the log
	buf.Reset()
	e, _ := newTestEgress(t, testPolicy(), testShape())
	e.crit = c
	for i := range 10 {
		e.offerExpress(Sample{Key: "cmd", Payload: []byte{byte(i)}}, at(40))
	}
	require.EqualValues(t, 6, e.stats.critDropped[DropCongestion].Load(), "10 offered, depth 4")
	c.tick(at(50))
	require.Equal(t, 2, bytes.Count(buf.Bytes(), []byte("\n")), "one line at once, one with the rest")
	require.Contains(t, buf.String(), `"count":5`)
}

// A bulk message far larger than the bucket (egressbench a: 1 MB against a
// 20 ms bucket of 225 kB) leaves the shared bucket deep in debt; the express
// lane still sends at once, because it waits on the critical bucket alone,
// while the batched lane waits until the debt is paid.
func TestLinkBudgetBulkDebtNeverHoldsCritical(t *testing.T) {
	var b linkBudget
	b.set(12_500_000, 0.9, 20*ms, t0) // 100 Mbit/s: rate 11.25 MB/s, depth 225 kB
	require.Zero(t, b.wait(1_000_000, false, t0), "a full bucket lets a message larger than it go")
	b.spend(1_000_000, false, t0)
	for i := range 5 { // 48 B at 50 Hz during the 89 ms the shared bucket takes to refill
		now := t0.Add(time.Duration(i) * 20 * ms)
		require.Zero(t, b.wait(48, true, now), "critical sample %d waited behind bulk debt", i)
		b.spend(48, true, now)
	}
	// at 80 ms the shared bucket is 100 kB short of full: (1 MB + 5 × 48 B − 900 kB) / 11.25 MB/s
	w := b.wait(1_000_000, false, t0.Add(80*ms))
	require.InDelta(t, float64(8910*time.Microsecond), float64(w), float64(100*time.Microsecond), "the next bulk message waits for a full bucket: %v", w)
	// critical traffic alone beyond its bucket does wait
	var c linkBudget
	c.set(100_000, 1, 20*ms, t0) // depth 2000 B
	c.spend(4000, true, t0)      // ctokens 2000 − 4000 = −depth
	require.Equal(t, time.Millisecond, c.wait(100, true, t0), "1 B short at 100 kB/s is 10 µs, rounded up to the 1 ms floor")
	require.Zero(t, c.wait(100, true, t0.Add(ms)), "100 B refilled after 1 ms")
}

// The link budget's queue model and the transport's backlog give the delay
// the gateway itself puts ahead of a probe.
func TestLinkSelfDelay(t *testing.T) {
	var b linkBudget
	require.Zero(t, b.selfDelay(t0), "no budget: no estimate")
	backlog := 0
	b.backlog = func() int { return backlog }
	b.set(100_000, 0.9, 20*ms, t0)
	b.spend(5000, false, t0)
	require.Equal(t, 50*ms, b.selfDelay(t0), "5000 B at 100 kB/s")
	require.Equal(t, 30*ms, b.selfDelay(t0.Add(20*ms)), "drains at the link's rate")
	backlog = 1000
	require.Equal(t, 40*ms, b.selfDelay(t0.Add(20*ms)), "plus the transport's backlog")
	require.Zero(t, max(b.selfDelay(t0.Add(time.Second))-10*ms, 0))
	// a backlog beyond one bucket holds the batched lane, never the express lane's borrowing
	backlog = 100_000
	require.Positive(t, b.wait(100, false, t0.Add(time.Second)))
	bud, rate := b.Rate()
	require.Equal(t, 100_000.0, bud)
	require.Equal(t, 90_000.0, rate)
}

// An express probe waits only for the gateway's bytes that left the
// transport, not for the transport's (bulk) backlog, which it overtakes.
func TestLinkPingDelay(t *testing.T) {
	var b linkBudget
	require.Zero(t, b.pingDelay(t0), "no budget: no estimate")
	backlog := 5000
	b.backlog = func() int { return backlog }
	b.set(100_000, 0.9, 20*ms, t0)
	b.spend(5000, false, t0)
	require.Zero(t, b.pingDelay(t0), "all 5000 B still in the transport")
	require.Positive(t, b.selfDelay(t0), "a bulk message waits for them")
	backlog = 1000
	require.Equal(t, 30*ms, b.pingDelay(t0.Add(10*ms)), "4000 B left in the model after 10 ms, 1000 B of them still in the transport: 3000 B at 100 kB/s")
}

// A sample larger than the device's small subscriber slot reaches only a
// subscription listed in large_subscriptions (it has a large slot); any
// other is refused and counted as oversize, never sent for the device to
// drop silently in its ring (issue 31 item 1).
func TestOversizeBySlotClass(t *testing.T) {
	shape := testShape()
	shape.MaxMessageBytes, shape.LargeMessageBytes = 1024, 2048
	e, _ := newTestEgress(t, testPolicy(), shape)
	e.subsOf = &subsList{subs: []string{"scan", "imu"}, large: []string{"scan"}}
	scan := Sample{Key: "scan", Payload: make([]byte, 1504), Time: t0}
	imu := Sample{Key: "imu", Payload: make([]byte, 1504), Time: t0}
	huge := Sample{Key: "scan", Payload: make([]byte, 4000), Time: t0}
	e.offerExpress(scan, t0)
	e.offerExpress(imu, t0)
	e.offerExpress(huge, t0)
	var got []string
	for {
		s, ok, _ := e.nextExpress(t0)
		if !ok {
			break
		}
		got = append(got, s.Key)
	}
	require.Equal(t, []string{"scan"}, got)
	require.Equal(t, uint64(2), e.dropped(LaneExpress, DropOversize))
}
