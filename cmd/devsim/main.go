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

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/sim/devsim"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// options are devsim's flags.
type options struct {
	endpoint string
	devices  []string
	config   string
	every    time.Duration
	duration time.Duration
	asJSON   bool
	verbose  bool
	samples  string
}

// run runs devsim with args (without the program name) and returns its exit
// status: 0, 1 when the fleet failed to start, 2 for a usage or
// configuration error (internal/cli).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	cmd := &cobra.Command{
		Use:   "devsim",
		Short: "Run simulated zenoh-pico devices that obey their knobs against a Zenoh router",
		Long: `devsim connects simulated zenoh-pico devices to a Zenoh router (a gateway's listen
endpoint) in client mode. Each device resolves its knobs like the firmware build does
(builtin < platform < board < env) and behaves accordingly: receive batch size,
frag_max_size, subscriber ring depth (a full ring drops); receive is event-driven (the
application is woken on arrival, or spins every spin=D); the socket timeout window caps
what a per-fd-lock device sends; TX batching, flush thread, split lock, express. It prints each device's stats every --stats and a summary at the end
(SIGINT/SIGTERM or --duration). docs/devsim.md has the fleet file format.`,
		Example: `  devsim -e tcp/127.0.0.1:7447 --device name=zephyr1,platform=zephyr,board=nucleo_f429zi,sub=scan
  devsim -e tcp/127.0.0.1:7447 --config fleet.yaml --duration 30s --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFleet(cmd.Context(), o, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.endpoint, "connect", "e", "", "router endpoint for devices that name none (tcp/host:port, udp/host:port)")
	f.StringArrayVar(&o.devices, "device", nil, "a device: name=N,platform=P[,board=B][,sub=KEY][,pub=KEY:HZ[:SIZE[:express]]][,spin=D][,NROS_X=V] (repeatable; spin: the application's spin period, default 0 = woken on arrival)")
	f.StringVarP(&o.config, "config", "c", "", "fleet file (YAML, docs/devsim.md)")
	f.DurationVar(&o.every, "stats", time.Second, "print stats this often (0: only the summary)")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until interrupted)")
	f.BoolVar(&o.asJSON, "json", false, "print stats as JSON lines")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log sessions to stderr")
	f.StringVar(&o.samples, "samples", "", "write every sample (device, key, seq, stamp, receive and delivery time, latency, outcome) to this CSV file")
	cmd.AddCommand(tuningCommand(stdout))
	cmd.SetContext(ctx)
	return cli.Main(cmd, args, stdout, stderr)
}

func runFleet(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.every < 0 {
		return cli.Usagef("--stats %v: must be ≥ 0 (0: only the summary)", o.every)
	}
	if o.duration < 0 {
		return cli.Usagef("--duration %v: must be ≥ 0 (0: until interrupted)", o.duration)
	}
	cfg := &devsim.FleetConfig{}
	if o.config != "" {
		c, err := devsim.LoadFleetConfig(o.config)
		if err != nil {
			return cli.Usage(err)
		}
		cfg = c
	}
	for _, spec := range o.devices {
		dc, err := devsim.ParseDeviceSpec(spec)
		if err != nil {
			return cli.Usagef("--device: %w", err)
		}
		cfg.Devices = append(cfg.Devices, dc)
	}
	if o.endpoint != "" {
		cfg.Endpoint = o.endpoint
	}
	if len(cfg.Devices) == 0 {
		return cli.Usagef("no device (use --device or --config)")
	}
	opts := devsim.Options{}
	if o.verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	if o.samples != "" {
		f, err := os.Create(o.samples)
		if err != nil {
			return cli.Usagef("--samples: %w", err)
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
		// the package names itself; Main names the command already
		return cli.Usage(errors.New(strings.TrimPrefix(err.Error(), "devsim: ")))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	if err := fleet.Start(ctx); err != nil {
		return err
	}
	var tick <-chan time.Time
	if o.every > 0 {
		t := time.NewTicker(o.every)
		defer t.Stop()
		tick = t.C
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick:
			print(stdout, fleet.Stats(), o.asJSON, false)
		}
	}
	fleet.Stop()
	print(stdout, fleet.Stats(), o.asJSON, true)
	return nil
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
	fmt.Fprintln(tw, "DEVICE\tCONN\tKEY\tDIR\tRECV\tDELIV\tRING_FULL\tOVERSIZE\tSLOT\tOOO\tGAPS\tP50_MS\tP95_MS\tP99_MS\tDEV_RX_P95_MS\tATTEMPTS\tSENT\tFILTERED\tTX_DROP\tPONGS")
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
			fmt.Fprintf(tw, "%s\t%s\t%s\tsub\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.3f\t\t\t\t\t%d\n", d.Name, conn, k,
				s.Received, s.Delivered, s.RingFullDrops, s.OversizeDrops, s.SlotDrops, s.OutOfOrder, s.Gaps,
				s.Latency.P50, s.Latency.P95, s.Latency.P99, s.DeviceReceive.P95, d.ProbeResponses)
			rows++
		}
		for _, k := range sortedKeys(d.Publications) {
			p := d.Publications[k]
			fmt.Fprintf(tw, "%s\t%s\t%s\tpub\t\t\t\t\t\t\t\t\t\t\t\t%d\t%d\t%d\t%d\t%d\n", d.Name, conn, k, p.Attempts, p.Sent, p.Filtered, p.TxDrops, d.ProbeResponses)
			rows++
		}
		if rows == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t%d\n", d.Name, conn, d.ProbeResponses)
		}
	}
	t := st.Totals
	fmt.Fprintf(tw, "TOTAL\t%d/%d\t\t\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\t\t\t\t\t%d\t%d\t%d\t%d\n", t.Connected, t.Devices,
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

// tuningCommand is `devsim tuning`: nano-ros tx-tuning.md's table replayed
// on the simulator's TX model, in wall time (TestTuningTable runs the same
// cases in synthetic time).
func tuningCommand(stdout io.Writer) *cobra.Command {
	var dur time.Duration
	c := &cobra.Command{
		Use:   "tuning",
		Short: "Replay nano-ros tx-tuning.md's table on the TX model and print it beside the page's figures",
		Long: `tuning runs each configuration of nano-ros tx-tuning.md (Zephyr native_sim, 100 ms socket
window, 64 B messages; timer-paced 100 Hz + 10 Hz tiers and a tight-loop publisher) on the
simulator's TX model for --duration each and prints msg/s and the ratios beside the page's.
docs/devsim.md explains each row.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dur <= 0 {
				return cli.Usagef("--duration %v: must be > 0", dur)
			}
			var rs []devsim.TuningResult
			for _, tc := range devsim.TuningCases {
				r, err := devsim.RunTuning(cmd.Context(), tc, dur)
				if err != nil {
					return err
				}
				rs = append(rs, r)
			}
			devsim.WriteTuningTable(stdout, rs)
			return nil
		},
	}
	c.Flags().DurationVar(&dur, "duration", 5*time.Second, "run each configuration this long (the page's harness: 20 s)")
	return c
}
