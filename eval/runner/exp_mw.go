package runner

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/eval/measure"
	"github.com/picobridge/picobridge/sim/linkemu"
)

// The middleware comparison (experiment "mw"; docs/eval.md "Middleware comparison"),
// after the second seed paper (Zhang et al., arXiv:2309.07496: DDS, Zenoh and MQTT over
// Ethernet, Wi-Fi and 4G). One publisher and one subscriber per system; the subscriber's
// TCP link runs through linkemu.TCPProxy with the link class's profile. Publication is
// open loop at a fixed offered rate per payload size (mwRate), so latency is measured
// below saturation and throughput is what the system delivered of what was offered.

// MWExp is the experiment id of the middleware comparison (--only mw).
const MWExp = "mw"

// MWProfiles are the link classes of the comparison (linkemu profiles.yaml).
var MWProfiles = []string{"ethernet", "wifi", "4g"}

// MWSizes are the default payload sizes, bytes: 64 B, 1 KiB, 16 KiB, 256 KiB, 1 MiB.
var MWSizes = []int{64, 1 << 10, 16 << 10, 256 << 10, 1 << 20}

// MWSystems are the systems compared, in table order.
var MWSystems = []string{MWCyclone, MWZenoh, MWMosquitto, MWPicobridge}

// System names of the comparison (run names mw-<system>-<profile>-<size>[-tls]).
const (
	MWCyclone    = "cyclone"    // Cyclone DDS peer to peer (its TCP transport through the proxy)
	MWZenoh      = "zenoh-rust" // the stock Rust Zenoh router (eclipse-zenoh 1.10.2)
	MWMosquitto  = "mosquitto"  // MQTT 3.1.1 QoS 1 through a Mosquitto broker
	MWPicobridge = "picobridge" // `picobridge router` (zenohpath) as the broker
)

// mwConsumer is the consumer name of the subscriber in the CSVs.
const mwConsumer = "sub"

// mwMinSize is the smallest payload: 4-byte CDR encapsulation header + 8-byte stamp.
const mwMinSize = 12

// Offered-rate rule (docs/eval.md): at most mwMaxRateHz, and at most half the link's
// bandwidth, so every system runs below saturation of the emulated link; at least
// mwMinMessages per phase.
const (
	mwMaxRateHz   = 50
	mwLinkShare   = 0.5
	mwMinMessages = 5
)

// MWInfo is what a middleware run adds to its Result.
type MWInfo struct {
	Size      int     // payload bytes
	TLS       bool    // TLS on the broker links
	OfferedHz float64 // fixed offered rate
	Sent      int     // publications that returned without error
	LastRecv  int64   // Unix ns of the last reception (0: none)
	BrokerCPU string  // whose CPU Result.Gateway measures ("" = no broker)
}

// mwRate is the offered rate for size bytes on a link of bw bit/s (0 = unlimited).
func mwRate(size int, bw linkemu.Bitrate) float64 {
	r := float64(mwMaxRateHz)
	if bw > 0 {
		r = math.Min(r, mwLinkShare*float64(bw)/(8*float64(size)))
	}
	return r
}

// mwPhaseDuration is the publication time of one (profile, size) phase: MWDuration, else
// Duration, else 3 s (quick: 1 s).
func (c Config) mwPhaseDuration() time.Duration {
	switch {
	case c.MWDuration > 0:
		return c.MWDuration
	case c.Duration > 0:
		return c.Duration
	case c.Quick:
		return time.Second
	}
	return 3 * time.Second
}

// mwMessages is the number of messages of one phase at rate over d.
func mwMessages(rate float64, d time.Duration) int {
	return max(mwMinMessages, int(math.Round(rate*d.Seconds())))
}

