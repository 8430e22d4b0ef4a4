// Package responder carries the device side of the probe protocol
// (docs/probe.md) for zenoh-pico: the C library picobridge_probe.c/.h and
// the example program z_probe_responder.c in c/, embedded, and a helper
// that compiles them against a zenoh-pico build with the system C compiler.
// The Go reference responder is probe.Respond; docs/responder.md describes
// the C API.
//
// Nothing here links zenoh-pico into Go: Build produces a separate
// executable (used by the tests and by anyone who wants a probe responder
// on a Linux or macOS host).
package responder

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Sources holds c/picobridge_probe.h, c/picobridge_probe.c and
// c/z_probe_responder.c.
//
//go:embed c/*.c c/*.h
var Sources embed.FS

// Environment variables naming a zenoh-pico build.
const (
	// DirEnv names a zenoh-pico build or install directory holding
	// include/ and lib/libzenohpico.so (or .dylib, or .a).
	DirEnv = "ZENOH_PICO_DIR"
	// SrcEnv names the zenoh-pico source tree; its include/ is used when
	// DirEnv is a CMake build tree whose include/ has only the generated
	// config.h. Without it the source directory is read from
	// DirEnv/CMakeCache.txt.
	SrcEnv = "ZENOH_PICO_SRC"
)

// Names of the embedded files.
const (
	LibSource     = "picobridge_probe.c"
	Header        = "picobridge_probe.h"
	ExampleSource = "z_probe_responder.c"
	// Binary is the name Build gives the example program.
	Binary = "z_probe_responder"
)

// Pico is a zenoh-pico build to compile against.
type Pico struct {
	// Include lists the header directories, generated config.h first.
	Include []string
	// LibDir holds libzenohpico.
	LibDir string
	// Macros are the numeric #defines of the config.h used
	// (Z_BATCH_UNICAST_SIZE, Z_FRAG_MAX_SIZE, ...).
	Macros map[string]int
}

// ErrConfigMismatch: a CMake build tree whose source tree's config.h was
// generated for another build (FindPico).
var ErrConfigMismatch = errors.New("responder")

// ErrNoPico is returned by PicoFromEnv when DirEnv is unset.
var ErrNoPico = errors.New("responder: " + DirEnv + " is not set")

// PicoFromEnv locates zenoh-pico from DirEnv (and SrcEnv). It returns
// ErrNoPico when DirEnv is empty and another error when the directory does
// not look like a zenoh-pico build.
func PicoFromEnv() (Pico, error) {
	dir := os.Getenv(DirEnv)
	if dir == "" {
		return Pico{}, ErrNoPico
	}
	return FindPico(dir, os.Getenv(SrcEnv))
}

// FindPico locates the headers and library of the zenoh-pico build in dir;
// src (may be empty) is the source tree, for headers a build tree lacks.
//
// dir is an install tree (include/zenoh-pico.h, include/zenoh-pico/config.h,
// lib/), or a CMake build tree: its include/ holds the generated config.h
// (older zenoh-pico), or, since zenoh-pico writes config.h into the source
// tree at configure time (1.x), the source tree's include/ has it. Then the
// source tree may have been configured last for another build: FindPico
// compares the config.h's Z_BATCH_UNICAST_SIZE and Z_FRAG_MAX_SIZE with the
// build tree's CMakeCache.txt (BATCH_UNICAST_SIZE, FRAG_MAX_SIZE) and refuses
// a mismatch, which would build a responder announcing the other build's
// knobs.
func FindPico(dir, src string) (Pico, error) {
	var p Pico
	inc := filepath.Join(dir, "include")
	cache := filepath.Join(dir, "CMakeCache.txt")
	if src == "" {
		src = cmakeSourceDir(cache)
	}
	srcInc := ""
	if src != "" {
		srcInc = filepath.Join(src, "include")
	}
	switch {
	case exists(filepath.Join(inc, "zenoh-pico", "config.h")):
		p.Include = []string{inc}
		if !exists(filepath.Join(inc, "zenoh-pico.h")) {
			if srcInc == "" || !exists(filepath.Join(srcInc, "zenoh-pico.h")) {
				return p, fmt.Errorf("responder: %s/include has no zenoh-pico.h (a CMake build tree): set %s to the zenoh-pico source tree", dir, SrcEnv)
			}
			p.Include = append(p.Include, srcInc)
		}
	case exists(cache) && srcInc != "" && exists(filepath.Join(srcInc, "zenoh-pico", "config.h")) && exists(filepath.Join(srcInc, "zenoh-pico.h")):
		p.Include = []string{srcInc}
	default:
		return p, fmt.Errorf("responder: %s: no include/zenoh-pico/config.h, not a zenoh-pico build or install directory", dir)
	}
	p.Macros = defines(filepath.Join(p.Include[0], "zenoh-pico", "config.h"))
	if p.Include[0] == srcInc {
		vars := cmakeVars(cache)
		for _, m := range [][2]string{{"BATCH_UNICAST_SIZE", "Z_BATCH_UNICAST_SIZE"}, {"FRAG_MAX_SIZE", "Z_FRAG_MAX_SIZE"}} {
			want, ok := vars[m[0]]
			got, ok2 := p.Macros[m[1]]
			if ok && ok2 && want != got {
				return p, fmt.Errorf("%w: %s says %s %d, but %s/zenoh-pico/config.h (zenoh-pico's CMake writes it into the source tree) says %s %d: "+
					"the source tree was configured last for another build; re-run cmake for %s, or install it, before building against it",
					ErrConfigMismatch, cache, m[0], want, srcInc, m[1], got, dir)
			}
		}
	}
	p.LibDir = filepath.Join(dir, "lib")
	found := false
	for _, n := range []string{"libzenohpico.so", "libzenohpico.dylib", "libzenohpico.a"} {
		found = found || exists(filepath.Join(p.LibDir, n))
	}
	if !found {
		return p, fmt.Errorf("responder: no libzenohpico in %s", p.LibDir)
	}
	return p, nil
}

