package bridge

import (
	_ "embed"
	"os"
	"regexp"
	"time"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/zenohpath"
)

// DefaultYAML is the embedded default configuration (bridge/default.yaml);
// docs/bridge.md pastes it verbatim.
//
//go:embed default.yaml
var DefaultYAML []byte

// DefaultFile is the name the embedded default carries in messages.
const DefaultFile = "<default>"

// Config is the whole gateway configuration. Obtain one with DefaultConfig
// or LoadConfig; command-line flags may then set fields directly (or through
// Override) before Validate. Field comments give units; default.yaml gives
// the defaults and their sources.
type Config struct {
	Zenoh      ZenohConfig      `yaml:"zenoh"`
	DDS        DDSConfig        `yaml:"dds"`
	Routes     RoutesConfig     `yaml:"routes"`
	Devices    DevicesConfig    `yaml:"devices"`
	Classifier ClassifierConfig `yaml:"classifier"`
	Policy     PolicyConfig     `yaml:"policy"`
	Supervisor SupervisorConfig `yaml:"supervisor"`
	Metrics    MetricsConfig    `yaml:"metrics"`
	Transport  TransportConfig  `yaml:"transport"`
	// Services is the ROS 2 services and actions bridging (docs/services.md).
	Services ServicesConfig `yaml:"services"`
	// AccessControl is zenohd's access_control section (docs/security.md);
	// off unless enabled.
	AccessControl zenohpath.ACLConfig `yaml:"access_control"`

	// File is the path the configuration was loaded from (DefaultFile for
	// the embedded default); messages name it.
	File string `yaml:"-"`
	// pos records where each dotted key was set, for messages.
	pos map[string]position
}

// ZenohConfig is the Zenoh side (zenohd / zenoh-bridge-ros2dds flags -m -i -l -e).
type ZenohConfig struct {
	Mode    Mode     `yaml:"mode"`
	ID      string   `yaml:"id"`      // hex zid, 1..16 bytes; empty: random
	Listen  []string `yaml:"listen"`  // endpoints <proto>/<address>
	Connect []string `yaml:"connect"` // upstream endpoints
	// ConnectAs is the role the gateway dials Connect in: client (the
	// upstream's client, the default) or router (zenohd's way in router
	// mode: a router↔router link with link-state, so the gateway joins a
	// zenohd mesh; docs/router.md). Router needs mode router.
	ConnectAs ConnectAs `yaml:"connect_as"`
	// Scouting answers SCOUTs (zenohd's scouting keys; off unless set,
	// multicast only on the interfaces named): docs/router.md.
	Scouting zenohpath.ScoutingConfig `yaml:"scouting"`
	// Routing is zenohd's routing section: today
	// router.linkstate.transport_weights, our link weights towards
	// neighbour routers (mode router; docs/router.md "Link weights").
	Routing zenohpath.RoutingConfig `yaml:"routing"`
}

// DDSConfig is the ROS 2 side (zenoh-bridge-ros2dds -d, -n).
type DDSConfig struct {
	Domain    int    `yaml:"domain"`    // ROS_DOMAIN_ID, 0..232
	Namespace string `yaml:"namespace"` // "/" or "/a/b"
	Nodename  string `yaml:"nodename"`
	// ROSDistro is the ROS 2 distro of the DDS peers; it picks the Gid size
	// of ros_discovery_info (24 bytes up to humble, 16 from iron;
	// ros2.GidSizeForDistro). Default humble (Cyclone DDS 0.10 is Humble's).
	ROSDistro string `yaml:"ros_distro"`
}

