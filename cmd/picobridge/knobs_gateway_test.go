package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/sim/devsim"
	"github.com/picobridge/picobridge/zenohpath"
)

// TestKnobsExplainGateway: `knobs explain --gateway --device` prints the
// ladder of a connected device, the knobs it announced on the device rung.
func TestKnobsExplainGateway(t *testing.T) {
	cfg, err := bridge.ParseConfig("gw.yaml", []byte(`
zenoh:
  listen: [tcp/127.0.0.1:0]
metrics:
  listen: 127.0.0.1:0
devices:
  list:
    - {name: imu1, board: native_sim}
`))
	require.NoError(t, err)
	s, err := server.Start(context.Background(), server.Options{Config: cfg, DisableDDS: true})
	require.NoError(t, err)
	defer s.Close()
	dev, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
	require.NoError(t, err)
	defer dev.Close()
	_, err = server.DeclareProbeResponder(dev, "imu1")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Gateway().Device("imu1") != nil }, 10*time.Second, 10*time.Millisecond)
	a := knobs.AnnouncementOf(s.Gateway().Device("imu1").Resolved())
	a.FragMaxSize = 4096
	require.NoError(t, dev.Put(probe.KnobsKey("imu1"), a.Append(nil), nil))
	require.Eventually(t, func() bool { return s.Gateway().Device("imu1").Announced() }, 10*time.Second, 10*time.Millisecond)

	out, err := run(t, "knobs", "explain", "--gateway", s.HTTPAddr(), "--device", "imu1")
	require.NoError(t, err)
	require.Contains(t, out, "platform: zephyr (firmware/platforms/zephyr.toml), inherits generic\nboard:    native_sim (firmware/boards/zephyr/native_sim.toml)\n")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "zenoh.wire.frag_max_size ") {
			line = strings.Join(strings.Fields(l), " ")
		}
	}
	require.Equal(t, "zenoh.wire.frag_max_size 4096 bytes device imu1 (announced)", line)

	_, err = run(t, "knobs", "explain", "--gateway", s.HTTPAddr(), "--device", "nobody")
	require.ErrorContains(t, err, "404 Not Found")
	_, err = run(t, "knobs", "explain", "--gateway", s.HTTPAddr())
	require.Equal(t, 2, exitCode(err))
}

// adviceSections returns the knob table and the "set it" part of an advice
// text: what decides the settings, without the traffic line and the topic
// verdicts, which carry the measured rates.
func adviceSections(t *testing.T, out string) (table, setIt string) {
	t.Helper()
	i := strings.Index(out, "KNOB ")
	require.GreaterOrEqual(t, i, 0, out)
	j := strings.Index(out[i:], "\n\n")
	require.Greater(t, j, 0, out)
	k := strings.Index(out, "\nset it")
	require.GreaterOrEqual(t, k, 0, out)
	return out[i : i+j+1], out[k+1:]
}

// withoutSetBy is a knob table's lines with single spaces and without the
// SET BY column.
func withoutSetBy(table string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(table), "\n") {
		f := strings.Fields(strings.Replace(l, "SET BY", "SET_BY", 1))
		if len(f) > 2 {
			f = append(f[:2:2], f[3:]...)
		}
		out = append(out, strings.Join(f, " "))
	}
	return out
}

