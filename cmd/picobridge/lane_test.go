package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/testlane"
)

// TestLaneBadExpectations: a bad file is exit status 2 with file, line,
// column, key and allowed values, before anything listens.
func TestLaneBadExpectations(t *testing.T) {
	f := filepath.Join(t.TempDir(), "lane.yaml")
	require.NoError(t, os.WriteFile(f, []byte("knobs: {platform: zephyr}\nfaults:\n  - {kind: unplug}\n"), 0o644))
	_, err := run(t, "lane", "--expect", f)
	require.Error(t, err)
	require.Equal(t, 2, exitCode(err))
	require.Equal(t, f+`:3:12: faults[0].kind: unknown fault "unplug" (allowed: stall_reads, close_mid_fragment, restart_router)`, err.Error())

	require.NoError(t, os.WriteFile(f, []byte("knobs: {platform: zephyrr}\n"), 0o644))
	_, err = run(t, "lane", "--expect", f)
	require.Equal(t, 2, exitCode(err))
	require.Equal(t, f+`: knobs.platform: no platform named "zephyrr" (known: baremetal, freertos, generic, nuttx, posix, threadx, zephyr)`, err.Error())
}

// TestLaneNoDeviceExit1: nothing connects: exit status 1, the summary on
// stdout and a JUnit file.
func TestLaneNoDeviceExit1(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "lane.yaml")
	require.NoError(t, os.WriteFile(f, []byte("device: nobody\nknobs: {board: native_sim}\nwait: 100ms\n"), 0o644))
	junit := filepath.Join(dir, "lane.xml")
	out, err := run(t, "lane", "--expect", f, "--listen", "127.0.0.1:0", "--junit", junit)
	require.Error(t, err)
	require.Equal(t, 1, exitCode(err))
	require.Equal(t, "lane: 1 check(s) failed (summary above)", err.Error())
	require.Contains(t, out, "FAIL session ")
	require.True(t, strings.HasSuffix(out, "lane: 0 passed, 1 failed, 8 skipped\n"), out)
	x, err := os.ReadFile(junit)
	require.NoError(t, err)
	require.Contains(t, string(x), `<testsuite name="picobridge lane nobody" tests="9" failures="1" errors="0" skipped="8"`)
}

// docBlocks returns the fenced blocks of a Markdown text, by their first line.
func docBlocks(t *testing.T, md string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```[a-z]*\n(.*?)```").FindAllStringSubmatch(md, -1) {
		first, _, _ := strings.Cut(m[1], "\n")
		out[first] = m[1]
	}
	return out
}

// laneFlags checks that each flag in args (up to "--") is one of the lane
// command's, and returns them by name.
func laneFlags(t *testing.T, args []string) map[string]string {
	t.Helper()
	cmd := newLaneCommand()
	got := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || strings.HasPrefix(a, "[--") && strings.TrimLeft(a, "[") == "--" {
			break
		}
		a = strings.Trim(a, "[]")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := cmd.Flags().Lookup(name)
		if f == nil && len(name) == 1 {
			f = cmd.Flags().ShorthandLookup(name)
		}
		require.NotNil(t, f, "flag %s is not a flag of picobridge lane", a)
		if !hasVal && f.Value.Type() != "bool" && i+1 < len(args) {
			val = strings.Trim(args[i+1], "[]")
		}
		got[f.Name] = val
	}
	return got
}

// TestLaneDocsJob: docs/lane.md's usage line and GitHub Actions job match
// `picobridge lane --help` (every flag exists, every flag of the command is
// in the usage line), and its prj.conf and lane.yaml parse and resolve as
// the lane would read them (a bad one would be exit status 2).
func TestLaneDocsJob(t *testing.T) {
	data, err := os.ReadFile("../../docs/lane.md")
	require.NoError(t, err)
	all := docBlocks(t, string(data))
	block := func(prefix string) string {
		for first, b := range all {
			if strings.HasPrefix(first, prefix) {
				return b
			}
		}
		return ""
	}

	usage := all["picobridge lane --expect lane.yaml [--listen 127.0.0.1:7447] [--junit lane.xml] [--process-env] [-v] [-- DEVICE COMMAND...]"]
	require.NotEmpty(t, usage, "docs/lane.md's usage line changed: update this test with it")
	documented := laneFlags(t, strings.Fields(usage)[2:])
	newLaneCommand().Flags().VisitAll(func(f *pflag.Flag) {
		_, ok := documented[f.Name]
		require.True(t, ok, "flag --%s of picobridge lane is not in docs/lane.md's usage line", f.Name)
	})

	dir := filepath.Join(t.TempDir(), "app-repo", "app")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, name := range []string{"prj.conf", "lane.yaml"} {
		b := block("# app/" + name)
		require.NotEmpty(t, b, "no app/%s block", name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644))
	}
	laneYAML := filepath.Join(dir, "lane.yaml")
	e, err := testlane.ParseExpectations(laneYAML, []byte(block("# app/lane.yaml")))
	require.NoError(t, err)
	r, err := testlane.Resolve(e, nil)
	require.NoError(t, err)
	require.Equal(t, "native_sim", r.Board.Name())
	require.Equal(t, "kconfig CONFIG_NROS_ZENOH_TX_BATCH ("+filepath.Join(dir, "prj.conf")+":11)", r.Get(knobs.TxBatch).Source.String())

	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(block("# .github/workflows/lane.yml")), &wf))
	steps := wf.Jobs["native-sim-lane"].Steps
	require.NotEmpty(t, steps)
	var laneRun, buildRun, goVersionFile, report string
	for _, s := range steps {
		switch {
		case strings.Contains(s.Run, "picobridge lane"):
			laneRun = s.Run
		case strings.Contains(s.Run, "build -o"):
			buildRun = s.Run
		case strings.HasPrefix(s.Uses, "actions/setup-go@"):
			goVersionFile = s.With["go-version-file"]
		case strings.HasPrefix(s.Uses, "mikepenz/action-junit-report@"):
			report = s.With["report_paths"]
		}
	}
	require.Equal(t, "go -C picobridge build -o \"$GITHUB_WORKSPACE/bin/picobridge\" ./cmd/picobridge", buildRun)
	require.Equal(t, "picobridge/go.mod", goVersionFile)
	args := strings.Fields(strings.ReplaceAll(laneRun, "\\\n", " "))
	require.Equal(t, []string{"bin/picobridge", "lane"}, args[:2])
	flags := laneFlags(t, args[2:])
	require.Equal(t, map[string]string{"expect": "app-repo/app/lane.yaml", "junit": "lane.xml", "verbose": ""}, flags)
	require.Equal(t, flags["junit"], report)
	require.Equal(t, []string{"--", "./build/zephyr/zephyr.exe"}, args[len(args)-2:])
}
