package knobs_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/knobs"
)

// topics builds a traffic file: each spec is "name dir rate size budget_ms".
func topics(t *testing.T, specs ...string) *knobs.Traffic {
	t.Helper()
	var b strings.Builder
	for _, s := range specs {
		var name, dir string
		var rate float64
		var size, budget int
		_, err := fmt.Sscan(s, &name, &dir, &rate, &size, &budget)
		require.NoError(t, err)
		fmt.Fprintf(&b, "[[topic]]\nname = %q\ndirection = %q\nrate_hz = %g\nsize_bytes = %d\nlatency_budget_ms = %d\n", name, dir, rate, size, budget)
	}
	tr, err := knobs.ParseTraffic("traffic.toml", []byte(b.String()))
	require.NoError(t, err)
	return tr
}

// changes maps knob id → advised value for the settings advise changes.
func changes(a *knobs.Advice) map[string]string {
	out := map[string]string{}
	for _, s := range a.Settings {
		if s.Changed() {
			out[s.Current.Knob.ID] = s.Current.Knob.Format(s.Value)
		}
	}
	return out
}

func lanes(a *knobs.Advice) map[string]string {
	out := map[string]string{}
	for _, tp := range a.Topics {
		if tp.Topic.Direction == knobs.Pub {
			out[tp.Topic.Name] = tp.Lane.String()
		}
	}
	return out
}

const batchOff = "CONFIG_NROS_ZENOH_TX_BATCH=n\nCONFIG_NROS_ZENOH_TX_SPLIT_LOCK=n\n"

func TestAdviseDecisionTree(t *testing.T) {
	for _, tc := range []struct {
		name     string
		platform string
		env      string
		traffic  []string
		changes  map[string]string
		lanes    map[string]string
	}{
		{"low rate: no tuning, and no batching (nothing to coalesce)", "zephyr", "",
			[]string{"/temp pub 1 64 1000"},
			map[string]string{knobs.TxBatch: "false", knobs.TxSplitLock: "false"},
			map[string]string{"/temp": "per-sample"}},
		{"low rate but a budget below one socket window: shorter window", "zephyr", "",
			[]string{"/estop pub 1 16 30"},
			map[string]string{knobs.TxBatch: "false", knobs.TxSplitLock: "false", knobs.SocketTimeoutMs: "20"},
			map[string]string{"/estop": "per-sample"}},
		{"low rate with batching already off: nothing to change", "zephyr", batchOff,
			[]string{"/temp pub 2 64 1000", "/hb pub 1 8 1000"},
			map[string]string{},
			map[string]string{"/temp": "per-sample", "/hb": "per-sample"}},
		{"streaming small messages: TX batching", "zephyr", batchOff,
			[]string{"/imu pub 100 64 200"},
			map[string]string{knobs.TxBatch: "true"},
			map[string]string{"/imu": "batched"}},
		{"still tx-bound: plus split lock, then a lower window", "zephyr", batchOff,
			[]string{"/imu pub 200 64 200"},
			map[string]string{knobs.TxBatch: "true", knobs.TxSplitLock: "true", knobs.SocketTimeoutMs: "50"},
			map[string]string{"/imu": "batched"}},
		{"low-rate latency-critical topic: express, window fits its budget", "zephyr", "",
			[]string{"/imu pub 100 64 200", "/estop pub 1 16 30"},
			map[string]string{knobs.SocketTimeoutMs: "20"},
			map[string]string{"/imu": "batched", "/estop": "express"}},
		{"budget below the flush at high rate: flush sooner", "zephyr", "",
			[]string{"/imu pub 100 64 20"},
			map[string]string{knobs.TxFlushMs: "20"},
			map[string]string{"/imu": "batched"}},
		{"everything latency-critical at high rate: lower socket timeout", "zephyr", "",
			[]string{"/ctl pub 100 32 5"},
			map[string]string{knobs.TxBatch: "false", knobs.TxSplitLock: "false", knobs.SocketTimeoutMs: "5"},
			map[string]string{"/ctl": "express"}},
		{"no per-fd ceiling: the tree does not apply", "freertos", "",
			[]string{"/imu pub 500 64 5"},
			map[string]string{},
			map[string]string{"/imu": "per-sample"}},
		{"subscriber burst above the ring: deeper ring", "zephyr", "",
			[]string{"/cmd sub 200 48 100"}, // 10 per 50 ms gateway flush (knobs.DefaultGatewayFlush)
			map[string]string{knobs.SubscriberRingDepth: "10"},
			map[string]string{}},
		{"subscribed sample above the slot: bigger slot", "freertos", "",
			[]string{"/pose sub 10 1500 100"},
			map[string]string{knobs.SubscriberBufferSize: "1536"},
			map[string]string{}},
		{"subscribed message above frag_max_size", "zephyr", "",
			[]string{"/map sub 1 10000 1000"},
			map[string]string{knobs.FragMaxSize: "10240"},
			map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := knobs.Advise(resolve(t, tc.platform, "", tc.env), topics(t, tc.traffic...))
			require.Equal(t, tc.changes, changes(a))
			require.Equal(t, tc.lanes, lanes(a))
			var buf bytes.Buffer
			require.NoError(t, knobs.WriteAdvice(&buf, a))
		})
	}
}

