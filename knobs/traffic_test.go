package knobs

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseTraffic(t *testing.T) {
	src := `description = "x"
[[topic]]
name = "/imu"
direction = "pub"
rate_hz = 100
size_bytes = 324
latency_budget_ms = 100

[[topic]]
name = "/cmd_vel"
direction = "sub"
rate_hz = 12.5
size_bytes = 48
latency_budget_ms = 1_000
`
	tr, err := ParseTraffic("t.toml", []byte(src))
	require.NoError(t, err)
	require.Equal(t, &Traffic{File: "t.toml", Description: "x", Topics: []Topic{
		{Name: "/imu", Direction: Pub, RateHz: 100, SizeBytes: 324, LatencyBudget: 100 * time.Millisecond, Line: 2},
		{Name: "/cmd_vel", Direction: Sub, RateHz: 12.5, SizeBytes: 48, LatencyBudget: time.Second, Line: 9},
	}}, tr)
}

func TestParseTrafficErrors(t *testing.T) {
	const ok = "name = \"/a\"\ndirection = \"pub\"\nrate_hz = 1\nsize_bytes = 8\nlatency_budget_ms = 10\n"
	for _, tc := range []struct {
		name, src, want string
		is              error
	}{
		{"unknown key", "[[topic]]\n" + ok + "qos = \"reliable\"\n",
			"t.toml:7:1: topic \"/a\".qos: unknown key (a topic has name, direction, rate_hz, size_bytes, latency_budget_ms)", ErrUnknownKey},
		{"unknown top-level key", "rate = 3\n[[topic]]\n" + ok,
			"t.toml:1:1: rate: unknown key (a traffic file has description and [[topic]] tables)", ErrUnknownKey},
		{"unknown table", "[topics]\nx = 1\n",
			"t.toml:1:2: topics: unknown table (a traffic file has description and [[topic]] tables)", ErrUnknownKey},
		{"bad direction", "[[topic]]\nname = \"/a\"\ndirection = \"out\"\nrate_hz = 1\nsize_bytes = 8\nlatency_budget_ms = 10\n",
			"t.toml:3:1: topic \"/a\".direction: want \"pub\" (the device publishes) or \"sub\" (the device subscribes)", ErrType},
		{"zero rate", "[[topic]]\nname = \"/a\"\ndirection = \"pub\"\nrate_hz = 0\nsize_bytes = 8\nlatency_budget_ms = 10\n",
			"t.toml:4:1: topic \"/a\".rate_hz: must be in (0, 1000000] Hz (got 0)", ErrRange},
		{"rate as string", "[[topic]]\nname = \"/a\"\ndirection = \"pub\"\nrate_hz = \"10\"\nsize_bytes = 8\nlatency_budget_ms = 10\n",
			"t.toml:4:1: topic \"/a\".rate_hz: want a number (Hz), got a string", ErrType},
		{"negative size", "[[topic]]\nname = \"/a\"\ndirection = \"pub\"\nrate_hz = 1\nsize_bytes = -8\nlatency_budget_ms = 10\n",
			"t.toml:5:1: topic \"/a\".size_bytes: must be in 1..2147483647 (got -8)", ErrRange},
		{"missing budget", "[[topic]]\nname = \"/a\"\ndirection = \"pub\"\nrate_hz = 1\nsize_bytes = 8\n",
			"t.toml:1: topic \"/a\": missing latency_budget_ms", ErrProfile},
		{"duplicate topic", "[[topic]]\n" + ok + "[[topic]]\n" + ok,
			"t.toml:7: topic \"/a\": listed twice (pub)", ErrProfile},
		{"nameless topic", "[[topic]]\ndirection = \"pub\"\nrate_hz = 1\nsize_bytes = 8\nlatency_budget_ms = 10\n",
			"t.toml:1: topic at line 1: missing name", ErrProfile},
		{"absurd size", "[[topic]]\nname = \"/a\"\ndirection = \"sub\"\nrate_hz = 1\nsize_bytes = 2147483600\nlatency_budget_ms = 10\n",
			"t.toml:5:1: topic \"/a\".size_bytes: 2147483600 B is more than any device can take: the largest message is zenoh.wire.frag_max_size ≤ 2147483647 B (2147483583 B with the 64 B PUSH overhead)", ErrRange},
		{"no topics", "description = \"empty\"\n", "t.toml: topic: no [[topic]] tables", ErrProfile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTraffic("t.toml", []byte(tc.src))
			require.EqualError(t, err, tc.want)
			require.ErrorIs(t, err, tc.is)
		})
	}
}

func FuzzParseTraffic(f *testing.F) {
	f.Add([]byte("[[topic]]\nname = \"/a\"\ndirection = \"pub\"\nrate_hz = 1.5\nsize_bytes = 8\nlatency_budget_ms = 10\n"))
	f.Add([]byte("topic = [{name = \"x\"}]\n[[topic]]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTraffic("fuzz.toml", data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("error is not a ConfigError with problems: %v", err)
			}
			return
		}
		for _, tp := range tr.Topics {
			if tp.Name == "" || tp.RateHz <= 0 || tp.SizeBytes < 1 || tp.LatencyBudget <= 0 || (tp.Direction != Pub && tp.Direction != Sub) {
				t.Fatalf("accepted %+v", tp)
			}
		}
	})
}
