package knobs_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/knobs"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./knobs -update")
	require.Equal(t, string(want), string(got), "golden %s differs; run go test ./knobs -update and review the diff", path)
}

func catalog(t *testing.T) *knobs.Catalog {
	t.Helper()
	c, err := firmware.Catalog()
	require.NoError(t, err)
	return c
}

// The embedded profiles hold the platforms and boards issue 5 asks for.
func TestEmbeddedCatalog(t *testing.T) {
	c := catalog(t)
	var plats []string
	for _, p := range c.Platforms() {
		plats = append(plats, p.Name())
	}
	require.Equal(t, []string{"baremetal", "freertos", "generic", "nuttx", "posix", "threadx", "zephyr"}, plats)
	boards := map[string]string{}
	for _, b := range c.Boards() {
		boards[b.Name()] = b.Platform
	}
	require.Equal(t, map[string]string{
		"mps2-an385":    "baremetal",
		"esp32":         "freertos",
		"nuttx-sim":     "nuttx",
		"linux-host":    "posix",
		"qemu-riscv64":  "threadx",
		"native_sim":    "zephyr",
		"nucleo_f429zi": "zephyr",
	}, boards)
}

// Every platform, without and with each of its boards: golden explain output.
func TestExplainGolden(t *testing.T) {
	c := catalog(t)
	for _, p := range c.Platforms() {
		cases := []string{""}
		for _, b := range c.Boards() {
			if p.HasName(b.Platform) {
				cases = append(cases, b.Name())
			}
		}
		for _, board := range cases {
			name := p.Name()
			if board != "" {
				name += "-" + strings.ReplaceAll(board, "/", "_")
			}
			t.Run(name, func(t *testing.T) {
				r, err := c.Resolve(knobs.Options{Platform: p.Name(), Board: board})
				require.NoError(t, err)
				var buf bytes.Buffer
				require.NoError(t, knobs.WriteExplain(&buf, r))
				golden(t, "explain/"+name+".txt", buf.Bytes())
			})
		}
	}
}

func TestExplainJSONGolden(t *testing.T) {
	env, err := knobs.ParseEnvFile("testdata/prj.conf", mustRead(t, "testdata/prj.conf"))
	require.NoError(t, err)
	r, err := catalog(t).Resolve(knobs.Options{Platform: "zephyr", Board: "native_sim", Env: env})
	require.NoError(t, err)
	var txt, js bytes.Buffer
	require.NoError(t, knobs.WriteExplain(&txt, r))
	require.NoError(t, knobs.WriteExplainJSON(&js, r))
	golden(t, "explain/zephyr-native_sim-prj.conf.txt", txt.Bytes())
	golden(t, "explain/zephyr-native_sim-prj.conf.json", js.Bytes())
}

func TestAdviseGolden(t *testing.T) {
	const file = "../firmware/examples/traffic-scan-imu.toml"
	tr, err := knobs.ParseTraffic("firmware/examples/traffic-scan-imu.toml", mustRead(t, file))
	require.NoError(t, err)
	c := catalog(t)
	for _, sel := range []knobs.Options{
		{Platform: "zephyr", Board: "native_sim"},
		{Platform: "freertos", Board: "esp32"},
		{Platform: "nuttx"},
		{Platform: "threadx"},
		{Platform: "posix"},
		{Platform: "baremetal", Board: "mps2-an385"},
	} {
		t.Run(sel.Platform, func(t *testing.T) {
			r, err := c.Resolve(sel)
			require.NoError(t, err)
			var buf bytes.Buffer
			require.NoError(t, knobs.WriteAdvice(&buf, knobs.Advise(r, tr)))
			golden(t, "advise/"+sel.Platform+".txt", buf.Bytes())
		})
	}
}

func TestRegistryGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, knobs.WriteRegistry(&buf))
	golden(t, "list.txt", buf.Bytes())
}

