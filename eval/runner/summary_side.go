package runner

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// sideBySideSystems are the systems of the side-by-side table, in its order: those whose
// consumers are the same sim/devsim devices behind the same publisher and links.
var sideBySideSystems = []string{"zenohd", "ros2dds", "picobridge", "zenohd" + PicoSuffix, "ros2dds" + PicoSuffix, "picobridge" + PicoSuffix}

// writeSideBySide writes the side-by-side table (docs/eval.md "ros2dds"): per impairment
// level, one line per system of sideBySideSystems that ran at it, with the critical
// latency, delivered/attempted for both devices and the devices that missed a sample.
// Nothing is written unless a ros2dds or zenohd run and another system's run completed.
func writeSideBySide(w io.Writer, rows []Row) {
	ok := func(r Row) bool {
		return okRow(r) && slices.Contains(sideBySideSystems, r.Res.System) && slices.Contains(Levels, r.Res.Level)
	}
	systems := map[string]bool{}
	for _, r := range rows {
		if ok(r) {
			systems[r.Res.System] = true
		}
	}
	if (!systems["ros2dds"] && !systems["zenohd"] && !systems["ros2dds"+PicoSuffix] && !systems["zenohd"+PicoSuffix]) || len(systems) < 2 {
		return
	}
	fmt.Fprintf(w, "## Side by side: same publisher, same devices\n\n")
	fmt.Fprintf(w, "Cyclone publisher (RELIABLE KEEP_ALL, max_blocking_time ∞; zenohd: a Zenoh client) → system → the same two devices (`crit` direct, `slow` through linkemu at the level's profile): sim/devsim devices, or real zenoh-pico (firmware/rxtx with picobridge's probe responder, under the zephyrfd shim, 5 ms socket window) for the systems ending in `-pico`. zenohd = that router alone, a Go Zenoh client publishing the same CDR with the plugin's route settings (no DDS); ros2dds = zenohd 1.10.2 + zenoh-plugin-ros2dds 1.10.2 with `pub_priorities: [\"%s\"]`; picobridge = `picobridge run` with `routes.critical: [\"/scan\"]`. delivered/attempted counts every publication attempt. One line per run: seed, and busy loops beside it (0 = quiet host).\n\n", ros2ddsPubPriority)
	fmt.Fprintf(w, "| level | system | seed | busy loops | publisher rate | critical p50 | critical p95 | critical p99 | critical delivered/attempted | impaired delivered/attempted | devices that missed | gateway CPU | host load (1 min, start–end) |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|\n")
	for _, level := range Levels {
		for _, sys := range sideBySideSystems {
			for _, r := range rows {
				if !ok(r) || r.Res.System != sys || r.Res.Level != level {
					continue
				}
				attempted := len(r.Res.Attempts)
				var missed []string
				if r.CritDelivery.Unique < attempted {
					missed = append(missed, "crit")
				}
				if r.ImpDelivery.Unique < attempted {
					missed = append(missed, "slow")
				}
				m := "none"
				if len(missed) > 0 {
					m = strings.Join(missed, ", ")
				}
				cpu := "—"
				if r.Res.Gateway != nil {
					cpu = fmt.Sprintf("%.2f s", r.Res.Gateway.CPU.Seconds())
				}
				fmt.Fprintf(w, "| %s | %s | %d | %d | %.1f Hz | %s | %s | %s | %d/%d | %d/%d | %s | %s | %.2f–%.2f |\n",
					level, sys, r.Res.Seed, r.Res.Cotenant, r.Pub.Rate, fmtMs(r.Crit.P50), fmtMs(r.Crit.P95), fmtMs(r.Crit.P99),
					r.CritDelivery.Unique, attempted, r.ImpDelivery.Unique, attempted, m, cpu, r.Res.Load[0], r.Res.Load[1])
			}
		}
	}
	fmt.Fprintf(w, "\n")
}
