// Package ddsbench measures write→take throughput and latency of ddspath
// (Cyclone DDS, raw CDR) and of the Fast DDS peer, in one run, and renders a
// Markdown table. cmd/ddsbench is its command line.
//
// Every pair uses RELIABLE KEEP_ALL endpoints on loopback. Latency is the
// subscriber's take time minus the sample's source timestamp (one host, one
// CLOCK_REALTIME); throughput is samples received divided by the time from
// the first source timestamp to the last take.
package ddsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/internal/fastddspeer"
)

// Pair names a publisher→subscriber combination.
type Pair string

const (
	CycloneInProcess Pair = "ddspath → ddspath (1 process)"
	CycloneTwoProc   Pair = "ddspath → ddspath (2 processes)"
	FastToFast       Pair = "Fast DDS peer → Fast DDS peer"
	CycloneToFast    Pair = "ddspath → Fast DDS peer"
	FastToCyclone    Pair = "Fast DDS peer → ddspath"
)

// AllPairs is every pair, in table order.
var AllPairs = []Pair{CycloneInProcess, CycloneTwoProc, FastToFast, CycloneToFast, FastToCyclone}

// PairList describes the pair numbers ParsePairs accepts.
func PairList() string {
	var parts []string
	for i, p := range AllPairs {
		parts = append(parts, fmt.Sprintf("%d=%s", i+1, p))
	}
	return strings.Join(parts, ", ")
}

// ParsePairs parses "1,3,5" (numbers into AllPairs); "" means all.
func ParsePairs(s string) ([]Pair, error) {
	if s == "" {
		return AllPairs, nil
	}
	var out []Pair
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > len(AllPairs) {
			return nil, fmt.Errorf("pair %q: want a number 1..%d (%s)", f, len(AllPairs), PairList())
		}
		out = append(out, AllPairs[n-1])
	}
	return out, nil
}

// Config is one benchmark run.
type Config struct {
	DomainID uint32
	// Cyclone is the ddspath configuration (its DomainID is overridden).
	Cyclone ddspath.Config
	// PeerBinary is the fastddspeer executable; empty: built into a temp dir.
	PeerBinary string
	// Self is an executable that runs RunSubscriberMain when called with
	// "-role sub" (cmd/ddsbench itself); needed for CycloneTwoProc.
	Self      string
	Sizes     []int     // sample sizes in bytes (default 1536 and 65536)
	Rates     []float64 // Hz; 0 = as fast as possible (default 1000 and 0)
	CountRate int       // samples per paced run (default 2000)
	CountFull int       // samples per full-rate run (default 5000)
	Pairs     []Pair    // default AllPairs
	// PeerHeartbeat is the Fast DDS publisher's heartbeat period (0: Fast
	// DDS default, 3 s); it bounds how fast lost fragments are repaired.
	PeerHeartbeat time.Duration
	Log           io.Writer // progress lines (default io.Discard)
}

// Result is one row of the table.
type Result struct {
	Pair     Pair
	Size     int
	Rate     float64 // 0 = full rate
	Sent     int
	Received int
	MsgPerS  float64
	MBPerS   float64
	P50, P99 time.Duration
	Max      time.Duration
	Err      error
}

