package fleet

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// churnState counts a churn run's joins and leaves.
type churnState struct {
	joins, joinFailed, leaves atomic.Int64
}

// runChurn answers "churn J L SECS K": for SECS seconds, J sessions per second join (a
// new session, new ZID, declared as the first ones) and L per second leave (a random open
// session with index ≥ K, closed as pico leaves: TCP close without CLOSE); the first K
// sessions (the critical subset) stay. It returns when the run is over and every join
// has finished: {"ev":"churned","joins","join_failed","leaves","live"}.
func (g *loadgen) runChurn(arg string) map[string]any {
	f := strings.Fields(arg)
	num := func(k int) float64 {
		if k >= len(f) {
			return 0
		}
		x, _ := strconv.ParseFloat(f[k], 64)
		return x
	}
	joinHz, leaveHz, secs, keep := num(0), num(1), num(2), int(num(3))
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var wg sync.WaitGroup
	tick := func(hz float64, do func()) {
		defer wg.Done()
		if hz <= 0 {
			return
		}
		period := time.Duration(float64(time.Second) / hz)
		for next := time.Now().Add(period); next.Before(end); next = next.Add(period) {
			time.Sleep(time.Until(next))
			do()
		}
	}
	var joining sync.WaitGroup
	wg.Add(2)
	go tick(joinHz, func() { joining.Go(g.join) })
	go tick(leaveHz, func() { g.leaveOne(keep) })
	wg.Wait()
	joining.Wait()
	return map[string]any{"ev": "churned", "joins": g.churn.joins.Load(), "join_failed": g.churn.joinFailed.Load(),
		"leaves": g.churn.leaves.Load(), "live": g.up()}
}

// join opens one more session with a new index.
func (g *loadgen) join() {
	g.mu.Lock()
	i := len(g.sessions)
	g.sessions = append(g.sessions, nil)
	g.mu.Unlock()
	s, err := g.open(i)
	if err != nil {
		g.churn.joinFailed.Add(1)
		return
	}
	g.mu.Lock()
	if g.leaving.Load() {
		g.mu.Unlock()
		_ = s.close()
		return
	}
	g.sessions[i] = s
	g.mu.Unlock()
	g.churn.joins.Add(1)
	g.wg.Add(1)
	go g.read(i, s)
}

// leaveOne closes a random open session with index ≥ keep (none: nothing happens).
func (g *loadgen) leaveOne(keep int) {
	g.mu.Lock()
	var open []int
	for i := keep; i < len(g.sessions); i++ {
		if g.sessions[i] != nil {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		g.mu.Unlock()
		return
	}
	i := open[g.rng.IntN(len(open))]
	s := g.sessions[i]
	g.sessions[i] = nil
	g.mu.Unlock()
	_ = s.close()
	g.churn.leaves.Add(1)
}