// TestKnobsAdviseGateway: a devsim native_sim device (frag_max_size 2048,
// subscriber slot 1024 B) is sent 3000 B and 1500 B samples through a
// running gateway; `knobs advise --gateway` builds the traffic from the
// gateway's meter and advises the same settings as `knobs advise
// --traffic` for the equivalent file, and notes the gateway's oversize drops.
func TestKnobsAdviseGateway(t *testing.T) {
	cfg, err := bridge.ParseConfig("gw.yaml", []byte(`
zenoh:
  listen: [tcp/127.0.0.1:0]
metrics:
  listen: 127.0.0.1:0
devices:
  list:
    - {name: sim-a, board: native_sim}
`))
	require.NoError(t, err)
	s, err := server.Start(context.Background(), server.Options{Config: cfg, DisableDDS: true})
	require.NoError(t, err)
	defer s.Close()
	dev, err := devsim.NewDevice(devsim.DeviceConfig{Name: "sim-a", Platform: "zephyr", Board: "native_sim", Endpoint: s.Endpoints()[0],
		Subscriptions: []devsim.Subscription{{Key: "sim/big"}, {Key: "sim/mid"}}}, devsim.Options{})
	require.NoError(t, err)
	require.NoError(t, dev.Start(context.Background()))
	defer dev.Stop()
	require.Eventually(t, func() bool {
		d := s.Gateway().Device("sim-a")
		return d != nil && len(s.Gateway().Devicez(bridge.DevicezOptions{Device: "sim-a"}).Devices[0].Subscriptions) == 2
	}, 20*time.Second, 10*time.Millisecond)

	pub, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
	require.NoError(t, err)
	defer pub.Close()
	const n = 10
	for range n {
		require.NoError(t, pub.Put("sim/big", make([]byte, 3000), nil))
		require.NoError(t, pub.Put("sim/mid", make([]byte, 1500), nil))
		// ~10 Hz per key; whatever the pacing, 10 samples read as at most
		// ~11 Hz (bridge.TrafficMinWindow), 0.55 per 50 ms flush: the ring fits.
		time.Sleep(100 * time.Millisecond)
	}
	traffic := func() bridge.TrafficStatus {
		return s.Gateway().Devicez(bridge.DevicezOptions{Device: "sim-a"}).Devices[0].Traffic
	}
	require.Eventually(t, func() bool {
		ks := traffic().Keys
		return len(ks) == 2 && ks[0].Samples == n && ks[1].Samples == n
	}, 20*time.Second, 10*time.Millisecond, "metered: %+v", traffic())
	ts := traffic()
	require.Equal(t, []bridge.KeyTraffic{
		{Key: "sim/big", Samples: n, Bytes: n * 3000, MaxBytes: 3000, P95Bytes: 3000},
		{Key: "sim/mid", Samples: n, Bytes: n * 1500, MaxBytes: 1500, P95Bytes: 1500},
	}, func() []bridge.KeyTraffic {
		ks := slices.Clone(ts.Keys)
		for i := range ks {
			require.Greater(t, ks[i].SamplesPerS, 0.0)
			require.InDelta(t, ks[i].BytesPerS, ks[i].SamplesPerS*float64(ks[i].MaxBytes), 1e-6*ks[i].BytesPerS)
			ks[i].SamplesPerS, ks[i].BytesPerS = 0, 0
		}
		return ks
	}())

	gw, err := run(t, "knobs", "advise", "--gateway", s.HTTPAddr(), "--device", "sim-a")
	require.NoError(t, err)
	t.Logf("advise --gateway:\n%s", gw)
	file := filepath.Join(t.TempDir(), "sim-a.toml")
	require.NoError(t, os.WriteFile(file, []byte(`
[[topic]]
name = "sim/big"
direction = "sub"
rate_hz = 10
size_bytes = 3000
latency_budget_ms = 100

[[topic]]
name = "sim/mid"
direction = "sub"
rate_hz = 10
size_bytes = 1500
latency_budget_ms = 100
`), 0o644))
	local, err := run(t, "knobs", "advise", "--board", "native_sim", "--process-env=false", "--traffic", file)
	require.NoError(t, err)

	gwTable, gwSet := adviceSections(t, gw)
	fileTable, fileSet := adviceSections(t, local)
	// The same settings and reasons; SET BY differs: the device announced
	// its knobs to the gateway (rung device), the file mode resolves them.
	require.Equal(t, []string{
		"KNOB NOW ADVISE REASON",
		"zenoh.tx.batch true keep the device publishes nothing in this traffic",
		"zenoh.wire.frag_max_size 2048 3072 a subscribed topic's message needs 3072 B reassembly (larger ones are dropped silently)",
		"zenoh.limits.subscriber_buffer_size 1024 1536 a subscribed topic's sample needs a 1536 B slot (larger ones are dropped in the ring)",
	}, withoutSetBy(gwTable))
	require.Equal(t, withoutSetBy(fileTable), withoutSetBy(gwTable))
	require.Contains(t, gwTable, "zenoh.wire.frag_max_size             2048  device  3072 ")
	require.Contains(t, fileTable, "zenoh.wire.frag_max_size             2048  builtin   3072 ")
	require.Equal(t, fileSet, gwSet)
	require.Equal(t, "set it (prj.conf):\n"+
		"  CONFIG_NROS_FRAG_MAX_SIZE=3072\n"+
		"  CONFIG_NROS_SUBSCRIBER_BUFFER_SIZE=1536\n"+
		"or as a board delta (TOML):\n"+
		"  [knobs.zenoh.wire]\n"+
		"  frag_max_size = 3072\n"+
		"  [knobs.zenoh.limits]\n"+
		"  subscriber_buffer_size = 1536\n", gwSet)
	require.Contains(t, gw, "\ntraffic:  observed by the gateway, device sim-a: 0 published (0.0 msg/s), 2 subscribed (")
	// 10 sim/big over frag_max_size, and 10 sim/mid over the 1024 B small
	// slot: sim/mid is not in large_subscriptions, so the gateway refuses
	// them rather than letting the device drop them in its ring (issue 31 item 1).
	require.Contains(t, gw, "\nnote: the gateway dropped 20 samples (oversize): larger than the device can receive: frag_max_size, batch size or subscriber slot\n")

	// /devicez carries the same advice (and, with advice=0, none).
	var dz struct {
		Devices []struct {
			Traffic bridge.TrafficStatus `json:"traffic"`
			Advice  *knobs.AdviceJSON    `json:"advice"`
		} `json:"devices"`
	}
	_, err = getJSON(context.Background(), statusURL(s.HTTPAddr(), bridge.PathDevicez, url.Values{"device": {"sim-a"}}), &dz)
	require.NoError(t, err)
	require.Len(t, dz.Devices, 1)
	require.Len(t, dz.Devices[0].Traffic.Keys, 2)
	a := dz.Devices[0].Advice
	require.NotNil(t, a)
	require.Equal(t, "observed by the gateway, device sim-a", a.Traffic)
	var changed []string
	for _, st := range a.Settings {
		if st.Changed {
			changed = append(changed, fmt.Sprintf("%s=%v", st.ID, st.Advised))
		}
	}
	require.Equal(t, []string{"zenoh.wire.frag_max_size=3072", "zenoh.limits.subscriber_buffer_size=1536"}, changed)

	// Without --device: the only attached device; bad combinations are usage errors.
	only, err := run(t, "knobs", "advise", "--gateway", s.HTTPAddr())
	require.NoError(t, err)
	_, onlySet := adviceSections(t, only)
	require.Equal(t, gwSet, onlySet)
	_, err = run(t, "knobs", "advise", "--gateway", s.HTTPAddr(), "--device", "nobody")
	require.ErrorContains(t, err, "404 Not Found: bridge: no attached device of that name: nobody")
	dz.Devices = nil
	_, err = getJSON(context.Background(), statusURL(s.HTTPAddr(), bridge.PathDevicez, url.Values{"device": {"sim-a"}, "advice": {"0"}}), &dz)
	require.NoError(t, err)
	require.Nil(t, dz.Devices[0].Advice)
	_, err = run(t, "knobs", "advise", "--gateway", s.HTTPAddr(), "--traffic", file)
	require.Equal(t, 2, exitCode(err))
	_, err = run(t, "knobs", "advise", "--board", "native_sim")
	require.Equal(t, 2, exitCode(err))
}

