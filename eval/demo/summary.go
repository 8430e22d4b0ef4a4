package demo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// printSummary prints the end-of-run tables and the verdict.
func printSummary(w io.Writer, r *Result) {
	fmt.Fprintf(w, "\n== summary (%v of replay: /scan %d written at %g Hz, /imu_data %d written; supervisor %s)\n",
		r.Duration, r.Written[ScanTopic], r.ScanHz, r.Written[IMUTopic], r.Supervisor)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tBOARD\tLINK\tCLASS\tRECEIVED\tEXPECTED\tIN ORDER\tRING_FULL\tOVERSIZE\tP50 ms\tP95 ms\tP99 ms\tGATEWAY DROPS")
	for _, d := range r.Devices {
		inOrder := "yes"
		if d.OutOfOrder > 0 {
			inOrder = fmt.Sprintf("no (%d)", d.OutOfOrder)
		}
		gd := mapString(d.GatewayDrops)
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%s\n", d.Name, d.Platform, d.Board, d.Link, d.Class,
			d.Received, d.Expected, inOrder, d.RingFullDrops, d.OversizeDrops, d.P50, d.P95, d.P99, gd)
	}
	tw.Flush()

	fmt.Fprintf(w, "\nper subscription (criterion: every CRITICAL device receives ≥ %d %% of each critical topic written, no gateway drop on its critical routes):\n", MinReceivedPercent)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tTOPIC\tJUDGED\tRECEIVED\tWRITTEN\tSHARE\tMISSING\tOUT OF ORDER\tRING_FULL\tOVERSIZE\tSLOT\tGATEWAY CRITICAL DROPS\tVERDICT")
	for _, d := range r.Devices {
		for _, k := range sortedKeys(d.Keys) {
			kr := d.Keys[k]
			share := "-"
			if kr.Written > 0 {
				share = fmt.Sprintf("%.1f %%", 100*float64(kr.Received)/float64(kr.Written))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", d.Name, topicOfKey(k), judgedString(d), kr.Received, kr.Written, share,
				kr.Missing, kr.OutOfOrder, kr.RingFull, kr.Oversize, kr.Slot, mapString(d.CriticalDropped), verdict(d, kr))
		}
	}
	tw.Flush()

	fmt.Fprintln(w, "\nclass transitions:")
	for _, d := range r.Devices {
		if len(d.Transitions) == 0 {
			fmt.Fprintf(w, "  %-8s none (now %s)\n", d.Name, d.Class)
			continue
		}
		fmt.Fprintf(w, "  %-8s %s\n", d.Name, strings.Join(d.Transitions, "; "))
	}
	fmt.Fprintf(w, "\ngateway drops by reason (all devices): %s\n", mapString(r.GatewayDrops))
	fmt.Fprintf(w, "host: %s; largest goroutine wake-up delay during the run %.1f ms, %d wake-ups later than a /scan period\n", r.Host, r.MaxWakeLateMs, r.LateWakeups)
	if n := len(r.SupervisorChanges); n > 0 {
		fmt.Fprintf(w, "supervisor: %d mode changes, e.g. %s\n", n, r.SupervisorChanges[0])
	}
	fmt.Fprintf(w, "impaired link (%s): produced loss %.2f%% (gateway → device %.2f%%, expected %.2f%%), %d TCP retransmissions, %d packets stalled, mean added delay %.1f ms\n",
		r.Link.Profile, 100*r.Link.ProducedLoss, 100*r.Link.ProducedToDevice, 100*r.Link.ExpectedLoss, r.Link.Retransmits, r.Link.Stalled, r.Link.MeanAddedDelayMs)
	if r.Demoted {
		fmt.Fprintf(w, "%s was demoted to NONCRITICAL (tuned classifier): its /scan went to the rate-limited batched lane\n", ImpairedDevice)
	} else {
		fmt.Fprintf(w, "note: %s was not demoted during the run\n", ImpairedDevice)
	}
	fmt.Fprintln(w)
	if r.OK {
		var parts []string
		for _, d := range r.Devices {
			if !d.Judged {
				continue
			}
			var ks []string
			for _, k := range sortedKeys(d.Keys) {
				if kr := d.Keys[k]; kr.Critical {
					ks = append(ks, fmt.Sprintf("%s %d/%d", topicOfKey(k), kr.Received, kr.Written))
				}
			}
			parts = append(parts, d.Name+" "+strings.Join(ks, ", "))
		}
		fmt.Fprintf(w, "PASS: every CRITICAL device received ≥ %d %% of each critical topic (%s), the gateway dropped nothing on a critical route toward them, and no simulated device dropped a sample on a full ring or as oversize\n",
			MinReceivedPercent, strings.Join(parts, "; "))
		return
	}
	fmt.Fprintf(w, "FAIL: %d of the demo's criteria did not hold (host: %s):\n", len(r.Failures), r.Host)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  %s\n", f)
	}
	if r.LateWakeups == 0 {
		return
	}
	for _, d := range r.Devices {
		if d.Judged && (d.CriticalDropped["congestion"] > 0 || d.CriticalDropped["suspended"] > 0) {
			fmt.Fprintf(w, "hint: congestion and suspended drops can also be the gateway shedding load when its goroutines are not scheduled in time: goroutines here woke up to %.0f ms late (%d times later than a /scan period; %s); try --scan-hz 10 or run again\n", r.MaxWakeLateMs, r.LateWakeups, r.Host)
			return
		}
	}
}

// judgedString is the JUDGED column: "CRITICAL" when the criterion applies,
// else the device's class.
func judgedString(d DeviceResult) string {
	if d.Judged {
		return "CRITICAL"
	}
	return "no (" + d.Class + ")"
}

// verdict is one subscription's VERDICT column.
func verdict(d DeviceResult, kr KeyResult) string {
	switch {
	case !d.Judged || !kr.Critical:
		return "-"
	case kr.Written == 0:
		return "NOTHING WRITTEN"
	case kr.Received*100 < kr.Written*MinReceivedPercent:
		return "SHORT"
	case kr.OutOfOrder > 0:
		return "OUT OF ORDER"
	case sumDrops(d.CriticalDropped) > 0:
		return "GATEWAY DROPS"
	}
	return "ok"
}

func mapString(m map[string]uint64) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}
