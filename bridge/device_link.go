package bridge

// A device's link budget: configured, estimated from TCP_INFO, or learned
// (policy.link, docs/bridge.md "Link budget").

import (
	"slices"
	"time"
)

func (d *Device) configuredLink(dc *DeviceConfig) float64 {
	if dc != nil && dc.LinkBytesPerS > 0 {
		return dc.LinkBytesPerS
	}
	return d.g.cfg.Policy.Link.BytesPerS
}

// setLinkBudgetLocked applies a link budget (bytes/s, 0: none) to the
// lanes and, through the sink (TxRateSetter), to the transport's pacing:
// both at the budget × policy.link.headroom.
func (d *Device) setLinkBudgetLocked(budget float64, now time.Time) {
	l := d.g.cfg.Policy.Link
	d.link.set(budget, l.Headroom, l.Burst, now)
	if ts, ok := d.sink.(TxRateSetter); ok {
		_, r := d.link.Rate()
		ts.SetTxRate(r)
	}
}

// linkEstWindow is how many evaluations the TCP_INFO estimate's max filter spans.
const linkEstWindow = 10

// estimateLink updates an estimated link budget (policy.link.estimate:
// tcp_info, no budget configured): the largest of the socket's delivery
// and pacing rates over the last linkEstWindow evaluations, at least
// policy.link.min_bytes_per_s.
func (d *Device) estimateLink(now time.Time) {
	l := d.g.cfg.Policy.Link
	if l.Estimate != LinkEstimateTCPInfo {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.configuredLink(d.conf) > 0 {
		return
	}
	ti, ok := d.sink.(TCPInfoSource)
	if !ok {
		return
	}
	info, err := ti.TCPInfo()
	if err != nil {
		return
	}
	r := float64(info.DeliveryRate)
	if info.PacingRate > 0 && info.PacingRate < 1<<62 { // ^0: no pacing
		r = max(r, float64(info.PacingRate))
	}
	if r <= 0 {
		return
	}
	d.linkEst = append(d.linkEst, r)
	if len(d.linkEst) > linkEstWindow {
		d.linkEst = d.linkEst[len(d.linkEst)-linkEstWindow:]
	}
	est := max(slices.Max(d.linkEst), l.MinBytesPerS)
	d.setLinkBudgetLocked(est, now)
}

// learnTick is the period of the learned budget's readings
// (policy.link.estimate_interval; an hour when another estimate is used,
// so the ticker costs nothing).
func learnTick(l LinkConfig) time.Duration {
	if l.Estimate != LinkEstimateLearn || l.EstimateInterval <= 0 {
		return time.Hour
	}
	return l.EstimateInterval
}

// learnLink takes one reading of the device's link for the learned budget
// (linkest.go) and applies the rate it returns to the lanes and the
// transport's pacing. A device that was handed nothing since the last
// reading is skipped (an idle fleet costs no getsockopt); its next reading
// spans the gap.
func (d *Device) learnLink(now time.Time) {
	sent := d.link.sentBytes()
	if sent == d.learnSent && d.learn.idle() {
		return
	}
	d.learnSent = sent
	sig := linkSignal{Demand: d.link.backlogBytes() > 0, Sent: sent}
	if !sig.Demand {
		held, _ := d.egress().batchedHeld()
		sig.Demand = held
	}
	if ti, ok := d.sink.(TCPInfoSource); ok {
		if info, err := ti.TCPInfo(); err == nil {
			sig.TCP, sig.Acked, sig.RwndLimited = true, info.BytesAcked, info.RwndLimited
			sig.MinRTT = info.MinRTT
		}
	}
	rate, changed := d.learn.update(now, sig)
	if d.learn.ownQueue(now) {
		// Pings wait in the gateway's own queue: none is lost before the
		// learner's next reading (ownQueue).
		d.Classifier().HoldLoss(now.Add(2 * learnTick(d.g.cfg.Policy.Link)))
	}
	if d.g.cfg.Classifier.Enabled && d.learn.wantProbe(now) {
		d.probe(now) // faster feedback while learning or draining
	}
	if !changed {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.applyLearnedLocked(rate, now)
}

// applyLearnedLocked paces the lanes and the transport at a learned rate
// (bytes/s, 0: unpaced). The budget shown is rate / headroom, so a learned
// and a configured budget read alike (the lanes use budget × headroom).
func (d *Device) applyLearnedLocked(rate float64, now time.Time) {
	l := d.g.cfg.Policy.Link
	d.setLinkBudgetLocked(rate/max(l.Headroom, 1e-9), now)
}

// expressQuantum is the most express sends (samples and pings) of one
// device per scheduler run; then its unit goes to the back of the ready
// queue, so one busy device does not hold a worker from the others.
