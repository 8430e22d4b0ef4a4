package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/ddspath/replay"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/ddspath/rosbag"
	"github.com/picobridge/picobridge/internal/cli"
)

func init() { subcommands = append(subcommands, newBagCommand) }

// bagReplayOptions are the parsed flags of `picobridge bag replay`.
type bagReplayOptions struct {
	Bag        string
	Topics     []string
	Speed      float64
	FixedRates map[string]float64 // topic -> Hz
	Loop       bool
	DryRun     bool
	Realtime   bool // dry run paced by the wall clock
	Duration   time.Duration
	KeepStamps bool
	Domain     uint32
	Progress   time.Duration // a progress line on stderr this often; 0 = none
	// Node is the ROS node the replay's writers belong to on
	// ros_discovery_info: "/name" or "/ns/name"; empty announces no node.
	Node string
	// ROSDistro picks the Gid size of ros_discovery_info (ros2.GidSizeForDistro);
	// empty means ros2.DefaultROSDistro.
	ROSDistro string
}

// DefaultReplayNode is the ROS node `bag replay` announces by default.
const DefaultReplayNode = "/picobridge_bag_replay"

// splitNodeName splits a node given as "name", "/name" or "/ns/name" into
// namespace and name and checks both by ROS rules.
func splitNodeName(full string) (ns, name string, err error) {
	ns, name = "/", full
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		ns, name = full[:i], full[i+1:]
		if ns == "" {
			ns = "/"
		}
	}
	if err := ros2.ValidateNamespace(ns); err != nil {
		return "", "", err
	}
	if err := ros2.ValidateNodeName(name); err != nil {
		return "", "", err
	}
	return ns, name, nil
}

// newReplaySink builds the DDS output of `bag replay` (one raw-CDR writer per declared
// topic on domain opts.Domain). It is nil until ddspath is plugged in; then only --dry-run
// works. The returned closer is called after the replay ends.
var newReplaySink func(ctx context.Context, opts bagReplayOptions) (replay.Sink, io.Closer, error)

func newBagCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bag",
		Short: "Inspect and replay ROS 2 bags (rosbag2, sqlite3 storage)",
	}
	cmd.AddCommand(newBagInfoCommand(), newBagReplayCommand())
	return cmd
}

func newBagInfoCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "info BAG",
		Short: "Show a bag's files, duration, topics, types, counts, sizes and QoS",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := openBag(args[0])
			if err != nil {
				return err
			}
			defer b.Close()
			return printBagInfo(cmd.OutOrStdout(), b)
		},
	}
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func fmtStamp(t time.Time) string {
	return fmt.Sprintf("%s (%d.%09d)", t.UTC().Format("Jan 02 2006 15:04:05.000000000 UTC"), t.Unix(), t.Nanosecond())
}

func printBagInfo(w io.Writer, b *rosbag.Bag) error {
	s := b.Summary()
	files := make([]string, len(s.Files))
	for i, f := range s.Files {
		files[i] = filepath.Base(f)
	}
	distro := b.ROSDistro
	if distro == "" {
		distro = "unknown"
	}
	fmt.Fprintf(w, "Files:             %s\n", strings.Join(files, ", "))
	fmt.Fprintf(w, "Bag size:          %s (%d bytes)\n", humanBytes(s.FileBytes), s.FileBytes)
	fmt.Fprintf(w, "Storage id:        sqlite3 (schema %d, ROS distro %s)\n", b.SchemaVersion, distro)
	fmt.Fprintf(w, "Duration:          %.9fs\n", s.Duration.Seconds())
	if s.MessageCount > 0 {
		fmt.Fprintf(w, "Start:             %s\n", fmtStamp(s.Start))
		fmt.Fprintf(w, "End:               %s\n", fmtStamp(s.End))
	}
	fmt.Fprintf(w, "Messages:          %d (%s serialized)\n", s.MessageCount, humanBytes(s.MessageBytes))
	fmt.Fprintf(w, "Topic information:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TOPIC\tTYPE\tFORMAT\tCOUNT\tRATE\tBYTES\tMSG SIZE\tQOS")
	for _, t := range b.Topics() {
		rate := "-"
		if span := t.End.Sub(t.Start); t.MessageCount > 1 && span > 0 {
			rate = fmt.Sprintf("%.2f Hz", float64(t.MessageCount-1)/span.Seconds())
		}
		size := "-"
		if t.MessageCount > 0 {
			size = fmt.Sprintf("%d B", t.MinSize)
			if t.MaxSize != t.MinSize {
				size = fmt.Sprintf("%d..%d B", t.MinSize, t.MaxSize)
			}
		}
		qos := make([]string, len(t.OfferedQoS))
		for i, q := range t.OfferedQoS {
			qos[i] = q.String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n", t.Name, t.Type, t.SerializationFormat,
			t.MessageCount, rate, t.TotalBytes, size, strings.Join(qos, "; "))
	}
	return tw.Flush()
}