func TestAdviseThroughput(t *testing.T) {
	// tx-tuning.md, native_sim, 64 B, 100 ms window: untuned ~9, batch ~136,
	// batch + split lock ~181 msg/s.
	tr := topics(t, "/s pub 1000 64 1000")
	a := knobs.Advise(resolve(t, "zephyr", "", batchOff), tr)
	require.InDelta(t, 9, a.Throughput.Untuned, 0.01)
	require.InDelta(t, 9, a.Throughput.Current, 0.01)
	a = knobs.Advise(resolve(t, "zephyr", "", "CONFIG_NROS_ZENOH_TX_SPLIT_LOCK=n\n"), tr)
	require.InDelta(t, 136, a.Throughput.Current, 2)
	a = knobs.Advise(resolve(t, "zephyr", "", ""), tr)
	require.InDelta(t, 181, a.Throughput.Current, 2)
	require.True(t, a.Throughput.Capped)
	require.GreaterOrEqual(t, a.Throughput.Recommended, 1000.0-1e-6)

	a = knobs.Advise(resolve(t, "posix", "", ""), tr)
	require.False(t, a.Throughput.Capped)
	require.Equal(t, 1000.0, a.Throughput.Offered)
}

func TestAdviseNoPublishers(t *testing.T) {
	a := knobs.Advise(resolve(t, "zephyr", "", ""), topics(t, "/cmd sub 10 48 100"))
	require.Empty(t, changes(a))
	var buf bytes.Buffer
	require.NoError(t, knobs.WriteAdvice(&buf, a))
	require.Contains(t, buf.String(), "the device publishes nothing")
	require.Contains(t, buf.String(), "no knob changes advised")
}

func TestAdviseBuildLines(t *testing.T) {
	tr := topics(t, "/imu pub 200 64 200")
	var buf bytes.Buffer
	require.NoError(t, knobs.WriteAdvice(&buf, knobs.Advise(resolve(t, "zephyr", "", batchOff), tr)))
	require.Contains(t, buf.String(), "set it (prj.conf):\n  CONFIG_NROS_ZENOH_TX_BATCH=y\n  CONFIG_NROS_ZENOH_TX_SPLIT_LOCK=y\n  CONFIG_NROS_ZENOH_SOCKET_TIMEOUT_MS=50\n")
	require.Contains(t, buf.String(), "or as a board delta (TOML):\n  [knobs.zenoh.tx]\n  batch = true\n  split_lock = true\n  [knobs.zenoh.link]\n  socket_timeout_ms = 50\n")
	buf.Reset()
	require.NoError(t, knobs.WriteAdvice(&buf, knobs.Advise(resolve(t, "freertos", "", ""), topics(t, "/pose sub 10 1500 100"))))
	require.Contains(t, buf.String(), "set it (build environment):\n  NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE=1536\n")
}

