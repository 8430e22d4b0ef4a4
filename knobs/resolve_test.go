package knobs

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// testFS is a small catalog exercising every rung:
// base <- child (inherits), base <- nothreads, boards b1 (child) and nt (nothreads).
func testFS() fstest.MapFS {
	return fstest.MapFS{
		"platforms/base.toml": {Data: []byte(`names = ["base"]
[capabilities]
threads = true
flush_thread = true
[knobs.zenoh.tx]
flush_ms = 30
[knobs.zenoh.wire]
frag_max_size = 4096
`)},
		"platforms/child.toml": {Data: []byte(`names = ["child", "kid"]
inherits = "base"
[capabilities]
per_fd_tx_ceiling = true
[knobs.zenoh.tx]
batch = true
flush_ms = 40
`)},
		"platforms/nothreads.toml": {Data: []byte(`names = ["nothreads"]
inherits = "base"
[capabilities]
threads = false
`)},
		"boards/child/b1.toml": {Data: []byte(`names = ["b1", "board-one"]
platform = "child"
[knobs.zenoh.tx]
flush_ms = 60
[knobs.zenoh.wire]
batch_unicast_size = 2048
`)},
		"boards/nothreads/nt.toml": {Data: []byte(`names = ["nt"]
platform = "nothreads"
[knobs.zenoh.tx]
batch = true
split_lock = true
`)},
	}
}

func testCatalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := LoadCatalog(testFS(), "fw")
	require.NoError(t, err)
	return c
}

func envFile(t *testing.T, name, src string) *Env {
	t.Helper()
	e, err := ParseEnvFile(name, []byte(src))
	require.NoError(t, err)
	return e
}

// testEnv is the env rung of a case: the file "prj.conf" with content src
// (none when src is empty), then the process environment proc.
func testEnv(t *testing.T, src string, proc []string) *Env {
	t.Helper()
	env := &Env{}
	if src != "" {
		env.Add(envFile(t, "prj.conf", src))
	}
	env.Add(ProcessEnv(proc))
	return env
}

