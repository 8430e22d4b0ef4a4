package bridge

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names (docs/metrics.md lists each with its labels). Namespace
// picobridge, subsystem bridge for the lanes and supervisor, device for the
// per-device classifier (convention 19). The device label is bounded by
// metrics.max_devices (beyond: OtherDevice).
const (
	MetricBuildInfo            = "picobridge_build_info"
	MetricDeviceClass          = "picobridge_device_class"
	MetricDeviceRTT            = "picobridge_device_rtt_seconds"
	MetricDeviceLoss           = "picobridge_device_probe_loss_ratio"
	MetricDeviceProbes         = "picobridge_device_probes_sent_total"
	MetricDeviceTransitions    = "picobridge_device_class_transitions_total"
	MetricDeviceAttached       = "picobridge_device_attached"
	MetricForwarded            = "picobridge_bridge_samples_forwarded_total"
	MetricDropped              = "picobridge_bridge_samples_dropped_total"
	MetricQueueDepth           = "picobridge_bridge_queue_depth"
	MetricFlushes              = "picobridge_bridge_batch_flushes_total"
	MetricStallHolds           = "picobridge_bridge_batch_stall_holds_total"
	MetricSinkErrors           = "picobridge_bridge_sink_errors_total"
	MetricSupervisorMode       = "picobridge_bridge_supervisor_mode"
	MetricSupervisorTransition = "picobridge_bridge_supervisor_transitions_total"
	MetricSupervisorLag        = "picobridge_bridge_supervisor_lag_seconds"
	MetricQueueOccupancy       = "picobridge_bridge_queue_occupancy_ratio"
	MetricCriticalDropped      = "picobridge_bridge_critical_samples_dropped_total"
	MetricLinkBudget           = "picobridge_device_link_budget_bytes_per_second"
	// The learned link budget (policy.link.estimate: learn, linkest.go).
	MetricLinkLearnedRate      = "picobridge_device_link_learned_rate_bytes_per_second"
	MetricLinkMinRTT           = "picobridge_device_link_min_rtt_seconds"
	MetricLinkQueueDelay       = "picobridge_device_link_queue_delay_seconds"
	MetricLinkQueueBytes       = "picobridge_device_link_queue_bytes"
	MetricClassifierSuspended  = "picobridge_classifier_suspended_total"
	MetricClassifierSuspending = "picobridge_classifier_suspended"
	MetricWakeupLag            = "picobridge_gateway_wakeup_lag_seconds"
	MetricCPUSteal             = "picobridge_gateway_cpu_steal_ratio"
	// Traffic meter (traffic.go): label key is a subscription of the device
	// (at most MaxTrafficKeys per device, beyond: OtherKey).
	MetricOfferedSamples  = "picobridge_device_offered_samples_total"
	MetricOfferedBytes    = "picobridge_device_offered_bytes_total"
	MetricOfferedRate     = "picobridge_device_offered_samples_per_second"
	MetricOfferedByteRate = "picobridge_device_offered_bytes_per_second"
	MetricOfferedMaxBytes = "picobridge_device_offered_sample_max_bytes"
	MetricOfferedP95Bytes = "picobridge_device_offered_sample_p95_bytes"
	MetricFlushOccupancy  = "picobridge_bridge_batch_flush_occupancy_ratio"
	MetricFullFlushes     = "picobridge_bridge_batch_full_flushes_total"
	// policy.express.realtime (realtime.go): threads of the critical path
	// now raised, by role and by what was applied (nice, fifo).
	MetricRealtimeThreads = "picobridge_bridge_realtime_threads"
)

