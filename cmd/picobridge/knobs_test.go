package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/knobs"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	err := cli.Execute(root, args)
	return out.String(), err
}

func TestKnobsExplain(t *testing.T) {
	out, err := run(t, "knobs", "explain", "--platform", "zephyr", "--board", "native_sim", "--process-env=false")
	require.NoError(t, err)
	want, err := os.ReadFile("../../knobs/testdata/explain/zephyr-native_sim.txt")
	require.NoError(t, err)
	require.Equal(t, string(want), out)
}

func TestKnobsExplainEnvAndJSON(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "prj.conf")
	require.NoError(t, os.WriteFile(conf, []byte("# CONFIG_NROS_ZENOH_TX_BATCH is not set\n"), 0o644))
	t.Setenv("NROS_ZENOH_TX_FLUSH_MS", "20")
	out, err := run(t, "knobs", "explain", "--board", "native_sim", "--env", conf, "--json")
	require.NoError(t, err)
	var got struct {
		Platform string `json:"platform"`
		Knobs    []struct {
			ID    string `json:"id"`
			Value any    `json:"value"`
			SetBy struct {
				Rung, Var, File string
				Line            int
			} `json:"set_by"`
		} `json:"knobs"`
		Warnings []struct{ Key, Msg string } `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "zephyr", got.Platform)
	require.Equal(t, "zenoh.tx.batch", got.Knobs[0].ID)
	require.Equal(t, false, got.Knobs[0].Value)
	require.Equal(t, "env", got.Knobs[0].SetBy.Rung)
	require.Equal(t, "CONFIG_NROS_ZENOH_TX_BATCH", got.Knobs[0].SetBy.Var)
	require.Equal(t, conf, got.Knobs[0].SetBy.File)
	require.Equal(t, 1, got.Knobs[0].SetBy.Line)
	require.Equal(t, float64(20), got.Knobs[1].Value)
	require.Equal(t, "environment", got.Knobs[1].SetBy.File)
	require.NotEmpty(t, got.Warnings) // flush_ms set but batching is off
}

func TestKnobsAdvise(t *testing.T) {
	out, err := run(t, "knobs", "advise", "--platform", "zephyr", "--board", "native_sim", "--process-env=false",
		"--traffic", "../../firmware/examples/traffic-scan-imu.toml")
	require.NoError(t, err)
	want, err := os.ReadFile("../../knobs/testdata/advise/zephyr.txt")
	require.NoError(t, err)
	require.Equal(t, string(bytes.ReplaceAll(want, []byte("traffic:  firmware/"), []byte("traffic:  ../../firmware/"))), out)
}

func TestKnobsList(t *testing.T) {
	out, err := run(t, "knobs", "list")
	require.NoError(t, err)
	want, err := os.ReadFile("../../knobs/testdata/list.txt")
	require.NoError(t, err)
	require.Equal(t, string(want), out)
}

func TestKnobsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"knobs", "explain", "--platform", "vxworks"},
			`platform: no platform named "vxworks" (known: baremetal, freertos, generic, nuttx, posix, threadx, zephyr)`, 2},
		{[]string{"knobs", "explain", "--platform", "freertos", "--board", "native_sim"},
			"firmware/boards/zephyr/native_sim.toml:5: platform: board native_sim is for platform zephyr, not freertos", 2},
		{[]string{"knobs", "explain", "--platform", "zephyr", "--env", "/nonexistent/prj.conf"},
			"/nonexistent/prj.conf: --env: cannot read env file: no such file or directory", 2},
		{[]string{"knobs", "advise", "--platform", "zephyr"},
			`knobs advise: want --traffic FILE, or --gateway ADDR for the traffic a running gateway observes`, 2},
		{[]string{"knobs", "advise", "--platform", "zephyr", "--traffic", "/nonexistent.toml"},
			"/nonexistent.toml: --traffic: cannot read traffic file: no such file or directory", 2},
	} {
		_, err := run(t, tc.args...)
		require.EqualError(t, err, tc.want)
		require.Equal(t, tc.code, exitCode(err))
	}
	bad := filepath.Join(t.TempDir(), "traffic.toml")
	require.NoError(t, os.WriteFile(bad, []byte("[[topic]]\nname = \"/a\"\ndirection = \"pub\"\nrate_hz = 1\nsize_bytes = 8\nlatency_budget = 10\n"), 0o644))
	_, err := run(t, "knobs", "advise", "--platform", "zephyr", "--traffic", bad)
	require.EqualError(t, err, bad+":6:1: topic \"/a\".latency_budget: unknown key (a topic has name, direction, rate_hz, size_bytes, latency_budget_ms)\n"+
		bad+":1: topic \"/a\": missing latency_budget_ms")
	require.Equal(t, 2, exitCode(err))

	t.Setenv("ZPICO_TX_BATCH", "sometimes")
	_, err = run(t, "knobs", "explain", "--platform", "zephyr")
	require.EqualError(t, err, `environment: ZPICO_TX_BATCH: cannot parse "sometimes" as a bool (want y/n, 1/0, true/false)`)
	require.Equal(t, 2, exitCode(err))
}

func TestKnobsJSON(t *testing.T) {
	out, err := run(t, "knobs", "advise", "--platform", "zephyr", "--board", "native_sim", "--process-env=false",
		"--traffic", "../../firmware/examples/traffic-scan-imu.toml", "--json")
	require.NoError(t, err)
	var adv knobs.AdviceJSON
	require.NoError(t, json.Unmarshal([]byte(out), &adv))
	require.Equal(t, "native_sim", adv.Board)
	require.NotEmpty(t, adv.Settings)
	require.NotEmpty(t, adv.Topics)
	require.Equal(t, "zenoh.tx.batch", adv.Settings[0].ID)

	out, err = run(t, "knobs", "list", "--json")
	require.NoError(t, err)
	var list []knobs.RegistryKnobJSON
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, len(knobs.Registry()))
	require.Equal(t, "zenoh.tx.batch", list[0].ID)
}
