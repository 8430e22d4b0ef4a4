package devsim

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestModelOf(t *testing.T) {
	r, err := Resolve("zephyr", "native_sim", nil, "")
	require.NoError(t, err)
	m := ModelOf(r, 0)
	require.Equal(t, 1024, m.BatchSize)
	require.Equal(t, 2048, m.FragMaxSize)
	require.Equal(t, 4, m.RingDepth)
	require.True(t, m.PerFdLock)
	require.Equal(t, 100*time.Millisecond, m.SocketWindow)
	require.Zero(t, m.SpinPeriod, "woken on arrival")
	require.True(t, m.TxBatch)
	require.True(t, m.SplitLock)
	require.True(t, m.FlushThread)
	require.Equal(t, 50*time.Millisecond, m.FlushInterval)

	r, err = Resolve("posix", "linux-host", map[string]string{"NROS_ZENOH_SUBSCRIBER_RING_DEPTH": "65535"}, "test")
	require.NoError(t, err)
	m = ModelOf(r, 250*time.Millisecond)
	require.Equal(t, 65535, m.BatchSize)
	require.Equal(t, 65535, m.FragMaxSize)
	require.Equal(t, 65535, m.RingDepth)
	require.False(t, m.PerFdLock)
	require.False(t, m.TxBatch)
	require.Equal(t, 250*time.Millisecond, m.SpinPeriod)

	_, err = Resolve("zephyr", "native_sim", map[string]string{"NROS_ZENOH_SUBSCRIBER_RING_DEPTH": "0"}, "test")
	require.ErrorContains(t, err, "NROS_ZENOH_SUBSCRIBER_RING_DEPTH")
}

func TestNonWildPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"demo/example/**": "demo/example",
		"scan":            "scan",
		"a/b/c":           "a/b/c",
		"**":              "",
		"a/*/c":           "a",
		"a/b$*/c":         "a",
	} {
		require.Equal(t, want, nonWildPrefix(in), in)
	}
}

func TestHistogram(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	s := h.stats()
	require.EqualValues(t, 1000, s.Count)
	require.InEpsilon(t, 500, s.P50, 0.03)
	require.InEpsilon(t, 950, s.P95, 0.03)
	require.InEpsilon(t, 990, s.P99, 0.03)
	require.Equal(t, 1000.0, s.Max)
	var e histogram
	require.Zero(t, e.stats().P99)
	e.add(-time.Second)
	e.add(10 * time.Microsecond)
	require.EqualValues(t, 2, e.stats().Count)
}

func TestSampleFormat(t *testing.T) {
	now := time.Unix(1700000000, 123456789)
	p := buildSample(nil, now, "dev1", 200)
	require.Len(t, p, 200)
	require.True(t, sampleStamp(p).Equal(now))
	short := buildSample(nil, now, "dev1", 1)
	require.Greater(t, len(short), 8, "never shorter than the header")

	var gid [16]byte
	gid[3] = 7
	a := buildAttachment(nil, 42, now, gid)
	require.Len(t, a, attachmentLen)
	src, seq, ok := sampleSeq(p, a)
	require.True(t, ok)
	require.EqualValues(t, 42, seq)
	require.Equal(t, string(gid[:]), src)

	zp := append([]byte("zpq1"), 9, 0, 0, 0, 0, 0, 0, 0, 'x')
	_, seq, ok = sampleSeq(zp, nil)
	require.True(t, ok)
	require.EqualValues(t, 9, seq)
	_, _, ok = sampleSeq([]byte("plain"), nil)
	require.False(t, ok)
	require.True(t, sampleStamp(zp).IsZero())
}