func TestResolvePrecedence(t *testing.T) {
	c := testCatalog(t)
	for _, tc := range []struct {
		name   string
		opts   Options
		env    string // env file "prj.conf" content
		proc   []string
		knob   string
		value  string
		source string
	}{
		{"builtin", Options{Platform: "child"}, "", nil, SubscriberRingDepth, "4", "builtin"},
		{"platform parent", Options{Platform: "child"}, "", nil, FragMaxSize, "4096", "platform base (fw/platforms/base.toml:8)"},
		{"platform child wins per field", Options{Platform: "child"}, "", nil, TxFlushMs, "40", "platform child (fw/platforms/child.toml:7)"},
		{"platform child sets what parent lacks", Options{Platform: "child"}, "", nil, TxBatch, "true", "platform child (fw/platforms/child.toml:6)"},
		{"board over platform", Options{Platform: "child", Board: "b1"}, "", nil, TxFlushMs, "60", "board b1 (fw/boards/child/b1.toml:4)"},
		{"board leaves the rest", Options{Platform: "child", Board: "b1"}, "", nil, FragMaxSize, "4096", "platform base (fw/platforms/base.toml:8)"},
		{"env over board", Options{Platform: "child", Board: "b1"}, "ZPICO_TX_BATCH_FLUSH_MS=70\n", nil, TxFlushMs, "70", "env ZPICO_TX_BATCH_FLUSH_MS (prj.conf:1)"},
		{"kconfig over board", Options{Platform: "child", Board: "b1"}, "CONFIG_NROS_BATCH_UNICAST_SIZE=4096\n", nil, BatchUnicastSize, "4096", "kconfig CONFIG_NROS_BATCH_UNICAST_SIZE (prj.conf:1)"},
		{"explicit 0 wins over platform on", Options{Platform: "child"}, "ZPICO_TX_BATCH=0\n", nil, TxBatch, "false", "env ZPICO_TX_BATCH (prj.conf:1)"},
		{"explicit n wins over platform on", Options{Platform: "child"}, "CONFIG_NROS_ZENOH_TX_BATCH=n\n", nil, TxBatch, "false", "kconfig CONFIG_NROS_ZENOH_TX_BATCH (prj.conf:1)"},
		{"kconfig is not set is an explicit n", Options{Platform: "child"}, "# CONFIG_NROS_ZENOH_TX_BATCH is not set\n", nil, TxBatch, "false", "kconfig CONFIG_NROS_ZENOH_TX_BATCH (prj.conf:1)"},
		{"unset defers", Options{Platform: "child"}, "OTHER=1\n", nil, TxBatch, "true", "platform child (fw/platforms/child.toml:6)"},
		{"explicit 1 on builtin off", Options{Platform: "base"}, "NROS_ZENOH_TX_BATCH=1\n", nil, TxBatch, "true", "env NROS_ZENOH_TX_BATCH (prj.conf:1)"},
		{"canonical over deprecated", Options{Platform: "child"}, "ZPICO_TX_BATCH_FLUSH_MS=10\nNROS_ZENOH_TX_FLUSH_MS=20\n", nil, TxFlushMs, "20", "env NROS_ZENOH_TX_FLUSH_MS (prj.conf:2)"},
		{"deprecated env over kconfig", Options{Platform: "child"}, "ZPICO_TX_BATCH_FLUSH_MS=10\nCONFIG_NROS_ZENOH_TX_BATCH_FLUSH_MS=20\n", nil, TxFlushMs, "10", "env ZPICO_TX_BATCH_FLUSH_MS (prj.conf:1)"},
		{"later line wins", Options{Platform: "child"}, "ZPICO_TX_BATCH_FLUSH_MS=10\nZPICO_TX_BATCH_FLUSH_MS=15\n", nil, TxFlushMs, "15", "env ZPICO_TX_BATCH_FLUSH_MS (prj.conf:2)"},
		{"process env over file", Options{Platform: "child"}, "ZPICO_TX_BATCH_FLUSH_MS=10\n", []string{"ZPICO_TX_BATCH_FLUSH_MS=25"}, TxFlushMs, "25", "env ZPICO_TX_BATCH_FLUSH_MS (environment)"},
		{"platform alias", Options{Platform: "KID"}, "", nil, TxFlushMs, "40", "platform child (fw/platforms/child.toml:7)"},
		{"board alias, platform from board", Options{Board: "board-one"}, "", nil, TxFlushMs, "60", "board b1 (fw/boards/child/b1.toml:4)"},
		{"board platform alias", Options{Platform: "kid", Board: "b1"}, "", nil, BatchUnicastSize, "2048", "board b1 (fw/boards/child/b1.toml:6)"},
		{"hex in kconfig", Options{Platform: "child"}, "CONFIG_NROS_FRAG_MAX_SIZE=0x2000\n", nil, FragMaxSize, "8192", "kconfig CONFIG_NROS_FRAG_MAX_SIZE (prj.conf:1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Env = testEnv(t, tc.env, tc.proc)
			r, err := c.Resolve(tc.opts)
			require.NoError(t, err)
			v := r.Get(tc.knob)
			require.Equal(t, tc.value, v.String())
			require.Equal(t, tc.source, v.Source.String())
		})
	}
}

func TestResolveCapabilities(t *testing.T) {
	c := testCatalog(t)
	r, err := c.Resolve(Options{Platform: "child", Board: "b1"})
	require.NoError(t, err)
	require.True(t, r.Cap(CapThreads))
	require.Equal(t, "platform base (fw/platforms/base.toml:3)", r.Capabilities[0].Source.String())
	require.True(t, r.Cap(CapPerFdTxCeiling))
	require.False(t, r.Cap(CapSerial))
	require.Equal(t, "builtin", r.Capabilities[4].Source.String())
	require.Equal(t, []string{"base", "child"}, []string{r.Chain[0].Name(), r.Chain[1].Name()})
}

