package demo

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fleetResult is a 60 s run at 30 Hz in which everything went right:
// zephyr1 got every /scan and /imu_data, sim1 every /imu_data, esp1 was
// demoted before the replay and got 180 scans on the rate-limited lane.
func fleetResult() *Result {
	return &Result{
		Written: map[string]int{ScanTopic: 1800, IMUTopic: 1801},
		Devices: []DeviceResult{
			{Name: CriticalDevice, Class: "CRITICAL", ExpectCritical: true, CriticalThroughout: true,
				Keys: map[string]KeyResult{
					ScanKey: {Critical: true, Written: 1800, Received: 1800, Delivered: 1800},
					IMUKey:  {Critical: true, Written: 1801, Received: 1801, Delivered: 1801},
				}, CriticalDropped: map[string]uint64{}},
			{Name: SimDevice, Class: "CRITICAL", ExpectCritical: true, CriticalThroughout: true,
				Keys: map[string]KeyResult{
					IMUKey: {Critical: true, Written: 1801, Received: 1801, Delivered: 1801},
				}, CriticalDropped: map[string]uint64{}},
			{Name: ImpairedDevice, Class: "NONCRITICAL", Transitions: []string{"CRITICAL→NONCRITICAL at 3.0s (rtt)"},
				Keys: map[string]KeyResult{
					ScanKey: {Critical: true, Written: 1800, Received: 180, Delivered: 180, Missing: 1620},
				}, CriticalDropped: map[string]uint64{"rate_limit": 1620}},
		},
	}
}

func device(r *Result, name string) *DeviceResult {
	for i := range r.Devices {
		if r.Devices[i].Name == name {
			return &r.Devices[i]
		}
	}
	panic(name)
}

// TestCheckCriterion: the verdict with exact counts, issue 24 item 5. Each
// FAIL case names the device and the topic that fell short.
func TestCheckCriterion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(r *Result)
		want   []string // failures, exactly; nil: PASS
	}{
		{name: "pass: every critical device got every sample; esp1 (demoted) is not judged"},
		{name: "pass: sim1 at exactly 99 % (1783 of 1801), no gateway drop", change: func(r *Result) {
			k := device(r, SimDevice).Keys[IMUKey]
			k.Received, k.Delivered, k.Missing = 1783, 1783, 18
			device(r, SimDevice).Keys[IMUKey] = k
		}},
		{name: "fail: today's gateway paces sim1 (482 of 1801, 1319 express/congestion)", change: func(r *Result) {
			d := device(r, SimDevice)
			d.Keys[IMUKey] = KeyResult{Critical: true, Written: 1801, Received: 482, Delivered: 482, Missing: 1319}
			d.CriticalDropped = map[string]uint64{"congestion": 1319}
		}, want: []string{
			"sim1 /imu_data: received 482 of 1801 written (26.8 %, want ≥ 99 %), 1319 missing; gateway drops of sim1's critical routes: congestion=1319",
		}},
		{name: "fail: one below 99 % (1782 of 1801), samples lost without a gateway drop", change: func(r *Result) {
			k := device(r, SimDevice).Keys[IMUKey]
			k.Received, k.Delivered, k.Missing = 1782, 1782, 19
			device(r, SimDevice).Keys[IMUKey] = k
		}, want: []string{
			"sim1 /imu_data: received 1782 of 1801 written (98.9 %, want ≥ 99 %), 19 missing; gateway drops of sim1's critical routes: none",
		}},
		{name: "fail: every sample received but the gateway dropped 2 critical samples", change: func(r *Result) {
			device(r, CriticalDevice).CriticalDropped = map[string]uint64{"congestion": 1, "suspended": 1}
		}, want: []string{
			"zephyr1: the gateway dropped 2 samples of its critical routes (congestion=1 suspended=1)",
		}},
		{name: "fail: both topics of zephyr1 short, each named", change: func(r *Result) {
			d := device(r, CriticalDevice)
			d.Keys[ScanKey] = KeyResult{Critical: true, Written: 1800, Received: 1757, Delivered: 1757, Missing: 43}
			d.Keys[IMUKey] = KeyResult{Critical: true, Written: 1801, Received: 1700, Delivered: 1700, Missing: 101}
			d.CriticalDropped = map[string]uint64{"congestion": 144}
		}, want: []string{
			"zephyr1 /imu_data: received 1700 of 1801 written (94.4 %, want ≥ 99 %), 101 missing; gateway drops of zephyr1's critical routes: congestion=144",
			"zephyr1 /scan: received 1757 of 1800 written (97.6 %, want ≥ 99 %), 43 missing; gateway drops of zephyr1's critical routes: congestion=144",
		}},
		{name: "fail: a critical topic never written", change: func(r *Result) {
			device(r, SimDevice).Keys[IMUKey] = KeyResult{Critical: true}
		}, want: []string{"sim1 /imu_data: nothing was written"}},
		{name: "fail: out of order", change: func(r *Result) {
			k := device(r, CriticalDevice).Keys[ScanKey]
			k.OutOfOrder = 2
			device(r, CriticalDevice).Keys[ScanKey] = k
		}, want: []string{"zephyr1 /scan: 2 delivered out of order"}},
		{name: "fail: sim1 demoted on its loopback link is still judged", change: func(r *Result) {
			d := device(r, SimDevice)
			d.Class, d.CriticalThroughout = "NONCRITICAL", false
			d.Transitions = []string{"CRITICAL→NONCRITICAL at 12.0s (rtt)"}
			d.Keys[IMUKey] = KeyResult{Critical: true, Written: 1801, Received: 150, Delivered: 150, Missing: 1651}
			d.CriticalDropped = map[string]uint64{"rate_limit": 1651}
		}, want: []string{
			"sim1 /imu_data: received 150 of 1801 written (8.3 %, want ≥ 99 %), 1651 missing; gateway drops of sim1's critical routes: rate_limit=1651; not CRITICAL throughout the replay (now NONCRITICAL; CRITICAL→NONCRITICAL at 12.0s (rtt))",
		}},
		{name: "fail: esp1 never demoted is CRITICAL throughout, so judged", change: func(r *Result) {
			d := device(r, ImpairedDevice)
			d.Class, d.CriticalThroughout, d.Transitions = "CRITICAL", true, nil
			d.Keys[ScanKey] = KeyResult{Critical: true, Written: 1800, Received: 1700, Delivered: 1700, Missing: 100}
			d.CriticalDropped = map[string]uint64{"congestion": 100}
		}, want: []string{
			"esp1 /scan: received 1700 of 1800 written (94.4 %, want ≥ 99 %), 100 missing; gateway drops of esp1's critical routes: congestion=100",
		}},
		{name: "fail: device-side drops on any device, judged or not", change: func(r *Result) {
			device(r, ImpairedDevice).RingFullDrops = 3
			device(r, SimDevice).OversizeDrops = 1
		}, want: []string{"sim1 dropped 1 oversize messages", "esp1 dropped 3 samples on a full ring"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fleetResult()
			if tc.change != nil {
				tc.change(r)
			}
			r.check()
			require.Equal(t, tc.want, r.Failures)
			require.Equal(t, tc.want == nil, r.OK)
			require.True(t, device(r, CriticalDevice).Judged)
			require.True(t, device(r, SimDevice).Judged)
		})
	}
}

