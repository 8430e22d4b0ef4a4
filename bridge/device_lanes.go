package bridge

// The scheduler units of a device's two lanes: the critical express path
// (runExpress) and the batched noncritical path (runBatched, Flush).

import "time"

const expressQuantum = 32

// runExpress is the express lane's scheduler unit: it sends express samples
// as they come, paced only by the link budget (invariant 9). It returns how
// long until it may send again (0: nothing waits; it is woken by the next
// offer).
func (d *Device) runExpress(now time.Time) time.Duration {
	if d.detached.Load() {
		return 0
	}
	eg := d.egress()
	for range expressQuantum {
		s, ok, wait := eg.nextExpress(now)
		if ok {
			// the call's start first: a waiter woken by the notify must see
			// it, or it waits its full max for a device that stalls in this
			// call instead of expressStall
			eg.exp.sinkAt.Store(int64(now.Sub(d.g.started)) + 1)
			d.g.drained.notify() // taken from the FIFO: WaitExpressRoom looks again
			err := eg.sendExpress(d.sink, s, now)
			eg.exp.sinkAt.Store(0)
			after := d.g.clock.Now()
			// refused (its link is full) or stalled: not waited for until
			// its link takes a sample again (WaitExpressRoom)
			slow := err != nil || after.Sub(now) >= expressStall
			if eg.exp.slow.Load() != slow { // written only by this unit
				eg.exp.slow.Store(slow)
				if slow {
					d.g.drained.notify()
				}
			}
			now = after
			continue
		}
		return wait
	}
	return runNow
}

// runBatched is the batched lane's scheduler unit: a flush on the device's
// cadence (the grid flushBase + k·FlushInterval, as a ticker would), only
// while samples are pending, so an idle device costs nothing.
func (d *Device) runBatched(now time.Time) time.Duration {
	if d.detached.Load() {
		return 0
	}
	eg := d.egress()
	if eg.batchedPending() == 0 {
		d.flushAt = time.Time{}
		return 0
	}
	iv := d.flushInterval()
	if d.flushAt.IsZero() {
		k := now.Sub(d.flushBase)/iv + 1
		d.flushAt = d.flushBase.Add(k * iv)
	}
	if now.Before(d.flushAt) {
		return d.flushAt.Sub(now)
	}
	if d.linkStalled() {
		// Samples written now would wait behind the lost segment and then
		// arrive with everything else at once, more than the device's ring
		// takes: hold them (keep-latest, stale-drop) until TCP has repaired.
		eg.stats.stallHolds.Add(1)
		d.flushAt = now.Add(iv)
		return iv
	}
	d.flushBuf = d.flushNow(eg, d.g.clock.Now(), d.flushBuf[:0])
	d.flushBase, d.flushAt = now, time.Time{}
	if held, retry := eg.batchedHeld(); held { // held back by the ring or link budget
		if retry <= 0 || retry > iv {
			retry = iv
		}
		d.flushAt = now.Add(retry)
		return retry
	}
	return 0
}

// linkStalled reports whether the batched lane should hold its flush: the
// device is not CRITICAL and its TCP connection is in retransmission-timeout
// recovery (TCPInfo.Stalled). On an impaired link a loss burst backs the
// RTO off to seconds; flushes written meanwhile all arrive together when
// it is repaired, several ring depths in one burst of callbacks, and the
// device drops what its subscriber ring cannot hold (anchors.md §2.6,
// fourth bullet). A CRITICAL device is never held (one TCP_INFO read per
// flush of the others only).
func (d *Device) linkStalled() bool {
	if Class(d.class.Load()) == ClassCritical {
		return false
	}
	ts, ok := d.sink.(TCPInfoSource)
	if !ok {
		return false
	}
	info, err := ts.TCPInfo()
	return err == nil && info.Stalled
}

func (d *Device) flushInterval() time.Duration {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.shape.FlushInterval
}

// Flush runs one batched-lane flush now and hands the result to the sink;
// it returns the slice it used (for reuse). batchLoop calls it on the
// device's cadence; tests may call it directly.
func (d *Device) Flush(buf []Sample) []Sample {
	eg := d.egress()
	return d.flushNow(eg, d.g.clock.Now(), buf)
}

func (d *Device) flushNow(eg *egress, now time.Time, buf []Sample) []Sample {
	out := eg.flush(now, buf)
	d.lane.notify() // the flush took (or dropped) pending samples: Replay looks again
	if len(out) > 0 {
		eg.bat.mu.Lock()
		crit := eg.bat.outCrit
		eg.bat.mu.Unlock()
		eg.stats.flushes.Add(1)
		eg.countCrit(LaneBatched, len(out), crit, d.sink.SendBatch(out), now)
	}
	clear(out)
	return out
}