// RoutesConfig selects bridged topics and their criticality, and holds
// zenoh-bridge-ros2dds's per-route keys (routes_config.go).
type RoutesConfig struct {
	AutoBridge bool `yaml:"auto_bridge"`
	// Allow and Deny are zenoh-bridge-ros2dds's allow/deny per kind
	// (NameFilter; a plain list applies to every kind).
	Allow              NameFilter  `yaml:"allow"`
	Deny               NameFilter  `yaml:"deny"`
	Critical           []Pattern   `yaml:"critical"`
	DefaultCriticality Criticality `yaml:"default_criticality"`
	KeyStyle           KeyStyle    `yaml:"key_style"`
	// PubMaxFrequencies caps the rate (Hz) of DDS publishers bridged to
	// Zenoh, "<regex>=<Hz>", first match (a bare number: every topic).
	PubMaxFrequencies []MaxFrequency `yaml:"pub_max_frequencies"`
	// PubPriorities gives DDS publishers their Zenoh priority and express
	// flag, "<regex>=<1..7>[:express]", first match; :express or a
	// priority ≤ CriticalPubPriority also makes the route critical.
	PubPriorities []PubPriority `yaml:"pub_priorities"`
	// ReliableRoutesBlocking: a RELIABLE DDS publisher's samples go to
	// Zenoh with congestion control block (else drop), towards Zenoh
	// routers and clients; devices' lanes never block.
	ReliableRoutesBlocking bool `yaml:"reliable_routes_blocking"`
	// TransientLocalCacheMultiplier sizes a TRANSIENT_LOCAL route's
	// history: each writer keeps its depth, the route at most depth ×
	// this many samples (1..MaxTransientLocalCacheMultiplier).
	TransientLocalCacheMultiplier int `yaml:"transient_local_cache_multiplier"`
}

// DevicesConfig maps device identities to knob profiles.
type DevicesConfig struct {
	Default DeviceProfile  `yaml:"default"`
	List    []DeviceConfig `yaml:"list"`
}

// DeviceProfile names the knob profile of a device (docs/knobs.md).
type DeviceProfile struct {
	Platform string            `yaml:"platform"`
	Board    string            `yaml:"board"`     // name, alias or path of a board TOML file
	Env      map[string]string `yaml:"env"`       // env rung: NROS_* / ZPICO_* / CONFIG_NROS_* = value
	EnvFiles []string          `yaml:"env_files"` // KEY=VALUE or Kconfig files, later wins
}

// DeviceConfig is one known device.
type DeviceConfig struct {
	// Name is the device's name in metrics and status, and the name its probe
	// responder announces (docs/probe.md); required, [A-Za-z0-9_.-]{1,64}.
	Name string `yaml:"name"`
	// ZID is the device's Zenoh id in hex; optional when the device is
	// recognised by its announced name.
	ZID           string `yaml:"zid"`
	DeviceProfile `yaml:",inline"`
	// Class overrides the classifier: auto (default), critical or noncritical.
	Class ClassOverride `yaml:"class"`
	// RateHz and NoncriticalRateHz replace policy.batched.rate_hz and
	// noncritical_rate_hz for this device (samples/s per key); 0: the policy's.
	RateHz            float64 `yaml:"rate_hz"`
	NoncriticalRateHz float64 `yaml:"noncritical_rate_hz"`
	// LinkBytesPerS replaces policy.link.bytes_per_s for this device: the
	// device link's budget in bytes/s shared by both lanes (critical
	// first); 0: the policy's.
	LinkBytesPerS float64 `yaml:"link_bytes_per_s"`
	// LargeSubscriptions lists the device's subscriptions (key expressions,
	// as the device declares them) whose application asked for a
	// large-class slot (nano-ros: a message larger than
	// subscriber_size_threshold gets one of max_large_subscribers slots of
	// subscriber_large_size bytes). The Zenoh declaration does not say, so
	// the gateway sends a subscription larger samples than the small slot
	// (subscriber_buffer_size) only when it is listed here; the rest are
	// refused and counted as oversize, never dropped silently in the
	// device's ring. At most max_large_subscribers entries.
	LargeSubscriptions []string `yaml:"large_subscriptions"`
}

