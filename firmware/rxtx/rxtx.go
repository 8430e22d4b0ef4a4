// Package rxtx carries c/rxtx.c, a zenoh-pico client that measures what a
// device sees: per-sample receive latency of a subscription and the rate at
// which it can publish (the C file's opening comment has the options, the
// payload format and the output). Build compiles it against a zenoh-pico
// build (responder.Pico, ZENOH_PICO_DIR); eval/devcheck runs it under the
// zephyrfd shim beside devsim (docs/devsim.md, "devsim against real
// zenoh-pico").
package rxtx

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/picobridge/picobridge/firmware/responder"
)

// Source is c/rxtx.c.
//
//go:embed c/rxtx.c
var Source []byte

// Binary is the name Build gives the program.
const Binary = "rxtx"

// Build writes rxtx.c and the probe responder's sources (responder.Extract:
// picobridge_probe.c/.h, for -n) into workDir and compiles them against p
// with responder.Warnings, linked to libzenohpico with an rpath to
// p.LibDir; it returns the executable's path. The compiler's output is in
// the error.
func Build(ctx context.Context, p responder.Pico, workDir string) (string, error) {
	src := filepath.Join(workDir, "rxtx.c")
	if err := os.WriteFile(src, Source, 0o644); err != nil {
		return "", err
	}
	if err := responder.Extract(workDir); err != nil {
		return "", err
	}
	bin := filepath.Join(workDir, Binary)
	args := append(append(p.CFlags(), responder.Warnings...), "-O2", "-I"+workDir, "-o", bin, src,
		filepath.Join(workDir, responder.LibSource),
		"-L"+p.LibDir, "-Wl,-rpath,"+p.LibDir, "-lzenohpico", "-lpthread", "-lm", "-ldl")
	out, err := exec.CommandContext(ctx, responder.CC(), args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("rxtx: %s %s: %w\n%s", responder.CC(), strings.Join(args, " "), err, out)
	}
	return bin, nil
}

// Result is rxtx's closing JSON line.
type Result struct {
	Shim    bool    `json:"shim"`    // the zephyrfd shim was loaded
	Seconds float64 `json:"seconds"` // length of the measured phase
	RX      struct {
		Samples int64   `json:"samples"` // callbacks in the measured phase
		Stamped int64   `json:"stamped"` // of which carried a stamp
		P50Ms   float64 `json:"p50_ms"`  // nearest-rank latency quantiles, ms
		P95Ms   float64 `json:"p95_ms"`
		P99Ms   float64 `json:"p99_ms"`
		MaxMs   float64 `json:"max_ms"`
	} `json:"rx"`
	TX struct {
		Puts    int64   `json:"puts"`      // z_publisher_put calls that returned Z_OK
		Errors  int64   `json:"errors"`    // that did not
		MsgPerS float64 `json:"msg_per_s"` // Puts / Seconds
	} `json:"tx"`
}

// ErrNoResult: the output holds no result line.
var ErrNoResult = errors.New("rxtx: no result line")

// ParseResult returns the result line of rxtx's stdout (the last line that
// starts with {"rxtx":1).
func ParseResult(stdout []byte) (Result, error) {
	var r Result
	var line string
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `{"rxtx":1`) {
			line = sc.Text()
		}
	}
	if line == "" {
		return r, ErrNoResult
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return r, fmt.Errorf("rxtx: result line %q: %w", line, err)
	}
	return r, nil
}
