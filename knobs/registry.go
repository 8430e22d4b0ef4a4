package knobs

import (
	"slices"
	"strconv"
	"strings"
)

// Type is the value type of a knob.
type Type int

const (
	// Bool knobs hold 0 or 1; TOML true/false, env 1/0/y/n/true/false/yes/no/on/off.
	Bool Type = iota + 1
	// Int knobs hold a signed integer in [Min, Max].
	Int
)

func (t Type) String() string {
	switch t {
	case Bool:
		return "bool"
	case Int:
		return "int"
	}
	return "invalid"
}

// Unit names the unit of an Int knob. Bool knobs have no unit.
type Unit string

// Units used by the registry.
const (
	UnitNone     Unit = ""
	UnitMs       Unit = "ms"
	UnitBytes    Unit = "bytes"
	UnitSamples  Unit = "samples"
	UnitCount    Unit = "count"
	UnitPriority Unit = "priority" // nano-ros normalised task priority, 0 (lowest) … 31
)

// EnvKind says how a build front-end spells a knob.
type EnvKind int

const (
	// EnvCanonical is the NROS_* build-environment spelling (RFC-0103 mechanical
	// spelling where nano-ros has none yet).
	EnvCanonical EnvKind = iota + 1
	// EnvDeprecated is a ZPICO_* alias still read by nano-ros build scripts;
	// using it works and draws a warning.
	EnvDeprecated
	// EnvKconfig is the Zephyr Kconfig symbol (prj.conf / .config).
	EnvKconfig
)

func (k EnvKind) String() string {
	switch k {
	case EnvCanonical:
		return "env"
	case EnvDeprecated:
		return "deprecated"
	case EnvKconfig:
		return "kconfig"
	}
	return "invalid"
}

// EnvName is one environment or Kconfig spelling of a knob.
type EnvName struct {
	Name string
	Kind EnvKind
}

// Knob describes one device-side compile-time knob the gateway models.
//
// ID is the canonical dotted id; it is also the TOML key below the [knobs]
// table of a platform or board profile: "zenoh.tx.batch" is `batch` in
// `[knobs.zenoh.tx]`.
type Knob struct {
	ID       string
	Type     Type
	Unit     Unit
	Min, Max int64     // inclusive valid range (Bool: 0, 1)
	Default  int64     // builtin default (Bool: 0 or 1)
	Env      []EnvName // shared with the registry: read-only
	Meaning  string    // one line
	Source   string    // where the builtin default comes from
	// Derivable knobs accept -1 from env/Kconfig: "derive at build time from
	// the image's message inventory" (nano-ros phase-403, newer zephyr/Kconfig
	// defaults). The gateway cannot see that inventory, so -1 defers to the
	// rung below, with a warning.
	Derivable bool
}

// Table is the TOML table that holds the knob, e.g. "knobs.zenoh.tx".
func (k Knob) Table() string {
	i := strings.LastIndexByte(k.ID, '.')
	return "knobs." + k.ID[:i]
}

// Key is the TOML key inside Table, e.g. "batch".
func (k Knob) Key() string { return k.ID[strings.LastIndexByte(k.ID, '.')+1:] }

// TOMLKey is the full dotted TOML path, e.g. "knobs.zenoh.tx.batch".
func (k Knob) TOMLKey() string { return "knobs." + k.ID }

// Format renders a value of this knob: "true"/"false" for Bool, the decimal
// integer otherwise.
func (k Knob) Format(v int64) string {
	if k.Type == Bool {
		return strconv.FormatBool(v != 0)
	}
	return strconv.FormatInt(v, 10)
}

// EnvNames returns the knob's spellings of one kind.
func (k Knob) EnvNames(kind EnvKind) []string {
	var out []string
	for _, e := range k.Env {
		if e.Kind == kind {
			out = append(out, e.Name)
		}
	}
	return out
}

// RangeString renders the valid range, e.g. "64..65535" or "true|false".
func (k Knob) RangeString() string {
	if k.Type == Bool {
		return "true|false"
	}
	return strconv.FormatInt(k.Min, 10) + ".." + strconv.FormatInt(k.Max, 10)
}

