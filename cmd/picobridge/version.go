package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// version is set with -ldflags "-X main.version=..." by release builds
// (deploy/docker/Dockerfile); "dev" otherwise, and then the build info
// names the version (versionOf).
var version = "dev"

// buildVersion is the version the binary reports: versionOf(version, the
// binary's build info).
func buildVersion() (short, long string) {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(version, bi)
}

// versionOf is what --version prints (long) and what logs, /healthz and
// the admin space name (short), from the -X main.version value ld and the
// build info bi (nil: none).
//
// short is ld when a release build set it, else the main module's version
// as the go command stamped it: a tag (v1.2.0), a pseudo-version that
// holds the commit (v0.0.0-20261203082548-91f59aacd66a, "+dirty" when the
// tree had changes) or "(devel)". long adds the VCS stamp (full revision,
// commit time, "modified") and the Go version:
//
//	v0.0.0-20261203082548-91f59aacd66a (commit 91f59aacd66a18a9d0bde8de86106ddd48dd55dd, 2026-12-03T08:25:48Z; go1.26.8)
//
// The go command stamps VCS data only when it builds inside a git checkout
// with -buildvcs on (its default); a build from a git worktree or with
// -buildvcs=false has none, and long says so.
func versionOf(ld string, bi *debug.BuildInfo) (short, long string) {
	short = ld
	if short == "" || short == "dev" {
		short = "(devel)"
		if bi != nil && bi.Main.Version != "" {
			short = bi.Main.Version
		}
	}
	if bi == nil {
		return short, short + " (no build information)"
	}
	var rev, at string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var parts []string
	if rev != "" {
		c := "commit " + rev
		if at != "" {
			c += ", " + at
		}
		if modified {
			c += ", modified"
		}
		parts = append(parts, c)
	} else {
		parts = append(parts, "no VCS information: built with -buildvcs=false, from a git worktree or outside git")
	}
	if bi.GoVersion != "" {
		parts = append(parts, bi.GoVersion)
	}
	return short, fmt.Sprintf("%s (%s)", short, strings.Join(parts, "; "))
}

// buildRevision is the VCS revision the go command stamped, "" without one
// (the revision label of picobridge_build_info).
func buildRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}
