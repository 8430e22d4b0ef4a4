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

	fmt.Fprintln(w, "\nper subscription:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tTOPIC\tDELIVERED\tEXPECTED\tMISSING\tOUT OF ORDER\tRING_FULL\tOVERSIZE\tSLOT")
	for _, d := range r.Devices {
		for _, k := range sortedKeys(d.Keys) {
			kr := d.Keys[k]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", d.Name, topicOfKey(k), kr.Delivered, kr.Expected, kr.Missing, kr.OutOfOrder, kr.RingFull, kr.Oversize, kr.Slot)
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
		fmt.Fprintf(w, "PASS: %s received every /scan (%d) in order while %s was impaired; no simulated device dropped a sample on a full ring or as oversize\n",
			CriticalDevice, r.Written[ScanTopic], ImpairedDevice)
	} else {
		fmt.Fprintf(w, "FAIL: %s\n", strings.Join(r.Failures, "; "))
		for _, d := range r.Devices {
			if d.Name == CriticalDevice && (d.GatewayDrops["express/congestion"] > 0 || d.GatewayDrops["express/suspended"] > 0) {
				fmt.Fprintf(w, "hint: express/congestion and express/suspended are the gateway shedding load when its goroutines are not scheduled in time: goroutines here woke up to %.0f ms late (%d times later than a /scan period; %s); on an idle machine this does not happen at 30 Hz; try --scan-hz 10 or run again\n", r.MaxWakeLateMs, r.LateWakeups, r.Host)
			}
		}
	}
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
