package fleet

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Environment of the load generator child (the runner's own executable re-executed).
const (
	// ChildEnv = "loadgen" makes RunChildIfRequested run the load generator.
	ChildEnv = "FLEETBENCH_CHILD"
	// Its parameters: router address (host:port), sessions, source addresses (127.0.0.x
	// count), key, batch size, lease.
	dialsEnv                                              = "FLEETBENCH_DIALS"   // concurrent dials (default 32)
	connectEnv                                            = "FLEETBENCH_CONNECT" // deadline of the whole connect phase (default 180s)
	addrEnv, nEnv, sourcesEnv, keyEnv, batchEnv, leaseEnv = "FLEETBENCH_ADDR", "FLEETBENCH_N", "FLEETBENCH_SOURCES", "FLEETBENCH_KEY", "FLEETBENCH_BATCH", "FLEETBENCH_LEASE"
	// Fault runs (storm.go, churn.go): "pico" makes a lost session reopen as zenoh-pico's
	// auto-reconnect does (PicoReconnect); "1" declares a liveliness token per session
	// besides the subscriber; MAXSEQ sizes the per-session record of the sequence numbers
	// received (0: none); SEED seeds the keep-alive phases and the churn's choices;
	// JITTER is PicoReconnect.Jitter.
	reconnectEnv, tokenEnv, maxSeqEnv, seedEnv, jitterEnv = "FLEETBENCH_RECONNECT", "FLEETBENCH_TOKEN", "FLEETBENCH_MAXSEQ", "FLEETBENCH_SEED", "FLEETBENCH_JITTER"
)

// Payload layout of the fan-out samples: "PBF1", seq (u32 LE), send time (Unix ns, i64 LE).
var fanMagic = []byte("PBF1")

const fanHeader = 16

// hist is a log-linear latency histogram: bucket i holds latencies in
// [1.01^i, 1.01^(i+1)) µs (1 % resolution), up to 1.01^2000 µs ≈ 7 minutes.
type hist struct {
	b [2001]atomic.Uint64
}

func (h *hist) add(us float64) {
	i := 0
	if us > 1 {
		i = min(int(math.Log(us)/math.Log(1.01)), len(h.b)-1)
	}
	h.b[i].Add(1)
}

func (h *hist) reset() {
	for i := range h.b {
		h.b[i].Store(0)
	}
}

// quantile in ms (upper edge of the bucket), NaN when empty.
func (h *hist) quantile(q float64) float64 {
	var n uint64
	counts := make([]uint64, len(h.b))
	for i := range h.b {
		counts[i] = h.b[i].Load()
		n += counts[i]
	}
	if n == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = max(rank, 1)
	var c uint64
	for i, x := range counts {
		c += x
		if c >= rank {
			return math.Pow(1.01, float64(i+1)) / 1000
		}
	}
	return math.NaN()
}

// loadgen holds the sessions of one load generator process.
type loadgen struct {
	addr    string
	n       int
	sources int
	key     string
	batch   uint16
	lease   time.Duration

	mu       sync.Mutex
	sessions []*rawSession
	wg       sync.WaitGroup
	leaving  atomic.Bool
	lost     atomic.Int64 // sessions that ended before "leave"
	deliv    atomic.Int64
	minSeq   atomic.Uint32 // samples with a lower sequence number are not counted
	withData []atomic.Bool
	lat      hist
	out      *json.Encoder

	// Fault runs.
	reconnect  bool          // reopen lost sessions (PicoReconnect)
	model      PicoReconnect // with reconnect
	token      bool          // declare a liveliness token per session
	epoch      time.Time     // the clock of PicoReconnect.Detect
	phase      []float64     // per session: its keep-alive timer's phase in [0, 1)
	rng        *rand.Rand    // guarded by mu
	stop       chan struct{} // closed by leave: ends reopen waits
	stopOnce   sync.Once
	reconnects atomic.Int64 // sessions reopened
	redials    atomic.Int64 // failed reopen attempts
	reopenErr  atomic.Value // string: the last failed reopen's error
	maxSeq     uint32
	seen       [][]atomic.Uint64 // per session (first n), bit seq: received
	dups       atomic.Int64      // samples a session of seen received again
	churn      churnState
}

// RunChildIfRequested runs the load generator and exits when this process was started as
// one (ChildEnv=loadgen); otherwise it returns at once. Call it first in main and TestMain.
//
// The load generator reads commands on stdin, one per line, and answers each with one JSON
// line on stdout: "connect" (open every session: {"ev":"connected","ok","failed","secs",
// "first_error"}), "reset" (zero the counters), "report" ({"ev":"report","deliveries",
// "sessions_with_data","lost_sessions","p50_ms","p99_ms","max_ms"}), "reset N" (count only
// samples with sequence number ≥ N from now on), "leave" (close every
// session: {"ev":"left","secs"}). EOF ends it.
func RunChildIfRequested() {
	if os.Getenv(ChildEnv) != "loadgen" {
		return
	}
	g := &loadgen{addr: os.Getenv(addrEnv), key: os.Getenv(keyEnv), out: json.NewEncoder(os.Stdout)}
	g.n, _ = strconv.Atoi(os.Getenv(nEnv))
	g.sources, _ = strconv.Atoi(os.Getenv(sourcesEnv))
	b, _ := strconv.Atoi(os.Getenv(batchEnv))
	g.batch = uint16(min(max(b, 64), 65535))
	g.lease, _ = time.ParseDuration(os.Getenv(leaseEnv))
	if g.lease <= 0 {
		g.lease = 10 * time.Second
	}
	g.sources = max(g.sources, 1)
	g.reconnect = os.Getenv(reconnectEnv) == "pico"
	g.token = os.Getenv(tokenEnv) == "1"
	ms, _ := strconv.ParseUint(os.Getenv(maxSeqEnv), 10, 32)
	seed, _ := strconv.ParseUint(os.Getenv(seedEnv), 10, 64)
	jitter, _ := time.ParseDuration(os.Getenv(jitterEnv))
	g.init(uint32(ms), seed, jitter)
	g.run(os.Stdin)
	os.Exit(0)
}

// init sizes the per-session state: maxSeq sequence numbers recorded per session, the
// keep-alive phases drawn from seed.
func (g *loadgen) init(maxSeq uint32, seed uint64, jitter time.Duration) {
	g.withData = make([]atomic.Bool, g.n)
	g.model = DefaultPicoReconnect
	g.model.Lease, g.model.Jitter = g.lease, jitter
	g.epoch = time.Now()
	g.rng = rand.New(rand.NewPCG(seed, 29))
	g.phase = make([]float64, g.n)
	for i := range g.phase {
		g.phase[i] = g.rng.Float64()
	}
	g.stop = make(chan struct{})
	g.maxSeq = maxSeq
	if maxSeq > 0 {
		g.seen = make([][]atomic.Uint64, g.n)
		for i := range g.seen {
			g.seen[i] = make([]atomic.Uint64, (maxSeq+63)/64)
		}
	}
}

func (g *loadgen) emit(v map[string]any) { _ = g.out.Encode(v) }

func (g *loadgen) run(in io.Reader) {
	stop := make(chan struct{})
	go g.keepAlive(stop)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		switch cmd {
		case "connect":
			g.connect()
		case "reset":
			from, _ := strconv.ParseUint(arg, 10, 32)
			g.minSeq.Store(uint32(from))
			g.deliv.Store(0)
			g.lat.reset()
			for i := range g.withData {
				g.withData[i].Store(false)
			}
			g.emit(map[string]any{"ev": "reset"})
		case "report":
			k := 0
			for i := range g.withData {
				if g.withData[i].Load() {
					k++
				}
			}
			g.emit(map[string]any{"ev": "report", "deliveries": g.deliv.Load(), "sessions_with_data": k,
				"lost_sessions": g.lost.Load(), "p50_ms": jsonNum(g.lat.quantile(0.5)), "p99_ms": jsonNum(g.lat.quantile(0.99)),
				"max_ms": jsonNum(g.lat.quantile(1))})
		case "status":
			le, _ := g.reopenErr.Load().(string)
			g.emit(map[string]any{"ev": "status", "up": g.up(), "reconnects": g.reconnects.Load(), "redials": g.redials.Load(),
				"lost_sessions": g.lost.Load(), "first_error": le})
		case "losses":
			g.emit(g.losses(arg))
		case "churn":
			g.emit(g.runChurn(arg))
		case "leave":
			t0 := time.Now()
			g.leave()
			g.emit(map[string]any{"ev": "left", "secs": time.Since(t0).Seconds()})
		}
	}
	close(stop)
	g.leave()
}