// ClassifierConfig holds the probe classifier's parameters (Adaptive Bridge
// paper: 5 Hz probes, 50-sample window, 1 Hz evaluations, demote above 50 ms
// or 1.5 % loss, promote below 35 ms and 0.5 %, 3 consecutive evaluations).
type ClassifierConfig struct {
	Enabled            bool          `yaml:"enabled"`
	ProbeInterval      time.Duration `yaml:"probe_interval"`
	ProbeTimeout       time.Duration `yaml:"probe_timeout"`
	Window             int           `yaml:"window"`      // probes
	MinSamples         int           `yaml:"min_samples"` // settled probes
	EvaluationInterval time.Duration `yaml:"evaluation_interval"`
	DemoteRTT          time.Duration `yaml:"demote_rtt"`
	DemoteLoss         float64       `yaml:"demote_loss"` // ratio 0..1
	PromoteRTT         time.Duration `yaml:"promote_rtt"`
	PromoteLoss        float64       `yaml:"promote_loss"` // ratio 0..1
	Consecutive        int           `yaml:"consecutive"`  // evaluations
	AllowUnknownState  bool          `yaml:"allow_unknown_state"`
	TCPInfo            bool          `yaml:"tcp_info"`
	History            int           `yaml:"history"` // transitions kept per device
	// Dwell is the least time between two changes of a device's class
	// from readings (architecture invariant 8); ≥ 0, default 30 s.
	Dwell time.Duration `yaml:"dwell"`
	// ProbeBudget is the most probe pings per second per core
	// (GOMAXPROCS) the gateway sends over the whole fleet; beyond it the
	// pings are spread (each device probed less often). 0: no budget.
	ProbeBudget float64 `yaml:"probe_budget"`
	// Suspend is the gateway-health guard: when the gateway's own lag
	// explains a probe's delay, no reading is applied.
	Suspend SuspendConfig `yaml:"suspend"`
}

// SuspendConfig holds the gateway-health guard's limits: an evaluation is
// suspended (no device changes class) while the gateway's wake-up lag, or
// its CPU steal, reaches these. 0 turns a limit off.
type SuspendConfig struct {
	// Lag is the scheduler wake-up delay (lateness of the gateway's own
	// ticker, the largest since the previous evaluation).
	Lag time.Duration `yaml:"lag"`
	// Steal is the host's CPU steal ratio (/proc/stat) since the previous
	// evaluation, 0..1.
	Steal float64 `yaml:"steal"`
	// Load is the host's 1-minute load average per core (/proc/loadavg).
	Load float64 `yaml:"load"`
}

// PolicyConfig holds the lanes' parameters.
type PolicyConfig struct {
	DemoteCriticalRoutes bool          `yaml:"demote_critical_routes"`
	Express              ExpressConfig `yaml:"express"`
	Batched              BatchedConfig `yaml:"batched"`
	Link                 LinkConfig    `yaml:"link"`
	// CriticalDropLogInterval is the least time between two log lines
	// about dropped critical samples of one device and reason; each line
	// carries the count since the previous one.
	CriticalDropLogInterval time.Duration `yaml:"critical_drop_log_interval"`
}

// LinkConfig is a device link's byte budget (bytes/s), shared by the
// express and batched lanes (express first) and applied to the device's
// transport session as its pacing rate (Session.SetTxRate).
type LinkConfig struct {
	// BytesPerS is every device's link budget in bytes/s
	// (devices.list[].link_bytes_per_s replaces it); 0: estimated (Estimate),
	// or none.
	BytesPerS float64 `yaml:"bytes_per_s"`
	// Estimate is how a device's pacing rate is found: learn (the
	// default: learned from the socket's TCP_INFO and the device's probe
	// RTTs, below the rate at which a queue builds, with a configured
	// budget as its ceiling; linkest.go, issue 30), off (the configured
	// budget only) or tcp_info (the largest TCP_INFO delivery rate of the
	// device's socket over the last evaluations, when none is configured;
	// Linux).
	Estimate LinkEstimate `yaml:"estimate"`
	// TargetDelay is the queue delay the learned rate keeps the link
	// under (estimate: learn): above it, the rate drops.
	TargetDelay time.Duration `yaml:"target_delay"`
	// EstimateInterval is how often the learned rate reads each busy
	// device's link (estimate: learn).
	EstimateInterval time.Duration `yaml:"estimate_interval"`
	// Headroom is the share of the budget the lanes and the transport's
	// pacing use (0..1]: slightly below the link, so the queue forms in
	// the gateway, where priority decides, not in the bottleneck.
	Headroom float64 `yaml:"headroom"`
	// Burst is how much of the budget may go out back to back, as time at
	// the budget's rate (at least one message of the device's largest).
	Burst time.Duration `yaml:"burst"`
	// MinBytesPerS is the floor of an estimated budget.
	MinBytesPerS float64 `yaml:"min_bytes_per_s"`
}

