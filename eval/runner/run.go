package runner

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// spec is one planned run.
type spec struct {
	run, exp, system, level string
	missing                 string // not runnable: what is missing
	fn                      func(ctx context.Context, cfg Config, res *Result) error
}

// plan lists the runs of the selected experiments, in order.
func plan(cfg Config) []spec {
	var out []spec
	add := func(exp, system string, levels []string, missing string, fn func(ctx context.Context, cfg Config, level string, res *Result) error) {
		if !cfg.wants(exp) {
			return
		}
		for _, l := range levels {
			if len(cfg.Levels) > 0 && !slices.Contains(cfg.Levels, l) {
				continue
			}
			s := spec{run: exp + "-" + system + "-" + l, exp: exp, system: system, level: l, missing: missing}
			s.fn = func(ctx context.Context, cfg Config, res *Result) error { return fn(ctx, cfg, l, res) }
			out = append(out, s)
		}
	}
	dds := func(v ddsVariant) func(ctx context.Context, cfg Config, level string, res *Result) error {
		return func(ctx context.Context, cfg Config, level string, res *Result) error {
			return runDDS(ctx, cfg, v, level, res)
		}
	}
	add("exp1", "dds-fastdds", Levels, fastDDSMissing(), dds(variantFastDDS))
	add("exp1", "dds-cyclone", Levels, ddsMissing(), dds(variantCyclone))
	add("exp2", "zenoh-router", Levels, zenohMissing(), runZenohRouter)
	pb := func(v bridgeVariant) func(ctx context.Context, cfg Config, level string, res *Result) error {
		return func(ctx context.Context, cfg Config, level string, res *Result) error {
			return runBridge(ctx, cfg, v, DevicesDevsim, level, res)
		}
	}
	// The side-by-side systems (exp3's picobridge, zenohd, ros2dds), level by level so that
	// at each level they meet the same host load: first with devsim devices, then (when
	// cfg.Devices has "pico" and the level is in cfg.PicoLevels) with real zenoh-pico
	// devices, system names ending in PicoSuffix. exp3's toggle run (devsim only) ends them.
	sides := []struct {
		exp, system string
		missing     string
		fn          func(ctx context.Context, cfg Config, program, level string, res *Result) error
	}{
		{"exp3", "picobridge", ddsMissing(), func(ctx context.Context, cfg Config, program, level string, res *Result) error {
			return runBridge(ctx, cfg, bridgeFull, program, level, res)
		}},
		{ZenohdExp, ZenohdExp, zenohdMissing(), func(ctx context.Context, cfg Config, program, level string, res *Result) error {
			return runROS2DDS(ctx, cfg, level, false, program, res)
		}},
		{ROS2DDSExp, ROS2DDSExp, anchorsMissing(), func(ctx context.Context, cfg Config, program, level string, res *Result) error {
			return runROS2DDS(ctx, cfg, level, true, program, res)
		}},
	}
	for _, l := range Levels {
		if len(cfg.Levels) > 0 && !slices.Contains(cfg.Levels, l) {
			continue
		}
		for _, program := range cfg.devicePrograms() {
			if program == DevicesPico && len(cfg.PicoLevels) > 0 && !slices.Contains(cfg.PicoLevels, l) {
				continue
			}
			for _, sd := range sides {
				if !cfg.wants(sd.exp) {
					continue
				}
				system, missing := sd.system, sd.missing
				if program == DevicesPico {
					system += PicoSuffix
					if pm := picoMissing(); pm != "" {
						missing = strings.TrimPrefix(missing+"; "+pm, "; ")
					}
				}
				fn := sd.fn
				name := sd.exp + "-" + system + "-" + l
				if sd.exp != "exp3" {
					name = system + "-" + l // zenohd-mild, ros2dds-pico-mild
				}
				out = append(out, spec{run: name, exp: sd.exp, system: system, level: l, missing: missing,
					fn: func(ctx context.Context, cfg Config, res *Result) error { return fn(ctx, cfg, program, l, res) }})
			}
		}
	}
	add("exp3", "picobridge", []string{"toggle"}, ddsMissing(), pb(bridgeFull))
	add("exp4", "picobridge-noclassifier", []string{"moderate"}, ddsMissing(), pb(bridgeNoClassifier))
	add("exp5", "split", Levels, ddsMissing(), dds(variantSplit))
	add("exp6", "hop", []string{"clean"}, ddsMissing(), pb(bridgeHop))
	return out
}

// busySkips reports whether the busy variant (busy loops = cfg.BusyVariant) leaves s out:
// it runs devsim devices only, and only cfg.BusyLevels when given.
func (c Config) busySkips(s spec, busy int) bool {
	if c.BusyVariant == 0 || busy != c.BusyVariant || busy == c.Cotenant {
		return false
	}
	return strings.HasSuffix(s.system, PicoSuffix) || (len(c.BusyLevels) > 0 && !slices.Contains(c.BusyLevels, s.level))
}