// zephyr/Kconfig defaults must mirror the Zephyr platform profile (nano-ros
// test kconfig_platform_default_drift): the Kconfig defaults of anchors.md
// §2.1/§2.2, checked against the resolved zephyr platform.
func TestZephyrKconfigDrift(t *testing.T) {
	r, err := catalog(t).Resolve(knobs.Options{Platform: "zephyr"})
	require.NoError(t, err)
	for sym, want := range map[string]string{
		"CONFIG_NROS_ZENOH_TX_BATCH":          "true",
		"CONFIG_NROS_ZENOH_TX_SPLIT_LOCK":     "true",
		"CONFIG_NROS_ZENOH_TX_BATCH_FLUSH_MS": "50",
		"CONFIG_NROS_ZENOH_SOCKET_TIMEOUT_MS": "100",
		"CONFIG_NROS_SUBSCRIBER_RING_DEPTH":   "4",
		"CONFIG_NROS_FRAG_MAX_SIZE":           "2048",
		"CONFIG_NROS_BATCH_UNICAST_SIZE":      "1024",
		"CONFIG_NROS_SUBSCRIBER_BUFFER_SIZE":  "1024",
		"CONFIG_NROS_SUBSCRIBER_LARGE_SIZE":   "16384",
		"CONFIG_NROS_MAX_LARGE_SUBSCRIBERS":   "2",
		"CONFIG_NROS_ZENOH_READ_PRIORITY":     "16",
		"CONFIG_NROS_ZENOH_LEASE_PRIORITY":    "16",
		"CONFIG_NROS_MAX_PUBLISHERS":          "8",
		"CONFIG_NROS_MAX_SUBSCRIBERS":         "8",
		"CONFIG_NROS_MAX_QUERYABLES":          "8",
		"CONFIG_NROS_MAX_LIVELINESS":          "16",
		"CONFIG_NROS_ZENOH_LEASE_MS":          "10000",
		"CONFIG_NROS_ZENOH_LEASE_FACTOR":      "3",
		"CONFIG_NROS_XRCE_STREAM_HISTORY":     "16",
		"CONFIG_NROS_XRCE_TRANSPORT_MTU":      "512",
		// Newer zephyr/Kconfig defaults SUBSCRIBER_BUFFER_SIZE,
		// SUBSCRIBER_LARGE_SIZE and MAX_LARGE_SUBSCRIBERS to -1 (derive);
		// the values above are the crate defaults they fall back to.
	} {
		k, _, ok := knobs.LookupEnv(sym)
		require.True(t, ok, sym)
		require.Equal(t, want, r.Get(k.ID).String(), sym)
	}
}

// anchors.md §2.2, one row per platform.
func TestPlatformDefaults(t *testing.T) {
	c := catalog(t)
	type row struct {
		batch, split           bool
		flush, timeout         int64
		unicast, frag, mcast   int64
		threads, perFd, flushT bool
	}
	for plat, want := range map[string]row{
		"zephyr":    {true, true, 50, 100, 1024, 2048, 1024, true, true, true},
		"freertos":  {false, false, 50, 100, 1024, 2048, 1024, true, false, true},
		"nuttx":     {false, false, 50, 5000, 1024, 2048, 1024, true, false, true},
		"threadx":   {false, false, 50, 100, 1024, 2048, 1024, true, false, false},
		"posix":     {false, false, 50, 100, 65535, 65535, 8192, true, false, true},
		"baremetal": {false, false, 50, 100, 1024, 2048, 1024, false, false, false},
	} {
		r, err := c.Resolve(knobs.Options{Platform: plat})
		require.NoError(t, err)
		got := row{r.Bool(knobs.TxBatch), r.Bool(knobs.TxSplitLock), r.Int(knobs.TxFlushMs), r.Int(knobs.SocketTimeoutMs),
			r.Int(knobs.BatchUnicastSize), r.Int(knobs.FragMaxSize), r.Int(knobs.BatchMulticastSize),
			r.Cap(knobs.CapThreads), r.Cap(knobs.CapPerFdTxCeiling), r.Cap(knobs.CapFlushThread)}
		require.Equal(t, want, got, plat)
	}
	r, err := c.Resolve(knobs.Options{Platform: "threadx"})
	require.NoError(t, err)
	require.Equal(t, int64(17), r.Int(knobs.ReadTaskPriority))
	r, err = c.Resolve(knobs.Options{Platform: "linux"})
	require.NoError(t, err)
	require.Equal(t, int64(32), r.Int(knobs.MaxQueryables))
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	return data
}