func TestResolveWarnings(t *testing.T) {
	c := testCatalog(t)
	for _, tc := range []struct {
		name string
		opts Options
		env  string
		proc []string
		want []string
	}{
		{"split lock downgraded without threads", Options{Board: "nt"}, "", nil, []string{
			"zenoh.tx.split_lock: true from board nt (fw/boards/nothreads/nt.toml:5) downgraded to false: platform nothreads has no threads (capabilities.threads = false)",
			"zenoh.tx.flush_ms: platform nothreads has no flush thread: a batch leaves only when the application spins, not every 30 ms",
		}},
		{"flush_ms not effective with batching off", Options{Platform: "base"}, "", nil, []string{
			"zenoh.tx.flush_ms: 30 (set by platform base (fw/platforms/base.toml:6)) is not effective: zenoh.tx.batch is false",
		}},
		{"split lock not effective with batching off", Options{Platform: "child"}, "ZPICO_TX_SPLIT_LOCK=1\nZPICO_TX_BATCH=0\n", nil, []string{
			"ZPICO_TX_SPLIT_LOCK: deprecated spelling of zenoh.tx.split_lock; use NROS_ZENOH_TX_SPLIT_LOCK",
			"ZPICO_TX_BATCH: deprecated spelling of zenoh.tx.batch; use NROS_ZENOH_TX_BATCH",
			"zenoh.tx.split_lock: true (set by env ZPICO_TX_SPLIT_LOCK (prj.conf:1)) is not effective: zenoh.tx.batch is false",
			"zenoh.tx.flush_ms: 40 (set by platform child (fw/platforms/child.toml:7)) is not effective: zenoh.tx.batch is false",
		}},
		{"kconfig and env disagree", Options{Platform: "child"}, "CONFIG_NROS_ZENOH_TX_BATCH=y\n", []string{"NROS_ZENOH_TX_BATCH=0"}, []string{
			"zenoh.tx.batch: CONFIG_NROS_ZENOH_TX_BATCH=y (prj.conf:1) is not effective: NROS_ZENOH_TX_BATCH=0 (environment) wins",
			"zenoh.tx.flush_ms: 40 (set by platform child (fw/platforms/child.toml:7)) is not effective: zenoh.tx.batch is false",
		}},
		{"agreeing spellings are quiet", Options{Platform: "child"}, "CONFIG_NROS_ZENOH_TX_BATCH=y\nNROS_ZENOH_TX_BATCH=1\n", nil, nil},
		{"file overridden by process env", Options{Platform: "child"}, "NROS_ZENOH_TX_FLUSH_MS=10\n", []string{"NROS_ZENOH_TX_FLUSH_MS=20"}, []string{
			"zenoh.tx.flush_ms: NROS_ZENOH_TX_FLUSH_MS=10 (prj.conf:1) is not effective: NROS_ZENOH_TX_FLUSH_MS=20 (environment) wins",
		}},
		{"typo of a knob variable", Options{Platform: "child"}, "CONFIG_NROS_ZENOH_TX_BACTH=y\nCONFIG_NROS_ZENOH_LINK_TCP=y\nZPICO_MAX_PENDING_GETS=4\n", nil, []string{
			"CONFIG_NROS_ZENOH_TX_BACTH: prj.conf:1: not a knob picobridge models; did you mean CONFIG_NROS_ZENOH_TX_BATCH?",
		}},
		{"unknown CONFIG_NROS_ symbol", Options{Platform: "child"}, "CONFIG_NROS_FROBNICATE=y\nCONFIG_OTHER_THING=y\n", nil, []string{
			"CONFIG_NROS_FROBNICATE: prj.conf:1: unknown CONFIG_NROS_* symbol (not a knob, nor a nano-ros Kconfig option picobridge knows): ignored",
		}},
		{"multi-thread off in Kconfig: no threads, split lock downgraded", Options{Platform: "child"}, "# CONFIG_NROS_ZENOH_MULTI_THREAD is not set\nCONFIG_NROS_ZENOH_TX_SPLIT_LOCK=y\n", nil, []string{
			"zenoh.tx.split_lock: true from kconfig CONFIG_NROS_ZENOH_TX_SPLIT_LOCK (prj.conf:2) downgraded to false: platform child has no threads (capabilities.threads = false)",
			"zenoh.tx.flush_ms: platform child has no flush thread: a batch leaves only when the application spins, not every 40 ms",
		}},
		{"-1 derives at build time: the rung below stays, with a warning", Options{Platform: "child"}, "CONFIG_NROS_SUBSCRIBER_BUFFER_SIZE=-1\nCONFIG_NROS_MAX_LARGE_SUBSCRIBERS=-1\n", nil, []string{
			"zenoh.limits.subscriber_buffer_size: CONFIG_NROS_SUBSCRIBER_BUFFER_SIZE=-1 (prj.conf:1) derives the value at build time from the image's message types, which picobridge cannot see: it models 1024 (builtin); set the value explicitly to model the device exactly",
			"zenoh.limits.max_large_subscribers: CONFIG_NROS_MAX_LARGE_SUBSCRIBERS=-1 (prj.conf:2) derives the value at build time from the image's message types, which picobridge cannot see: it models 2 (builtin); set the value explicitly to model the device exactly",
		}},
		{"fragmentation off makes frag_max_size moot", Options{Platform: "child"}, "NROS_ZENOH_FRAGMENTATION=0\n", nil, []string{
			"zenoh.wire.frag_max_size: 4096 (set by platform base (fw/platforms/base.toml:8)) is not effective: zenoh.wire.fragmentation is false",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Env = testEnv(t, tc.env, tc.proc)
			r, err := c.Resolve(tc.opts)
			require.NoError(t, err)
			var got []string
			for _, w := range r.Warnings {
				got = append(got, w.String())
			}
			require.Equal(t, tc.want, got)
		})
	}
	env := envFile(t, "prj.conf", "CONFIG_NROS_ZENOH_MULTI_THREAD=n\nNROS_ZENOH_MULTI_THREAD=1\n")
	r, err := c.Resolve(Options{Platform: "nothreads", Env: env})
	require.NoError(t, err)
	require.True(t, r.Cap(CapThreads))
	require.Equal(t, "env NROS_ZENOH_MULTI_THREAD (prj.conf:2)", r.Capabilities[0].Source.String())
	require.Equal(t, "capabilities.threads: CONFIG_NROS_ZENOH_MULTI_THREAD=n (prj.conf:1) is not effective: NROS_ZENOH_MULTI_THREAD=1 (prj.conf:2) wins", r.Warnings[0].String())

	r, err = c.Resolve(Options{Board: "nt"})
	require.NoError(t, err)
	require.False(t, r.Bool(TxSplitLock))
	require.Equal(t, "builtin [downgraded from board: no threads]", r.Get(TxSplitLock).Source.String())
}