// LinkEstimate is how a device's link budget is estimated.
type LinkEstimate string

const (
	LinkEstimateOff     LinkEstimate = "off"
	LinkEstimateTCPInfo LinkEstimate = "tcp_info"
	LinkEstimateLearn   LinkEstimate = "learn"
)

func (LinkEstimate) allowed() []string { return []string{"off", "tcp_info", "learn"} }

// ExpressConfig bounds the express lane.
type ExpressConfig struct {
	MaxKeys int `yaml:"max_keys"`
	// Depth is how many samples of one key the express lane holds while
	// the device is busy (sent in order; beyond, the oldest is dropped as
	// congestion), never more than the device's subscriber ring depth.
	// Validate requires ≥ 1; the lanes read 0 as DefaultExpressDepth.
	Depth int `yaml:"depth"`
	// Realtime is how the critical express path's threads are scheduled:
	// off (default), nice (locked threads at nice RealtimeNiceValue) or
	// fifo (locked threads at SCHED_FIFO RealtimeFIFOPriority); realtime.go.
	// Environment: PICOBRIDGE_EXPRESS_REALTIME (over the file, under --cfg).
	Realtime RealtimeMode `yaml:"realtime"`
}

// DefaultExpressDepth is policy.express.depth when unset: enough for a
// 30 Hz route to ride out a ~100 ms scheduling stall.
const DefaultExpressDepth = 4

// BatchedConfig shapes the batched lane.
type BatchedConfig struct {
	RateHz            float64 `yaml:"rate_hz"`             // samples/s per device and key, NORMAL
	NoncriticalRateHz float64 `yaml:"noncritical_rate_hz"` // samples/s for a NONCRITICAL or UNKNOWN device
	Burst             int     `yaml:"burst"`               // token bucket depth, samples
	// FlushInterval is the lane's flush cadence toward every device (the
	// gateway's setting; 1 ms..10 s). A device's socket window and TX
	// flush_ms limit what it sends, never what it receives (anchors.md §2.6).
	FlushInterval time.Duration `yaml:"flush_interval"`
	StaleAfter    time.Duration `yaml:"stale_after"`
	History       int           `yaml:"history"` // samples kept per key between flushes
	MaxKeys       int           `yaml:"max_keys"`
}

// SupervisorConfig holds the supervisor's limits.
type SupervisorConfig struct {
	EvaluationInterval time.Duration `yaml:"evaluation_interval"`
	Degraded           Limits        `yaml:"degraded"`
	Emergency          Limits        `yaml:"emergency"`
	Recover            RecoverLimits `yaml:"recover"`
}

// Limits are the readings at which the supervisor enters a mode (any one suffices).
type Limits struct {
	QueueOccupancy float64       `yaml:"queue_occupancy"` // ratio 0..1 of the fullest device lane
	Lag            time.Duration `yaml:"lag"`             // age of the oldest pending sample
	Errors         int           `yaml:"errors"`          // sink errors per evaluation
}

// RecoverLimits are the readings below which the supervisor steps down a mode.
type RecoverLimits struct {
	Limits      `yaml:",inline"`
	Evaluations int `yaml:"evaluations"`
}

// TransportConfig holds the Zenoh transport settings of `picobridge run`
// (zenohd's transport.link.rx.max_message_size).
type TransportConfig struct {
	// MaxMessageSize is the largest network message a session reassembles
	// from fragments or sends, in bytes (transport.Config.MaxMessageSize);
	// MinMaxMessageSize..MaxMaxMessageSize.
	MaxMessageSize int `yaml:"max_message_size"`
	// Link holds the link settings (zenohd transport.link): TLS.
	Link LinkSettings `yaml:"link"`
	// Auth holds the authentication settings (zenohd transport.auth): usrpwd.
	Auth AuthConfig `yaml:"auth"`
}