// TestKnobsAdviseGatewayRing: ~200 Hz on one key to a native_sim device
// (ring depth 4, 100 ms flush): both modes advise a deeper ring, and the
// gateway notes what its lanes dropped. (A loaded host that publishes at
// half the pace still offers 10 per flush.)
func TestKnobsAdviseGatewayRing(t *testing.T) {
	cfg, err := bridge.ParseConfig("gw.yaml", []byte(`
zenoh:
  listen: [tcp/127.0.0.1:0]
metrics:
  listen: 127.0.0.1:0
devices:
  list:
    - {name: sim-r, board: native_sim}
`))
	require.NoError(t, err)
	s, err := server.Start(context.Background(), server.Options{Config: cfg, DisableDDS: true})
	require.NoError(t, err)
	defer s.Close()
	dev, err := devsim.NewDevice(devsim.DeviceConfig{Name: "sim-r", Platform: "zephyr", Board: "native_sim", Endpoint: s.Endpoints()[0],
		Subscriptions: []devsim.Subscription{{Key: "sim/fast"}}}, devsim.Options{})
	require.NoError(t, err)
	require.NoError(t, dev.Start(context.Background()))
	defer dev.Stop()
	require.Eventually(t, func() bool {
		d := s.Gateway().Devicez(bridge.DevicezOptions{Device: "sim-r"}).Devices
		return len(d) == 1 && len(d[0].Subscriptions) == 1
	}, 20*time.Second, 10*time.Millisecond)
	pub, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
	require.NoError(t, err)
	defer pub.Close()
	const n = 400
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for range n {
		<-tick.C
		require.NoError(t, pub.Put("sim/fast", make([]byte, 64), nil))
	}
	require.Eventually(t, func() bool {
		ks := s.Gateway().Devicez(bridge.DevicezOptions{Device: "sim-r"}).Devices[0].Traffic.Keys
		return len(ks) == 1 && ks[0].Samples == n
	}, 20*time.Second, 10*time.Millisecond)

	gw, err := run(t, "knobs", "advise", "--gateway", s.HTTPAddr(), "--device", "sim-r", "--json")
	require.NoError(t, err)
	var a knobs.AdviceJSON
	require.NoError(t, json.Unmarshal([]byte(gw), &a))
	file := filepath.Join(t.TempDir(), "sim-r.toml")
	require.NoError(t, os.WriteFile(file, []byte("[[topic]]\nname = \"sim/fast\"\ndirection = \"sub\"\nrate_hz = 200\nsize_bytes = 64\nlatency_budget_ms = 100\n"), 0o644))
	local, err := run(t, "knobs", "advise", "--board", "native_sim", "--process-env=false", "--traffic", file, "--json")
	require.NoError(t, err)
	var b knobs.AdviceJSON
	require.NoError(t, json.Unmarshal([]byte(local), &b))
	changed := func(a knobs.AdviceJSON) (ids []string, ring float64) {
		for _, st := range a.Settings {
			if st.Changed {
				ids = append(ids, st.ID)
				if st.ID == knobs.SubscriberRingDepth {
					ring = st.Advised.(float64)
				}
			}
		}
		return ids, ring
	}
	gwIDs, gwRing := changed(a)
	fileIDs, fileRing := changed(b)
	require.Equal(t, []string{knobs.SubscriberRingDepth}, fileIDs)
	require.Equal(t, fileIDs, gwIDs)
	require.Equal(t, 10.0, fileRing) // 200 Hz × the 50 ms gateway flush (policy.batched.flush_interval)
	// The gateway's rate is measured (~200 Hz, less when the publisher
	// falls behind on a loaded host): the ring it advises follows it.
	require.GreaterOrEqual(t, gwRing, 5.0)
	require.LessOrEqual(t, gwRing, 25.0)
	t.Logf("advised ring: %v (file at 200 Hz: %v)", gwRing, fileRing)
	require.Contains(t, strings.Join(a.Notes, "\n"), "the gateway dropped ")
	require.Contains(t, strings.Join(a.Notes, "\n"), "batched flushes: ")
	t.Logf("gateway notes:\n%s", strings.Join(a.Notes, "\n"))
}