// TestSummaryVerdictLines: the summary's last lines are the verdict; a FAIL
// lists each failure on its own line and the per-subscription table marks
// the short topic.
func TestSummaryVerdictLines(t *testing.T) {
	r := fleetResult()
	r.Host = "load average 0.50 0.40 0.30 on 2 CPUs"
	r.check()
	var b bytes.Buffer
	printSummary(&b, r)
	require.Contains(t, b.String(), "\nPASS: every CRITICAL device received ≥ 99 % of each critical topic (zephyr1 /imu_data 1801/1801, /scan 1800/1800; sim1 /imu_data 1801/1801), the gateway dropped nothing on a critical route toward them, and no simulated device dropped a sample on a full ring or as oversize\n")
	require.NotContains(t, b.String(), "FAIL")

	d := device(r, SimDevice)
	d.Keys[IMUKey] = KeyResult{Critical: true, Written: 1801, Received: 482, Delivered: 482, Missing: 1319}
	d.CriticalDropped = map[string]uint64{"congestion": 1319}
	r.check()
	b.Reset()
	printSummary(&b, r)
	out := b.String()
	require.Contains(t, out, "\nFAIL: 1 of the demo's criteria did not hold (host: load average 0.50 0.40 0.30 on 2 CPUs):\n"+
		"  sim1 /imu_data: received 482 of 1801 written (26.8 %, want ≥ 99 %), 1319 missing; gateway drops of sim1's critical routes: congestion=1319\n")
	require.NotContains(t, out, "PASS")
	require.Regexp(t, `(?m)^sim1 +/imu_data +CRITICAL +482 +1801 +26\.8 % +1319 .* congestion=1319 +SHORT$`, out)
	require.Regexp(t, `(?m)^esp1 +/scan +no \(NONCRITICAL\) +180 +1800 .* rate_limit=1620 +-$`, out)
	require.Regexp(t, `(?m)^zephyr1 +/scan +CRITICAL +1800 +1800 +100\.0 % .* none +ok$`, out)
}

// TestCriticalThroughout: the class at the replay's start and every
// transition inside the replay count; those before or after do not.
func TestCriticalThroughout(t *testing.T) {
	s := time.Second
	from, to := 5*s, 65*s
	for _, tc := range []struct {
		name string
		tl   []classPoint
		want bool
	}{
		{"critical from the start", []classPoint{{0, "CRITICAL"}}, true},
		{"promoted before the replay", []classPoint{{0, "UNKNOWN"}, {2 * s, "CRITICAL"}}, true},
		{"promoted exactly at the start", []classPoint{{0, "UNKNOWN"}, {5 * s, "CRITICAL"}}, true},
		{"demoted before the replay", []classPoint{{0, "CRITICAL"}, {3 * s, "NONCRITICAL"}}, false},
		{"demoted during the replay", []classPoint{{0, "CRITICAL"}, {30 * s, "NONCRITICAL"}}, false},
		{"demoted and back during the replay", []classPoint{{0, "CRITICAL"}, {30 * s, "NONCRITICAL"}, {31 * s, "CRITICAL"}}, false},
		{"demoted after the replay", []classPoint{{0, "CRITICAL"}, {66 * s, "NONCRITICAL"}}, true},
		{"promoted during the replay", []classPoint{{0, "NONCRITICAL"}, {10 * s, "CRITICAL"}}, false},
		{"no timeline", nil, false},
	} {
		require.Equal(t, tc.want, criticalThroughout(tc.tl, from, to), tc.name)
	}
}
