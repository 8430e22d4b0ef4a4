package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

func init() { subcommands = append(subcommands, newRunCommand) }

// runOptions are the flags of `picobridge run` (zenohd / zenoh-bridge-ros2dds style).
type runOptions struct {
	config        string
	listen        []string
	connect       []string
	mode          string
	connectAs     string
	id            string
	domain        int
	namespace     string
	nodename      string
	rosDistro     string
	metrics       string
	pprof         string       // --pprof ADDR (pprof.go)
	gc            gcOptions    // --gogc, --memory-limit (gc.go)
	admit         admitOptions // --admit-rate, --admit-burst (admit.go)
	keyStyle      string
	allow, deny   []string
	critical      []string
	cfg           []string
	ddsInterface  string
	ddsMulticast  bool
	ddsPeers      []string
	noDDS         bool
	allClients    bool
	logLevel      string
	printConfig   bool
	maxMsgSize    int
	changed       func(string) bool
	domainFromEnv string
	// realtimeFromEnv is $PICOBRIDGE_EXPRESS_REALTIME: over the file, under --cfg.
	realtimeFromEnv string
}

// envRealtime overrides policy.express.realtime (off, nice, fifo).
const envRealtime = "PICOBRIDGE_EXPRESS_REALTIME"

func newRunCommand() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the gateway: Zenoh router for devices + DDS bridge + per-device lanes",
		Long: `Runs picobridge: a Zenoh router that zenoh-pico devices and Zenoh clients connect to,
bridged to ROS 2 over DDS. Discovered DDS topics are bridged to Zenoh keys (plain style:
/scan -> "scan", as zenoh-bridge-ros2dds) and what Zenoh publishes on the key of a topic
that has DDS readers is written to DDS. Devices (identified by zid in devices.list, or by
the name their probe responder announces) get per-device express/batched lanes and a
probe classifier. Without -c the embedded default configuration is used
(picobridge run --print-config prints it); flags are laid over the file.

HTTP (metrics.listen, default 127.0.0.1:9464): /metrics, /healthz, /devicez, /routez,
/knobz and /advicez (?device=NAME; docs/run.md).
SIGINT or SIGTERM stops it.`,
		Example: `  picobridge run
  picobridge run -c picobridge.yaml
  picobridge run -l tcp/0.0.0.0:7447 -e tcp/10.0.0.1:7447 --domain 3 -n /robot1
  picobridge run --critical '/scan|/cmd_vel' --cfg policy.batched.rate_hz:20`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.changed = cmd.Flags().Changed
			o.domainFromEnv = os.Getenv("ROS_DOMAIN_ID")
			o.realtimeFromEnv = os.Getenv(envRealtime)
			cfg, err := buildRunConfig(o)
			if err != nil {
				return err
			}
			if o.printConfig {
				return printConfig(cmd.OutOrStdout(), cfg)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runGateway(ctx, o, cfg, cmd.ErrOrStderr(), nil)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.config, "config", "c", "", "YAML configuration file, laid over the embedded default")
	f.StringArrayVarP(&o.listen, "listen", "l", nil, "Zenoh endpoint to listen on (repeatable; replaces zenoh.listen): tcp/HOST:PORT, udp/HOST:PORT")
	f.StringArrayVarP(&o.connect, "connect", "e", nil, "upstream Zenoh router to connect to (repeatable; replaces zenoh.connect)")
	f.StringVarP(&o.mode, "mode", "m", "", "Zenoh mode: router, peer or client (zenoh.mode)")
	f.StringVar(&o.connectAs, "connect-as", "", "role for -e: client (the upstream's client) or router (a router↔router link with link-state, zenohd's way; zenoh.connect_as)")
	f.StringVarP(&o.id, "id", "i", "", "Zenoh id in hex, as zenohd prints it (zenoh.id); default random")
	f.IntVarP(&o.domain, "domain", "d", 0, "DDS domain id (dds.domain); default $ROS_DOMAIN_ID, else the file's, else 0")
	f.StringVarP(&o.namespace, "namespace", "n", "", "ROS namespace prefixed to every bridged name (dds.namespace), e.g. /robot1")
	f.StringVar(&o.nodename, "nodename", "", "ROS node name of the bridge (dds.nodename)")
	f.StringVar(&o.rosDistro, "ros-distro", "", "ROS 2 distro of the DDS peers, for ros_discovery_info: humble (default) or earlier, iron or later (dds.ros_distro)")
	f.StringVar(&o.metrics, "metrics", "", "HTTP address of /metrics /healthz /devicez /routez (metrics.listen); \"off\" disables")
	addPprofFlag(f, &o.pprof)
	addGCFlags(f, &o.gc)
	addAdmitFlags(f, &o.admit)
	f.StringVar(&o.keyStyle, "key-style", "", "Zenoh key style: plain or rmw_zenoh (routes.key_style)")
	f.StringArrayVarP(&o.allow, "allow", "a", nil, "regex of ROS names to bridge (repeatable; routes.allow)")
	f.StringArrayVar(&o.deny, "deny", nil, "regex of ROS names not to bridge (repeatable; routes.deny)")
	f.StringArrayVar(&o.critical, "critical", nil, "regex of ROS names whose routes are critical (repeatable; routes.critical)")
	f.StringArrayVar(&o.cfg, "cfg", nil, "set any configuration key: KEY:YAML_VALUE, e.g. policy.batched.rate_hz:20 (repeatable); zenohd's keys too, with / or . (scouting/multicast/enabled:true, listen/endpoints:[...], mode, id)")
	f.StringVar(&o.ddsInterface, "dds-interface", "", "network interface (name or address) Cyclone DDS uses; default 127.0.0.1")
	f.BoolVar(&o.ddsMulticast, "dds-multicast", false, "enable DDS multicast discovery (default: unicast to --dds-peer)")
	f.StringArrayVar(&o.ddsPeers, "dds-peer", nil, "unicast DDS discovery peer address (repeatable; default 127.0.0.1)")
	f.BoolVar(&o.noDDS, "no-dds", false, "run the Zenoh side only")
	f.BoolVar(&o.allClients, "devices-all-clients", false, "treat every client session as a device (lanes, devices.default profile) even without zid match or probe responder")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.IntVar(&o.maxMsgSize, "max-message-size", 0, fmt.Sprintf("largest Zenoh message in bytes, reassembled or sent (transport.max_message_size, %d..%d)", bridge.MinMaxMessageSize, bridge.MaxMaxMessageSize))
	f.BoolVar(&o.printConfig, "print-config", false, "print the effective configuration (after file and flags) as YAML and exit")
	return cmd
}