func jsonNum(v float64) float64 {
	if math.IsNaN(v) {
		return -1
	}
	return v
}

var errConnectBudget = errors.New("connect phase deadline passed before this session's turn")

// connect opens n sessions, FLEETBENCH_DIALS (32) dials at a time and within
// FLEETBENCH_CONNECT (180 s): a session not open by then counts as failed, spread over 127.0.0.1 … 127.0.0.<sources>.
func (g *loadgen) connect() {
	t0 := time.Now()
	var ok, failed, retries atomic.Int64
	var firstErr atomic.Value
	jobs := make(chan int)
	var wg sync.WaitGroup
	g.mu.Lock() // the keep-alive sweep may be reading it
	g.sessions = make([]*rawSession, g.n)
	g.mu.Unlock()
	dials, _ := strconv.Atoi(os.Getenv(dialsEnv))
	if dials <= 0 {
		dials = 32
	}
	budget, _ := time.ParseDuration(os.Getenv(connectEnv))
	if budget <= 0 {
		budget = 180 * time.Second
	}
	phaseEnd := t0.Add(budget)
	for range dials {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+i%g.sources))}
				// A refused or closed handshake is retried, as a zenoh-pico client redials:
				// up to 8 attempts of at most 5 s, 50 ms doubling to 1 s between them.
				var s *rawSession
				var err error
				err = errConnectBudget
				for attempt, wait := 0, 50*time.Millisecond; attempt < 8 && time.Now().Before(phaseEnd); attempt, wait = attempt+1, min(2*wait, time.Second) {
					if attempt > 0 {
						retries.Add(1)
						time.Sleep(wait)
					}
					if s, err = dialRaw(local, g.addr, g.batch, g.lease, 5*time.Second); err == nil {
						break
					}
					firstErr.CompareAndSwap(nil, err.Error())
				}
				if err == nil {
					err = g.declare(i, s)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					if s != nil {
						_ = s.close()
					}
					continue
				}
				ok.Add(1)
				g.mu.Lock()
				g.sessions[i] = s
				g.mu.Unlock()
				g.wg.Add(1)
				go g.read(i, s)
			}
		}()
	}
	for i := range g.n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	fe, _ := firstErr.Load().(string)
	g.emit(map[string]any{"ev": "connected", "ok": ok.Load(), "failed": failed.Load(), "secs": time.Since(t0).Seconds(), "first_error": fe, "retries": retries.Load()})
}