// Knob ids the gateway reads. Each is an entry of Registry.
const (
	TxBatch                 = "zenoh.tx.batch"
	TxFlushMs               = "zenoh.tx.flush_ms"
	TxSplitLock             = "zenoh.tx.split_lock"
	SocketTimeoutMs         = "zenoh.link.socket_timeout_ms"
	LeaseMs                 = "zenoh.link.lease_ms"
	LeaseExpireFactor       = "zenoh.link.lease_expire_factor"
	BatchUnicastSize        = "zenoh.wire.batch_unicast_size"
	BatchMulticastSize      = "zenoh.wire.batch_multicast_size"
	FragMaxSize             = "zenoh.wire.frag_max_size"
	Fragmentation           = "zenoh.wire.fragmentation"
	SubscriberRingDepth     = "zenoh.limits.subscriber_ring_depth"
	SubscriberBufferSize    = "zenoh.limits.subscriber_buffer_size"
	SubscriberLargeSize     = "zenoh.limits.subscriber_large_size"
	SubscriberSizeThreshold = "zenoh.limits.subscriber_size_threshold"
	MaxLargeSubscribers     = "zenoh.limits.max_large_subscribers"
	MaxPublishers           = "zenoh.limits.max_publishers"
	MaxSubscribers          = "zenoh.limits.max_subscribers"
	MaxQueryables           = "zenoh.limits.max_queryables"
	MaxLiveliness           = "zenoh.limits.max_liveliness"
	ReadTaskPriority        = "zenoh.tasks.read_priority"
	LeaseTaskPriority       = "zenoh.tasks.lease_priority"
	NetMaxSockets           = "net.max_sockets"
	NetMaxUDPSockets        = "net.max_udp_sockets"
	NetBufferSize           = "net.buffer_size"
	NetConnectTimeoutMs     = "net.connect_timeout_ms"
	NetSocketTimeoutMs      = "net.socket_timeout_ms"
	XRCEStreamHistory       = "xrce.stream_history"
	XRCECustomTransportMTU  = "xrce.custom_transport_mtu"
)

func env(canonical, deprecated, kconfig string) []EnvName {
	var out []EnvName
	if canonical != "" {
		out = append(out, EnvName{canonical, EnvCanonical})
	}
	if deprecated != "" {
		out = append(out, EnvName{deprecated, EnvDeprecated})
	}
	if kconfig != "" {
		out = append(out, EnvName{kconfig, EnvKconfig})
	}
	return out
}

const maxInt32 = 1<<31 - 1