// TestKnobsAdviseGatewayNoDevice: `knobs advise --gateway` without --device
// on a gateway with no device attached says so and names --device.
func TestKnobsAdviseGatewayNoDevice(t *testing.T) {
	cfg, err := bridge.ParseConfig("gw.yaml", []byte("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: 127.0.0.1:0\n"))
	require.NoError(t, err)
	s, err := server.Start(context.Background(), server.Options{Config: cfg, DisableDDS: true})
	require.NoError(t, err)
	defer s.Close()
	_, err = run(t, "knobs", "advise", "--gateway", s.HTTPAddr())
	require.EqualError(t, err, "knobs advise --gateway "+s.HTTPAddr()+": no device attached (a device is a session whose zid is in devices.list or whose probe responder announced a name); name one with --device NAME")
	_, err = run(t, "knobs", "advise", "--gateway", s.HTTPAddr(), "--device", "nope")
	require.EqualError(t, err, "GET http://"+s.HTTPAddr()+"/advicez?device=nope: 404 Not Found: bridge: no attached device of that name: nope")
}

// TestStatusUnknownDevice: `status --device NAME` for a device the gateway
// does not have fails (status 1) and lists the attached ones, instead of
// printing "no devices attached" with status 0.
func TestStatusUnknownDevice(t *testing.T) {
	cfg, err := bridge.ParseConfig("gw.yaml", []byte("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: 127.0.0.1:0\ndevices:\n  list:\n    - {name: sim-a, board: native_sim}\n"))
	require.NoError(t, err)
	s, err := server.Start(context.Background(), server.Options{Config: cfg, DisableDDS: true})
	require.NoError(t, err)
	defer s.Close()
	_, err = run(t, "status", "--addr", s.HTTPAddr(), "--device", "nope")
	require.EqualError(t, err, `--device "nope": no such device attached to the gateway at `+s.HTTPAddr()+` (attached: none)`)
	require.Equal(t, 1, cli.ExitCode(err))

	dev, err := devsim.NewDevice(devsim.DeviceConfig{Name: "sim-a", Platform: "zephyr", Board: "native_sim", Endpoint: s.Endpoints()[0]}, devsim.Options{})
	require.NoError(t, err)
	require.NoError(t, dev.Start(context.Background()))
	defer dev.Stop()
	require.Eventually(t, func() bool { return s.Gateway().Device("sim-a") != nil }, 20*time.Second, 10*time.Millisecond)
	_, err = run(t, "status", "--addr", s.HTTPAddr(), "--device", "nope")
	require.EqualError(t, err, `--device "nope": no such device attached to the gateway at `+s.HTTPAddr()+` (attached: sim-a)`)
	out, err := run(t, "status", "--addr", s.HTTPAddr(), "--device", "sim-a")
	require.NoError(t, err)
	require.Contains(t, out, "sim-a ")
}

// TestDevicezUnknownDevice404: /devicez?device=NAME for a device the
// gateway does not have answers 404 with the error /knobz gives (it
// answered 200 and an empty list), and without device=, 200.
func TestDevicezUnknownDevice404(t *testing.T) {
	cfg, err := bridge.ParseConfig("gw.yaml", []byte("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: 127.0.0.1:0\n"))
	require.NoError(t, err)
	s, err := server.Start(context.Background(), server.Options{Config: cfg, DisableDDS: true})
	require.NoError(t, err)
	defer s.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + s.HTTPAddr() + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/devicez?device=nope")
	require.Equal(t, http.StatusNotFound, code, body)
	require.Equal(t, "{\n  \"error\": \"bridge: no attached device of that name: \\\"nope\\\"\"\n}\n", body)
	kcode, kbody := get("/knobz?device=nope")
	require.Equal(t, code, kcode)
	require.Equal(t, kbody, body)
	code, body = get("/devicez")
	require.Equal(t, http.StatusOK, code, body)
}
