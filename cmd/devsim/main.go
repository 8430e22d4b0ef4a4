// Command devsim runs simulated zenoh-pico devices against a Zenoh router
// (docs/devsim.md):
//
//	devsim -e tcp/127.0.0.1:7447 \
//	    --device name=zephyr1,platform=zephyr,board=nucleo_f429zi,sub=scan \
//	    [--device ...] [--config fleet.yaml] [--stats 1s] [--duration 30s] [--json]
//
// It prints each device's stats every --stats interval and a final summary
// when interrupted (SIGINT/SIGTERM) or after --duration.
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/picobridge/picobridge/firmware/devsim"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("devsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var devices multiFlag
	endpoint := fs.String("e", "", "router endpoint for devices that name none (tcp/host:port, udp/host:port)")
	fs.StringVar(endpoint, "connect", "", "same as -e")
	fs.Var(&devices, "device", "a device: name=N,platform=P[,board=B][,sub=KEY][,pub=KEY:HZ[:SIZE[:express]]][,drain=D][,NROS_X=V] (repeatable)")
	config := fs.String("config", "", "fleet file (YAML, docs/devsim.md)")
	every := fs.Duration("stats", time.Second, "print stats this often (0: only the summary)")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	asJSON := fs.Bool("json", false, "print stats as JSON lines")
	verbose := fs.Bool("v", false, "log sessions to stderr")
	samples := fs.String("samples", "", "write every sample (device, key, seq, stamp, receive and delivery time, latency, outcome) to this CSV file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := &devsim.FleetConfig{}
	if *config != "" {
		c, err := devsim.LoadFleetConfig(*config)
		if err != nil {
			fmt.Fprintln(stderr, "devsim:", err)
			return 2
		}
		cfg = c
	}
	for _, spec := range devices {
		dc, err := devsim.ParseDeviceSpec(spec)
		if err != nil {
			fmt.Fprintln(stderr, "devsim:", err)
			return 2
		}
		cfg.Devices = append(cfg.Devices, dc)
	}
	if *endpoint != "" {
		cfg.Endpoint = *endpoint
	}
	if len(cfg.Devices) == 0 {
		fmt.Fprintln(stderr, "devsim: no device (use --device or --config)")
		return 2
	}
	opts := devsim.Options{}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	if *samples != "" {
		f, err := os.Create(*samples)
		if err != nil {
			fmt.Fprintln(stderr, "devsim:", err)
			return 2
		}
		sw := newSampleWriter(f)
		defer func() {
			if err := sw.close(); err != nil {
				fmt.Fprintln(stderr, "devsim: samples:", err)
			}
		}()
		opts.OnSample = sw.write
	}
	fleet, err := devsim.NewFleet(cfg, opts)
	if err != nil {
		fmt.Fprintln(stderr, "devsim:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	if err := fleet.Start(ctx); err != nil {
		fmt.Fprintln(stderr, "devsim:", err)
		return 1
	}
	var tick <-chan time.Time
	if *every > 0 {
		t := time.NewTicker(*every)
		defer t.Stop()
		tick = t.C
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick:
			print(stdout, fleet.Stats(), *asJSON, false)
		}
	}
	fleet.Stop()
	print(stdout, fleet.Stats(), *asJSON, true)
	return 0
}

// sampleWriter writes SampleEvents as CSV lines; safe for concurrent use.
type sampleWriter struct {
	mu sync.Mutex
	f  *os.File
	w  *csv.Writer
}

func newSampleWriter(f *os.File) *sampleWriter {
	w := csv.NewWriter(f)
	_ = w.Write([]string{"device", "key", "sample_key", "seq", "size", "stamp_ns", "received_ns", "delivered_ns", "latency_ms", "outcome"})
	return &sampleWriter{f: f, w: w}
}

func (s *sampleWriter) write(e devsim.SampleEvent) {
	ns := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return strconv.FormatInt(t.UnixNano(), 10)
	}
	seq, lat := "", ""
	if e.HasSeq {
		seq = strconv.FormatUint(e.Seq, 10)
	}
	if l := e.Latency(); l != 0 {
		lat = strconv.FormatFloat(float64(l)/1e6, 'f', 3, 64)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.w.Write([]string{e.Device, e.Key, e.SampleKey, seq, strconv.Itoa(e.Size), ns(e.Stamp), ns(e.Received), ns(e.Delivered), lat, e.Outcome})
}

func (s *sampleWriter) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.Flush()
	return errors.Join(s.w.Error(), s.f.Close())
}

func print(w io.Writer, st devsim.FleetStats, asJSON, final bool) {
	if asJSON {
		v := struct {
			Final bool `json:"final"`
			devsim.FleetStats
		}{final, st}
		b, _ := json.Marshal(v)
		fmt.Fprintln(w, string(b))
		return
	}
	if final {
		fmt.Fprintln(w, "== summary")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tCONN\tKEY\tDIR\tRECV\tDELIV\tRING_FULL\tOVERSIZE\tSLOT\tOOO\tGAPS\tP50_MS\tP95_MS\tP99_MS\tATTEMPTS\tSENT\tFILTERED\tTX_DROP\tPONGS")
	for _, d := range st.Devices {
		conn := "down"
		if d.Connected {
			conn = "up"
		}
		if d.Reconnects > 0 {
			conn += fmt.Sprintf("(%d)", d.Reconnects)
		}
		rows := 0
		for _, k := range sortedKeys(d.Subscriptions) {
			s := d.Subscriptions[k]
			fmt.Fprintf(tw, "%s\t%s\t%s\tsub\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t\t\t\t\t%d\n", d.Name, conn, k,
				s.Received, s.Delivered, s.RingFullDrops, s.OversizeDrops, s.SlotDrops, s.OutOfOrder, s.Gaps,
				s.Latency.P50, s.Latency.P95, s.Latency.P99, d.ProbeResponses)
			rows++
		}
		for _, k := range sortedKeys(d.Publications) {
			p := d.Publications[k]
			fmt.Fprintf(tw, "%s\t%s\t%s\tpub\t\t\t\t\t\t\t\t\t\t\t%d\t%d\t%d\t%d\t%d\n", d.Name, conn, k, p.Attempts, p.Sent, p.Filtered, p.TxDrops, d.ProbeResponses)
			rows++
		}
		if rows == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t%d\n", d.Name, conn, d.ProbeResponses)
		}
	}
	t := st.Totals
	fmt.Fprintf(tw, "TOTAL\t%d/%d\t\t\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\t\t\t\t%d\t%d\t%d\t%d\n", t.Connected, t.Devices,
		t.Received, t.Delivered, t.RingFullDrops, t.OversizeDrops, t.SlotDrops, t.OutOfOrder, t.Gaps, t.Sent, t.Filtered, t.TxDrops, t.ProbeResponses)
	_ = tw.Flush()
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