// LinkSettings are zenohd's transport.link settings picobridge reads.
type LinkSettings struct {
	TLS TLSConfig `yaml:"tls"`
}

// TLSConfig is zenohd's transport.link.tls (file paths of PEM files;
// transport.TLSConfig gives the semantics). Used by tls/ endpoints.
type TLSConfig struct {
	RootCACertificate   string `yaml:"root_ca_certificate"`
	ListenCertificate   string `yaml:"listen_certificate"`
	ListenPrivateKey    string `yaml:"listen_private_key"`
	EnableMTLS          bool   `yaml:"enable_mtls"`
	ConnectCertificate  string `yaml:"connect_certificate"`
	ConnectPrivateKey   string `yaml:"connect_private_key"`
	VerifyNameOnConnect bool   `yaml:"verify_name_on_connect"` // default true
}

// AuthConfig is zenohd's transport.auth.
type AuthConfig struct {
	UsrPwd UsrPwdConfig `yaml:"usrpwd"`
}

// UsrPwdConfig is zenohd's transport.auth.usrpwd: user and password
// presented upstream (both or neither), dictionary_file of the users
// accepted (one user:password per line; the user names the device).
type UsrPwdConfig struct {
	User           string `yaml:"user"`
	Password       string `yaml:"password"`
	DictionaryFile string `yaml:"dictionary_file"`
}

// Bounds of transport.max_message_size: one KiB (below, a ROS message of a
// few fields would not fit) to 1 GiB (zenohd's default).
const (
	MinMaxMessageSize = 1 << 10
	MaxMaxMessageSize = 1 << 30
)

// MetricsConfig configures /metrics, /devicez and /healthz.
type MetricsConfig struct {
	Listen     string `yaml:"listen"` // host:port; empty: off
	MaxDevices int    `yaml:"max_devices"`
}

// enum is implemented by the string types whose values are a closed set.
type enum interface{ allowed() []string }

// Mode is the Zenoh session mode.
type Mode string

const (
	ModeRouter Mode = "router"
	ModePeer   Mode = "peer"
	ModeClient Mode = "client"
)

func (Mode) allowed() []string { return []string{"router", "peer", "client"} }

// ConnectAs is the role of the gateway's upstream sessions (zenoh.connect_as).
type ConnectAs string

const (
	// ConnectAsClient: the gateway is its upstream router's client.
	ConnectAsClient ConnectAs = "client"
	// ConnectAsRouter: a router↔router link (link-state, sourced
	// declarations, zenoh-mesh-auth.md §2), as zenohd dials in router mode.
	ConnectAsRouter ConnectAs = "router"
)

func (ConnectAs) allowed() []string { return []string{"client", "router"} }

// KeyStyle is how a ROS topic name becomes a Zenoh key expression.
type KeyStyle string

const (
	// KeyPlain is zenoh-bridge-ros2dds's: <namespace>/<topic> without the leading slash.
	KeyPlain KeyStyle = "plain"
	// KeyRmwZenoh is rmw_zenoh's: <domain>/<topic>/<dds type>/<type hash>.
	KeyRmwZenoh KeyStyle = "rmw_zenoh"
)

func (KeyStyle) allowed() []string { return []string{"plain", "rmw_zenoh"} }

// Criticality is a route's.
type Criticality string

const (
	Critical    Criticality = "critical"
	Noncritical Criticality = "noncritical"
)

func (Criticality) allowed() []string { return []string{"critical", "noncritical"} }

// ClassOverride is a device's manual class setting.
type ClassOverride string

const (
	OverrideAuto        ClassOverride = "auto"
	OverrideCritical    ClassOverride = "critical"
	OverrideNoncritical ClassOverride = "noncritical"
)

func (ClassOverride) allowed() []string { return []string{"auto", "critical", "noncritical"} }

// Pattern is a regular expression over ROS names that must match the whole
// name (as zenoh-bridge-ros2dds allow/deny).
type Pattern struct {
	re  *regexp.Regexp
	src string
}