// Advice stays inside each knob's range; a topic that needs more than a
// knob's maximum is reported as one that cannot be served.
func TestAdviseClampsToKnobRange(t *testing.T) {
	inRange := func(a *knobs.Advice) {
		for _, s := range a.Settings {
			k := s.Current.Knob
			require.True(t, s.Value >= k.Min && s.Value <= k.Max, "%s advised %d outside %d..%d", k.ID, s.Value, k.Min, k.Max)
		}
	}
	// The largest size a traffic file accepts: frag_max_size at its maximum,
	// the large slot clamped to its maximum.
	a := knobs.Advise(resolve(t, "zephyr", "", ""), topics(t, "/huge sub 1 2147483583 100000"))
	inRange(a)
	require.Equal(t, "2147483647", changes(a)[knobs.FragMaxSize])

	// Through the API, a 2 GB sample cannot be served at all.
	tr := &knobs.Traffic{File: "api", Topics: []knobs.Topic{{Name: "/2g", Direction: knobs.Sub, RateHz: 1, SizeBytes: 2147483647, LatencyBudget: 1e9, Line: 1}}}
	a = knobs.Advise(resolve(t, "zephyr", "", ""), tr)
	inRange(a)
	require.Contains(t, a.Topics[0].Reason, "cannot be served: 2147483711 B message > zenoh.wire.frag_max_size maximum 2147483647 B")
	require.NotContains(t, changes(a), knobs.FragMaxSize)
	var buf bytes.Buffer
	require.NoError(t, knobs.WriteAdvice(&buf, a))
	require.Contains(t, buf.String(), "note: topic /2g cannot be served")
}

// TestAdviseObserved: what a gateway observed (drops, flushes) only adds
// notes; the settings come from the topics, as for a traffic file.
func TestAdviseObserved(t *testing.T) {
	r := resolve(t, "zephyr", "", "")
	file := topics(t, "/big sub 20 3000 100", "/burst sub 160 64 100")
	obs := topics(t, "/big sub 20 3000 100", "/burst sub 160 64 100")
	obs.Observed = &knobs.Observed{Window: 12340 * time.Millisecond, RateTau: 5 * time.Second,
		Dropped: map[string]uint64{"ring_budget": 7, "oversize": 3, "weird": 1}, Flushes: 40, FullFlushes: 9, FlushOccupancy: 0.875, RingDepth: 4, Unmetered: 2}
	a, b := knobs.Advise(r, file), knobs.Advise(r, obs)
	require.Equal(t, a.Settings, b.Settings)
	require.Equal(t, map[string]string{"zenoh.wire.frag_max_size": "3072", "zenoh.limits.subscriber_ring_depth": "8"}, changes(b))
	require.Equal(t, []string{
		"traffic observed at the gateway for 12.3s: rates weighted over 5s, sizes the largest payload",
		"the gateway dropped 3 samples (oversize): larger than the device can receive: frag_max_size, batch size or subscriber slot",
		"the gateway dropped 7 samples (ring_budget): more samples of one key per flush than subscriber_ring_depth",
		"the gateway dropped 1 samples (weird)",
		"batched flushes: 40, 9 of them with a full ring budget (4 samples of one subscription); recent mean occupancy 88% of the ring",
		"2 samples of subscriptions beyond the gateway's per-device key limit are in no topic above",
	}, b.Notes[len(a.Notes):])
	require.Equal(t, append([]string{}, a.Notes...), append([]string{}, b.Notes[:len(a.Notes)]...))
}

// What a gateway saw a device send, near the TX capacity of its knobs, is
// reported as TX-bound with the knob that lifts it (tx-tuning.md: untuned
// ~9 msg/s at a 100 ms window; batching ~136); a traffic file gets no such
// note, nor does a device well under its capacity.
func TestAdviseObservedTxBound(t *testing.T) {
	untuned := resolve(t, "zephyr", "native_sim", "CONFIG_NROS_ZENOH_TX_BATCH=n\nCONFIG_NROS_ZENOH_TX_SPLIT_LOCK=n\n")
	obs := topics(t, "pub pub 8.6 64 1000")
	obs.Observed = &knobs.Observed{Window: 10 * time.Second}
	a := knobs.Advise(untuned, obs)
	var txNotes []string
	for _, n := range a.Notes {
		if strings.Contains(n, "TX-bound") {
			txNotes = append(txNotes, n)
		}
	}
	require.Equal(t, []string{"pub: the device sent 8.6 msg/s of 64 B, 96% of the ~9.0 msg/s its TX knobs allow (zenoh.link.socket_timeout_ms 100ms with a per-socket lock, no TX batching): it is likely TX-bound, and what its application publishes beyond that never leaves it; zenoh.tx.batch=true gives ~135 msg/s"}, txNotes)

	file := topics(t, "pub pub 8.6 64 1000")
	for _, n := range knobs.Advise(untuned, file).Notes {
		require.NotContains(t, n, "TX-bound", "a traffic file states the application's rate")
	}
	stock := resolve(t, "zephyr", "native_sim", "")
	for _, n := range knobs.Advise(stock, obs).Notes {
		require.NotContains(t, n, "TX-bound", "8.6 msg/s is far under the ~179 msg/s of batching + split lock")
	}
}
