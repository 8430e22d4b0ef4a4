package bridge

// Validate: ranges and cross-field rules of a Config, each problem named by
// file, line, key and the allowed values.

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
)

// Validate checks ranges and cross-field rules. Problems name the position
// where the key was set when it came from a file, and only the key when a
// flag set it.
func (c *Config) Validate() error {
	var ps problemList
	at := func(key string, format string, args ...any) {
		p := c.pos[key] // zero when a flag or code set it: the key alone
		ps = append(ps, &knobs.Problem{File: p.file, Line: p.line, Col: p.col, Key: key, Msg: fmt.Sprintf(format, args...), Err: knobs.ErrRange})
	}
	if c.Zenoh.ID != "" {
		if b, err := hex.DecodeString(c.Zenoh.ID); err != nil || len(b) == 0 || len(b) > 16 {
			at("zenoh.id", "want 1..16 bytes in hex (got %q)", c.Zenoh.ID)
		}
	}
	checkEndpoints := func(key string, eps []string) {
		for i, e := range eps {
			if err := checkEndpoint(e); err != nil {
				at(fmt.Sprintf("%s[%d]", key, i), "%v (allowed: tcp/<host>:<port>, udp/<host>:<port>, tls/<host>:<port>)", err)
			}
		}
	}
	checkEndpoints("zenoh.listen", c.Zenoh.Listen)
	checkEndpoints("zenoh.connect", c.Zenoh.Connect)
	for _, p := range c.Zenoh.Scouting.Problems() {
		at("zenoh.scouting."+p.Key, "%s", p.Msg)
	}
	for _, p := range c.Zenoh.Routing.Problems() {
		at("zenoh.routing."+p.Key, "%s", p.Msg)
	}
	if len(c.Zenoh.Routing.Router.Linkstate.TransportWeights) > 0 && c.Zenoh.Mode != ModeRouter {
		at("zenoh.routing.router.linkstate.transport_weights", "link weights need zenoh.mode router (got mode %q; allowed here: [])", c.Zenoh.Mode)
	}
	if c.Zenoh.Mode == ModeClient && len(c.Zenoh.Connect) == 0 {
		// named at the mode (the flag or line that chose client), not at
		// the embedded default's empty connect list
		at("zenoh.mode", "client mode needs an upstream router: give one with -e/--connect ENDPOINT (zenoh.connect is empty)")
	}
	if c.Zenoh.ConnectAs == ConnectAsRouter && c.Zenoh.Mode != ModeRouter {
		at("zenoh.connect_as", "router needs zenoh.mode router (got mode %q; allowed here: client)", c.Zenoh.Mode)
	}
	if c.DDS.Domain < 0 || c.DDS.Domain > 232 {
		at("dds.domain", "must be in 0..232 (got %d)", c.DDS.Domain)
	}
	if !validNamespace(c.DDS.Namespace) {
		at("dds.namespace", "want \"/\" or /name[/name...] (got %q)", c.DDS.Namespace)
	}
	if !validDeviceName(c.DDS.Nodename) {
		at("dds.nodename", "want [A-Za-z0-9_.-]{1,64} (got %q)", c.DDS.Nodename)
	}
	if _, err := ros2.GidSizeForDistro(c.DDS.ROSDistro); err != nil {
		at("dds.ros_distro", "want one of %s (got %q)", strings.Join(ros2.ROSDistros(), ", "), c.DDS.ROSDistro)
	}
	names := map[string]string{}
	zids := map[string]string{}
	for i, d := range c.Devices.List {
		k := fmt.Sprintf("devices.list[%d]", i)
		if !validDeviceName(d.Name) {
			at(k+".name", "want [A-Za-z0-9_.-]{1,64} (got %q)", d.Name)
		} else if prev, dup := names[d.Name]; dup {
			at(k+".name", "%q already names %s", d.Name, prev)
		} else {
			names[d.Name] = k
		}
		if d.RateHz < 0 {
			at(k+".rate_hz", "must be ≥ 0 (got %v)", d.RateHz)
		}
		if d.NoncriticalRateHz < 0 {
			at(k+".noncritical_rate_hz", "must be ≥ 0 (got %v)", d.NoncriticalRateHz)
		}
		if d.LinkBytesPerS < 0 {
			at(k+".link_bytes_per_s", "must be ≥ 0 bytes/s (got %v; 0: policy.link.bytes_per_s)", d.LinkBytesPerS)
		}
		for j, ls := range d.LargeSubscriptions {
			if ls == "" || strings.ContainsAny(ls, " \t") {
				at(fmt.Sprintf("%s.large_subscriptions[%d]", k, j), "want a key expression the device subscribes to (got %q)", ls)
			}
		}
		if d.ZID != "" {
			z := strings.ToLower(d.ZID)
			if b, err := hex.DecodeString(z); err != nil || len(b) == 0 || len(b) > 16 {
				at(k+".zid", "want 1..16 bytes in hex (got %q)", d.ZID)
			} else if prev, dup := zids[z]; dup {
				at(k+".zid", "%s already names %s", d.ZID, prev)
			} else {
				zids[z] = k
			}
		}
	}
	cl := &c.Classifier
	positive := func(key string, d time.Duration) {
		if d <= 0 {
			at(key, "must be > 0 (got %v)", d)
		}
	}
	ratio := func(key string, v float64) {
		if v < 0 || v > 1 {
			at(key, "must be a ratio in 0..1 (got %v)", v)
		}
	}
	atLeast := func(key string, v, lo int) {
		if v < lo {
			at(key, "must be ≥ %d (got %d)", lo, v)
		}
	}
	positive("classifier.probe_interval", cl.ProbeInterval)
	positive("classifier.probe_timeout", cl.ProbeTimeout)
	positive("classifier.evaluation_interval", cl.EvaluationInterval)
	positive("classifier.demote_rtt", cl.DemoteRTT)
	positive("classifier.promote_rtt", cl.PromoteRTT)
	ratio("classifier.demote_loss", cl.DemoteLoss)
	ratio("classifier.promote_loss", cl.PromoteLoss)
	atLeast("classifier.window", cl.Window, 1)
	atLeast("classifier.consecutive", cl.Consecutive, 1)
	atLeast("classifier.history", cl.History, 0)
	if cl.MinSamples < 1 || cl.MinSamples > cl.Window {
		at("classifier.min_samples", "must be in 1..window (%d) (got %d)", cl.Window, cl.MinSamples)
	}
	if cl.Dwell < 0 {
		at("classifier.dwell", "must be ≥ 0 (got %v)", cl.Dwell)
	}
	if cl.ProbeBudget < 0 {
		at("classifier.probe_budget", "must be ≥ 0 probes/s per core (got %v; 0: no budget)", cl.ProbeBudget)
	}
	if cl.Suspend.Lag < 0 {
		at("classifier.suspend.lag", "must be ≥ 0 (got %v; 0: off)", cl.Suspend.Lag)
	}
	ratio("classifier.suspend.steal", cl.Suspend.Steal)
	if cl.Suspend.Load < 0 {
		at("classifier.suspend.load", "must be ≥ 0 (got %v; 0: off)", cl.Suspend.Load)
	}
	if cl.PromoteRTT > cl.DemoteRTT {
		at("classifier.promote_rtt", "must be ≤ demote_rtt (%v) (got %v)", cl.DemoteRTT, cl.PromoteRTT)
	}
	if cl.PromoteLoss > cl.DemoteLoss {
		at("classifier.promote_loss", "must be ≤ demote_loss (%v) (got %v)", cl.DemoteLoss, cl.PromoteLoss)
	}
	p := &c.Policy
	atLeast("policy.express.max_keys", p.Express.MaxKeys, 1)
	atLeast("policy.express.depth", p.Express.Depth, 1)
	if r := p.Express.Realtime; r != "" && !slices.Contains(r.allowed(), string(r)) { // set in code; the decoder checks files and flags
		pos := c.pos["policy.express.realtime"]
		ps = append(ps, &knobs.Problem{File: pos.file, Line: pos.line, Col: pos.col, Key: "policy.express.realtime",
			Msg: fmt.Sprintf("unknown value %q (allowed: %s)", r, strings.Join(r.allowed(), ", ")), Err: knobs.ErrBadValue})
	}
	if p.Batched.RateHz <= 0 {
		at("policy.batched.rate_hz", "must be > 0 (got %v)", p.Batched.RateHz)
	}
	if p.Batched.NoncriticalRateHz <= 0 {
		at("policy.batched.noncritical_rate_hz", "must be > 0 (got %v)", p.Batched.NoncriticalRateHz)
	}
	atLeast("policy.batched.burst", p.Batched.Burst, 1)
	atLeast("policy.batched.history", p.Batched.History, 1)
	atLeast("policy.batched.max_keys", p.Batched.MaxKeys, 1)
	positive("policy.batched.stale_after", p.Batched.StaleAfter)
	if f := p.Batched.FlushInterval; f < time.Millisecond || f > 10*time.Second {
		at("policy.batched.flush_interval", "must be within 1ms..10s (got %v)", f)
	}
	if p.Link.BytesPerS < 0 {
		at("policy.link.bytes_per_s", "must be ≥ 0 bytes/s (got %v; 0: estimated or none)", p.Link.BytesPerS)
	}
	if p.Link.Headroom <= 0 || p.Link.Headroom > 1 {
		at("policy.link.headroom", "must be a ratio in (0, 1] (got %v)", p.Link.Headroom)
	}
	positive("policy.link.burst", p.Link.Burst)
	if p.Link.Estimate == LinkEstimateLearn {
		positive("policy.link.target_delay", p.Link.TargetDelay)
		positive("policy.link.estimate_interval", p.Link.EstimateInterval)
	}
	if p.Link.MinBytesPerS < 0 {
		at("policy.link.min_bytes_per_s", "must be ≥ 0 bytes/s (got %v)", p.Link.MinBytesPerS)
	}
	positive("policy.critical_drop_log_interval", p.CriticalDropLogInterval)
	s := &c.Supervisor
	positive("supervisor.evaluation_interval", s.EvaluationInterval)
	for _, l := range []struct {
		key string
		l   Limits
	}{{"supervisor.degraded", s.Degraded}, {"supervisor.emergency", s.Emergency}, {"supervisor.recover", s.Recover.Limits}} {
		ratio(l.key+".queue_occupancy", l.l.QueueOccupancy)
		if l.l.Lag < 0 {
			at(l.key+".lag", "must be ≥ 0 (got %v)", l.l.Lag)
		}
		atLeast(l.key+".errors", l.l.Errors, 0)
	}
	if s.Degraded.QueueOccupancy > s.Emergency.QueueOccupancy {
		at("supervisor.degraded.queue_occupancy", "must be ≤ emergency.queue_occupancy (%v)", s.Emergency.QueueOccupancy)
	}
	if s.Recover.QueueOccupancy > s.Degraded.QueueOccupancy {
		at("supervisor.recover.queue_occupancy", "must be ≤ degraded.queue_occupancy (%v)", s.Degraded.QueueOccupancy)
	}
	if s.Recover.Lag > s.Degraded.Lag {
		at("supervisor.recover.lag", "must be ≤ degraded.lag (%v)", s.Degraded.Lag)
	}
	if s.Recover.Errors > s.Degraded.Errors {
		at("supervisor.recover.errors", "must be ≤ degraded.errors (%d)", s.Degraded.Errors)
	}
	atLeast("supervisor.recover.evaluations", s.Recover.Evaluations, 1)
	if c.Metrics.Listen != "" {
		if _, port, err := net.SplitHostPort(c.Metrics.Listen); err != nil || port == "" {
			at("metrics.listen", "want host:port or empty (got %q)", c.Metrics.Listen)
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			at("metrics.listen", "port %s: want 0 to 65535 (got %q)", port, c.Metrics.Listen)
		}
	}
	atLeast("metrics.max_devices", c.Metrics.MaxDevices, 1)
	if m := c.Transport.MaxMessageSize; m < MinMaxMessageSize || m > MaxMaxMessageSize {
		at("transport.max_message_size", "must be in %d..%d bytes (got %d)", MinMaxMessageSize, MaxMaxMessageSize, m)
	}
	c.validateSecurity(at)
	c.validateRoutes(at)
	c.validateServices(at)
	return ps.err()
}

