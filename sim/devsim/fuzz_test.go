package devsim

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkAccepted asserts what every accepted device configuration promises the device that
// runs it: a valid name, no replicas left to expand, a positive publish period (NewTicker
// panics on anything else) and a bounded sample size.
func checkAccepted(t *testing.T, d DeviceConfig) {
	t.Helper()
	if !nameRE.MatchString(d.Name) {
		t.Fatalf("accepted device name %q", d.Name)
	}
	if d.Replicas > 1 {
		t.Fatalf("device %q: %d replicas left unexpanded", d.Name, d.Replicas)
	}
	for i, p := range d.Publications {
		if p.Interval() <= 0 {
			t.Fatalf("device %q: publications[%d] rate_hz %g gives period %v", d.Name, i, p.RateHz, p.Interval())
		}
		if p.Size < 0 || p.Size > MaxSampleSize || p.Count < 0 {
			t.Fatalf("device %q: publications[%d] size %d count %d", d.Name, i, p.Size, p.Count)
		}
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("accepted device fails Validate: %v", err)
	}
}

// FuzzParseFleetConfig feeds arbitrary YAML to the fleet file loader: an error or a fleet
// whose every device checkAccepted holds, never a panic or an allocation that a number in
// the file controls (replicas is bounded before it expands).
func FuzzParseFleetConfig(f *testing.F) {
	demo, err := os.ReadFile("testdata/demo-fleet.yaml")
	require.NoError(f, err)
	f.Add(demo)
	f.Add([]byte("devices:\n  - {name: z, platform: zephyr, replicas: 2000000000}\n"))
	f.Add([]byte("devices:\n  - {name: z, platform: zephyr, publications: [{key: a, rate_hz: .inf}]}\n"))
	f.Add([]byte("devices:\n  - {name: z, platform: zephyr, publications: [{key: a, rate_hz: 1e10, size: 1}]}\n"))
	f.Add([]byte("endpoint: tcp/127.0.0.1:7447\ndevices: []\n"))
	f.Add([]byte("devices:\n  - &d {name: z, board: esp32}\n  - *d\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fc, err := ParseFleetConfig("fleet.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fleet.yaml: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, d := range fc.Devices {
			checkAccepted(t, d)
		}
	})
}

// FuzzParseDeviceSpec feeds arbitrary strings to the command-line device parser (devsim
// --device): an error or a device checkAccepted holds for, never a panic.
func FuzzParseDeviceSpec(f *testing.F) {
	f.Add("name=zephyr1,platform=zephyr,board=nucleo_f429zi,sub=scan,sub=map:large,pub=tele/z1:10:128:express,spin=250ms,NROS_ZENOH_SUBSCRIBER_RING_DEPTH=8")
	f.Add("name=a,platform=zephyr,pub=x:+Inf")
	f.Add("name=a,platform=zephyr,pub=x:NaN:1")
	f.Add("name=a,board=esp32,pub=x:1:99999999999")
	f.Add("name=a,platform=zephyr,noprobe=1,endpoint=udp/127.0.0.1:1")
	f.Fuzz(func(t *testing.T, spec string) {
		d, err := ParseDeviceSpec(spec)
		if err != nil {
			return
		}
		checkAccepted(t, d)
	})
}

// TestParseFleetConfigBounds: the numbers of a fleet file that size allocations or timers
// are checked, with the device and the allowed range in the error (the findings of
// FuzzParseFleetConfig's seeds: replicas expanded before its bound was checked, so the
// bound never applied; a rate of +Inf or 1e10 Hz made NewTicker panic).
func TestParseFleetConfigBounds(t *testing.T) {
	for doc, want := range map[string]string{
		"{name: z, platform: zephyr, replicas: 2000000000}":                                   `devices[0]: device "z": replicas must be 0..10000 (got 2000000000)`,
		"{name: z, platform: zephyr, replicas: 10001}":                                        "replicas must be 0..10000 (got 10001)",
		"{name: z, platform: zephyr, replicas: -1}":                                           "replicas must be 0..10000 (got -1)",
		"{name: z, platform: zephyr, publications: [{key: a, rate_hz: .inf}]}":                "rate_hz must be > 0 and <= 1e+06 (got +Inf)",
		"{name: z, platform: zephyr, publications: [{key: a, rate_hz: .nan}]}":                "rate_hz must be > 0 and <= 1e+06 (got NaN)",
		"{name: z, platform: zephyr, publications: [{key: a, rate_hz: 1e10}]}":                "rate_hz must be > 0 and <= 1e+06 (got 1e+10)",
		"{name: z, platform: zephyr, publications: [{key: a, rate_hz: 1, size: 1000000000}]}": "size must be 0..16777216 bytes (got 1000000000)",
		"{name: z, platform: zephyr, publications: [{key: a, rate_hz: 1, count: -2}]}":        "count must be >= 0 (got -2)",
	} {
		_, err := ParseFleetConfig("fleet.yaml", []byte("devices:\n  - "+doc+"\n"))
		require.ErrorContains(t, err, want, doc)
		require.ErrorContains(t, err, "fleet.yaml: devices[0]: ", doc)
	}
	fc, err := ParseFleetConfig("fleet.yaml", []byte("devices:\n  - {name: z, platform: zephyr, replicas: 3, publications: [{key: \"t/${name}\", rate_hz: 1e6}]}\n"))
	require.NoError(t, err)
	require.Len(t, fc.Devices, 3)
	require.Equal(t, "t/z-2", fc.Devices[2].Publications[0].Key)
	require.Equal(t, 1000, int(fc.Devices[2].Publications[0].Interval()))
}
