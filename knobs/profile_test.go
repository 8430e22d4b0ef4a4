package knobs

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseProfile(t *testing.T) {
	src := `# a platform
names = ["myrtos", "my-rtos"]
inherits = "generic"
description = "test"

[capabilities]
threads = true

[knobs.zenoh.tx]
batch = true
flush_ms = 20

[knobs.zenoh]
wire.frag_max_size = 4_096
limits = { subscriber_ring_depth = 0x10 }
`
	p, err := ParseProfile(PlatformProfile, "myrtos.toml", []byte(src))
	require.NoError(t, err)
	require.Equal(t, "myrtos", p.Name())
	require.True(t, p.HasName("MY-RTOS"))
	require.Equal(t, "generic", p.Inherits)
	require.Equal(t, Setting{Value: 1, Line: 7, Col: 1}, p.Capabilities[CapThreads])
	require.Equal(t, Setting{Value: 1, Line: 10, Col: 1}, p.Knobs[TxBatch])
	require.Equal(t, Setting{Value: 20, Line: 11, Col: 1}, p.Knobs[TxFlushMs])
	require.Equal(t, Setting{Value: 4096, Line: 14, Col: 1}, p.Knobs[FragMaxSize])
	require.Equal(t, Setting{Value: 16, Line: 15, Col: 12}, p.Knobs[SubscriberRingDepth])
}

// Each error message, exact text with file, line and column.
func TestParseProfileErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind ProfileKind
		src  string
		want string
		is   error
	}{
		{"unknown knob", PlatformProfile, "names = [\"p\"]\n[knobs.zenoh.tx]\nbatch = true\nbacth = true\n",
			"p.toml:4:1: knobs.zenoh.tx.bacth: unknown knob (known in [knobs.zenoh.tx]: batch, flush_ms, split_lock)", ErrUnknownKey},
		{"unknown knob table", PlatformProfile, "names = [\"p\"]\n\n[knobs.zenoh.txx]\nbatch = true\nflush_ms = 3\n",
			"p.toml:3:2: knobs.zenoh.txx: unknown knob table (known: [knobs.net], [knobs.xrce], [knobs.zenoh.limits], [knobs.zenoh.link], [knobs.zenoh.tasks], [knobs.zenoh.tx], [knobs.zenoh.wire])", ErrUnknownKey},
		{"unknown top-level key", PlatformProfile, "names = [\"p\"]\nplatform = \"x\"\n",
			"p.toml:2:1: platform: unknown key (a platform file has names, inherits, description, [capabilities], [knobs.*])", ErrUnknownKey},
		{"unknown table", BoardProfile, "names = [\"b\"]\nplatform = \"zephyr\"\n[build.zenoh]\ndefines = []\n",
			"p.toml:3:2: build.zenoh: unknown table (a board file has names, platform, description, [capabilities], [knobs.*])", ErrUnknownKey},
		{"unknown capability", PlatformProfile, "names = [\"p\"]\n[capabilities]\nthreds = true\n",
			"p.toml:3:1: capabilities.threds: unknown capability (known: threads, per_fd_tx_ceiling, flush_thread, ip_stack, serial)", ErrUnknownKey},
		{"batch size above 65535", PlatformProfile, "names = [\"p\"]\n[knobs.zenoh.wire]\nbatch_unicast_size = 70000\n",
			"p.toml:3:1: knobs.zenoh.wire.batch_unicast_size: must be ≤ 65535 (got 70000)", ErrRange},
		{"multicast batch size above 65535", PlatformProfile, "names = [\"p\"]\nknobs.zenoh.wire.batch_multicast_size = 65536\n",
			"p.toml:2:1: knobs.zenoh.wire.batch_multicast_size: must be ≤ 65535 (got 65536)", ErrRange},
		{"xrce stream history below 4", PlatformProfile, "names = [\"p\"]\n[knobs.xrce]\n  stream_history = 2\n",
			"p.toml:3:3: knobs.xrce.stream_history: must be ≥ 4 (got 2)", ErrRange},
		{"bool as string", PlatformProfile, "names = [\"p\"]\n[knobs.zenoh.tx]\nbatch = \"yes\"\n",
			"p.toml:3:1: knobs.zenoh.tx.batch: want a bool, got a string", ErrType},
		{"int as float", PlatformProfile, "names = [\"p\"]\n[knobs.zenoh.tx]\nflush_ms = 2.5\n",
			"p.toml:3:1: knobs.zenoh.tx.flush_ms: want an integer (ms), got a float", ErrType},
		{"names not an array", PlatformProfile, "names = \"p\"\n",
			"p.toml:1:1: names: want an array of strings, got a string", ErrType},
		{"missing names", PlatformProfile, "description = \"x\"\n",
			"p.toml: names: missing: a platform needs names = [\"<name>\", <aliases>...]", ErrProfile},
		{"board without platform", BoardProfile, "names = [\"b\"]\n",
			"p.toml: platform: missing: a board needs platform = \"<platform name>\"", ErrProfile},
		{"syntax", PlatformProfile, "names = [\"p\"]\n[knobs.zenoh.tx]\nbatch = \n",
			"p.toml:3:9: unexpected character U+000A at start of value", ErrSyntax},
		{"duplicate key", PlatformProfile, "names = [\"p\"]\n[knobs.zenoh.tx]\nbatch = true\nbatch = false\n",
			"p.toml:4:1: batch: key batch is already defined", ErrSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProfile(tc.kind, "p.toml", []byte(tc.src))
			require.Error(t, err)
			require.Equal(t, tc.want, err.Error())
			require.ErrorIs(t, err, tc.is)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, 2, ce.ExitCode())
		})
	}
}

func TestParseProfileReportsAllProblems(t *testing.T) {
	src := "names = [\"p\"]\n[knobs.zenoh.tx]\nbatch = 1\nsplit = true\n[knobs.zenoh.wire]\nbatch_unicast_size = 10\n"
	_, err := ParseProfile(PlatformProfile, "p.toml", []byte(src))
	require.EqualError(t, err, `p.toml:3:1: knobs.zenoh.tx.batch: want a bool, got an integer
p.toml:4:1: knobs.zenoh.tx.split: unknown knob (known in [knobs.zenoh.tx]: batch, flush_ms, split_lock)
p.toml:6:1: knobs.zenoh.wire.batch_unicast_size: must be ≥ 64 (got 10)`)
	var p *Problem
	require.True(t, errors.As(err, &p))
	require.Equal(t, 3, p.Line)
}

func FuzzParseProfile(f *testing.F) {
	f.Add([]byte("names = [\"p\"]\ninherits = \"generic\"\n[capabilities]\nthreads = true\n[knobs.zenoh.tx]\nbatch = true\nflush_ms = 20\n"))
	f.Add([]byte("names = [\"b\"]\nplatform = \"zephyr\"\nknobs.zenoh = { wire = { frag_max_size = 4096 } }\n"))
	f.Add([]byte("[[x]]\na = [1, \"b\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, kind := range []ProfileKind{PlatformProfile, BoardProfile} {
			p, err := ParseProfile(kind, "fuzz.toml", data)
			if err != nil {
				var ce *ConfigError
				if !errors.As(err, &ce) || len(ce.Problems) == 0 {
					t.Fatalf("error is not a ConfigError with problems: %v", err)
				}
				continue
			}
			for id, s := range p.Knobs {
				k, ok := Lookup(id)
				if !ok || s.Value < k.Min || s.Value > k.Max {
					t.Fatalf("accepted %s = %d", id, s.Value)
				}
			}
		}
	})
}