var (
	descBuildInfo = prometheus.NewDesc(MetricBuildInfo,
		"A metric with a constant '1' value labeled by version, revision and goversion from which picobridge was built.",
		[]string{"version", "revision", "goversion"}, nil)
	descClass = prometheus.NewDesc(MetricDeviceClass,
		"1 for the device's effective class (critical, noncritical, unknown), 0 for the others.",
		[]string{"device", "class"}, nil)
	descRTT = prometheus.NewDesc(MetricDeviceRTT,
		"Mean probe round-trip time of the device over the classifier window, device processing excluded.",
		[]string{"device"}, nil)
	descLoss = prometheus.NewDesc(MetricDeviceLoss,
		"Probe loss of the device over the classifier window (0..1).",
		[]string{"device"}, nil)
	descProbes = prometheus.NewDesc(MetricDeviceProbes,
		"Probe pings sent to the device.",
		[]string{"device"}, nil)
	descTransitions = prometheus.NewDesc(MetricDeviceTransitions,
		"Changes of the device's effective class, by the class entered.",
		[]string{"device", "to"}, nil)
	descAttached = prometheus.NewDesc(MetricDeviceAttached,
		"1 while the device has a session with the gateway.",
		[]string{"device"}, nil)
	descForwarded = prometheus.NewDesc(MetricForwarded,
		"Samples handed to the device's link, per lane.",
		[]string{"device", "lane"}, nil)
	descDropped = prometheus.NewDesc(MetricDropped,
		"Samples not forwarded to the device, per lane and reason (rate_limit, stale, oversize, ring_budget, queue_full, congestion, suspended).",
		[]string{"device", "lane", "reason"}, nil)
	descDepth = prometheus.NewDesc(MetricQueueDepth,
		"Samples pending in the device's lane.",
		[]string{"device", "lane"}, nil)
	descFlushes = prometheus.NewDesc(MetricFlushes,
		"Batched-lane flushes that sent at least one sample to the device.",
		[]string{"device"}, nil)
	descStallHolds = prometheus.NewDesc(MetricStallHolds,
		"Batched-lane flushes held because the device's TCP connection was in retransmission-timeout recovery (not CRITICAL devices).",
		[]string{"device"}, nil)
	descSinkErrors = prometheus.NewDesc(MetricSinkErrors,
		"Errors of the device's link other than congestion.",
		[]string{"device"}, nil)
	descMode = prometheus.NewDesc(MetricSupervisorMode,
		"1 for the supervisor's current mode (normal, degraded, emergency), 0 for the others.",
		[]string{"mode"}, nil)
	descSupTransitions = prometheus.NewDesc(MetricSupervisorTransition,
		"Supervisor mode changes.",
		nil, nil)
	descOccupancy = prometheus.NewDesc(MetricQueueOccupancy,
		"Samples pending in all lanes over what all lanes can hold, at the last supervisor evaluation (0..1).",
		nil, nil)
	descCritDropped = prometheus.NewDesc(MetricCriticalDropped,
		"Samples of critical routes not forwarded to the device, whatever their lane, by reason.",
		[]string{"device", "reason"}, nil)
	descLinkBudget = prometheus.NewDesc(MetricLinkBudget,
		"The device link's byte budget (configured or estimated); 0: none.",
		[]string{"device"}, nil)
	descLinkLearned = prometheus.NewDesc(MetricLinkLearnedRate,
		"The device link's learned pacing rate (policy.link.estimate: learn); 0: not learned yet (no queue seen: unpaced).",
		[]string{"device"}, nil)
	descLinkMinRTT = prometheus.NewDesc(MetricLinkMinRTT,
		"The device socket's minimum RTT (TCP_INFO tcpi_min_rtt); 0: unknown (UDP).",
		[]string{"device"}, nil)
	descLinkQueueDelay = prometheus.NewDesc(MetricLinkQueueDelay,
		"The learned budget's last queue estimate toward the device: socket RTT or probe RTT above its minimum, the larger.",
		[]string{"device"}, nil)
	descLinkQueueBytes = prometheus.NewDesc(MetricLinkQueueBytes,
		"The queue estimate at the link's acknowledged rate.",
		[]string{"device"}, nil)
	descSuspended = prometheus.NewDesc(MetricClassifierSuspended,
		"Device classifier evaluations the gateway-health guard suspended (the gateway's own lag explained the probes' delay), by reason.",
		[]string{"reason"}, nil)
	descSuspending = prometheus.NewDesc(MetricClassifierSuspending,
		"Devices whose last classifier evaluation the gateway-health guard suspended.",
		nil, nil)
	descRealtime = prometheus.NewDesc(MetricRealtimeThreads,
		"Threads of the gateway raised when it started, for the critical express path (policy.express.realtime), by role (runtime: Go threads, library: C threads) and by what the kernel allowed (nice, fifo).",
		[]string{"role", "applied"}, nil)
	descSupLag = prometheus.NewDesc(MetricSupervisorLag,
		"The supervisor's last lag reading, by whom it was counted against: gateway (held against supervisor.*.lag) or host (the process used less than half its CPUs: reported, no limit applied).",
		[]string{"counted_as"}, nil)
	descWakeupLag = prometheus.NewDesc(MetricWakeupLag,
		"Largest lateness of the gateway's own timers over the last classifier evaluation interval (scheduler wake-up delay).",
		nil, nil)
	descOfferedSamples = prometheus.NewDesc(MetricOfferedSamples,
		"Samples offered to the device's lanes (before any drop), per subscription key expression.",
		[]string{"device", "key"}, nil)
	descOfferedBytes = prometheus.NewDesc(MetricOfferedBytes,
		"Payload bytes offered to the device's lanes (before any drop), per subscription key expression.",
		[]string{"device", "key"}, nil)
	descOfferedRate = prometheus.NewDesc(MetricOfferedRate,
		"Samples per second offered to the device, exponentially weighted (time constant 5 s), per subscription key expression.",
		[]string{"device", "key"}, nil)
	descOfferedByteRate = prometheus.NewDesc(MetricOfferedByteRate,
		"Payload bytes per second offered to the device, exponentially weighted (time constant 5 s), per subscription key expression.",
		[]string{"device", "key"}, nil)
	descOfferedMax = prometheus.NewDesc(MetricOfferedMaxBytes,
		"Largest payload offered to the device, per subscription key expression.",
		[]string{"device", "key"}, nil)
	descOfferedP95 = prometheus.NewDesc(MetricOfferedP95Bytes,
		"Upper bound of the power-of-two size class holding the 95th percentile payload offered to the device (at most the largest), per subscription key expression.",
		[]string{"device", "key"}, nil)
	descFlushOcc = prometheus.NewDesc(MetricFlushOccupancy,
		"Recent mean (weight 0.1 per flush) of the fullest subscription's samples per batched flush over the device's subscriber ring depth (0..1).",
		[]string{"device"}, nil)
	descFullFlushes = prometheus.NewDesc(MetricFullFlushes,
		"Batched flushes in which one subscription got the device's whole subscriber ring depth.",
		[]string{"device"}, nil)
	descSteal = prometheus.NewDesc(MetricCPUSteal,
		"Host CPU steal ratio (/proc/stat) at the last classifier evaluation (0 unless classifier.suspend.steal or .load is on).",
		nil, nil)
)