// SizeLabel names a payload size in run names: 64B, 1KiB, 16KiB, 256KiB, 1MiB, 1500B.
func SizeLabel(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// mwRunName is mw-<system>-<profile>-<size>[-tls].
func mwRunName(system, profile string, size int, tls bool) string {
	n := fmt.Sprintf("%s-%s-%s-%s", MWExp, system, profile, SizeLabel(size))
	if tls {
		n += "-tls"
	}
	return n
}

// mwPayload fills b (len ≥ mwMinSize) for one message: CDR encapsulation header
// 00 01 00 00 (XCDR1 little endian, so DDS takes it as a serialized sample), the send
// time as little-endian int64 Unix ns at offset 4, zeros after.
func mwPayload(b []byte, stampNs int64) {
	b[0], b[1], b[2], b[3] = 0, 1, 0, 0
	binary.LittleEndian.PutUint64(b[4:12], uint64(stampNs))
}

// mwStamp reads the send time of a payload; ok is false when it is too short.
func mwStamp(b []byte) (int64, bool) {
	if len(b) < mwMinSize {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b[4:12])), true
}

// mwRecorder collects one phase: sends and receptions keyed by the send stamp, joined at
// the end (a reception may be reported before its send when the publisher is a child).
type mwRecorder struct {
	mu    sync.Mutex
	sends []mwSend
	recvs [][2]int64 // stamp, recv
}

type mwSend struct {
	stamp  int64
	dur    time.Duration
	failed bool
}

func (r *mwRecorder) sent(stamp int64, dur time.Duration, failed bool) {
	r.mu.Lock()
	r.sends = append(r.sends, mwSend{stamp, dur, failed})
	r.mu.Unlock()
}

func (r *mwRecorder) received(stamp, recv int64) {
	r.mu.Lock()
	r.recvs = append(r.recvs, [2]int64{stamp, recv})
	r.mu.Unlock()
}

func (r *mwRecorder) counts() (sent, recv int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sends {
		if !s.failed {
			sent++
		}
	}
	return sent, len(r.recvs)
}

// fill writes the phase into res: sequence numbers in send order, receptions joined by
// stamp (unknown stamps counted in res.Unknown).
func (r *mwRecorder) fill(res *Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sends := slices.Clone(r.sends)
	sort.Slice(sends, func(i, j int) bool { return sends[i].stamp < sends[j].stamp })
	seq := make(map[int64]uint64, len(sends))
	res.Unknown = map[string]int{}
	for i, s := range sends {
		seq[s.stamp] = uint64(i)
		res.Attempts = append(res.Attempts, measure.Attempt{Seq: uint64(i), StartNs: s.stamp, Dur: s.dur, Err: s.failed})
		if !s.failed {
			res.Published = append(res.Published, uint64(i))
		}
	}
	for _, rv := range r.recvs {
		q, ok := seq[rv[0]]
		if !ok {
			res.Unknown[mwConsumer]++
			continue
		}
		res.Samples = append(res.Samples, measure.Sample{Run: res.Run, Consumer: mwConsumer, Seq: q, SendNs: rv[0], RecvNs: rv[1]})
		if rv[1] > res.MW.LastRecv {
			res.MW.LastRecv = rv[1]
		}
	}
}

// mwSink routes receptions to the current phase's recorder; it implements the child
// line hook for "r <stamp> <recv>" and "s <stamp> <dur_ns> <failed>" lines.
type mwSink struct {
	cur  atomic.Pointer[mwRecorder]
	late atomic.Int64 // receptions between phases (after their phase's grace)
}

func (s *mwSink) received(stamp, recv int64) {
	if r := s.cur.Load(); r != nil {
		r.received(stamp, recv)
		return
	}
	s.late.Add(1)
}

// payload is the callback of an in-process subscriber.
func (s *mwSink) payload(b []byte) {
	now := time.Now().UnixNano()
	if st, ok := mwStamp(b); ok {
		s.received(st, now)
	}
}

// handleLine takes "r STAMP RECV" and "s STAMP DUR FAILED" lines of a DDS child.
func (s *mwSink) handleLine(line string) bool {
	r := s.cur.Load()
	switch {
	case strings.HasPrefix(line, "r "):
		var st, rv int64
		if _, err := fmt.Sscan(line[2:], &st, &rv); err == nil {
			s.received(st, rv)
		}
		return true
	case strings.HasPrefix(line, "s "):
		var st, d int64
		var failed int
		if _, err := fmt.Sscan(line[2:], &st, &d, &failed); err == nil && r != nil {
			r.sent(st, time.Duration(d), failed != 0)
		}
		return true
	}
	return false
}

