package demo

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/sim/devsim"
)

// live prints the per-device status once per second: one plain line per
// device, or (Terminal) a table refreshed in place.
type live struct {
	w        io.Writer
	term     bool
	start    time.Time
	fleet    *devsim.Fleet
	gw       *bridge.Gateway
	col      *collector
	rec      *recordingSink
	last     time.Time
	lastSeen map[string]map[string]uint64 // device → key → delivered at the last tick
	lastIdx  int                          // collector samples seen at the last tick
	drawn    int                          // table lines on screen (terminal)
	ticks    int
	stalls   *stallMonitor
	// replayStart and replayFor describe the replay, for the progress line.
	replayStart time.Time
	replayFor   time.Duration
}

// progress is "replay 12/60 s, DDS written: /scan 360, /imu_data 361".
func (l *live) progress(now time.Time) string {
	el := min(now.Sub(l.replayStart), l.replayFor)
	return fmt.Sprintf("replay %.0f/%.0f s, DDS written: /scan %d, /imu_data %d", el.Seconds(), l.replayFor.Seconds(), l.rec.count(ScanTopic), l.rec.count(IMUTopic))
}

func newLive(w io.Writer, term bool, start time.Time, f *devsim.Fleet, gw *bridge.Gateway, col *collector, rec *recordingSink) *live {
	l := &live{w: w, term: term, start: start, fleet: f, gw: gw, col: col, rec: rec, last: time.Now(), lastSeen: map[string]map[string]uint64{}}
	if !term {
		fmt.Fprintln(w, "picodemo: live status, one line per device per second: class, delivered rate per key, latency p50/p95 over the last second, drops (device | gateway)")
	}
	return l
}

// note prints a line between status updates.
func (l *live) note(s string) {
	l.clear()
	fmt.Fprintf(l.w, "picodemo: %s\n", s)
}

func (l *live) clear() {
	if l.term && l.drawn > 0 {
		fmt.Fprintf(l.w, "\x1b[%dA", l.drawn)
		for range l.drawn {
			fmt.Fprint(l.w, "\x1b[2K\n")
		}
		fmt.Fprintf(l.w, "\x1b[%dA", l.drawn)
		l.drawn = 0
	}
}

func (l *live) finish() {
	l.drawn = 0 // leave the last table on screen
}

type liveRow struct {
	name, class, rates, p50, p95, dev, gw string
}

func (l *live) tick() {
	now := time.Now()
	dt := now.Sub(l.last).Seconds()
	if dt <= 0 {
		dt = 1
	}
	l.last = now
	dz := l.gw.Devicez(bridge.DevicezOptions{Transitions: true})
	l.col.observeClasses(dz, now)
	st := l.fleet.Stats()
	samples := l.col.snapshot()
	recent := samples[min(l.lastIdx, len(samples)):]
	l.lastIdx = len(samples)

	var rows []liveRow
	for _, ds := range st.Devices {
		r := liveRow{name: ds.Name, class: "-"}
		for _, d := range dz.Devices {
			if d.Name == ds.Name {
				r.class = d.Classifier.Class.String()
				r.gw = dropString(d.Lanes)
			}
		}
		prev := l.lastSeen[ds.Name]
		if prev == nil {
			prev = map[string]uint64{}
			l.lastSeen[ds.Name] = prev
		}
		var rates []string
		var ring, over, slot uint64
		for _, k := range sortedKeys(ds.Subscriptions) {
			s := ds.Subscriptions[k]
			rates = append(rates, fmt.Sprintf("%s %4.1f/s", k, float64(s.Delivered-prev[k])/dt))
			prev[k] = s.Delivered
			ring += s.RingFullDrops
			over += s.OversizeDrops
			slot += s.SlotDrops
		}
		over += ds.OversizeDropsUnattributed
		r.rates = strings.Join(rates, " ")
		var lat []float64
		for _, s := range recent {
			if s.Device == ds.Name {
				if d := s.latency(); d > 0 {
					lat = append(lat, float64(d)/1e6)
				}
			}
		}
		if len(lat) > 0 {
			p := percentiles(lat, 50, 95)
			r.p50, r.p95 = fmtMs(p[0]), fmtMs(p[1])
		} else {
			r.p50, r.p95 = "-", "-"
		}
		r.dev = fmt.Sprintf("ring_full=%d oversize=%d", ring, over)
		if slot > 0 {
			r.dev += fmt.Sprintf(" slot=%d", slot)
		}
		if !ds.Connected {
			r.dev += " (disconnected)"
		}
		rows = append(rows, r)
	}
	t := now.Sub(l.start).Seconds()
	if !l.term {
		l.ticks++
		if l.ticks%10 == 0 {
			fmt.Fprintf(l.w, "picodemo: %s; supervisor %v; %s\n", l.progress(now), dz.Supervisor.Mode, l.stallString())
		}
		for _, r := range rows {
			fmt.Fprintf(l.w, "t=%5.1fs %-8s %-11s %-30s p50 %-8s p95 %-8s | device %s | gateway %s\n",
				t, r.name, r.class, r.rates, r.p50, r.p95, r.dev, r.gw)
		}
		return
	}
	l.clear()
	lines := []string{
		fmt.Sprintf("picodemo  t=%.0fs  %s  supervisor %v  %s", t, l.progress(now), dz.Supervisor.Mode, l.stallString()),
		fmt.Sprintf("%-8s %-11s %-30s %-9s %-9s %-26s %s", "DEVICE", "CLASS", "DELIVERED RATE", "P50", "P95", "DEVICE DROPS", "GATEWAY DROPS"),
	}
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%-8s %-11s %-30s %-9s %-9s %-26s %s", r.name, r.class, r.rates, r.p50, r.p95, r.dev, r.gw))
	}
	for _, s := range lines {
		fmt.Fprintln(l.w, s)
	}
	l.drawn = len(lines)
}

func fmtMs(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fms", v)
}

// dropString renders the lanes' drops, "express/congestion=3 batched/rate_limit=120", or "none".
func dropString(lanes map[string]bridge.LaneStatus) string {
	var parts []string
	for _, lane := range sortedKeys(lanes) {
		d := lanes[lane].Dropped
		for _, reason := range sortedKeys(d) {
			if d[reason] > 0 {
				parts = append(parts, fmt.Sprintf("%s/%s=%d", lane, reason, d[reason]))
			}
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// stallString is "max wake-up delay 3.1ms" over the last period.
func (l *live) stallString() string {
	if l.stalls == nil {
		return ""
	}
	return "max wake-up delay " + fmtMs(float64(l.stalls.take())/1e6)
}
