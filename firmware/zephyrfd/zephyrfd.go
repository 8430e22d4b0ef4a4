// Package zephyrfd carries zephyrfd.c, an LD_PRELOAD shim that gives a POSIX
// process Zephyr's per-socket serialization (zsock's per-fd k_mutex): while
// one thread is inside a blocking recv on a TCP socket, another thread's send
// on it waits until the recv returns, with data or at the socket's receive
// timeout, and then goes before the reader's next recv. Real zenoh-pico built
// for POSIX, run under it, shows the TX ceiling a zenoh-pico device has on
// Zephyr (docs/devsim.md, "devsim against real zenoh-pico"). The C file's
// opening comment is the reference: which calls are serialized, how the
// receive timeout is applied (poll(2), exact to ~0.1 ms, instead of the
// kernel's tick-rounded SO_RCVTIMEO), ZEPHYRFD_WINDOW_MS and ZEPHYRFD_STATS.
//
// Build compiles it with the system C compiler; nothing here is linked into
// Go.
package zephyrfd

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/picobridge/picobridge/firmware/responder"
)

// Source is c/zephyrfd.c.
//
//go:embed c/zephyrfd.c
var Source []byte

// Library is the file name Build gives the shared object.
const Library = "libzephyrfd.so"

// Environment variables the shim reads (zephyrfd.c).
const (
	// WindowEnv, a number of milliseconds ≥ 1, replaces every socket's
	// receive timeout.
	WindowEnv = "ZEPHYRFD_WINDOW_MS"
	// StatsEnv=1 prints one `zephyrfd {json}` line per used socket on
	// stderr at exit (ParseStats reads them).
	StatsEnv = "ZEPHYRFD_STATS"
	// GraceEnv is how long, in ms, the reading thread's next turn is held
	// for it after a recv returns (default 5; 0 turns it off).
	GraceEnv = "ZEPHYRFD_GRACE_MS"
)

// Build writes zephyrfd.c into workDir and compiles it into workDir/Library
// with the C compiler of responder.CC (-O2, warnings as errors), returning
// the library's path. Linux only (glibc's RTLD_NEXT interposition). The
// compiler's output is in the error.
func Build(ctx context.Context, workDir string) (string, error) {
	src := filepath.Join(workDir, "zephyrfd.c")
	if err := os.WriteFile(src, Source, 0o644); err != nil {
		return "", err
	}
	lib := filepath.Join(workDir, Library)
	args := []string{"-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2", "-shared", "-fPIC", "-o", lib, src, "-lpthread", "-ldl"}
	out, err := exec.CommandContext(ctx, responder.CC(), args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("zephyrfd: %s %s: %w\n%s", responder.CC(), strings.Join(args, " "), err, out)
	}
	return lib, nil
}

// Stats is one socket's line of the shim's ZEPHYRFD_STATS output.
type Stats struct {
	FD           int     `json:"fd"`
	Recvs        uint64  `json:"recvs"`         // receive calls on the socket
	RecvTimeouts uint64  `json:"recv_timeouts"` // of which ended by the receive timeout
	Sends        uint64  `json:"sends"`         // send calls
	SendsWaited  uint64  `json:"sends_waited"`  // of which waited for the lock
	SendWaitMs   float64 `json:"send_wait_ms"`  // total time sends waited, ms
	ResvMade     uint64  `json:"resv_made"`     // turns held for the reader after a recv
	ResvLapsed   uint64  `json:"resv_lapsed"`   // of which skipped: the reader was away longer than the grace
}

// statsPrefix starts each stats line.
const statsPrefix = "zephyrfd "

// ParseStats returns the stats lines found in a program's stderr, in order;
// other lines are skipped, a malformed stats line is an error.
func ParseStats(stderr []byte) ([]Stats, error) {
	var out []Stats
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		l, ok := strings.CutPrefix(sc.Text(), statsPrefix)
		if !ok || !strings.HasPrefix(l, "{") {
			continue
		}
		var s Stats
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			return out, fmt.Errorf("zephyrfd: stats line %q: %w", l, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}