// mwConn is one system set up: a publisher, a subscriber behind proxy, and a broker.
type mwConn struct {
	// publish runs one phase: n messages of size bytes, one every interval, each stamped
	// with its send time (mwPayload), sends recorded in rec. It returns when all were
	// published.
	publish   func(ctx context.Context, rec *mwRecorder, n, size int, interval time.Duration) error
	proxy     *linkemu.TCPProxy // the subscriber's link
	brokerPID int               // 0: no broker process
	broker    string            // what brokerPID is
	notes     []string
	close     func()
}

// inProcessPublish paces put calls of an in-process publisher.
func inProcessPublish(put func([]byte) error) func(ctx context.Context, rec *mwRecorder, n, size int, interval time.Duration) error {
	return func(ctx context.Context, rec *mwRecorder, n, size int, interval time.Duration) error {
		buf := make([]byte, size)
		t0 := time.Now()
		for i := range n {
			if d := time.Until(t0.Add(time.Duration(i) * interval)); d > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(d):
				}
			}
			now := time.Now()
			mwPayload(buf, now.UnixNano())
			err := put(buf)
			rec.sent(now.UnixNano(), time.Since(now), err != nil)
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return nil
	}
}

// mwSystemSpec is one (system, TLS) session of the comparison.
type mwSystemSpec struct {
	system  string
	tls     bool
	missing string
	open    func(ctx context.Context, cfg Config, tls bool, sink *mwSink) (*mwConn, error)
}

func mwSpecs(cfg Config) []mwSystemSpec {
	var out []mwSystemSpec
	systems := MWSystems
	if len(cfg.MWSystems) > 0 {
		systems = cfg.MWSystems
	}
	for _, sys := range systems {
		for _, tls := range []bool{false, true} {
			if cfg.MWNoTLS && tls {
				continue
			}
			s := mwSystemSpec{system: sys, tls: tls}
			switch sys {
			case MWCyclone:
				s.missing, s.open = ddsMissing(), openMWCyclone
				if tls {
					s.missing = "DDS Security: Debian's Cyclone DDS 0.10.2 ships no security plugins (no libdds_security_*), so there is no TLS/DDS Security variant"
				}
			case MWZenoh:
				s.missing, s.open = zenohMissing(), openMWZenohRust
			case MWMosquitto:
				s.missing, s.open = mosquittoMissing(), openMWMosquitto
			case MWPicobridge:
				s.open = openMWPicobridge
			default:
				s.missing = "unknown system " + sys
			}
			out = append(out, s)
		}
	}
	return out
}

// mwSessionOverhead is the measured setup + teardown of one (system, TLS) session
// (0.1–0.9 s up, ≤ 1 s down on loopback; TestSmokeMW), rounded up.
const mwSessionOverhead = 3 * time.Second

// mwPlannedTime estimates the wall time of the comparison with every system available:
// per phase the publication time ((n−1)/rate) plus one message's serialization and
// one-way delay on the link (the drain when nothing is lost), plus mwSessionOverhead per
// session. It ignores loss stalls and a host too slow for the offered rate.
func mwPlannedTime(cfg Config) time.Duration {
	profiles, sizes := MWProfiles, MWSizes
	if len(cfg.MWProfiles) > 0 {
		profiles = cfg.MWProfiles
	}
	if len(cfg.MWSizes) > 0 {
		sizes = cfg.MWSizes
	}
	var phases time.Duration
	for _, pn := range profiles {
		p, err := linkemu.LookupProfile(pn)
		if err != nil {
			continue
		}
		for _, size := range sizes {
			rate := mwRate(size, p.ToDevice.Rate)
			n := mwMessages(rate, cfg.mwPhaseDuration())
			phases += time.Duration(float64(n-1) / rate * float64(time.Second))
			if p.ToDevice.Rate > 0 {
				phases += time.Duration(float64(size*8) / float64(p.ToDevice.Rate) * float64(time.Second))
			}
			phases += p.ToDevice.Delay.Mean
		}
	}
	var total time.Duration
	for _, sp := range mwSpecs(cfg) {
		if sp.system == MWCyclone && sp.tls {
			continue // never runs (no DDS Security)
		}
		total += phases + mwSessionOverhead
	}
	return total
}

