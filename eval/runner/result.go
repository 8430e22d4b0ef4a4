package runner

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/picobridge/picobridge/eval/measure"
)

// Result is everything one run produced.
type Result struct {
	Run    string // unique name, e.g. "exp1-cyclone-moderate"; also the CSV's name
	Exp    string // "exp1" … "exp6"
	System string // "dds-fastdds", "dds-cyclone", "zenoh-router", "picobridge", "split", ...
	Level  string // clean | mild | moderate | strong | toggle
	Seed   uint64 // impairment seed of this run

	StartNs, EndNs int64 // publication window

	Samples     []measure.Sample
	Attempts    []measure.Attempt
	Published   []uint64
	Transitions []measure.Transition
	Toggles     []measure.Toggle
	Unknown     map[string]int // receptions with a stamp never published (should be 0)

	Gateway      *measure.Usage // CPU and peak RSS of the gateway process, if there is one
	ExpectedLoss float64        // of the profile
	ProducedLoss float64        // what the impairment actually produced (NaN: not measured)
	Impairment   string         // how the impairment was applied
	Notes        []string
	// DeviceRecvP95Ms is the critical device's own share of the critical latency, p95 in ms:
	// from its read task's callback to its application taking the sample (sim/devsim
	// DeviceReceive); set when HasDeviceRecv (runs with simulated devices).
	DeviceRecvP95Ms float64
	HasDeviceRecv   bool
	// DeviceDrops are the samples each simulated device (by name: "crit", "slow") took off
	// its link and dropped itself, by outcome (sim/devsim: ring_full, oversize, slot); set
	// by the zenohd and ros2dds runs.
	DeviceDrops map[string]map[string]int

	MW       *MWInfo // middleware comparison runs only
	Cotenant int     // CPU busy loops that ran beside the system (Config.Cotenant)
	// Load is the host's 1-minute load average (/proc/loadavg) when the run started and
	// when it ended; NaN where it could not be read.
	Load [2]float64

	Missing string // not run: what is missing
	Err     error  // the run failed
}

// Critical, Impaired and Noncritical are the consumer names used in CSVs.
const (
	Critical    = "critical"
	Impaired    = "impaired"
	Noncritical = "noncritical"
)

// Row is the summary of a Result.
type Row struct {
	Res          *Result
	Pub          measure.PublishStats
	Crit         measure.LatencyStats
	CritDelivery measure.Delivery
	Imp          measure.LatencyStats
	ImpDelivery  measure.Delivery
	ImpRate      float64
	Direct       measure.LatencyStats // exp6: the DDS reader reading the publisher directly
	Detect       time.Duration
	Recover      time.Duration
	HasDetect    bool
	HasRecover   bool
}

// Summarize computes the measures of r.
func Summarize(r *Result) Row {
	row := Row{Res: r}
	if r.Missing != "" || r.Err != nil {
		return row
	}
	row.Pub = measure.Publish(r.Attempts, r.StartNs, r.EndNs)
	by := measure.ByConsumer(r.Samples)
	row.Crit = measure.Latency(by[Critical])
	row.CritDelivery = measure.CheckDelivery(r.Published, by[Critical])
	imp := by[Impaired]
	if len(imp) == 0 {
		imp = by[Noncritical]
	}
	row.Imp = measure.Latency(imp)
	row.ImpDelivery = measure.CheckDelivery(r.Published, imp)
	row.ImpRate = measure.DeliveredRate(imp, r.StartNs, r.EndNs)
	row.Direct = measure.Latency(by[Direct])
	if len(r.Toggles) > 0 {
		rs := measure.Responses(r.Toggles, r.Transitions, Impaired)
		row.Detect, row.Recover, row.HasDetect, row.HasRecover = measure.DetectRecover(rs)
	}
	return row
}

// WriteCSV writes the raw samples of r to dir/<run>.csv:
// run,consumer,seq,send_ns,recv_ns,latency_ms. Publication attempts go to
// dir/<run>.pub.csv: run,seq,start_ns,write_us,failed.
func WriteCSV(dir string, r *Result) error {
	if err := writeFile(filepath.Join(dir, r.Run+".csv"), func(w *bufio.Writer) {
		w.WriteString("run,consumer,seq,send_ns,recv_ns,latency_ms\n")
		for _, s := range r.Samples {
			fmt.Fprintf(w, "%s,%s,%d,%d,%d,%s\n", s.Run, s.Consumer, s.Seq, s.SendNs, s.RecvNs,
				strconv.FormatFloat(s.LatencyMs(), 'f', 4, 64))
		}
	}); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, r.Run+".pub.csv"), func(w *bufio.Writer) {
		w.WriteString("run,seq,start_ns,write_us,failed\n")
		for _, a := range r.Attempts {
			fmt.Fprintf(w, "%s,%d,%d,%.1f,%t\n", r.Run, a.Seq, a.StartNs, float64(a.Dur)/1e3, a.Err)
		}
	})
}

func writeFile(path string, fill func(w *bufio.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fill(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fmtMs formats milliseconds for the table.
func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	default:
		return fmt.Sprintf("%.2f ms", v)
	}
}