// read counts the fan-out samples of one session: every batch is searched for the payload
// magic (a 1500-byte sample fits one batch, so it is never cut by fragmentation).
func (g *loadgen) read(i int, s *rawSession) {
	defer g.wg.Done()
	var buf []byte
	for {
		b, err := readStreamBatch(s.br, buf)
		if err != nil {
			g.mu.Lock()
			ours := i < len(g.sessions) && g.sessions[i] == s // not closed by leave or churn
			if ours {
				g.sessions[i] = nil
			}
			g.mu.Unlock()
			if ours && !g.leaving.Load() {
				g.lost.Add(1)
				if g.reconnect {
					g.wg.Add(1)
					go g.reopen(i)
				}
			}
			_ = s.close()
			return
		}
		buf = b
		now := time.Now().UnixNano()
		for off := 0; ; {
			j := bytes.Index(b[off:], fanMagic)
			if j < 0 || off+j+fanHeader > len(b) {
				break
			}
			p := b[off+j:]
			off += j + fanHeader
			if binary.LittleEndian.Uint32(p[4:]) < g.minSeq.Load() {
				continue
			}
			sent := int64(binary.LittleEndian.Uint64(p[8:]))
			if seq := binary.LittleEndian.Uint32(p[4:]); i < len(g.seen) && seq < g.maxSeq {
				if g.seen[i][seq/64].Or(1<<(seq%64))&(1<<(seq%64)) != 0 {
					g.dups.Add(1) // received twice: a routing duplicate
				}
			}
			g.deliv.Add(1)
			if i < len(g.withData) {
				g.withData[i].Store(true)
			}
			g.lat.add(float64(now-sent) / 1e3)
		}
	}
}

// keepAlive writes a KEEP_ALIVE to every session every lease/4.
func (g *loadgen) keepAlive(stop chan struct{}) {
	t := time.NewTicker(g.lease / 4)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			g.mu.Lock()
			ss := append([]*rawSession(nil), g.sessions...)
			g.mu.Unlock()
			// A deadline per write: one for the whole sweep would expire part-way through a
			// sweep of 10 000 sessions and silently skip the rest (their leases expired).
			for _, s := range ss {
				if s != nil {
					_ = s.keepAlive(time.Now().Add(time.Second))
				}
			}
		}
	}
}

// leave closes every session (TCP close, pico's usual way to leave) and waits for the
// readers.
func (g *loadgen) leave() {
	g.leaving.Store(true)
	g.stopOnce.Do(func() {
		if g.stop != nil {
			close(g.stop)
		}
	})
	g.mu.Lock()
	ss := g.sessions
	g.sessions = nil
	g.mu.Unlock()
	for _, s := range ss {
		if s != nil {
			_ = s.close()
		}
	}
	g.wg.Wait()
}

// encodeFan writes the fan-out payload header into b.
func encodeFan(b []byte, seq uint32, at time.Time) {
	copy(b, fanMagic)
	binary.LittleEndian.PutUint32(b[4:], seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(at.UnixNano()))
}
