package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/picobridge/picobridge/internal/cli"
)

// defaultGOGC is the GC target percent `picobridge router` and `run` set
// when neither --gogc nor $GOGC says otherwise. Go's default (100) runs a
// collection every time the heap doubles, and the router's live heap is a
// few MiB: the profiles of docs/perf.md count 9 to 43 cycles/s at 50 k to
// 270 k msg/s and 6 to 14 % of the router's CPU in the collector. Measured
// there (zbench Python pub → sub, median of 3, before build with $GOGC):
// router CPU per message at 1 KiB 2.67 µs (100), 2.08 (200), 1.98 (400),
// peak RSS 34.7, 37.6, 45.3 MiB; at 8 B 1.11, 1.05, 1.02 µs and 26.4,
// 30.2, 38.3 MiB. 200 takes most of the CPU gain for a few MiB;
// --memory-limit caps the heap where memory is short.
const defaultGOGC = 200

// gcOptions are --gogc and --memory-limit (docs/perf.md "GC settings").
type gcOptions struct {
	gogc     string // percent or "off"; "" = $GOGC, else defaultGOGC
	memLimit string // bytes with an optional B/KiB/MiB/GiB/TiB suffix, or "off"; "" = $GOMEMLIMIT, else none
}

func addGCFlags(f *pflag.FlagSet, o *gcOptions) {
	f.StringVar(&o.gogc, "gogc", "", fmt.Sprintf("GC target percent (Go's GOGC: collect when the heap grew by this %% over the live heap) or off; default $GOGC, else %d (docs/perf.md)", defaultGOGC))
	f.StringVar(&o.memLimit, "memory-limit", "", "soft memory limit of the Go runtime (Go's GOMEMLIMIT: bytes, or with a B, KiB, MiB, GiB or TiB suffix; off: none); the GC runs more often near it. Default $GOMEMLIMIT, else none")
}

// gcSetting is what applyGC set, and where each value came from
// ("flag", "env", "default").
type gcSetting struct {
	percent              int // -1: off
	percentFrom          string
	limit                int64 // math.MaxInt64: none
	limitFrom            string
	setPercent, setLimit bool
}

// resolveGC decides the GC settings: a flag wins, then the environment
// ($GOGC, $GOMEMLIMIT, which the Go runtime has applied already, so they
// are left as they are), then picobridge's default (GOGC defaultGOGC, no
// memory limit). Errors: a malformed flag (usage, exit 2).
func resolveGC(o gcOptions, getenv func(string) string) (gcSetting, error) {
	s := gcSetting{percent: defaultGOGC, percentFrom: "default", limit: math.MaxInt64, limitFrom: "default", setPercent: true}
	switch {
	case o.gogc != "":
		p, err := parseGOGC(o.gogc)
		if err != nil {
			return s, cli.Usage(fmt.Errorf("--gogc %q: %w", o.gogc, err))
		}
		s.percent, s.percentFrom = p, "flag"
	case getenv("GOGC") != "":
		p, err := parseGOGC(getenv("GOGC"))
		if err != nil {
			p = 100 // the runtime ignores a bad $GOGC too
		}
		s.percent, s.percentFrom, s.setPercent = p, "env", false
	}
	switch {
	case o.memLimit != "":
		l, err := parseMemLimit(o.memLimit)
		if err != nil {
			return s, cli.Usage(fmt.Errorf("--memory-limit %q: %w", o.memLimit, err))
		}
		s.limit, s.limitFrom, s.setLimit = l, "flag", true
	case getenv("GOMEMLIMIT") != "":
		s.limit, s.limitFrom = debug.SetMemoryLimit(-1), "env" // -1 reads it
	}
	return s, nil
}

// applyGC resolves and applies the GC settings and logs them in one line
// (info when a flag or the environment set one, else debug).
func applyGC(o gcOptions, getenv func(string) string, log *slog.Logger) error {
	s, err := resolveGC(o, getenv)
	if err != nil {
		return err
	}
	if s.setPercent {
		debug.SetGCPercent(s.percent)
	}
	if s.setLimit {
		debug.SetMemoryLimit(s.limit)
	}
	gogc, limit := strconv.Itoa(s.percent), "none"
	if s.percent < 0 {
		gogc = "off"
	}
	if s.limit != math.MaxInt64 {
		limit = strconv.FormatInt(s.limit, 10)
	}
	// the defaults at debug: `run` starts with one info line ("picobridge running")
	level := slog.LevelDebug
	if s.percentFrom != "default" || s.limitFrom != "default" {
		level = slog.LevelInfo
	}
	log.Log(context.Background(), level, "gc", "gogc", gogc, "gogc_from", s.percentFrom, "memory_limit_bytes", limit, "memory_limit_from", s.limitFrom)
	return nil
}

// parseGOGC parses a GOGC value: a non-negative percent or "off" (-1).
func parseGOGC(v string) (int, error) {
	if strings.EqualFold(v, "off") {
		return -1, nil
	}
	p, err := strconv.Atoi(v)
	if err != nil || p < 0 {
		return 0, fmt.Errorf("want a percent (0 or more) or off")
	}
	return p, nil
}

// parseMemLimit parses a GOMEMLIMIT value: bytes with an optional B, KiB,
// MiB, GiB or TiB suffix (Go's runtime syntax), or "off" (no limit).
func parseMemLimit(v string) (int64, error) {
	if strings.EqualFold(v, "off") {
		return math.MaxInt64, nil
	}
	mult := int64(1)
	num := v
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			num, mult = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a positive number of bytes with an optional B, KiB, MiB, GiB or TiB suffix, or off")
	}
	return n * mult, nil
}