func (c *Config) defaults() {
	if len(c.Sizes) == 0 {
		c.Sizes = []int{1536, 64 << 10}
	}
	if len(c.Rates) == 0 {
		c.Rates = []float64{1000, 0}
	}
	if c.CountRate <= 0 {
		c.CountRate = 2000
	}
	if c.CountFull <= 0 {
		c.CountFull = 5000
	}
	if len(c.Pairs) == 0 {
		c.Pairs = AllPairs
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Run measures every pair × size × rate and returns the rows.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	cfg.defaults()
	needPeer := false
	for _, p := range cfg.Pairs {
		if p == FastToFast || p == CycloneToFast || p == FastToCyclone {
			needPeer = true
		}
	}
	if needPeer && cfg.PeerBinary == "" {
		dir, err := os.MkdirTemp("", "ddsbench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if cfg.PeerBinary, err = fastddspeer.Build(dir); err != nil {
			return nil, err
		}
	}
	cfg.Cyclone.DomainID = cfg.DomainID
	pp, err := ddspath.Open(cfg.Cyclone)
	if err != nil {
		return nil, err
	}
	defer pp.Close()
	var out []Result
	run := 0
	for _, pair := range cfg.Pairs {
		for _, size := range cfg.Sizes {
			for _, rate := range cfg.Rates {
				if err := ctx.Err(); err != nil {
					return out, err
				}
				run++
				count := cfg.CountRate
				if rate == 0 {
					count = cfg.CountFull
				}
				b := &bench{cfg: &cfg, pp: pp, topic: fmt.Sprintf("rt/ddsbench_%d_%d", os.Getpid(), run),
					size: size, rate: rate, count: count}
				res := b.run(pair)
				fmt.Fprintf(cfg.Log, "%-34s %6d B %-6s sent %5d recv %5d  %9.0f msg/s  p50 %8v  p99 %8v  err %v\n",
					pair, size, rateString(rate), res.Sent, res.Received, res.MsgPerS, res.P50, res.P99, res.Err)
				out = append(out, res)
			}
		}
	}
	return out, nil
}

func rateString(r float64) string {
	if r == 0 {
		return "full"
	}
	if r >= 1000 {
		return strconv.FormatFloat(r/1000, 'g', -1, 64) + " kHz"
	}
	return strconv.FormatFloat(r, 'g', -1, 64) + " Hz"
}

// Markdown renders the results as a table.
func Markdown(rs []Result) string {
	var b strings.Builder
	b.WriteString("| pair | size | rate | sent | received | msg/s | MB/s | p50 latency | p99 latency | max |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | error: %v | | | | |\n", r.Pair, sizeString(r.Size), rateString(r.Rate),
				r.Sent, r.Received, strings.ReplaceAll(r.Err.Error(), "\n", " "))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %.0f | %.1f | %s | %s | %s |\n", r.Pair, sizeString(r.Size),
			rateString(r.Rate), r.Sent, r.Received, r.MsgPerS, r.MBPerS, us(r.P50), us(r.P99), us(r.Max))
	}
	return b.String()
}

func sizeString(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	if n > 1024 {
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%d B", n)
}

func us(d time.Duration) string {
	if d >= 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.0f µs", float64(d)/1e3)
}

type bench struct {
	cfg   *Config
	pp    *ddspath.Participant
	topic string
	size  int
	rate  float64
	count int
}

const typeName = "sensor_msgs::msg::dds_::LaserScan_"

func (b *bench) peerArgs(role string) []string {
	a := []string{"--" + role, b.topic, "--type", typeName, "--count", strconv.Itoa(b.count),
		"--domain", strconv.Itoa(int(b.cfg.DomainID)), "--timeout", "60"}
	if role == "sub" {
		a = append(a, "--quiet")
	}
	return a
}

func (b *bench) run(pair Pair) Result {
	res := Result{Pair: pair, Size: b.size, Rate: b.rate}
	var sum fastddspeer.Summary
	var err error
	switch pair {
	case CycloneInProcess:
		sum, res.Sent, err = b.cycloneToInProcess()
	case CycloneTwoProc:
		sum, res.Sent, err = b.cycloneToProcess(b.cfg.Self, append([]string{"-role", "sub"}, b.subFlags()...))
	case CycloneToFast:
		sum, res.Sent, err = b.cycloneToProcess(b.cfg.PeerBinary, b.peerArgs("sub"))
	case FastToFast:
		sum, res.Sent, err = b.fastToProcess(b.cfg.PeerBinary, b.peerArgs("sub"))
	case FastToCyclone:
		sum, res.Sent, err = b.fastToInProcess()
	default:
		err = fmt.Errorf("unknown pair %q", pair)
	}
	res.Err = err
	res.Received = sum.Count
	if span := time.Duration(sum.LastRecvNs - sum.FirstSrcNs); sum.Count > 0 && span > 0 {
		res.MsgPerS = float64(sum.Count) / span.Seconds()
		res.MBPerS = float64(sum.Bytes) / span.Seconds() / 1e6
	}
	res.P50 = time.Duration(sum.P50us * 1e3)
	res.P99 = time.Duration(sum.P99us * 1e3)
	res.Max = time.Duration(sum.MaxUs * 1e3)
	if res.Err == nil && res.Received < res.Sent {
		res.Err = fmt.Errorf("lost %d samples", res.Sent-res.Received)
	}
	return res
}

func (b *bench) subFlags() []string {
	return []string{"-topic", b.topic, "-count", strconv.Itoa(b.count), "-domain", strconv.Itoa(int(b.cfg.DomainID))}
}

var reliableAll = ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepAll, MaxBlocking: 10 * time.Second}

