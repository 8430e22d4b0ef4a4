// Command linkemu impairs one simulated device's link: a userspace UDP or
// TCP proxy on loopback that applies a Gilbert–Elliott loss model, delay
// with jitter and a bandwidth limit (package sim/linkemu), prints its
// counters periodically and the loss it produced at exit.
//
//	linkemu --listen tcp/127.0.0.1:17447 --upstream tcp/127.0.0.1:7447 --profile moderate [--seed 1] [--toggle 60s] [--stats 1s]
//
// The device connects to --listen instead of the gateway's address. Only
// 127.0.0.0/8 addresses are accepted. SIGINT or SIGTERM (or --duration)
// ends the run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/sim/linkemu"
)

type options struct {
	listen, upstream string
	profile          string
	profilesFile     string
	seed             uint64
	toggle           time.Duration
	toggleStart      string
	stats            time.Duration
	json             bool
	duration         time.Duration
	framing          string
	chunkSize        int
	queueBytes       int
	rtoMin           time.Duration
	rtoInitial       time.Duration
	rtoMax           time.Duration
	repair           string
	udpReorder       bool
}

func newCommand() *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "linkemu --listen tcp/127.0.0.1:17447 --upstream tcp/127.0.0.1:7447 --profile moderate",
		Short: "Impair one device's link: a loopback UDP/TCP proxy with Gilbert–Elliott loss, delay and bandwidth",
		Long: `linkemu relays one device's Zenoh link (tcp/... or udp/...) on loopback and impairs it
with a profile of the evaluation (` + strings.Join(linkemu.ProfileNames(), ", ") + `).
UDP datagrams are dropped; on TCP a lost batch is held, with everything behind it,
until Linux's TCP would resend it (--tcp-repair). It prints its counters every --stats and, at exit, the loss
it produced next to the loss the profile should produce.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "", "where the device connects: tcp/<127.x.x.x>:<port> or udp/... (required)")
	f.StringVar(&o.upstream, "upstream", "", "the gateway's endpoint, same protocol, loopback (required)")
	f.StringVar(&o.profile, "profile", "clean", "impairment profile: "+strings.Join(linkemu.ProfileNames(), ", ")+" (or one of --profiles)")
	f.StringVar(&o.profilesFile, "profiles", "", "YAML file of extra profiles, in the format of sim/linkemu/profiles.yaml")
	f.Uint64Var(&o.seed, "seed", 1, "seed of every random source (same seed and traffic: same losses)")
	f.DurationVar(&o.toggle, "toggle", 0, "switch --profile on and off every this long (evaluation: 60s); 0 = always on")
	f.StringVar(&o.toggleStart, "toggle-start", "off", "with --toggle: phase to start in, on or off")
	f.DurationVar(&o.stats, "stats", time.Second, "print counters this often; 0 = only at exit")
	f.BoolVar(&o.json, "json", false, "print JSON lines instead of text")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long; 0 = until SIGINT/SIGTERM")
	f.StringVar(&o.framing, "framing", "zenoh", "TCP: zenoh (one packet per u16-length-prefixed batch) or chunk")
	f.IntVar(&o.chunkSize, "chunk-size", linkemu.DefaultChunkSize, "TCP with --framing chunk: largest packet, bytes")
	f.IntVar(&o.queueBytes, "queue-bytes", linkemu.DefaultQueueBytes, "bytes queued per direction (UDP: then dropped; TCP: per connection, then back-pressure)")
	f.DurationVar(&o.rtoMin, "rto-min", linkemu.DefaultRTOMin, "TCP: lower bound of the RTO variance term (Linux TCP_RTO_MIN)")
	f.DurationVar(&o.rtoInitial, "rto", 0, "TCP: fixed first RTO instead of the estimate from the profile")
	f.DurationVar(&o.rtoMax, "rto-max", linkemu.DefaultRTOMax, "TCP: cap of the backed-off RTO (Linux TCP_RTO_MAX)")
	f.StringVar(&o.repair, "tcp-repair", "linux", "TCP: how a loss is noticed: linux (RACK about one round trip after it left, tail loss probe, RTO last) or rto (a timeout each time)")
	f.BoolVar(&o.udpReorder, "udp-reorder", false, "UDP: let jitter reorder datagrams (netem behaviour)")
	cmd.MarkFlagRequired("listen")
	cmd.MarkFlagRequired("upstream")
	return cmd
}

// main exits 0, 1 when the proxy failed, 2 for a usage or configuration
// error (internal/cli).
func main() {
	os.Exit(cli.Main(newCommand(), os.Args[1:], os.Stdout, os.Stderr))
}

// checkOptions checks every flag before anything starts and returns the
// proxy's configuration and toggle.
func checkOptions(o options) (linkemu.Config, linkemu.Toggle, error) {
	for _, ep := range []struct{ flag, v string }{{"--listen", o.listen}, {"--upstream", o.upstream}} {
		_, hostport, err := linkemu.ParseEndpoint(ep.v)
		if err == nil {
			err = checkPort(ep.v, hostport)
		}
		if err != nil {
			return linkemu.Config{}, linkemu.Toggle{}, fmt.Errorf("%s: %w", ep.flag, err)
		}
	}
	profile, err := lookupProfile(o)
	if err != nil {
		return linkemu.Config{}, linkemu.Toggle{}, fmt.Errorf("--profile: %w", err)
	}
	framing, err := linkemu.ParseFraming(o.framing)
	if err != nil {
		return linkemu.Config{}, linkemu.Toggle{}, fmt.Errorf("--framing: %w", err)
	}
	repair, err := linkemu.ParseRepair(o.repair)
	if err != nil {
		return linkemu.Config{}, linkemu.Toggle{}, fmt.Errorf("--tcp-repair: %w", err)
	}
	if o.toggleStart != "on" && o.toggleStart != "off" {
		return linkemu.Config{}, linkemu.Toggle{}, fmt.Errorf("--toggle-start: must be on or off (got %q)", o.toggleStart)
	}
	cfg := linkemu.Config{
		Profile: profile, Seed: o.seed, QueueBytes: o.queueBytes, Framing: framing, ChunkSize: o.chunkSize,
		UDPReorder: o.udpReorder,
		RTO:        linkemu.RTOConfig{Min: o.rtoMin, Max: o.rtoMax, Initial: o.rtoInitial, Repair: repair},
	}
	toggle := linkemu.Toggle{On: profile, Period: o.toggle, StartOn: o.toggleStart == "on"}
	if o.toggle > 0 {
		if err := toggle.Validate(); err != nil {
			return linkemu.Config{}, linkemu.Toggle{}, err
		}
		cfg.Profile, _ = toggle.Phase(0)
	}
	return cfg, toggle, nil
}

// checkPort refuses a port outside 0..65535 before anything listens.
func checkPort(ep, hostport string) error {
	_, port, err := net.SplitHostPort(hostport)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("endpoint %q: port %q: want 0 to 65535", ep, port)
	}
	return nil
}

func lookupProfile(o options) (linkemu.Profile, error) {
	if o.profilesFile != "" {
		b, err := os.ReadFile(o.profilesFile)
		if err != nil {
			return linkemu.Profile{}, err
		}
		ps, err := linkemu.ParseProfiles(b)
		if err != nil {
			return linkemu.Profile{}, fmt.Errorf("%s: %w", o.profilesFile, err)
		}
		for _, p := range ps {
			if p.Name == o.profile {
				return p, nil
			}
		}
	}
	return linkemu.LookupProfile(o.profile)
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	cfg, toggle, err := checkOptions(o)
	if err != nil {
		return cli.Usage(err)
	}
	p, err := linkemu.NewProxy(o.listen, o.upstream, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	proto, _, _ := strings.Cut(o.listen, "/")
	fmt.Fprintf(stderr, "linkemu: %s/%s -> %s profile=%s seed=%d toggle=%v\n", proto, p.Addr(), o.upstream, toggle.On.Name, o.seed, o.toggle)

	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	toggleDone := make(chan error, 1)
	if o.toggle > 0 {
		go func() { toggleDone <- toggle.Run(ctx, p) }()
	} else {
		close(toggleDone)
	}
	var tick <-chan time.Time
	if o.stats > 0 {
		t := time.NewTicker(o.stats)
		defer t.Stop()
		tick = t.C
	}
	for done := false; !done; {
		select {
		case <-tick:
			if err := emit(stdout, "stats", linkemu.NewReport(p.Stats(), false), o.json); err != nil {
				return err
			}
		case <-ctx.Done():
			done = true
		}
	}
	if err := <-toggleDone; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	p.Close()
	return emit(stdout, "final", linkemu.NewReport(p.Stats(), true), o.json)
}

// emit writes a report as one JSON line or as text; the final text
// report adds the phases and the produced-loss summary.
func emit(w io.Writer, kind string, r linkemu.Report, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(struct {
			Kind string `json:"kind"`
			linkemu.Report
		}{kind, r})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	if kind != "final" {
		_, err := fmt.Fprintln(w, r)
		return err
	}
	fmt.Fprintln(w, "final:", r)
	for _, l := range r.PhaseLines() {
		fmt.Fprintln(w, l)
	}
	_, err := fmt.Fprintf(w, "produced loss: %s %.2f%% (expected %.2f%%), %s %.2f%% (expected %.2f%%)\n",
		r.Loss[0].Direction, 100*r.Loss[0].Produced, 100*r.Loss[0].Expected,
		r.Loss[1].Direction, 100*r.Loss[1].Produced, 100*r.Loss[1].Expected)
	return err
}