// buildRunConfig loads the file (or the embedded default) and lays the
// flags that were given over it, then validates it and resolves its device
// profiles (bridge.New) so that every problem comes back in one error.
func buildRunConfig(o runOptions) (*bridge.Config, error) {
	var cfg *bridge.Config
	var err error
	if o.config != "" {
		if cfg, err = bridge.ReadConfig(o.config); err != nil {
			return nil, err
		}
	} else {
		cfg = bridge.DefaultConfig()
	}
	changed := o.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	// set lays a flag's value over key; a problem names the flag and the key
	// once ("--mode: zenoh.mode: unknown value ...").
	set := func(flag, key string, v any) error {
		b, err := json.Marshal(v) // JSON is YAML
		if err != nil {
			return err
		}
		return cfg.OverrideFrom("--"+flag, key, string(b))
	}
	type ov struct {
		flag, key string
		v         any
	}
	ovs := []ov{
		{"listen", "zenoh.listen", o.listen},
		{"connect", "zenoh.connect", o.connect},
		{"mode", "zenoh.mode", o.mode},
		{"connect-as", "zenoh.connect_as", o.connectAs},
		{"id", "zenoh.id", o.id},
		{"namespace", "dds.namespace", o.namespace},
		{"nodename", "dds.nodename", o.nodename},
		{"ros-distro", "dds.ros_distro", o.rosDistro},
		{"key-style", "routes.key_style", o.keyStyle},
		{"allow", "routes.allow", o.allow},
		{"deny", "routes.deny", o.deny},
		{"critical", "routes.critical", o.critical},
	}
	for _, x := range ovs {
		if changed(x.flag) {
			if err := set(x.flag, x.key, x.v); err != nil {
				return nil, err
			}
		}
	}
	if changed("domain") {
		if err := set("domain", "dds.domain", o.domain); err != nil {
			return nil, err
		}
	} else if o.domainFromEnv != "" {
		d, err := strconv.Atoi(o.domainFromEnv)
		if err != nil {
			return nil, cli.Usagef("environment: ROS_DOMAIN_ID: want a DDS domain id 0..232 (got %q)", o.domainFromEnv)
		}
		if err := cfg.OverrideFrom("environment: ROS_DOMAIN_ID", "dds.domain", strconv.Itoa(d)); err != nil {
			return nil, err
		}
	}
	if changed("metrics") {
		v := o.metrics
		if v == "off" {
			v = ""
		}
		if err := set("metrics", "metrics.listen", v); err != nil {
			return nil, err
		}
	}
	if changed("max-message-size") {
		if err := cfg.OverrideFrom("--max-message-size", "transport.max_message_size", strconv.Itoa(o.maxMsgSize)); err != nil {
			return nil, err
		}
	}
	if o.realtimeFromEnv != "" {
		if err := cfg.OverrideFrom("environment: "+envRealtime, "policy.express.realtime", o.realtimeFromEnv); err != nil {
			return nil, err
		}
	}
	for _, kv := range o.cfg {
		k, v, ok := strings.Cut(kv, ":")
		if !ok || k == "" {
			return nil, cli.Usagef("--cfg %q: want KEY:YAML_VALUE, e.g. policy.batched.rate_hz:20", kv)
		}
		// zenohd's keys (scouting/multicast/enabled, listen/endpoints) and
		// ours (zenoh.scouting.multicast.enabled); a problem names the key
		// as given when it is not ours
		key, source := bridge.ZenohdKey(k), "--cfg"
		if key != k {
			source = "--cfg " + k
		}
		if err := cfg.OverrideFrom(source, key, v); err != nil {
			return nil, err
		}
	}
	// A client does not listen (the server opens no listener in client
	// mode): an explicit -l would be ignored without a word.
	if changed("listen") && cfg.Zenoh.Mode == bridge.ModeClient {
		return nil, cli.Usagef("--listen: a client does not listen (zenoh.mode client): drop -l, or run with --mode router or peer")
	}
	// Validate and resolve every device profile (platform, board, env) now,
	// as the gateway does at start, in one pass (bridge.New reports range
	// and profile problems together): a typo'd platform is a configuration
	// error (status 2) found before metrics.listen is bound, and
	// --print-config does not print a configuration that `run` would refuse.
	cat, err := firmware.Catalog()
	if err != nil {
		return nil, err
	}
	g, err := bridge.New(cfg, bridge.Options{Catalog: cat})
	if err != nil {
		return nil, err
	}
	if err := g.Close(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func printConfig(w io.Writer, cfg *bridge.Config) error {
	fmt.Fprintf(w, "# effective configuration (%s + flags)\n", cfg.File)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	defer enc.Close()
	return enc.Encode(cfg)
}

// runGateway runs the gateway until ctx is done. ready, if set, gets the
// server once it is up (tests).
func runGateway(ctx context.Context, o runOptions, cfg *bridge.Config, logOut io.Writer, ready func(*server.Server)) error {
	level, err := parseLevel(o.logLevel)
	if err != nil {
		return err
	}
	if err := o.admit.validate(); err != nil {
		return cli.Usage(err)
	}
	var tc transport.Config
	o.admit.apply(&tc)
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	stopPprof, err := startRuntime(o.gc, o.pprof, log)
	if err != nil {
		return err
	}
	defer stopPprof()
	short, _ := buildVersion()
	s, err := server.Start(ctx, server.Options{
		Config:           cfg,
		DDS:              ddspath.Config{Interface: o.ddsInterface, Multicast: o.ddsMulticast, Peers: o.ddsPeers},
		DisableDDS:       o.noDDS,
		AttachAllClients: o.allClients,
		Transport:        tc,
		Logger:           log,
		Version:          short,
		Revision:         buildRevision(),
	})
	if err != nil {
		return err
	}
	if ready != nil {
		ready(s)
	}
	<-ctx.Done()
	log.Info("shutting down", "cause", context.Cause(ctx))
	err = s.Close()
	log.Info("stopped")
	return err
}