// Device returns the configured device with that name, or nil.

func checkEndpoint(e string) error {
	proto, addr, ok := strings.Cut(e, "/")
	if !ok || addr == "" {
		return fmt.Errorf("want <proto>/<address> (got %q)", e)
	}
	switch proto {
	case "tcp", "udp", "tls":
	case "quic":
		return fmt.Errorf("QUIC links are not supported (use tls/<host>:<port> for an encrypted link)")
	default:
		return fmt.Errorf("unknown protocol %q", proto)
	}
	addr, _, _ = strings.Cut(addr, "#") // endpoint config suffix
	addr, _, _ = strings.Cut(addr, "?") // endpoint metadata
	i := strings.LastIndexByte(addr, ':')
	if i < 0 || i == len(addr)-1 {
		return fmt.Errorf("want <host>:<port> after %s/ (got %q)", proto, addr)
	}
	for _, r := range addr[i+1:] {
		if r < '0' || r > '9' {
			return fmt.Errorf("port %q is not a number", addr[i+1:])
		}
	}
	if _, err := strconv.ParseUint(addr[i+1:], 10, 16); err != nil {
		return fmt.Errorf("port %s: want 0 to 65535", addr[i+1:])
	}
	// The host as the listener and the dialler split it (transport.ParseEndpoint):
	// "[::1:7447" is refused here, not when the listener opens.
	if _, _, err := net.SplitHostPort(addr); err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return fmt.Errorf("address %q: %s", addr, ae.Err)
		}
		return fmt.Errorf("address %q: %v", addr, err)
	}
	return nil
}

var (
	namespaceRE = regexp.MustCompile(`^(/|(/[A-Za-z_][A-Za-z0-9_]*)+)$`)
)

// validDeviceName is the device name rule of the probe keys (probe.ValidDeviceName).
func validDeviceName(s string) bool { return probe.ValidDeviceName(s) }
func validNamespace(s string) bool  { return namespaceRE.MatchString(s) }
