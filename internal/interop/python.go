package interop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// ZenohVersion is the eclipse-zenoh release the harness is pinned to (scripts/setup.sh
	// installs it; docs/interop.md records what was observed with it).
	ZenohVersion = "1.10.2"
	// PipInstall is the command that installs it.
	PipInstall = "python3 -m pip install eclipse-zenoh==" + ZenohVersion
	// PythonEnv names the environment variable that selects the Python interpreter.
	PythonEnv = "PICOBRIDGE_PYTHON"
)

type pythonProbe struct {
	path     string // absolute path of the interpreter
	version  string // eclipse-zenoh version it imports
	explicit bool   // chosen through PICOBRIDGE_PYTHON
	err      error
}

var probePython = sync.OnceValue(func() pythonProbe {
	p := pythonProbe{path: os.Getenv(PythonEnv)}
	p.explicit = p.path != ""
	if !p.explicit {
		path, err := exec.LookPath("python3")
		if err != nil {
			p.err = fmt.Errorf("python3 not found on PATH: %w", err)
			return p
		}
		p.path = path
	} else if path, err := exec.LookPath(p.path); err == nil {
		p.path = path
	}
	ctx, cancel := context.WithTimeout(context.Background(), Scale(60*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, p.path, "-c",
		"import zenoh, importlib.metadata as m; print(m.version('eclipse-zenoh'))")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		p.err = fmt.Errorf("%s cannot import zenoh: %v: %s", p.path, err, lastLines(stderr.String(), 5))
		return p
	}
	p.version = strings.TrimSpace(string(out))
	if !strings.HasPrefix(p.version, "1.") {
		p.err = fmt.Errorf("%s imports eclipse-zenoh %s; the harness speaks Zenoh 1.x (protocol 0x09) and is pinned to %s",
			p.path, p.version, ZenohVersion)
	}
	return p
})

// InCI reports whether the tests run in CI (CI=true), where a missing eclipse-zenoh is a
// failure rather than a skip: CI installs it (scripts/setup.sh).
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// FindPython returns a Python interpreter that imports eclipse-zenoh 1.x: PICOBRIDGE_PYTHON
// if set, else python3 on PATH. Without one the test is skipped with a message naming the
// pip command, except in CI (CI=true) or when PICOBRIDGE_PYTHON was set explicitly, where it
// fails. A 1.x version other than [ZenohVersion] is logged, not refused.
func FindPython(t testing.TB) string {
	t.Helper()
	p := probePython()
	if p.err != nil {
		msg := fmt.Sprintf("interop: %v\n\tinstall the real Zenoh with: %s\n\tor set %s to a python that has it",
			p.err, PipInstall, PythonEnv)
		if InCI() || p.explicit {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if p.version != ZenohVersion {
		t.Logf("interop: %s has eclipse-zenoh %s, the harness is pinned to %s (%s)",
			p.path, p.version, ZenohVersion, PipInstall)
	}
	return p.path
}

// PythonZenohVersion returns the eclipse-zenoh version found by [FindPython] ("" if none).
func PythonZenohVersion() string { return probePython().version }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