// payload is an XCDR1-LE sample of n bytes.
func payload(n int) []byte {
	p := make([]byte, n)
	copy(p, []byte{0x00, 0x01, 0x00, 0x00})
	for i := 4; i < n; i++ {
		p[i] = byte(i)
	}
	return p
}

// publish writes b.count samples at b.rate with source timestamp = now.
func (b *bench) publish(w *ddspath.Writer) (int, error) {
	p := payload(b.size)
	var period time.Duration
	if b.rate > 0 {
		period = time.Duration(float64(time.Second) / b.rate)
	}
	next := time.Now()
	sent := 0
	for range b.count {
		if period > 0 {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			next = next.Add(period)
		}
		if err := w.Write(p, time.Time{}); err != nil {
			return sent, err
		}
		sent++
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return sent, w.WaitForAcks(ctx)
}

func waitMatched(what string, f func() int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for f() < 1 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no match after %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

func (b *bench) cycloneToInProcess() (fastddspeer.Summary, int, error) {
	// A second participant in the same process: Cyclone delivers locally.
	sub, err := ddspath.Open(b.cfg.Cyclone)
	if err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	defer sub.Close()
	rd, err := sub.NewReader(b.topic, typeName, reliableAll, ddspath.WithQueue(b.count, ddspath.Block))
	if err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	col := startCollector(rd, b.count)
	w, err := b.pp.NewWriter(b.topic, typeName, reliableAll)
	if err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	defer w.Close()
	if err := waitMatched("writer", w.Matched, 10*time.Second); err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	sent, err := b.publish(w)
	return col.wait(10 * time.Second), sent, err
}

func (b *bench) fastToInProcess() (fastddspeer.Summary, int, error) {
	rd, err := b.pp.NewReader(b.topic, typeName, reliableAll, ddspath.WithQueue(b.count, ddspath.Block))
	if err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	defer rd.Close()
	col := startCollector(rd, b.count)
	pub, err := b.startPeerPub()
	if err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	defer pub.Kill()
	if err := waitMatched("reader", rd.Matched, 15*time.Second); err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	if err := pub.Go(); err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	sent, err := peerSent(pub)
	return col.wait(10 * time.Second), sent, err
}

func (b *bench) startPeerPub() (*fastddspeer.Peer, error) {
	args := append(b.peerArgs("pub"), "--size", strconv.Itoa(b.size), "--go-on-stdin", "--linger", "30")
	if b.cfg.PeerHeartbeat > 0 {
		args = append(args, "--heartbeat-ms", strconv.FormatInt(b.cfg.PeerHeartbeat.Milliseconds(), 10))
	}
	if b.rate > 0 {
		args = append(args, "--rate", strconv.FormatFloat(b.rate, 'g', -1, 64))
	}
	pub, err := fastddspeer.Start(b.cfg.PeerBinary, args...)
	if err != nil {
		return nil, err
	}
	if _, err := pub.WaitLine("matched 1", 15*time.Second); err != nil {
		pub.Kill()
		return nil, err
	}
	return pub, nil
}

func peerSent(pub *fastddspeer.Peer) (int, error) {
	line, err := pub.WaitLine("summary sent=", 120*time.Second)
	if err != nil {
		return 0, err
	}
	var sent, failed int
	if _, err := fmt.Sscanf(line, "summary sent=%d failed=%d", &sent, &failed); err != nil {
		return 0, err
	}
	if failed > 0 {
		return sent, fmt.Errorf("fast DDS peer: %d writes failed", failed)
	}
	return sent, nil
}

// cycloneToProcess publishes from ddspath to a subscriber process (the Fast
// DDS peer or ddsbench -role sub) that prints "matched 1" and a summary.
func (b *bench) cycloneToProcess(bin string, args []string) (fastddspeer.Summary, int, error) {
	if bin == "" {
		return fastddspeer.Summary{}, 0, errors.New("no subscriber executable (Config.Self / PeerBinary)")
	}
	sub, err := fastddspeer.Start(bin, args...)
	if err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	defer sub.Kill()
	w, err := b.pp.NewWriter(b.topic, typeName, reliableAll)
	if err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	defer w.Close()
	if _, err := sub.WaitLine("matched 1", 15*time.Second); err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	if err := waitMatched("writer", w.Matched, 15*time.Second); err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	sent, err := b.publish(w)
	if err != nil {
		return fastddspeer.Summary{}, sent, err
	}
	sum, err := processSummary(sub)
	return sum, sent, err
}

func (b *bench) fastToProcess(bin string, args []string) (fastddspeer.Summary, int, error) {
	sub, err := fastddspeer.Start(bin, args...)
	if err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	defer sub.Kill()
	if _, err := sub.WaitLine("ready", 15*time.Second); err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	pub, err := b.startPeerPub()
	if err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	defer pub.Kill()
	if _, err := sub.WaitLine("matched 1", 15*time.Second); err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	if err := pub.Go(); err != nil {
		return fastddspeer.Summary{}, 0, err
	}
	sent, err := peerSent(pub)
	if err != nil {
		return fastddspeer.Summary{}, sent, err
	}
	sum, err := processSummary(sub)
	return sum, sent, err
}

func processSummary(sub *fastddspeer.Peer) (fastddspeer.Summary, error) {
	line, err := sub.WaitLine("summary count=", 120*time.Second)
	if err != nil {
		return fastddspeer.Summary{}, err
	}
	return fastddspeer.ParseSummary(line)
}

// collector drains a reader in its own goroutine and computes a summary.
type collector struct {
	done chan struct{}
	sum  fastddspeer.Summary
	stop chan struct{}
}

func startCollector(rd *ddspath.Reader, count int) *collector {
	c := &collector{done: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.sum = collect(rd.C(), count, c.stop)
	}()
	return c
}

// wait returns the summary once count samples arrived, or after idle passes
// without progress.
func (c *collector) wait(idle time.Duration) fastddspeer.Summary {
	select {
	case <-c.done:
	case <-time.After(idle + 120*time.Second):
		close(c.stop)
		<-c.done
	}
	return c.sum
}

func collect(ch <-chan *ddspath.Sample, count int, stop <-chan struct{}) fastddspeer.Summary {
	var s fastddspeer.Summary
	lat := make([]time.Duration, 0, count)
	for s.Count < count {
		var smp *ddspath.Sample
		var ok bool
		select {
		case smp, ok = <-ch:
		case <-stop:
		}
		if !ok {
			break
		}
		if s.Count == 0 {
			s.FirstSrcNs = smp.SourceTimestamp.UnixNano()
		}
		s.Count++
		s.Bytes += int64(len(smp.CDR))
		s.LastRecvNs = smp.ReceivedAt.UnixNano()
		lat = append(lat, smp.ReceivedAt.Sub(smp.SourceTimestamp))
	}
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		pct := func(p float64) float64 { return float64(lat[int(p*float64(n-1)+0.5)]) / 1e3 }
		s.P50us, s.P99us, s.MaxUs = pct(0.5), pct(0.99), float64(lat[n-1])/1e3
	}
	return s
}

// RunSubscriberMain is the "-role sub" side of CycloneTwoProc: a ddspath
// subscriber that prints "ready", "matched 1" and a fastddspeer-style
// summary line on out.
func RunSubscriberMain(domain uint32, topic string, count int, out io.Writer) error {
	pp, err := ddspath.Open(ddspath.Config{DomainID: domain})
	if err != nil {
		return err
	}
	defer pp.Close()
	rd, err := pp.NewReader(topic, typeName, reliableAll, ddspath.WithQueue(count, ddspath.Block))
	if err != nil {
		return err
	}
	col := startCollector(rd, count)
	fmt.Fprintln(out, "ready")
	if err := waitMatched("reader", rd.Matched, 30*time.Second); err != nil {
		return err
	}
	fmt.Fprintln(out, "matched 1")
	s := col.wait(60 * time.Second)
	fmt.Fprintf(out, "summary count=%d bytes=%d first_src_ns=%d last_recv_ns=%d p50_us=%.1f p99_us=%.1f max_us=%.1f\n",
		s.Count, s.Bytes, s.FirstSrcNs, s.LastRecvNs, s.P50us, s.P99us, s.MaxUs)
	return nil
}