// Run executes the selected experiments and writes CSVs, summary.md and the plots into
// cfg.Out. A failed run is reported in the summary and does not stop the others.
func Run(ctx context.Context, cfg Config) ([]*Result, error) {
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	cfg.hostStart = hostLine()
	// The middleware comparison runs first (quiet host, every seed): an evaluation cut short
	// with SIGINT then loses the busy variant, which comes last, rather than the claims on
	// the middlewares. Its results still follow the experiments' in the report.
	var mwResults []*Result
	if cfg.wants(MWExp) {
		mwResults = runMW(ctx, cfg)
	}
	var results []*Result
	skipped := map[string]bool{} // experiments whose skip was logged (one line for all their runs)
	busyLevels := []int{cfg.Cotenant}
	if cfg.BusyVariant > 0 {
		busyLevels = append(busyLevels, cfg.BusyVariant)
	}
	for _, busy := range busyLevels {
		for _, seed := range cfg.Seeds {
			runCfg := cfg
			runCfg.Seed = seed
			runCfg.Cotenant = busy
			for _, s := range plan(cfg) {
				if cfg.busySkips(s, busy) {
					continue
				}
				run := s.run
				if len(cfg.Seeds) > 1 {
					run = fmt.Sprintf("%s-s%d", s.run, seed)
				}
				if cfg.BusyVariant > 0 && busy == cfg.BusyVariant && busy != cfg.Cotenant {
					run += "-busy"
				}
				res := &Result{Run: run, Exp: s.exp, System: s.system, Level: s.level, Seed: seed, Missing: s.missing, Cotenant: busy}
				if res.Missing == "" {
					if ctx.Err() != nil {
						res.Missing = "interrupted"
					} else {
						cfg.Log("picoeval: %s (%v)…", run, cfg.runDuration(s.level))
						t0 := time.Now()
						stopBusy := startCotenants(busy)
						res.Load[0] = loadAvg1()
						res.Err = s.fn(ctx, runCfg, res)
						res.Load[1] = loadAvg1()
						stopBusy()
						if res.Err == nil {
							res.Err = WriteCSV(cfg.Out, res)
						}
						row := Summarize(res)
						cfg.Log("picoeval: %s done in %v: %s", run, time.Since(t0).Round(time.Second), oneLine(row))
					}
				} else if s.exp == ROS2DDSExp || s.exp == ZenohdExp {
					if !skipped[s.exp] {
						cfg.Log("picoeval: %s: skipped, %s", s.exp, res.Missing)
					}
					skipped[s.exp] = true
				} else {
					cfg.Log("picoeval: %s not run (%s)", run, res.Missing)
				}
				results = append(results, res)
			}
		}
	}
	if picoDir != "" {
		os.RemoveAll(picoDir)
	}
	results = append(results, mwResults...)
	if err := WriteReport(cfg, results); err != nil {
		return results, err
	}
	return results, nil
}

func oneLine(r Row) string {
	if r.Res.Err != nil {
		return "error: " + r.Res.Err.Error()
	}
	return fmt.Sprintf("pub %.1f Hz (std %.1f, %d errors, %d blocked), critical p50 %s p95 %s p99 %s (%d/%d), impaired %d",
		r.Pub.Rate, r.Pub.RateStd, r.Pub.Errors, r.Pub.Blocked, fmtMs(r.Crit.P50), fmtMs(r.Crit.P95), fmtMs(r.Crit.P99),
		r.CritDelivery.Unique, r.CritDelivery.Published, r.ImpDelivery.Unique)
}

// loadAvg1 is the host's 1-minute load average (the first field of /proc/loadavg), NaN
// when it cannot be read.
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// buildCommit is the commit picoeval was built from (the Go toolchain's vcs.revision
// stamp, 12 digits, "-dirty" when vcs.modified), "" when the binary has none (go run, a
// build outside a checkout).
func buildCommit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			rev = st.Value
		case "vcs.modified":
			if st.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// hostLine describes the host for the summary's header: CPUs, the load averages
// (/proc/loadavg: 1, 5, 15 min) and the commit picoeval was built from (else the working
// tree's, git describe), or "unknown" for what cannot be read.
func hostLine() string {
	load := "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = strings.Join(f[:3], " / ")
		}
	}
	commit := buildCommit()
	if commit == "" {
		commit = "unknown"
		if out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=12").Output(); err == nil {
			commit = strings.TrimSpace(string(out)) + " (working tree; the binary carries no VCS stamp)"
		}
	}
	return fmt.Sprintf("%d CPUs, load average (1 / 5 / 15 min) %s, commit `%s`", runtime.NumCPU(), load, commit)
}