func TestResolveErrors(t *testing.T) {
	c := testCatalog(t)
	dir := t.TempDir()
	other := filepath.Join(dir, "other.toml")
	require.NoError(t, os.WriteFile(other, []byte("names = [\"o\"]\nplatform = \"base\"\n"), 0o644))
	vx := filepath.Join(dir, "vx.toml")
	require.NoError(t, os.WriteFile(vx, []byte("names = [\"v\"]\n\nplatform = \"vxworks\"\n"), 0o644))
	bad := filepath.Join(dir, "bad.toml")
	require.NoError(t, os.WriteFile(bad, []byte("names = [\"o\"]\nplatform = \"child\"\n[knobs.zenoh.wire]\nbatch_unicast_size = 65536\n"), 0o644))
	for _, tc := range []struct {
		name string
		opts Options
		env  string
		proc []string
		want string
		is   error
	}{
		{"unknown platform", Options{Platform: "vxworks"}, "", nil,
			`platform: no platform named "vxworks" (known: base, child, nothreads)`, ErrUnknownPlatform},
		{"board file of an unknown platform", Options{Board: vx}, "", nil,
			vx + `:3: platform: board v: no platform named "vxworks" (known: base, child, nothreads)`, ErrUnknownPlatform},
		{"no platform", Options{}, "", nil, "platform: no platform given (name one, or a board)", ErrUnknownPlatform},
		{"unknown board", Options{Platform: "child", Board: "pico"}, "", nil,
			`board: no board named "pico" and no such file (known: b1, nt)`, ErrUnknownBoard},
		{"missing board file", Options{Platform: "child", Board: filepath.Join(dir, "nope.toml")}, "", nil,
			filepath.Join(dir, "nope.toml") + ": board: cannot read board file: no such file or directory", ErrUnknownBoard},
		{"board of another platform", Options{Platform: "child", Board: "nt"}, "", nil,
			"fw/boards/nothreads/nt.toml:2: platform: board nt is for platform nothreads, not child", ErrProfile},
		{"board file of another platform", Options{Platform: "child", Board: other}, "", nil,
			other + ":2: platform: board o is for platform base, not child", ErrProfile},
		{"board file out of range", Options{Board: bad}, "", nil,
			bad + ":4:1: knobs.zenoh.wire.batch_unicast_size: must be ≤ 65535 (got 65536)", ErrRange},
		{"unparseable kconfig", Options{Platform: "child"}, "\nCONFIG_NROS_ZENOH_TX_BATCH=maybe\n", nil,
			`prj.conf:2: CONFIG_NROS_ZENOH_TX_BATCH: cannot parse "maybe" as a bool (want y/n, 1/0, true/false)`, ErrBadValue},
		{"unparseable process env", Options{Platform: "child"}, "", []string{"ZPICO_TX_BATCH_FLUSH_MS=fast"},
			`environment: ZPICO_TX_BATCH_FLUSH_MS: cannot parse "fast" as an integer (ms)`, ErrBadValue},
		{"empty value", Options{Platform: "child"}, "NROS_ZENOH_TX_BATCH=\n", nil,
			`prj.conf:1: NROS_ZENOH_TX_BATCH: cannot parse "" as a bool (want y/n, 1/0, true/false)`, ErrBadValue},
		{"env batch size above 65535", Options{Platform: "child"}, "ZPICO_BATCH_UNICAST_SIZE=70000\n", nil,
			"prj.conf:1: ZPICO_BATCH_UNICAST_SIZE: must be ≤ 65535 (got 70000)", ErrBadValue},
		{"env xrce history below 4", Options{Platform: "child"}, "NROS_XRCE_STREAM_HISTORY=2\n", nil,
			"prj.conf:1: NROS_XRCE_STREAM_HISTORY: must be ≥ 4 (got 2)", ErrBadValue},
		{"-1 on a knob that is not derived", Options{Platform: "child"}, "CONFIG_NROS_SUBSCRIBER_RING_DEPTH=-1\n", nil,
			"prj.conf:1: CONFIG_NROS_SUBSCRIBER_RING_DEPTH: must be ≥ 1 (got -1)", ErrBadValue},
		{"unparseable capability", Options{Platform: "child"}, "CONFIG_NROS_ZENOH_MULTI_THREAD=perhaps\n", nil,
			`prj.conf:1: CONFIG_NROS_ZENOH_MULTI_THREAD: cannot parse "perhaps" as a bool (want y/n, 1/0, true/false)`, ErrBadValue},
		{"all env problems at once", Options{Platform: "child"}, "ZPICO_TX_BATCH=x\nZPICO_FRAG_MAX_SIZE=-1\n", nil,
			"prj.conf:1: ZPICO_TX_BATCH: cannot parse \"x\" as a bool (want y/n, 1/0, true/false)\nprj.conf:2: ZPICO_FRAG_MAX_SIZE: must be ≥ 64 (got -1)", ErrBadValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Env = testEnv(t, tc.env, tc.proc)
			_, err := c.Resolve(tc.opts)
			require.EqualError(t, err, tc.want)
			require.ErrorIs(t, err, tc.is)
		})
	}
}

