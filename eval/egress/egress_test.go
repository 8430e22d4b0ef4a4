package egress

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestPayloadRoundTrip(t *testing.T) {
	b := make([]byte, 48)
	at := time.Unix(1700000000, 123456789)
	encodePayload(b, 42, at)
	seq, sent, ok := decodePayload(b)
	require.True(t, ok)
	require.Equal(t, uint32(42), seq)
	require.Equal(t, at.UnixNano(), sent)
	_, _, ok = decodePayload(b[:PayloadHeader-1])
	require.False(t, ok)
	b[0] = 'X'
	_, _, ok = decodePayload(b)
	require.False(t, ok)
}

func FuzzDecodePayload(f *testing.F) {
	b := make([]byte, PayloadHeader)
	encodePayload(b, 7, time.Unix(1, 0))
	f.Add(b)
	f.Add([]byte("PBE1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, sent, ok := decodePayload(b)
		if ok {
			c := make([]byte, len(b))
			encodePayload(c, seq, time.Unix(0, sent))
			require.Equal(t, b[:PayloadHeader], c[:PayloadHeader])
		}
	})
}

func TestCovers(t *testing.T) {
	require.True(t, covers("bench/crit", "bench/crit"))
	require.True(t, covers("bench/bulk/**", "bench/bulk/3"))
	require.False(t, covers("bench/bulk/**", "bench/bulkx/3"))
	require.False(t, covers("bench/crit", "bench/crit2"))
}

func TestStandardScenarios(t *testing.T) {
	all := Standard(Scale{})
	require.Len(t, all, 9)
	ids := []string{}
	for _, x := range all {
		ids = append(ids, x.ID)
	}
	require.Equal(t, []string{"a", "b", "c", "a256", "d", "e", "a256b", "db", "eb"}, ids)
	d, e, eb := all[4], all[5], all[8]
	require.EqualValues(t, 10e6, d.Link)
	require.Equal(t, 100_000, d.Streams[1].Size)
	require.Equal(t, 1_000_000, all[0].Streams[1].Size, "d has its own streams")
	require.Equal(t, 256<<10, e.LinkQueue)
	require.EqualValues(t, 100e6, e.Link)
	require.EqualValues(t, 10e6, e.StepTo)
	require.Equal(t, 10*time.Second, e.StepAt)
	require.False(t, e.Devices[0].LinkBudget)
	require.True(t, eb.Devices[0].LinkBudget, "the b variants configure the link rate")
	require.Equal(t, []System{Gateway}, eb.Systems)
	require.Equal(t, []System{Gateway, RustRouter}, e.Systems)
	a, b, c := all[0], all[1], all[2]
	require.Equal(t, 20*time.Second, a.Duration)
	require.Equal(t, 60*time.Second, b.Duration)
	require.Equal(t, 180*time.Second, c.Duration)
	require.Equal(t, 48, a.Streams[0].Size)
	require.Equal(t, 1_000_000, a.Streams[1].Size)
	require.EqualValues(t, 100e6, a.Link)
	require.EqualValues(t, 20e6, b.Link)
	require.EqualValues(t, 2e6, c.Link)
	require.Len(t, c.Streams, 11)
	require.Equal(t, []System{Gateway}, c.Systems)
	// Scaled: ratios kept, floor at the payload header.
	s := Standard(Scale{A: time.Second, SizeDiv: 10, LinkDiv: 10, RateDiv: 2})
	require.Equal(t, time.Second, s[0].Duration)
	require.Equal(t, 48, s[0].Streams[0].Size) // the small sample keeps its size
	require.Equal(t, 100_000, s[0].Streams[1].Size)
	require.EqualValues(t, 10e6, s[0].Link)
	require.Equal(t, 25.0, s[0].Streams[0].RateHz)
	sel, err := Select(all, []string{"c", "a"})
	require.NoError(t, err)
	require.Equal(t, "c", sel[0].ID)
	_, err = Select(all, []string{"f"})
	require.ErrorContains(t, err, `unknown scenario "f"`)
}

func TestTargets(t *testing.T) {
	c := Standard(Scale{})[2]
	var crit Target
	for _, tg := range c.Targets {
		if tg.Device == "A" {
			crit = tg
		}
	}
	ok := Row{Sent: 5400, Delivered: 5350, P99: 80, ClassChanges: 1}
	require.True(t, crit.Check(ok))
	bad := ok
	bad.Delivered = 5300 // 98.1 %
	require.False(t, crit.Check(bad))
	bad = ok
	bad.ClassChanges = 2
	require.False(t, crit.Check(bad))
}

func TestGatewayConfig(t *testing.T) {
	sc := Standard(Scale{})[2]
	sc.GatewayYAML = "classifier:\n  enabled: false\n"
	y := GatewayConfig(sc)
	var v struct {
		Routes struct {
			Critical []string `yaml:"critical"`
		} `yaml:"routes"`
		Devices struct {
			List []struct {
				Name     string            `yaml:"name"`
				Platform string            `yaml:"platform"`
				Env      map[string]string `yaml:"env"`
			} `yaml:"list"`
		} `yaml:"devices"`
		Classifier struct {
			Enabled bool `yaml:"enabled"`
		} `yaml:"classifier"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(y), &v), y)
	require.Equal(t, []string{"/bench/crit"}, v.Routes.Critical)
	require.Len(t, v.Devices.List, 2)
	require.Equal(t, "A", v.Devices.List[0].Name)
	require.Equal(t, "posix", v.Devices.List[0].Platform)
	require.Equal(t, "4194304", v.Devices.List[0].Env["NROS_ZENOH_FRAG_MAX_SIZE"])
	require.False(t, v.Classifier.Enabled)
}

func TestTableRows(t *testing.T) {
	r := &Report{Rows: []Row{
		{Scenario: "a", Title: "t", System: GoRouter, Stream: "s", Device: "dev", Sent: 10, Delivered: 9, Lost: 1,
			P50: 1.234, P99: 10.4, Max: 120.4, DropsKnown: true, Drops: 1, DropReasons: "router congestion=1", ClassChanges: -1, Target: "p99 ≤ 5 ms", Met: "no"},
		{Scenario: "a", Title: "t", System: RustRouter, Err: "start: boom"},
	}}
	lines := strings.Split(strings.TrimSpace(r.Table()), "\n")
	require.Len(t, lines, 4)
	require.Equal(t, Header, lines[0])
	n := strings.Count(Header, "|")
	for _, l := range lines[1:] {
		require.Equal(t, n, strings.Count(l, "|"), l)
	}
	require.Contains(t, lines[2], "| 1 (10.0 %) |")
	require.Contains(t, lines[2], "| 1.23 | 10.4 | 120 | 1 (router congestion=1) |", "10.4 ms must not print as 10")
	require.Contains(t, lines[3], "ERROR start: boom")
}