// registry is the table of anchors.md §2.1. Sources: nano-ros (R6)
// platform_config.rs, nros-zpico-build runner.rs KCONFIG_KNOBS, zephyr/Kconfig,
// nros-rmw-zenoh build.rs, nros-smoltcp build.rs, nros-rmw-xrce-cffi build.rs;
// zenoh-pico (R9) include/zenoh-pico/config.h.in.
var registry = []Knob{
	{ID: TxBatch, Type: Bool, Max: 1, Default: 0,
		Env:     env("NROS_ZENOH_TX_BATCH", "ZPICO_TX_BATCH", "CONFIG_NROS_ZENOH_TX_BATCH"),
		Meaning: "coalesce publishes into one socket send per flush instead of one send per put",
		Source:  "nano-ros platform_config.rs BUILTIN_TX_BATCH"},
	{ID: TxFlushMs, Type: Int, Unit: UnitMs, Min: 1, Max: 60000, Default: 50,
		Env:     env("NROS_ZENOH_TX_FLUSH_MS", "ZPICO_TX_BATCH_FLUSH_MS", "CONFIG_NROS_ZENOH_TX_BATCH_FLUSH_MS"),
		Meaning: "flush thread period: the most publish latency batching adds",
		Source:  "nano-ros BUILTIN_TX_FLUSH_MS; zpico.c fallback 50"},
	{ID: TxSplitLock, Type: Bool, Max: 1, Default: 0,
		Env:     env("NROS_ZENOH_TX_SPLIT_LOCK", "ZPICO_TX_SPLIT_LOCK", "CONFIG_NROS_ZENOH_TX_SPLIT_LOCK"),
		Meaning: "publishers keep appending while a flush is on the wire (needs batch and threads)",
		Source:  "nano-ros platform_config.rs; fork Z_FEATURE_TX_SPLIT_LOCK"},
	{ID: SocketTimeoutMs, Type: Int, Unit: UnitMs, Min: 1, Max: 600000, Default: 100,
		Env:     env("NROS_ZENOH_SOCKET_TIMEOUT_MS", "", "CONFIG_NROS_ZENOH_SOCKET_TIMEOUT_MS"),
		Meaning: "socket receive window of the read task; on Zephyr ~1 send per window",
		Source:  "zenoh-pico Z_CONFIG_SOCKET_TIMEOUT (config.h.in)"},
	{ID: LeaseMs, Type: Int, Unit: UnitMs, Min: 1000, Max: 3600000, Default: 10000,
		Env:     env("NROS_ZENOH_LEASE_MS", "", "CONFIG_NROS_ZENOH_LEASE_MS"),
		Meaning: "transport lease announced in OPEN; the session expires after it",
		Source:  "zenoh-pico Z_TRANSPORT_LEASE"},
	{ID: LeaseExpireFactor, Type: Int, Unit: UnitCount, Min: 1, Max: 100, Default: 3,
		Env:     env("NROS_ZENOH_LEASE_EXPIRE_FACTOR", "", "CONFIG_NROS_ZENOH_LEASE_FACTOR"),
		Meaning: "keep-alives per lease (keep-alive period = lease / factor)",
		Source:  "zenoh-pico Z_TRANSPORT_LEASE_EXPIRE_FACTOR"},
	{ID: BatchUnicastSize, Type: Int, Unit: UnitBytes, Min: 64, Max: 65535, Default: 1024,
		Env:     env("NROS_ZENOH_BATCH_UNICAST_SIZE", "ZPICO_BATCH_UNICAST_SIZE", "CONFIG_NROS_BATCH_UNICAST_SIZE"),
		Meaning: "unicast batch (receive buffer) size, negotiated in INIT",
		Source:  "nros-zpico-build runner.rs (embedded 1024; POSIX 65535)"},
	{ID: BatchMulticastSize, Type: Int, Unit: UnitBytes, Min: 64, Max: 65535, Default: 1024,
		Env:     env("NROS_ZENOH_BATCH_MULTICAST_SIZE", "ZPICO_BATCH_MULTICAST_SIZE", ""),
		Meaning: "multicast batch size, announced in JOIN",
		Source:  "nros-zpico-build runner.rs (POSIX 8192; else 1024)"},
	{ID: FragMaxSize, Type: Int, Unit: UnitBytes, Min: 64, Max: maxInt32, Default: 2048,
		Env:     env("NROS_ZENOH_FRAG_MAX_SIZE", "ZPICO_FRAG_MAX_SIZE", "CONFIG_NROS_FRAG_MAX_SIZE"),
		Meaning: "largest reassembled message; larger ones are dropped silently",
		Source:  "nros-zpico-build runner.rs (embedded 2048; POSIX 65535)"},
	{ID: Fragmentation, Type: Bool, Max: 1, Default: 1,
		Env:     env("NROS_ZENOH_FRAGMENTATION", "", ""),
		Meaning: "fragment reassembly compiled in; off means one message per batch",
		Source:  "zenoh-pico Z_FEATURE_FRAGMENTATION"},
	{ID: SubscriberRingDepth, Type: Int, Unit: UnitSamples, Min: 1, Max: 65535, Default: 4,
		Env:     env("NROS_ZENOH_SUBSCRIBER_RING_DEPTH", "ZPICO_SUBSCRIBER_RING_DEPTH", "CONFIG_NROS_SUBSCRIBER_RING_DEPTH"),
		Meaning: "per-subscriber receive ring; a full ring drops the newest sample",
		Source:  "nros-rmw-zenoh build.rs"},
	{ID: SubscriberBufferSize, Type: Int, Unit: UnitBytes, Min: 16, Max: maxInt32, Default: 1024,
		Env:     env("NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE", "ZPICO_SUBSCRIBER_BUFFER_SIZE", "CONFIG_NROS_SUBSCRIBER_BUFFER_SIZE"),
		Meaning: "small-class subscriber slot; a larger payload is dropped",
		Source:  "nros-rmw-zenoh build.rs", Derivable: true},
	{ID: SubscriberLargeSize, Type: Int, Unit: UnitBytes, Min: 16, Max: maxInt32, Default: 16384,
		Env:     env("NROS_ZENOH_SUBSCRIBER_LARGE_SIZE", "ZPICO_SUBSCRIBER_LARGE_SIZE", "CONFIG_NROS_SUBSCRIBER_LARGE_SIZE"),
		Meaning: "large-class subscriber slot size",
		Source:  "nros-rmw-zenoh build.rs", Derivable: true},
	{ID: SubscriberSizeThreshold, Type: Int, Unit: UnitBytes, Min: 16, Max: maxInt32, Default: 2048,
		Env:     env("NROS_ZENOH_SUBSCRIBER_SIZE_THRESHOLD", "ZPICO_SUBSCRIBER_SIZE_THRESHOLD", ""),
		Meaning: "declared message size above which a subscriber gets a large slot",
		Source:  "nros-rmw-zenoh build.rs"},
	{ID: MaxLargeSubscribers, Type: Int, Unit: UnitCount, Min: 0, Max: 1024, Default: 2,
		Env:     env("NROS_ZENOH_MAX_LARGE_SUBSCRIBERS", "ZPICO_MAX_LARGE_SUBSCRIBERS", "CONFIG_NROS_MAX_LARGE_SUBSCRIBERS"),
		Meaning: "number of large-class subscriber slots",
		Source:  "nros-rmw-zenoh build.rs", Derivable: true},
	{ID: MaxPublishers, Type: Int, Unit: UnitCount, Min: 1, Max: 1024, Default: 8,
		Env:     env("NROS_ZENOH_MAX_PUBLISHERS", "ZPICO_MAX_PUBLISHERS", "CONFIG_NROS_MAX_PUBLISHERS"),
		Meaning: "publisher table size",
		Source:  "nros-zpico-build runner.rs"},
	{ID: MaxSubscribers, Type: Int, Unit: UnitCount, Min: 1, Max: 1024, Default: 8,
		Env:     env("NROS_ZENOH_MAX_SUBSCRIBERS", "ZPICO_MAX_SUBSCRIBERS", "CONFIG_NROS_MAX_SUBSCRIBERS"),
		Meaning: "subscriber table size",
		Source:  "nros-zpico-build runner.rs"},
	{ID: MaxQueryables, Type: Int, Unit: UnitCount, Min: 1, Max: 1024, Default: 8,
		Env:     env("NROS_ZENOH_MAX_QUERYABLES", "ZPICO_MAX_QUERYABLES", "CONFIG_NROS_MAX_QUERYABLES"),
		Meaning: "queryable table size (hosted targets 32)",
		Source:  "nros-zpico-build runner.rs"},
	{ID: MaxLiveliness, Type: Int, Unit: UnitCount, Min: 1, Max: 1024, Default: 16,
		Env:     env("NROS_ZENOH_MAX_LIVELINESS", "ZPICO_MAX_LIVELINESS", "CONFIG_NROS_MAX_LIVELINESS"),
		Meaning: "liveliness token table size",
		Source:  "nros-zpico-build runner.rs"},
	{ID: ReadTaskPriority, Type: Int, Unit: UnitPriority, Min: 0, Max: 31, Default: 16,
		Env:     env("NROS_ZENOH_READ_PRIORITY", "ZPICO_READ_TASK_PRIORITY", "CONFIG_NROS_ZENOH_READ_PRIORITY"),
		Meaning: "zenoh-pico read task priority (normalised 0-31)",
		Source:  "zpico.c"},
	{ID: LeaseTaskPriority, Type: Int, Unit: UnitPriority, Min: 0, Max: 31, Default: 16,
		Env:     env("NROS_ZENOH_LEASE_PRIORITY", "ZPICO_LEASE_TASK_PRIORITY", "CONFIG_NROS_ZENOH_LEASE_PRIORITY"),
		Meaning: "zenoh-pico lease task priority (normalised 0-31)",
		Source:  "zpico.c"},
	{ID: NetMaxSockets, Type: Int, Unit: UnitCount, Min: 1, Max: 64, Default: 1,
		Env:     env("NROS_SMOLTCP_MAX_SOCKETS", "ZPICO_SMOLTCP_MAX_SOCKETS", ""),
		Meaning: "smoltcp TCP sockets (bare metal)",
		Source:  "nros-smoltcp build.rs"},
	{ID: NetMaxUDPSockets, Type: Int, Unit: UnitCount, Min: 0, Max: 64, Default: 1,
		Env:     env("NROS_SMOLTCP_MAX_UDP_SOCKETS", "ZPICO_SMOLTCP_MAX_UDP_SOCKETS", ""),
		Meaning: "smoltcp UDP sockets (bare metal; 4 with rtps)",
		Source:  "nros-smoltcp build.rs"},
	{ID: NetBufferSize, Type: Int, Unit: UnitBytes, Min: 64, Max: 1 << 20, Default: 2048,
		Env:     env("NROS_SMOLTCP_BUFFER_SIZE", "ZPICO_SMOLTCP_BUFFER_SIZE", ""),
		Meaning: "smoltcp per-socket rx/tx buffer",
		Source:  "nros-smoltcp build.rs"},
	{ID: NetConnectTimeoutMs, Type: Int, Unit: UnitMs, Min: 1, Max: 600000, Default: 30000,
		Env:     env("NROS_SMOLTCP_CONNECT_TIMEOUT_MS", "ZPICO_SMOLTCP_CONNECT_TIMEOUT_MS", ""),
		Meaning: "smoltcp TCP connect timeout",
		Source:  "nros-smoltcp build.rs"},
	{ID: NetSocketTimeoutMs, Type: Int, Unit: UnitMs, Min: 1, Max: 600000, Default: 10000,
		Env:     env("NROS_SMOLTCP_SOCKET_TIMEOUT_MS", "ZPICO_SMOLTCP_SOCKET_TIMEOUT_MS", ""),
		Meaning: "smoltcp socket I/O timeout",
		Source:  "nros-smoltcp build.rs"},
	{ID: XRCEStreamHistory, Type: Int, Unit: UnitSamples, Min: 4, Max: 65535, Default: 16,
		Env:     env("NROS_XRCE_STREAM_HISTORY", "", "CONFIG_NROS_XRCE_STREAM_HISTORY"),
		Meaning: "XRCE reliable stream history (XRCE backend only)",
		Source:  "nros-rmw-xrce internal.h XRCE_STREAM_HISTORY; zephyr/Kconfig default 16"},
	{ID: XRCECustomTransportMTU, Type: Int, Unit: UnitBytes, Min: 64, Max: 65535, Default: 512,
		Env:     env("NROS_XRCE_CUSTOM_TRANSPORT_MTU", "", "CONFIG_NROS_XRCE_TRANSPORT_MTU"),
		Meaning: "XRCE custom transport MTU (XRCE backend only)",
		Source:  "nros-rmw-xrce-cffi build.rs"},
}

var (
	byID  = map[string]int{}
	byEnv = map[string]struct {
		knob int
		name EnvName
	}{}
)

func init() {
	for i, k := range registry {
		byID[k.ID] = i
		for _, e := range k.Env {
			byEnv[e.Name] = struct {
				knob int
				name EnvName
			}{i, e}
		}
	}
}

// Registry returns every knob, in display order. The slice is a copy.
func Registry() []Knob {
	out := slices.Clone(registry)
	for i := range out {
		out[i].Env = slices.Clone(out[i].Env)
	}
	return out
}

// Lookup finds a knob by its id ("zenoh.tx.batch").
func Lookup(id string) (Knob, bool) {
	i, ok := byID[id]
	if !ok {
		return Knob{}, false
	}
	return registry[i], true
}

// LookupEnv finds the knob an environment or Kconfig variable sets.
func LookupEnv(name string) (Knob, EnvName, bool) {
	e, ok := byEnv[name]
	if !ok {
		return Knob{}, EnvName{}, false
	}
	return registry[e.knob], e.name, true
}