// runMW runs the middleware comparison: per (system, TLS) one setup, then every
// (profile, size) phase on it, each phase one Result named mwRunName.
func runMW(ctx context.Context, cfg Config) []*Result {
	profiles := MWProfiles
	if len(cfg.MWProfiles) > 0 {
		profiles = cfg.MWProfiles
	}
	sizes := MWSizes
	if len(cfg.MWSizes) > 0 {
		sizes = cfg.MWSizes
	}
	seeds := cfg.Seeds
	if len(seeds) == 0 {
		seeds = []uint64{cfg.Seed}
	}
	cfg.Log("picoeval: mw: %d profiles × %d sizes per system, %d seed(s), planned ≈ %v", len(profiles), len(sizes), len(seeds),
		(time.Duration(len(seeds)) * mwPlannedTime(cfg)).Round(time.Second))
	var results []*Result
	for _, seed := range seeds {
		scfg := cfg
		scfg.Seed = seed
		for _, sp := range mwSpecs(scfg) {
			var rs []*Result
			for _, prof := range profiles {
				for _, size := range sizes {
					name := mwRunName(sp.system, prof, size, sp.tls)
					if len(seeds) > 1 {
						name = fmt.Sprintf("%s-s%d", name, seed)
					}
					rs = append(rs, &Result{Run: name, Exp: MWExp, System: sp.system, Level: prof, Seed: seed,
						MW: &MWInfo{Size: size, TLS: sp.tls}, Cotenant: cfg.Cotenant, ProducedLoss: math.NaN()})
				}
			}
			results = append(results, rs...)
			switch {
			case sp.missing != "":
				for _, r := range rs {
					r.Missing = sp.missing
				}
				cfg.Log("picoeval: mw %s tls=%t not run (%s)", sp.system, sp.tls, sp.missing)
				continue
			case ctx.Err() != nil:
				for _, r := range rs {
					r.Missing = "interrupted"
				}
				continue
			}
			runMWSession(ctx, scfg, sp, rs)
		}
	}
	return results
}

func runMWSession(ctx context.Context, cfg Config, sp mwSystemSpec, rs []*Result) {
	t0 := time.Now()
	sink := &mwSink{}
	stopBusy := startCotenants(cfg.Cotenant)
	defer stopBusy()
	conn, err := sp.open(ctx, cfg, sp.tls, sink)
	if err != nil {
		for _, r := range rs {
			r.Err = fmt.Errorf("setup: %w", err)
		}
		cfg.Log("picoeval: mw %s tls=%t setup failed: %v", sp.system, sp.tls, err)
		return
	}
	defer conn.close()
	cfg.Log("picoeval: mw %s tls=%t up in %v", sp.system, sp.tls, time.Since(t0).Round(100*time.Millisecond))
	d := cfg.mwPhaseDuration()
	for _, res := range rs {
		if ctx.Err() != nil {
			res.Missing = "interrupted"
			continue
		}
		res.Load[0] = loadAvg1()
		res.Err = runMWPhase(ctx, cfg, conn, sink, res, d)
		res.Load[1] = loadAvg1()
		if res.Err == nil {
			res.Err = WriteCSV(cfg.Out, res)
		}
		row := SummarizeMW(res)
		cfg.Log("picoeval: %s: %s", res.Run, row.oneLine())
	}
}

