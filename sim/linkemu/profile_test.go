package linkemu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBuiltinProfilesMatchEvaluationTable(t *testing.T) {
	ms := time.Millisecond
	rd := Jitter{Mean: 20 * ms, SD: 10 * ms} // probe-return delay
	im := func(mean, sd time.Duration, g GE) Impairment {
		return Impairment{Loss: g, Rate: 5000 * Kbit, Delay: Jitter{Mean: mean, SD: sd}}
	}
	want := []Profile{
		{Name: "clean"},
		{Name: "mild", ToDevice: im(20*ms, 8*ms, GE{0.01, 0.15, 0.005, 0.30})},
		{Name: "moderate", ToDevice: im(40*ms, 15*ms, GE{0.03, 0.15, 0.005, 0.30})},
		{Name: "strong", ToDevice: im(60*ms, 20*ms, GE{0.02, 0.10, 0.01, 0.50})},
	}
	for i := 1; i < len(want); i++ {
		want[i].ToGateway = want[i].ToDevice
		want[i].ToGateway.Extra = rd
	}
	// The link classes of the middleware comparison (profiles.yaml cites each figure):
	// symmetric, no return delay.
	us := time.Microsecond
	for _, p := range []Profile{
		{Name: "ethernet", ToDevice: Impairment{Rate: 1000000 * Kbit, Delay: Jitter{Mean: 50 * us, SD: 10 * us}}},
		{Name: "wifi", ToDevice: Impairment{Loss: GE{0.005, 0.3, 0.001, 0.20}, Rate: 200000 * Kbit, Delay: Jitter{Mean: 2 * ms, SD: 1500 * us}}},
		{Name: "4g", ToDevice: Impairment{Loss: GE{0, 0, 0.001, 0}, Rate: 5640 * Kbit, Delay: Jitter{Mean: 35 * ms, SD: 5 * ms}}},
	} {
		p.ToGateway = p.ToDevice
		want = append(want, p)
	}
	require.Equal(t, want, Profiles())
	require.Equal(t, []string{"clean", "mild", "moderate", "strong", "ethernet", "wifi", "4g"}, ProfileNames())
	require.True(t, Profiles()[0].ToDevice.Clean())
}

func TestLookupProfile(t *testing.T) {
	p, err := LookupProfile("moderate")
	require.NoError(t, err)
	require.Equal(t, "moderate", p.Name)
	_, err = LookupProfile("awful")
	require.ErrorContains(t, err, `unknown profile "awful" (allowed: clean, mild, moderate, strong, ethernet, wifi, 4g)`)
}

func TestParseProfilesRejectsBadInput(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"profiles:\n  - name: x\n    bandwidth: 5\n", "field bandwidth not found"},
		{"profiles:\n  - name: x\n  - name: x\n", "duplicate name"},
		{"profiles:\n  - name: x\n    ge: {p: 0.1, r: 0}\n", "never be left"},
		{"profiles:\n  - name: x\n    bandwidth_kbit: -1\n", "bandwidth_kbit"},
		{"profiles:\n  - name: x\n    delay_ms: {mean: -1}\n", "delay"},
		{"profiles:\n  - {}\n", "name must not be empty"},
	} {
		_, err := ParseProfiles([]byte(tc.in))
		require.ErrorContains(t, err, tc.err, tc.in)
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:7447", "127.0.0.1:0", "127.1.2.3:1"} {
		require.NoError(t, CheckLoopback(ok), ok)
	}
	for _, bad := range []string{"0.0.0.0:7447", "192.168.1.1:7447", "localhost:7447", "[::1]:7447", ":7447", "127.0.0.1"} {
		require.Error(t, CheckLoopback(bad), bad)
	}
	require.ErrorIs(t, CheckLoopback("10.0.0.1:1"), ErrNotLoopback)

	proto, hp, err := ParseEndpoint("tcp/127.0.0.1:7447")
	require.NoError(t, err)
	require.Equal(t, "tcp", proto)
	require.Equal(t, "127.0.0.1:7447", hp)
	_, _, err = ParseEndpoint("tls/127.0.0.1:7447")
	require.ErrorContains(t, err, "want tcp/")
	_, _, err = ParseEndpoint("udp/10.1.1.1:7447")
	require.ErrorIs(t, err, ErrNotLoopback)
}

// TestParseProfilesRejectsNonFinite: NaN, ±Inf and huge numbers are errors naming the key,
// on every architecture (the float → integer conversion is undefined for them: on amd64 it
// gave a negative rate or delay, on arm64 NaN became 0 and was accepted).
func TestParseProfilesRejectsNonFinite(t *testing.T) {
	for in, want := range map[string]string{
		"bandwidth_kbit: .nan":          "bandwidth_kbit: must be a number in [0, 1e+09] (got NaN)",
		"bandwidth_kbit: .inf":          "bandwidth_kbit: must be a number in [0, 1e+09] (got +Inf)",
		"bandwidth_kbit: 1e300":         "bandwidth_kbit: must be a number in [0, 1e+09] (got 1e+300)",
		"delay_ms: {mean: .nan}":        "delay_ms.mean: must be a number in [0, 3.6e+06] (got NaN)",
		"delay_ms: {sd: -.inf}":         "delay_ms.sd: must be a number in [0, 3.6e+06] (got -Inf)",
		"return_delay_ms: {mean: 1e20}": "return_delay_ms.mean: must be a number in [0, 3.6e+06] (got 1e+20)",
	} {
		_, err := ParseProfiles([]byte("profiles:\n  - name: x\n    " + in + "\n"))
		require.EqualError(t, err, "profiles[0] x: "+want, in)
	}
}