// defines reads the numeric #define lines of a C header (NAME value).
func defines(path string) map[string]int {
	data, _ := os.ReadFile(path)
	return parseDefines(data)
}

func parseDefines(data []byte) map[string]int {
	out := map[string]int{}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "#define" {
			if n, err := strconv.Atoi(f[2]); err == nil {
				out[f[1]] = n
			}
		}
	}
	return out
}

// cmakeVars reads the numeric NAME:TYPE=value entries of a CMakeCache.txt.
func cmakeVars(cache string) map[string]int {
	data, _ := os.ReadFile(cache)
	return parseCMakeVars(data)
}

func parseCMakeVars(data []byte) map[string]int {
	out := map[string]int{}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(l, "=")
		name, _, typed := strings.Cut(k, ":")
		if !ok || !typed {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			out[name] = n
		}
	}
	return out
}

// cmakeSourceDir reads zenohpico_SOURCE_DIR (or CMAKE_HOME_DIRECTORY) from
// a CMakeCache.txt; "" when absent.
func cmakeSourceDir(cache string) string {
	f, err := os.Open(cache)
	if err != nil {
		return ""
	}
	defer f.Close()
	var home string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(k, "zenohpico_SOURCE_DIR:"):
			return v
		case strings.HasPrefix(k, "CMAKE_HOME_DIRECTORY:"):
			home = v
		}
	}
	return home
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// CC is the C compiler: $CC, else cc.
func CC() string {
	if cc := os.Getenv("CC"); cc != "" {
		return cc
	}
	return "cc"
}

// Warnings are the flags every compilation uses: the sources are kept
// warning-free at this level.
var Warnings = []string{"-Wall", "-Wextra", "-Werror", "-pedantic"}

// CFlags are the preprocessor and language flags for this host: C11 with
// GNU extensions, as zenoh-pico's own build uses (its headers need POSIX
// struct timespec on Unix even in single-threaded builds), and the platform
// macro the headers select their types by (the same ones zenoh-pico's CMake
// build gives its examples).
func (p Pico) CFlags() []string {
	f := []string{"-std=gnu11", "-DZENOH_C_STANDARD=11"}
	switch runtime.GOOS {
	case "linux":
		f = append(f, "-DZENOH_LINUX")
	case "darwin":
		f = append(f, "-DZENOH_MACOS")
	case "freebsd", "openbsd", "netbsd":
		f = append(f, "-DZENOH_BSD")
	}
	for _, inc := range p.Include {
		f = append(f, "-I"+inc)
	}
	return f
}

// Extract writes the embedded sources into dir.
func Extract(dir string) error {
	return fs.WalkDir(Sources, "c", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := Sources.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, filepath.Base(path)), b, 0o644)
	})
}

// Check compiles both C files with Warnings and -fsyntax-only against p
// (no binary). The output of the compiler is in the error.
func Check(ctx context.Context, p Pico, workDir string) error {
	if err := Extract(workDir); err != nil {
		return err
	}
	for _, src := range []string{LibSource, ExampleSource} {
		args := append(append(p.CFlags(), Warnings...), "-fsyntax-only", filepath.Join(workDir, src))
		if err := run(ctx, workDir, args); err != nil {
			return err
		}
	}
	return nil
}

// Build compiles the example program into workDir (extracting the sources
// there) with Warnings, linked to libzenohpico with an rpath to p.LibDir,
// and returns the executable's path.
func Build(ctx context.Context, p Pico, workDir string) (string, error) {
	if err := Extract(workDir); err != nil {
		return "", err
	}
	bin := filepath.Join(workDir, Binary)
	args := append(p.CFlags(), Warnings...)
	args = append(args, "-O2", "-o", bin,
		filepath.Join(workDir, LibSource), filepath.Join(workDir, ExampleSource),
		"-L"+p.LibDir, "-Wl,-rpath,"+p.LibDir, "-lzenohpico", "-lpthread")
	if err := run(ctx, workDir, args); err != nil {
		return "", err
	}
	return bin, nil
}

func run(ctx context.Context, dir string, args []string) error {
	cmd := exec.CommandContext(ctx, CC(), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("responder: %s %s: %w\n%s", CC(), strings.Join(args, " "), err, out)
	}
	return nil
}