func TestParseDeviceSpec(t *testing.T) {
	c, err := ParseDeviceSpec("name=zephyr1,platform=zephyr,board=nucleo_f429zi,sub=scan,sub=map:large,pub=tele/z1:10:128:express,pub=bat:1,spin=250ms,NROS_ZENOH_SUBSCRIBER_RING_DEPTH=8,endpoint=tcp/127.0.0.1:1")
	require.NoError(t, err)
	require.Equal(t, "zephyr1", c.Name)
	require.Equal(t, []Subscription{{Key: "scan"}, {Key: "map", Large: true}}, c.Subscriptions)
	require.Equal(t, []Publication{{Key: "tele/z1", RateHz: 10, Size: 128, Express: true}, {Key: "bat", RateHz: 1}}, c.Publications)
	require.Equal(t, 250*time.Millisecond, c.Spin)
	pc, err := ParseDeviceSpec("name=p,platform=zephyr,pong=app")
	require.NoError(t, err)
	require.Equal(t, PongFromApp, pc.PongFrom)
	require.Equal(t, map[string]string{"NROS_ZENOH_SUBSCRIBER_RING_DEPTH": "8"}, c.Env)

	for spec, want := range map[string]string{
		"name=a,platform=zephyr,bogus=1":       "unknown key",
		"name=a,platform=zephyr,pub=x":         "KEY:RATE",
		"name=a,platform=zephyr,pub=x/*:1":     "without wildcards",
		"name=a,platform=zephyr,pub=x:0":       "rate_hz must be > 0",
		"name=a b,platform=zephyr":             "name must match",
		"name=a":                               "platform or board",
		"name=a,platform=zephyr,sub=a//b":      "canonical",
		"name=a,platform=zephyr,spin=fast":     "spin",
		"name=a,platform=zephyr,drain=1s":      "drain is now spin",
		"name=a,platform=zephyr,pong=exec":     "pong_from must be",
		"name=a,platform=zephyr,pub=x:1:9:bad": "express",
	} {
		_, err := ParseDeviceSpec(spec)
		require.ErrorContains(t, err, want, spec)
	}
}

func TestParseFleetConfig(t *testing.T) {
	fc, err := ParseFleetConfig("fleet.yaml", []byte(`
endpoint: tcp/127.0.0.1:7447
devices:
  - name: z1
    platform: zephyr
    board: native_sim
    env: {NROS_ZENOH_SUBSCRIBER_RING_DEPTH: "8"}
    spin: 200ms
    subscriptions: [{key: scan}, {key: "cmd/**", large: true}]
    publications: [{key: tele/z1, rate_hz: 10, size: 64, express: true}]
  - name: h1
    board: linux-host
`))
	require.NoError(t, err)
	require.Len(t, fc.Devices, 2)
	require.Equal(t, 200*time.Millisecond, fc.Devices[0].Spin)
	require.True(t, fc.Devices[0].Subscriptions[1].Large)
	f, err := NewFleet(fc, Options{})
	require.NoError(t, err)
	require.Equal(t, 8, f.Device("z1").Model().RingDepth)
	require.Equal(t, "posix", f.Device("h1").Resolved().Platform.Name())
	require.Nil(t, f.Device("nope"))

	_, err = ParseFleetConfig("fleet.yaml", []byte("devices:\n  - name: z1\n    platfrom: zephyr\n"))
	require.ErrorContains(t, err, "platfrom")
	_, err = ParseFleetConfig("fleet.yaml", []byte("devices:\n  - name: z1\n    platform: zephyr\n    publications: [{key: a, rate_hz: -1}]\n"))
	require.ErrorContains(t, err, "devices[0]")
	_, err = NewFleet(&FleetConfig{Devices: []DeviceConfig{{Name: "a", Platform: "zephyr"}}}, Options{})
	require.ErrorContains(t, err, "no endpoint")
	_, err = NewFleet(&FleetConfig{Endpoint: "tcp/127.0.0.1:1", Devices: []DeviceConfig{{Name: "a", Platform: "zephyr"}, {Name: "a", Platform: "zephyr"}}}, Options{})
	require.ErrorContains(t, err, "duplicate")
}

func TestStatsJSON(t *testing.T) {
	d, err := NewDevice(DeviceConfig{Name: "j", Platform: "zephyr", Subscriptions: []Subscription{{Key: "a"}}, Publications: []Publication{{Key: "b", RateHz: 1}}}, Options{Endpoint: "tcp/127.0.0.1:1"})
	require.NoError(t, err)
	b, err := json.Marshal(d.Stats())
	require.NoError(t, err)
	for _, f := range []string{`"ring_full_drops"`, `"oversize_drops"`, `"out_of_order"`, `"p95_ms"`, `"probe_responses"`, `"subscriber_ring_depth":4`} {
		require.True(t, strings.Contains(string(b), f), f)
	}
}

func TestDemoFleetFile(t *testing.T) {
	fc, err := LoadFleetConfig("testdata/demo-fleet.yaml")
	require.NoError(t, err)
	require.Len(t, fc.Devices, 6)
	f, err := NewFleet(fc, Options{})
	require.NoError(t, err)
	require.Equal(t, "tele/zephyr-1/imu", f.Device("zephyr-1").cfg.Publications[0].Key)
	require.True(t, f.Device("zephyr-0").Model().PerFdLock)
	require.Equal(t, 200*time.Millisecond, f.Device("esp-1").Model().SpinPeriod)
	require.Equal(t, 64, f.Device("host").Model().RingDepth)
}