func TestResolveLaterEnvFileWins(t *testing.T) {
	env := envFile(t, "a.env", "\n\n\nNROS_ZENOH_TX_FLUSH_MS=10\n")
	env.Add(envFile(t, "b.env", "NROS_ZENOH_TX_FLUSH_MS=30\n"))
	r, err := testCatalog(t).Resolve(Options{Platform: "child", Env: env})
	require.NoError(t, err)
	require.Equal(t, "env NROS_ZENOH_TX_FLUSH_MS (b.env:1)", r.Get(TxFlushMs).Source.String())
	require.Equal(t, int64(30), r.Int(TxFlushMs))
}

func TestResolveBoardFile(t *testing.T) {
	c := testCatalog(t)
	f := filepath.Join(t.TempDir(), "mine.toml")
	require.NoError(t, os.WriteFile(f, []byte("names = [\"mine\"]\nplatform = \"kid\"\n[knobs.zenoh.limits]\nsubscriber_ring_depth = 32\n"), 0o644))
	r, err := c.Resolve(Options{Board: f})
	require.NoError(t, err)
	require.Equal(t, "child", r.Platform.Name())
	require.Equal(t, int64(32), r.Int(SubscriberRingDepth))
	require.Equal(t, "board mine ("+f+":4)", r.Get(SubscriberRingDepth).Source.String())
}