// collector reads the gateway's counters at scrape time: counters live in
// the devices (deviceStats), so nothing is double-booked and a device's
// series keep counting across reconnections.
type collector struct{ g *Gateway }

func registerMetrics(r prometheus.Registerer, g *Gateway) error {
	return r.Register(collector{g})
}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBuildInfo, descClass, descRTT, descLoss, descProbes, descTransitions,
		descAttached, descForwarded, descDropped, descDepth, descFlushes, descStallHolds, descSinkErrors, descMode, descSupTransitions, descSupLag, descOccupancy,
		descCritDropped, descLinkBudget, descLinkLearned, descLinkMinRTT, descLinkQueueDelay, descLinkQueueBytes, descSuspended, descSuspending, descWakeupLag, descSteal, descRealtime,
		descOfferedSamples, descOfferedBytes, descOfferedRate, descOfferedByteRate, descOfferedMax, descOfferedP95,
		descFlushOcc, descFullFlushes} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	g := c.g
	now := g.clock.Now()
	version := g.opts.Version
	if version == "" {
		version = "dev"
	}
	ch <- prometheus.MustNewConstMetric(descBuildInfo, prometheus.GaugeValue, 1, version, g.opts.Revision, runtime.Version())

	g.mu.RLock()
	stats := make([]*deviceStats, 0, len(g.stats))
	for _, s := range g.stats {
		stats = append(stats, s)
	}
	g.mu.RUnlock()
	for _, s := range stats {
		for l := range numLanes {
			ls := &s.lanes[l]
			ch <- prometheus.MustNewConstMetric(descForwarded, prometheus.CounterValue, float64(ls.forwarded.Load()), s.label, l.String())
			for r := range numReasons {
				ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(ls.dropped[r].Load()), s.label, l.String(), r.String())
			}
		}
		ch <- prometheus.MustNewConstMetric(descFlushes, prometheus.CounterValue, float64(s.flushes.Load()), s.label)
		ch <- prometheus.MustNewConstMetric(descStallHolds, prometheus.CounterValue, float64(s.stallHolds.Load()), s.label)
		ch <- prometheus.MustNewConstMetric(descSinkErrors, prometheus.CounterValue, float64(s.errors.Load()), s.label)
		ch <- prometheus.MustNewConstMetric(descProbes, prometheus.CounterValue, float64(s.probes.Load()), s.label)
		for r := range numReasons {
			ch <- prometheus.MustNewConstMetric(descCritDropped, prometheus.CounterValue, float64(s.critDropped[r].Load()), s.label, r.String())
		}
		for to := range Class(len(s.trans)) {
			ch <- prometheus.MustNewConstMetric(descTransitions, prometheus.CounterValue, float64(s.trans[to].Load()), s.label, to.Label())
		}
		ts := s.traffic.status(now)
		for _, k := range ts.Keys {
			ch <- prometheus.MustNewConstMetric(descOfferedSamples, prometheus.CounterValue, float64(k.Samples), s.label, k.Key)
			ch <- prometheus.MustNewConstMetric(descOfferedBytes, prometheus.CounterValue, float64(k.Bytes), s.label, k.Key)
			ch <- prometheus.MustNewConstMetric(descOfferedRate, prometheus.GaugeValue, k.SamplesPerS, s.label, k.Key)
			ch <- prometheus.MustNewConstMetric(descOfferedByteRate, prometheus.GaugeValue, k.BytesPerS, s.label, k.Key)
			ch <- prometheus.MustNewConstMetric(descOfferedMax, prometheus.GaugeValue, float64(k.MaxBytes), s.label, k.Key)
			ch <- prometheus.MustNewConstMetric(descOfferedP95, prometheus.GaugeValue, float64(k.P95Bytes), s.label, k.Key)
		}
		ch <- prometheus.MustNewConstMetric(descFlushOcc, prometheus.GaugeValue, ts.FlushOccupancy, s.label)
		ch <- prometheus.MustNewConstMetric(descFullFlushes, prometheus.CounterValue, float64(ts.FullFlushes), s.label)
	}

	// Gauges of attached devices; several devices may share OtherDevice:
	// their depths add up, and class/RTT/loss are reported for named devices only.
	attached := map[string]bool{}
	depth := map[string]*[numLanes]int{}
	reported := map[string]bool{}
	for _, d := range g.Devices() {
		eg := d.egress()
		label := eg.stats.label
		attached[label] = true
		e, b, _ := eg.depth(now)
		if depth[label] == nil {
			depth[label] = &[numLanes]int{}
		}
		depth[label][LaneExpress] += e
		depth[label][LaneBatched] += b
		if label == OtherDevice || reported[label] {
			continue
		}
		reported[label] = true
		st := d.Classifier().Status()
		for cl := range Class(3) {
			v := 0.0
			if cl == st.Class {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descClass, prometheus.GaugeValue, v, label, cl.Label())
		}
		ch <- prometheus.MustNewConstMetric(descRTT, prometheus.GaugeValue, st.Reading.RTT.Seconds(), label)
		ch <- prometheus.MustNewConstMetric(descLoss, prometheus.GaugeValue, st.Reading.Loss, label)
		budget, _ := d.link.Rate()
		ch <- prometheus.MustNewConstMetric(descLinkBudget, prometheus.GaugeValue, budget, label)
		if c.g.cfg.Policy.Link.Estimate == LinkEstimateLearn {
			ls := d.learn.status()
			ch <- prometheus.MustNewConstMetric(descLinkLearned, prometheus.GaugeValue, ls.RateBytesPerS, label)
			ch <- prometheus.MustNewConstMetric(descLinkMinRTT, prometheus.GaugeValue, ls.MinRTT.Seconds(), label)
			ch <- prometheus.MustNewConstMetric(descLinkQueueDelay, prometheus.GaugeValue, ls.QueueDelay.Seconds(), label)
			ch <- prometheus.MustNewConstMetric(descLinkQueueBytes, prometheus.GaugeValue, ls.QueueBytes, label)
		}
	}
	for _, s := range stats {
		v := 0.0
		if attached[s.label] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descAttached, prometheus.GaugeValue, v, s.label)
		dp := depth[s.label]
		if dp == nil {
			dp = &[numLanes]int{}
		}
		for l := range numLanes {
			ch <- prometheus.MustNewConstMetric(descDepth, prometheus.GaugeValue, float64(dp[l]), s.label, l.String())
		}
	}

	st := g.sup.Status()
	for m := range SupervisorMode(3) {
		v := 0.0
		if m == st.Mode {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descMode, prometheus.GaugeValue, v, m.Label())
	}
	ch <- prometheus.MustNewConstMetric(descSupTransitions, prometheus.CounterValue, float64(st.Transitions))
	ch <- prometheus.MustNewConstMetric(descSupLag, prometheus.GaugeValue, st.Health.Lag.Seconds(), "gateway")
	ch <- prometheus.MustNewConstMetric(descSupLag, prometheus.GaugeValue, st.Health.HostLag.Seconds(), "host")
	ch <- prometheus.MustNewConstMetric(descOccupancy, prometheus.GaugeValue, st.Health.QueueOccupancy)
	gh := g.guard.status()
	for _, r := range suspendReasons {
		ch <- prometheus.MustNewConstMetric(descSuspended, prometheus.CounterValue, float64(gh.SuspendedTotal[r]), r)
	}
	ch <- prometheus.MustNewConstMetric(descSuspending, prometheus.GaugeValue, float64(gh.SuspendedDevices))
	ch <- prometheus.MustNewConstMetric(descWakeupLag, prometheus.GaugeValue, gh.WakeupLag.Seconds())
	ch <- prometheus.MustNewConstMetric(descSteal, prometheus.GaugeValue, gh.Steal)
	for _, t := range g.rt.status().Threads {
		ch <- prometheus.MustNewConstMetric(descRealtime, prometheus.GaugeValue, float64(t.Count), t.Role, string(t.Applied))
	}
}
