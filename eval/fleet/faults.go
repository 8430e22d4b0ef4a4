package fleet

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// declare writes session i's declarations: the subscriber on the fan-out key and, with
// FLEETBENCH_TOKEN=1, a liveliness token named after the session (a device's graph
// token).
func (g *loadgen) declare(i int, s *rawSession) error {
	dl := time.Now().Add(10 * time.Second)
	if err := s.declareSubscriber(g.key, dl); err != nil {
		return err
	}
	if g.token {
		return s.declareToken(tokenKey(i), dl)
	}
	return nil
}

// tokenKey is session i's liveliness token, shaped as a ROS 2 graph token.
func tokenKey(i int) string { return fmt.Sprintf("@ros2_lv/0/fleet%d/0/0/NN/%%/%%/fleet_dev_%d", i, i) }

// open dials and declares session i from its source address; the handshake waits up to
// 10 s (zenoh-pico's Z_TRANSPORT_CONNECT_TIMEOUT).
func (g *loadgen) open(i int) (*rawSession, error) {
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+i%g.sources))}
	s, err := dialRaw(local, g.addr, g.batch, g.lease, 10*time.Second)
	if err != nil {
		return nil, err
	}
	if err := g.declare(i, s); err != nil {
		_ = s.close()
		return nil, err
	}
	return s, nil
}

// reopen brings session i back as zenoh-pico does (PicoReconnect): it notices the loss
// at its keep-alive phase, then tries to open once per Retry until it succeeds or the
// load generator leaves.
func (g *loadgen) reopen(i int) {
	defer g.wg.Done()
	at := g.model.Detect(time.Since(g.epoch), g.phase[i%len(g.phase)])
	if !g.sleep(time.Until(g.epoch.Add(at))) {
		return
	}
	for {
		s, err := g.open(i)
		if err == nil {
			g.mu.Lock()
			if g.leaving.Load() {
				g.mu.Unlock()
				_ = s.close()
				return
			}
			g.sessions[i] = s
			g.mu.Unlock()
			g.reconnects.Add(1)
			g.wg.Add(1)
			go g.read(i, s)
			return
		}
		g.redials.Add(1)
		g.reopenErr.Store(err.Error())
		g.mu.Lock()
		d := g.model.RetryAfter(g.rng)
		g.mu.Unlock()
		if !g.sleep(d) {
			return
		}
	}
}

// sleep waits d; false when the load generator leaves first.
func (g *loadgen) sleep(d time.Duration) bool {
	if d <= 0 {
		return !g.leaving.Load()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.stop:
		return false
	case <-t.C:
		return true
	}
}

// up counts the open sessions.
func (g *loadgen) up() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, s := range g.sessions {
		if s != nil {
			n++
		}
	}
	return n
}

// losses answers "losses A B C [K]" (sequence numbers, A ≤ B ≤ C): per session (the first
// K, default n) the samples of [A, B) and of [B, C) it did not receive, summed, the largest per
// session, and how many sessions missed any.
func (g *loadgen) losses(arg string) map[string]any {
	f := strings.Fields(arg)
	var v [4]uint32
	v[3] = uint32(len(g.seen))
	for k := range v {
		if k < len(f) {
			x, _ := strconv.ParseUint(f[k], 10, 32)
			v[k] = uint32(x)
		}
	}
	a, b, c := v[0], min(max(v[1], v[0]), g.maxSeq), min(max(v[2], v[1]), g.maxSeq)
	a = min(a, b)
	missed := func(i int, lo, hi uint32) int {
		m := 0
		for q := lo; q < hi; q++ {
			if g.seen[i][q/64].Load()&(1<<(q%64)) == 0 {
				m++
			}
		}
		return m
	}
	var sumAB, sumBC, maxAB, maxBC, devAB, devBC int
	k := min(int(v[3]), len(g.seen))
	for i := range k {
		x, y := missed(i, a, b), missed(i, b, c)
		sumAB, sumBC = sumAB+x, sumBC+y
		maxAB, maxBC = max(maxAB, x), max(maxBC, y)
		if x > 0 {
			devAB++
		}
		if y > 0 {
			devBC++
		}
	}
	return map[string]any{"ev": "losses", "sent_ab": int(b-a) * k, "sent_bc": int(c-b) * k,
		"missed_ab": sumAB, "missed_bc": sumBC, "max_session_ab": maxAB, "max_session_bc": maxBC,
		"sessions_missed_ab": devAB, "sessions_missed_bc": devBC, "duplicates": g.dups.Load()}
}