func TestLoadCatalogErrors(t *testing.T) {
	fsys := fstest.MapFS{
		"platforms/a.toml":   {Data: []byte("names = [\"a\"]\ninherits = \"b\"\n")},
		"platforms/b.toml":   {Data: []byte("names = [\"b\", \"A\"]\ninherits = \"a\"\n")},
		"platforms/c.toml":   {Data: []byte("names = [\"c\"]\ninherits = \"zz\"\n")},
		"boards/a/x.toml":    {Data: []byte("names = [\"x\"]\nplatform = \"c\"\n")},
		"boards/c/y.toml":    {Data: []byte("names = [\"y\"]\nplatform = \"nope\"\n")},
		"boards/c/bad.toml":  {Data: []byte("names = [\"z\"]\nplatform = \"c\"\nfoo = 1\n")},
		"platforms/x.txt":    {Data: []byte("ignored")},
		"boards/toplvl.toml": {Data: []byte("ignored: not in a platform folder")},
	}
	_, err := LoadCatalog(fsys, "fw")
	require.EqualError(t, err, `fw/boards/c/bad.toml:3:1: foo: unknown key (a board file has names, platform, description, [capabilities], [knobs.*])
fw/platforms/b.toml: names: platform name "A" is also used by fw/platforms/a.toml
fw/platforms/a.toml: inherits: inherits cycle: a -> b -> a
fw/platforms/b.toml: inherits: inherits cycle: b -> a -> b
fw/platforms/c.toml: inherits: no platform named "zz"
fw/boards/a/x.toml: platform: board of platform c sits under boards/a/
fw/boards/c/y.toml: platform: no platform named "nope"`)
}

// A whole Zephyr .config passes: unrelated and unmodelled symbols are
// ignored without noise, the modelled ones land on the env rung.
func TestResolveZephyrDotConfig(t *testing.T) {
	c := testCatalog(t)
	env := envFile(t, ".config", `#
# Automatically generated file; DO NOT EDIT.
# Zephyr Kernel Configuration
#
CONFIG_BOARD="native_sim"
CONFIG_NET_SOCKETS=y
CONFIG_NROS=y
CONFIG_NROS_RMW_ZENOH=y
CONFIG_NROS_ZENOH_MULTI_THREAD=y
CONFIG_NROS_ZENOH_SOCKET_TIMEOUT_MS=5
CONFIG_NROS_ZENOH_LEASE_MS=10000
CONFIG_NROS_ZENOH_TX_BATCH=y
CONFIG_NROS_ZENOH_TX_SPLIT_LOCK=y
CONFIG_NROS_ZENOH_TX_BATCH_FLUSH_MS=20
CONFIG_NROS_ZENOH_LINK_TCP=y
# CONFIG_NROS_ZENOH_LINK_UDP_UNICAST is not set
# CONFIG_NROS_ZENOH_SCOUTING is not set
CONFIG_NROS_MAX_PUBLISHERS=8
CONFIG_NROS_MAX_PENDING_GETS=4
CONFIG_NROS_GET_REPLY_BUF_SIZE=4096
CONFIG_NROS_FRAG_MAX_SIZE=2048
CONFIG_NROS_BATCH_UNICAST_SIZE=1024
CONFIG_NROS_SUBSCRIBER_BUFFER_SIZE=1024
CONFIG_NROS_SUBSCRIBER_RING_DEPTH=8
CONFIG_NROS_ZENOH_LOCATOR="tcp/127.0.0.1:7447"
CONFIG_NROS_XRCE_STREAM_HISTORY=16
`)
	r, err := c.Resolve(Options{Platform: "child", Env: env})
	require.NoError(t, err)
	require.Empty(t, r.Warnings)
	require.Equal(t, int64(5), r.Int(SocketTimeoutMs))
	require.Equal(t, int64(20), r.Int(TxFlushMs))
	require.Equal(t, int64(8), r.Int(SubscriberRingDepth))
	require.True(t, r.Bool(TxSplitLock))
	require.Equal(t, "kconfig CONFIG_NROS_ZENOH_MULTI_THREAD (.config:9)", r.Capabilities[0].Source.String())
}
