package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVersionOf: --version names the module version and the VCS stamp from
// the build info (it printed "dev" whatever the build).
func TestVersionOf(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}, {Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "91f59aacd66a18a9d0bde8de86106ddd48dd55dd"}, {Key: "vcs.time", Value: "2026-12-03T08:25:48Z"}, {Key: "vcs.modified", Value: "false"}}
	dirty := append([]debug.BuildSetting{}, vcs...)
	dirty[4].Value = "true"
	for _, tc := range []struct {
		name, ld    string
		bi          *debug.BuildInfo
		short, long string
	}{
		{"checkout", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261203082548-91f59aacd66a"}, Settings: vcs},
			"v0.0.0-20261203082548-91f59aacd66a", "v0.0.0-20261203082548-91f59aacd66a (commit 91f59aacd66a18a9d0bde8de86106ddd48dd55dd, 2026-12-03T08:25:48Z; go1.26.8)"},
		{"dirty", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261203082548-91f59aacd66a+dirty"}, Settings: dirty},
			"v0.0.0-20261203082548-91f59aacd66a+dirty", "v0.0.0-20261203082548-91f59aacd66a+dirty (commit 91f59aacd66a18a9d0bde8de86106ddd48dd55dd, 2026-12-03T08:25:48Z, modified; go1.26.8)"},
		{"release ldflags", "v1.2.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"v1.2.0", "v1.2.0 (commit 91f59aacd66a18a9d0bde8de86106ddd48dd55dd, 2026-12-03T08:25:48Z; go1.26.8)"},
		{"go install @tag", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}},
			"v1.2.0", "v1.2.0 (no VCS information: built with -buildvcs=false, from a git worktree or outside git; go1.26.8)"},
		{"worktree", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"(devel)", "(devel) (no VCS information: built with -buildvcs=false, from a git worktree or outside git; go1.26.8)"},
		{"no build info", "dev", nil, "(devel)", "(devel) (no build information)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			short, long := versionOf(tc.ld, tc.bi)
			require.Equal(t, tc.short, short)
			require.Equal(t, tc.long, long)
		})
	}
	// the binary prints the long form of its own build info
	bi, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	_, long := versionOf("dev", bi)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, realMain(context.Background(), []string{"--version"}, &stdout, &stderr))
	require.Equal(t, "picobridge version "+long+"\n", stdout.String())
	require.NotEqual(t, "picobridge version dev\n", stdout.String())
}
