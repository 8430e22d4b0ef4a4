package bridge

// Drop logging: once per cause and device, and rate-limited lines for
// dropped critical samples.

import (
	"log/slog"
	"sync"
	"time"
)

// onceLogger logs each (lane, reason) of one device once (invariant 2,
// convention 15).
type onceLogger struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen [numLanes][numReasons]bool
}

func (o *onceLogger) once(l Lane, r DropReason, msg string, attrs ...slog.Attr) {
	if o == nil || o.log == nil {
		return
	}
	o.mu.Lock()
	if o.seen[l][r] {
		o.mu.Unlock()
		return
	}
	o.seen[l][r] = true
	o.mu.Unlock()
	args := []any{slog.String("lane", l.String()), slog.String("reason", r.String())}
	for _, a := range attrs {
		args = append(args, a)
	}
	o.log.Warn("dropping samples: "+msg+" (logged once per cause and device)", args...)
}

// critLogger logs dropped samples of critical routes of one device, rate
// limited (issue 10 item 3): per reason, the first drop is logged at once,
// then at most one line per interval carrying the count since the
// previous line; tick flushes a count left over when drops stop. Every
// line is one device and one reason.
type critLogger struct {
	log      *slog.Logger
	interval time.Duration
	mu       sync.Mutex
	next     [numReasons]time.Time // no line before
	pending  [numReasons]uint64    // drops not yet in a line
}

func (c *critLogger) note(r DropReason, n int, now time.Time) {
	if c == nil || c.log == nil || n <= 0 {
		return
	}
	c.mu.Lock()
	c.pending[r] += uint64(n)
	line := c.due(r, now)
	c.mu.Unlock()
	if line > 0 {
		c.emit(r, line)
	}
}

// due takes the pending count of r when a line is due at now (0: none).
func (c *critLogger) due(r DropReason, now time.Time) uint64 {
	if c.pending[r] == 0 || now.Before(c.next[r]) {
		return 0
	}
	n := c.pending[r]
	c.pending[r] = 0
	c.next[r] = now.Add(c.interval)
	return n
}

// tick writes the lines due at now for drops counted since the last line.
func (c *critLogger) tick(now time.Time) {
	if c == nil || c.log == nil {
		return
	}
	var lines [numReasons]uint64
	c.mu.Lock()
	for r := range numReasons {
		lines[r] = c.due(r, now)
	}
	c.mu.Unlock()
	for r, n := range lines {
		if n > 0 {
			c.emit(DropReason(r), n)
		}
	}
}

func (c *critLogger) emit(r DropReason, n uint64) {
	c.log.Warn("critical samples dropped", slog.String("reason", r.String()), slog.Uint64("count", n),
		slog.Duration("interval", c.interval))
}
