package runner

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/eval/fastddspub"
	"github.com/picobridge/picobridge/eval/measure"
	"github.com/picobridge/picobridge/sim/linkemu"
)

// Settings of the DDS experiments.
const (
	// ImpairedReaderMaxSamples is the impaired reader's KEEP_ALL resource_limits.max_samples:
	// a small receive buffer, so that the slow consumer pushes back within a shortened run.
	ImpairedReaderMaxSamples = 32
	// FastDDSMaxSamples and FastDDSMaxBlocking are the paper's Fast DDS writer (KEEP_ALL,
	// max_samples 200, max_blocking_time ≈ 0: a write on a full history fails).
	FastDDSMaxSamples  = 200
	FastDDSMaxBlocking = 0
)

// scanType is the DDS name of sensor_msgs/msg/LaserScan.
const scanType = "sensor_msgs::msg::dds_::LaserScan_"

// ddsVariant selects the system of a DDS run.
type ddsVariant int

const (
	variantCyclone ddsVariant = iota // exp1: Cyclone KEEP_ALL writer, max_blocking_time ∞
	variantFastDDS                   // exp1: Fast DDS KEEP_ALL max_samples 200, mbt 0
	variantSplit                     // exp5: Cyclone writer → ddspath.Split → two outputs
)

func slowDescription(level string) string {
	if level == "clean" {
		return "none (clean)"
	}
	return fmt.Sprintf("slow-consumer model in the impaired reader process: per sample serialization at 5000 kbit/s + %s delay draw, GE loss ⇒ repair stall (reliable) or drop (best effort); reader KEEP_ALL max_samples %d, one-sample blocking queue", level, ImpairedReaderMaxSamples)
}

// runDDS runs one DDS experiment at level.
func runDDS(ctx context.Context, cfg Config, v ddsVariant, level string, res *Result) error {
	rec := NewRecorder(res.Run)
	dom := domainID()
	seed := cfg.Seed
	prof, err := linkemu.LookupProfile(level)
	if err != nil {
		return err
	}
	res.ExpectedLoss = prof.ToDevice.ExpectedLoss()
	res.Impairment = slowDescription(level)

	critTopic, impTopic := "rt/scan", "rt/scan"
	if v == variantSplit {
		critTopic, impTopic = "rt/scan_critical", "rt/scan_noncritical"
	}
	var children []*child
	defer func() {
		for _, c := range children {
			c.stop()
		}
	}()
	var gw *child
	if v == variantSplit {
		gw, err = startChild("split", childSpec{Role: "split", Domain: dom, Type: scanType,
			Input: "rt/scan", Critical: critTopic, Noncritical: impTopic}, nil, "")
		if err != nil {
			return err
		}
		children = append(children, gw)
		if _, err := gw.waitLine("ready", 30*time.Second); err != nil {
			return err
		}
	}
	crit, err := startChild("critical reader", childSpec{Role: "reader", Domain: dom, Topic: critTopic, Type: scanType,
		Consumer: Critical, Reliable: true, KeepAll: true}, rec, Critical)
	if err != nil {
		return err
	}
	children = append(children, crit)
	impReliable := v != variantSplit // the split's noncritical output is BEST_EFFORT
	imp, err := startChild("impaired reader", childSpec{Role: "reader", Domain: dom, Topic: impTopic, Type: scanType,
		Consumer: Impaired, Reliable: impReliable, KeepAll: impReliable, MaxSamples: ImpairedReaderMaxSamples,
		Profile: level, Seed: seed}, rec, Impaired)
	if err != nil {
		return err
	}
	children = append(children, imp)
	for _, c := range []*child{crit, imp} {
		if _, err := c.waitLine("ready", 30*time.Second); err != nil {
			return err
		}
	}

	var write writeFunc
	var matched func() int
	wantMatched := 2
	if v == variantSplit {
		wantMatched = 1
	}
	switch v {
	case variantCyclone, variantSplit:
		p, err := ddspath.Open(ddspath.Config{DomainID: dom})
		if err != nil {
			return err
		}
		defer p.Close()
		q := ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepAll, MaxBlocking: -1}
		w, wf, err := cycloneWriter(p, "rt/scan", scanType, q)
		if err != nil {
			return err
		}
		write, matched = wf, w.Matched
		res.Notes = append(res.Notes, "publisher: Cyclone RELIABLE KEEP_ALL, max_blocking_time ∞ (rmw_cyclonedds)")
	case variantFastDDS:
		dir := filepath.Join(os.TempDir(), "picoeval-bin")
		os.MkdirAll(dir, 0o755)
		bin, err := fastddspub.Build(dir)
		if err != nil {
			return err
		}
		fp, err := fastddspub.Start(bin, fastddspub.Options{Domain: int(dom), Topic: "rt/scan", Type: scanType,
			MaxSamples: FastDDSMaxSamples, MaxBlocking: FastDDSMaxBlocking})
		if err != nil {
			return err
		}
		defer fp.Close()
		write = func(cdr []byte, _ time.Time) (time.Duration, error) { return fp.Write(cdr) }
		matched = fp.Matched
		res.Notes = append(res.Notes, "publisher: Fast DDS 2.9 RELIABLE KEEP_ALL max_samples 200, max_blocking_time 0 (fastddspub)")
	}
	if err := waitFor("publisher matched", 30*time.Second, func() bool { return matched() >= wantMatched }); err != nil {
		return err
	}
	for _, c := range []*child{crit, imp} {
		if _, err := c.waitLine("matched", 30*time.Second); err != nil {
			return err
		}
	}
	time.Sleep(500 * time.Millisecond) // reader-side matching of the writer (docs/dds.md)

	d := cfg.runDuration(level)
	var before measure.Usage
	if gw != nil {
		before, _ = measure.ProcUsage(gw.pid())
	}
	type done struct {
		s, e int64
		err  error
	}
	ch := make(chan done, 1)
	go func() {
		s, e, err := replayScan(ctx, cfg, rec, d, write)
		ch <- done{s, e, err}
	}()
	var r done
	select {
	case r = <-ch:
	case <-time.After(d + 30*time.Second):
		// A blocked Cyclone write never returns while the slow reader holds its cache full:
		// end the slow reader (it unmatches on close), which releases the writer.
		res.Notes = append(res.Notes, "publisher still blocked 30 s after the run: impaired reader stopped to release it")
		imp.stop()
		r = <-ch
	}
	if r.err != nil {
		return r.err
	}
	res.StartNs, res.EndNs = r.s, r.e
	time.Sleep(time.Second) // let the last samples arrive
	if gw != nil {
		if after, err := measure.ProcUsage(gw.pid()); err == nil {
			u := after.Sub(before)
			res.Gateway = &u
		}
	}
	for _, c := range children {
		t0 := time.Now()
		c.stop()
		if el := time.Since(t0); el > 2*time.Second {
			res.Notes = append(res.Notes, fmt.Sprintf("%s took %v to stop", c.name, el.Round(100*time.Millisecond)))
		}
	}
	children = nil
	res.ProducedLoss = math.NaN()
	if l := imp.line("loss "); l != "" {
		f := strings.Fields(l)
		steps, _ := strconv.ParseFloat(f[1], 64)
		lost, _ := strconv.ParseFloat(f[2], 64)
		if steps > 0 {
			res.ProducedLoss = lost / steps
		}
	} else if level == "clean" {
		res.ProducedLoss = 0
	}
	rec.fill(res)
	return nil
}