func newBagReplayCommand() *cobra.Command {
	var opts bagReplayOptions
	var fixed []string
	domain := uint32(0)
	if v, err := strconv.ParseUint(os.Getenv("ROS_DOMAIN_ID"), 10, 32); err == nil {
		domain = uint32(v)
	}
	cmd := &cobra.Command{
		Use:   "replay BAG",
		Short: "Publish a bag's topics with their recorded timing (or a fixed rate), restamped at send time",
		Long: `Replay publishes the bag's messages in receive-time order, pacing them like the
recording (scaled by --rate), and rewrites the header stamp of each stamped message to its
send time so that receivers can measure latency (--keep-stamps turns that off).

--fixed-rate TOPIC=HZ replays that topic at exactly HZ messages per second instead, cycling
through its recorded messages forever (repeatable). Replay ends when the recorded topics end
(forever with --loop); with fixed-rate topics only, it runs until --duration or Ctrl-C.

--dry-run prints what would be published and when, on a virtual clock (instantly), unless
--realtime is given.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Bag = args[0]
			opts.Domain = domain
			var err error
			if opts.FixedRates, err = parseFixedRates(fixed); err != nil {
				return cli.Usage(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runBagReplay(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.Topics, "topics", nil, "topics to replay (comma-separated or repeated; default all)")
	f.Float64Var(&opts.Speed, "rate", 1, "speed factor applied to the recorded timing (2 = twice as fast)")
	f.StringArrayVar(&fixed, "fixed-rate", nil, "replay TOPIC at a fixed rate, looping: TOPIC=HZ, e.g. /scan=30 (repeatable)")
	f.BoolVar(&opts.Loop, "loop", false, "restart the recorded topics from the beginning when they end")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print what would be published, with timing, instead of publishing")
	f.BoolVar(&opts.Realtime, "realtime", false, "with --dry-run: pace the output on the wall clock")
	f.DurationVar(&opts.Duration, "duration", 0, "stop after this much replay time (0 = no limit)")
	f.BoolVar(&opts.KeepStamps, "keep-stamps", false, "publish the recorded header stamps unchanged")
	f.Uint32Var(&domain, "domain", domain, "DDS domain id (default $ROS_DOMAIN_ID or 0)")
	f.StringVar(&opts.Node, "node", DefaultReplayNode, "ROS node (/name or /ns/name) owning the replay's writers on ros_discovery_info, so ROS tools and zenoh-bridge-ros2dds see them; \"\" announces none")
	f.StringVar(&opts.ROSDistro, "ros-distro", ros2.DefaultROSDistro, "ROS 2 distro of the DDS peers: foxy, galactic, humble (24-byte GIDs in ros_discovery_info), iron, jazzy, kilted, rolling (16)")
	f.DurationVar(&opts.Progress, "progress", 5*time.Second, "print a progress line on stderr this often (0 = only the final counts; never with --dry-run)")
	return cmd
}

// parseFixedRates parses "TOPIC=HZ" entries.
func parseFixedRates(specs []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, s := range specs {
		topic, hz, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("--fixed-rate %q: want TOPIC=HZ, e.g. /scan=30", s)
		}
		if err := ros2.ValidateTopicName(topic); err != nil {
			return nil, fmt.Errorf("--fixed-rate %q: %w", s, err)
		}
		v, err := strconv.ParseFloat(hz, 64)
		if err != nil || !(v > 0) || v > 1e6 {
			return nil, fmt.Errorf("--fixed-rate %q: rate %q must be a number of Hz in (0, 1e6]", s, hz)
		}
		if _, dup := out[topic]; dup {
			return nil, fmt.Errorf("--fixed-rate: topic %s given twice", topic)
		}
		out[topic] = v
	}
	return out, nil
}

func runBagReplay(ctx context.Context, stdout, stderr io.Writer, opts bagReplayOptions) error {
	if !(opts.Speed > 0) || math.IsInf(opts.Speed, 0) {
		return cli.Usagef("--rate %v must be a positive number", opts.Speed)
	}
	if opts.Duration < 0 {
		return cli.Usagef("--duration %v must not be negative (0 = no limit)", opts.Duration)
	}
	if opts.Progress < 0 {
		return cli.Usagef("--progress %v must not be negative (0 = none)", opts.Progress)
	}
	if opts.Realtime && !opts.DryRun {
		return cli.Usagef("--realtime only applies to --dry-run")
	}
	if opts.Node != "" {
		if _, _, err := splitNodeName(opts.Node); err != nil {
			return cli.Usagef("--node %q: %w", opts.Node, err)
		}
	}
	if opts.ROSDistro == "" {
		opts.ROSDistro = ros2.DefaultROSDistro
	}
	if _, err := ros2.GidSizeForDistro(opts.ROSDistro); err != nil {
		return cli.Usagef("--ros-distro: %w", err)
	}
	if !opts.DryRun && newReplaySink == nil {
		return errors.New("bag replay: DDS output is not available in this build yet; use --dry-run")
	}
	b, err := openBag(opts.Bag)
	if err != nil {
		return err
	}
	defer b.Close()

	selected := opts.Topics
	if len(selected) == 0 {
		for _, t := range b.Topics() {
			selected = append(selected, t.Name)
		}
	}
	var names []string
	for _, t := range b.Topics() {
		names = append(names, t.Name)
	}
	inSel := map[string]bool{}
	for _, n := range selected {
		if _, ok := b.Topic(n); !ok {
			return cli.Usagef("--topics: %w: %q (the bag has %s)", rosbag.ErrUnknownTopic, n, strings.Join(names, ", "))
		}
		inSel[n] = true
	}
	var sources []replay.Source
	var recorded []string
	for _, n := range selected {
		if _, ok := opts.FixedRates[n]; !ok {
			recorded = append(recorded, n)
		}
	}
	if len(recorded) > 0 {
		src, err := replay.NewBagSource(b, replay.BagOptions{Topics: recorded, Speed: opts.Speed, Loop: opts.Loop})
		if err != nil {
			return err
		}
		sources = append(sources, src)
	}
	fixedTopics := make([]string, 0, len(opts.FixedRates))
	for n := range opts.FixedRates {
		fixedTopics = append(fixedTopics, n)
	}
	sort.Strings(fixedTopics)
	for _, n := range fixedTopics {
		if _, ok := b.Topic(n); !ok {
			return cli.Usagef("--fixed-rate: %w: %q (the bag has %s)", rosbag.ErrUnknownTopic, n, strings.Join(names, ", "))
		}
		if len(opts.Topics) > 0 && !inSel[n] {
			return cli.Usagef("--fixed-rate topic %s is not among --topics", n)
		}
		src, err := replay.NewFixedRateSource(b, n, opts.FixedRates[n])
		if err != nil {
			return err
		}
		sources = append(sources, src)
	}
	endless := true
	for _, s := range sources {
		endless = endless && s.Endless()
	}

	eopt := replay.Options{RewriteStamps: !opts.KeepStamps, Duration: opts.Duration}
	var sink replay.Sink
	var pipe *epipeWriter
	if opts.DryRun {
		// `bag replay --dry-run | head`: get EPIPE instead of dying on SIGPIPE,
		// then stop the replay and exit quietly.
		sigpipe := make(chan os.Signal, 1)
		signal.Notify(sigpipe, syscall.SIGPIPE)
		defer signal.Stop(sigpipe)
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		pipe = &epipeWriter{w: stdout, cancel: cancel}
		stdout = pipe
		clock := replay.Clock(replay.WallClock{})
		start := time.Now()
		if !opts.Realtime {
			clock = replay.NewVirtualClock(start)
			if endless && opts.Duration == 0 {
				eopt.Duration = 10 * time.Second
				fmt.Fprintln(stderr, "dry run of an endless replay: stopping after --duration 10s")
			}
		}
		eopt.Clock = clock
		sink = replay.NewPrintSink(stdout, start)
	} else {
		s, closer, err := newReplaySink(ctx, opts)
		if err != nil {
			return err
		}
		defer closer.Close()
		sink = s
	}

	e := replay.New(sink, eopt, sources...)
	stopProgress := func() {}
	if !opts.DryRun && opts.Progress > 0 {
		fmt.Fprintf(stderr, "replaying %s from %s onto DDS domain %d: %s (Ctrl-C stops)\n",
			strings.Join(selected, ", "), opts.Bag, opts.Domain, replayLength(b.Summary().Duration, opts, endless))
		stopProgress = startProgress(stderr, e, opts.Progress)
	}
	err = e.Run(ctx)
	stopProgress()
	if pipe != nil && pipe.broken.Load() {
		return nil // the reader went away (e.g. head): nothing more to say
	}
	printReplayStats(stderr, e.Stats())
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// epipeWriter cancels the replay on the first EPIPE (the reader of stdout is gone).
type epipeWriter struct {
	w      io.Writer
	cancel context.CancelFunc
	broken atomic.Bool
}

func (p *epipeWriter) Write(b []byte) (int, error) {
	if p.broken.Load() {
		return 0, syscall.EPIPE
	}
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.broken.Store(true)
		p.cancel()
	}
	return n, err
}

// replayLength says how long a replay will run.
func replayLength(recorded time.Duration, opts bagReplayOptions, endless bool) string {
	switch {
	case endless && opts.Duration == 0:
		return "no end (--duration to stop after a time)"
	case opts.Duration > 0 && (endless || time.Duration(float64(recorded)/opts.Speed) > opts.Duration):
		return fmt.Sprintf("%s (--duration)", opts.Duration)
	default:
		return fmt.Sprintf("%s as recorded (--duration to stop earlier)", time.Duration(float64(recorded)/opts.Speed).Round(100*time.Millisecond))
	}
}

// startProgress prints the engine's counters on w every period until the
// returned function is called.
func startProgress(w io.Writer, e *replay.Engine, period time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				st := e.Stats()
				fmt.Fprintf(w, "replay: %.0fs, %d messages sent (%s), %d write errors\n",
					st.Elapsed.Seconds(), st.Sent, humanBytes(int64(st.Bytes)), st.Errors)
			}
		}
	}()
	return func() { close(done); <-finished }
}

func printReplayStats(w io.Writer, st replay.Stats) {
	fmt.Fprintf(w, "replayed %d messages (%s) in %.3fs, %d write errors, max lag %s\n",
		st.Sent, humanBytes(int64(st.Bytes)), st.Elapsed.Seconds(), st.Errors, st.MaxLag)
	names := make([]string, 0, len(st.Topics))
	for n := range st.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := st.Topics[n]
		fmt.Fprintf(w, "  %s: sent %d, errors %d, stamp errors %d, %d bytes\n", n, t.Sent, t.Errors, t.StampErrors, t.Bytes)
	}
}

// openBag opens a bag; a path that does not exist is a usage error (status
// 2) that says what a bag path may be.
func openBag(path string) (*rosbag.Bag, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, cli.Usagef("%s: no such file or directory (want a rosbag2 bag directory, its metadata.yaml or a .db3 file)", path)
	}
	return rosbag.Open(path)
}