// runMWPhase runs one (profile, size) on an open system.
func runMWPhase(ctx context.Context, cfg Config, conn *mwConn, sink *mwSink, res *Result, d time.Duration) error {
	prof, err := linkemu.LookupProfile(res.Level)
	if err != nil {
		return err
	}
	if err := conn.proxy.SetProfile(prof); err != nil {
		return err
	}
	res.ExpectedLoss = prof.ToDevice.ExpectedLoss()
	rate := mwRate(res.MW.Size, prof.ToDevice.Rate)
	n := mwMessages(rate, d)
	interval := time.Duration(float64(time.Second) / rate)
	res.MW.OfferedHz = rate
	res.MW.BrokerCPU = conn.broker
	rec := &mwRecorder{}
	if n := sink.late.Swap(0); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d receptions of the previous phase arrived after its grace time (counted there as lost)", n))
	}
	sink.cur.Store(rec)
	defer sink.cur.Store(nil)
	st0 := conn.proxy.Stats().Total()
	var before measure.Usage
	if conn.brokerPID > 0 {
		before, _ = measure.ProcUsage(conn.brokerPID)
	}
	start := time.Now()
	if err := conn.publish(ctx, rec, n, res.MW.Size, interval); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	end := time.Now()
	// Drain: wait for everything sent, at most the grace time (a lost message is lost).
	grace := mwGrace(prof, res.MW.Size)
	_ = waitFor("deliveries", grace, func() bool {
		s, r := rec.counts()
		return r >= s
	})
	if conn.brokerPID > 0 {
		if after, err := measure.ProcUsage(conn.brokerPID); err == nil {
			u := after.Sub(before)
			res.Gateway = &u
		}
	}
	st1 := conn.proxy.Stats().Total()
	if sent := st1.Sent - st0.Sent; sent > 0 {
		res.ProducedLoss = float64(st1.Lost-st0.Lost) / float64(sent)
	}
	res.StartNs, res.EndNs = start.UnixNano(), end.UnixNano()
	rec.fill(res)
	res.MW.Sent = len(res.Published)
	res.Impairment = fmt.Sprintf("subscriber's TCP link through linkemu TCPProxy (chunk framing, 1448-byte packets), profile %s: %s", prof.Name, describeProfile(prof))
	res.Notes = append(res.Notes, fmt.Sprintf("offered %.2f msg/s × %d messages (open loop), drain grace %v", rate, n, grace.Round(time.Millisecond)))
	res.Notes = append(res.Notes, conn.notes...)
	res.Notes = append(res.Notes, fmt.Sprintf("linkemu (both directions, this phase): %d transmissions, %d lost", st1.Sent-st0.Sent, st1.Lost-st0.Lost))
	if cfg.Cotenant > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d CPU busy loops ran beside the broker", cfg.Cotenant))
	}
	return nil
}

// mwGrace is how long a phase waits after its last publication for what is still in
// flight: 10 s plus four serialization times and eight one-way delays on the link. The
// wait ends as soon as everything sent has arrived, so only a lost message costs it.
func mwGrace(p linkemu.Profile, size int) time.Duration {
	g := 10*time.Second + 8*p.ToDevice.Delay.Mean
	if p.ToDevice.Rate > 0 {
		g += 4 * time.Duration(float64(size*8)/float64(p.ToDevice.Rate)*float64(time.Second))
	}
	return g
}

// describeProfile is "bandwidth, delay ± jitter, loss" of a profile's to-device side.
func describeProfile(p linkemu.Profile) string {
	im := p.ToDevice
	bw := "unlimited"
	if im.Rate > 0 {
		bw = fmt.Sprintf("%g Mbit/s", float64(im.Rate)/1e6)
	}
	loss := "no loss"
	if !im.Loss.Zero() {
		kind := "Gilbert–Elliott"
		if im.Loss.P+im.Loss.R == 0 {
			kind = "Bernoulli"
		}
		loss = fmt.Sprintf("%s loss %.2f %%", kind, 100*im.ExpectedLoss())
	}
	return fmt.Sprintf("%s, one-way delay %v ± %v, %s, both directions", bw, im.Delay.Mean, im.Delay.SD, loss)
}