// NewPattern compiles src anchored at both ends.
func NewPattern(src string) (Pattern, error) {
	re, err := regexp.Compile("^(?:" + src + ")$")
	if err != nil {
		return Pattern{}, err
	}
	return Pattern{re: re, src: src}, nil
}

// MustPattern is NewPattern for constants; it panics on a bad expression.
func MustPattern(src string) Pattern {
	p, err := NewPattern(src)
	if err != nil {
		panic(err)
	}
	return p
}

// Match reports whether the whole name matches.
func (p Pattern) Match(name string) bool { return p.re != nil && p.re.MatchString(name) }

// String is the expression as written.
func (p Pattern) String() string { return p.src }

// MarshalText writes the expression as written.
func (p Pattern) MarshalText() ([]byte, error) { return []byte(p.src), nil }

// DefaultConfig is the embedded default (bridge/default.yaml).
func DefaultConfig() *Config {
	c, err := decodeConfig(DefaultFile, DefaultYAML, nil)
	if err != nil {
		panic("bridge: embedded default.yaml: " + err.Error())
	}
	return c
}

// LoadConfig reads the YAML file at path over the embedded default and
// validates the result. Every problem (syntax, unknown key, wrong type, bad
// value) comes back at once in a *knobs.ConfigError whose lines read
// `file:line:col: key: reason (allowed: ...)`.
func LoadConfig(path string) (*Config, error) {
	c, err := ReadConfig(path)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// ReadConfig is LoadConfig without Validate: syntax, unknown keys, wrong
// types and values outside an enum are problems, ranges and cross-field
// rules are not yet checked. For callers that apply overrides and then call
// New, which reports range and profile problems in one error.
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &knobs.ConfigError{Problems: []*knobs.Problem{{File: path, Msg: err.Error(), Err: knobs.ErrSyntax}}}
	}
	return decodeConfig(path, data, DefaultConfig())
}

// ParseConfig is LoadConfig over bytes; file names them in messages.
func ParseConfig(file string, data []byte) (*Config, error) {
	c, err := decodeConfig(file, data, DefaultConfig())
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Override sets the value at a dotted key (as in messages: "zenoh.listen",
// "policy.batched.rate_hz", "devices.list") from a YAML value, the way
// zenohd's --cfg KEY:VALUE does; the lead's flags (-l, -e, -m, --domain,
// -n) may use it or set fields directly. Call Validate afterwards.
func (c *Config) Override(key, yamlValue string) error {
	return c.override("", key, yamlValue)
}

// OverrideFrom is Override with the source of the value (a flag such as
// "--listen" or "-d"), which then prefixes its problems in Validate:
// `--domain: dds.domain: must be in 0..232 (got 300)`.
func (c *Config) OverrideFrom(source, key, yamlValue string) error {
	return c.override(source, key, yamlValue)
}

func (c *Config) Device(name string) *DeviceConfig {
	for i := range c.Devices.List {
		if c.Devices.List[i].Name == name {
			return &c.Devices.List[i]
		}
	}
	return nil
}

// ResolveProfile resolves a device's knob profile through the ladder
// (builtin < platform < board < env) with catalog (firmware.Catalog()) and
// returns the capacity model the device's lanes use. Env values named in the
// configuration carry the configuration file as their source.
func (c *Config) ResolveProfile(cat *knobs.Catalog, p DeviceProfile) (*knobs.Resolved, knobs.Capacity, error) {
	env := &knobs.Env{}
	for _, f := range p.EnvFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, knobs.Capacity{}, &knobs.ConfigError{Problems: []*knobs.Problem{{File: f, Msg: err.Error(), Err: knobs.ErrSyntax}}}
		}
		e, err := knobs.ParseEnvFile(f, data)
		if err != nil {
			return nil, knobs.Capacity{}, err
		}
		env.Add(e)
	}
	for _, k := range sortedKeys(p.Env) {
		env.Vars = append(env.Vars, knobs.EnvVar{Name: k, Value: p.Env[k], File: c.File})
	}
	r, err := cat.Resolve(knobs.Options{Platform: p.Platform, Board: p.Board, Env: env})
	if err != nil {
		return nil, knobs.Capacity{}, err
	}
	return r, knobs.CapacityOf(r), nil
}
