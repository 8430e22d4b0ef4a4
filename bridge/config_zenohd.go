package bridge

import "strings"

// zenohdKeys maps zenohd's configuration keys (Zenoh 1.x DEFAULT_CONFIG.json5,
// dotted) to the keys of this configuration that hold the same setting.
// A key that starts with one of these prefixes is renamed by its prefix;
// keys zenohd and picobridge share (transport.link.tls.*,
// transport.auth.usrpwd.*, access_control) need no entry.
var zenohdKeys = []struct{ zenohd, ours string }{
	{"mode", "zenoh.mode"},
	{"id", "zenoh.id"},
	{"listen.endpoints", "zenoh.listen"},
	{"connect.endpoints", "zenoh.connect"},
	{"scouting", "zenoh.scouting"},
	{"routing", "zenoh.routing"},
	{"transport.link.rx.max_message_size", "transport.max_message_size"},
	// zenoh-bridge-ros2dds's plugin keys (plugins.ros2dds.*, its config.rs;
	// docs/bridge.md "zenoh-bridge-ros2dds keys")
	{"plugins.ros2dds.allow", "routes.allow"},
	{"plugins.ros2dds.deny", "routes.deny"},
	{"plugins.ros2dds.pub_max_frequencies", "routes.pub_max_frequencies"},
	{"plugins.ros2dds.pub_priorities", "routes.pub_priorities"},
	{"plugins.ros2dds.reliable_routes_blocking", "routes.reliable_routes_blocking"},
	{"plugins.ros2dds.transient_local_cache_multiplier", "routes.transient_local_cache_multiplier"},
	{"plugins.ros2dds.queries_timeout", "services.queries_timeout"},
	{"plugins.ros2dds.nodename", "dds.nodename"},
	{"plugins.ros2dds.namespace", "dds.namespace"},
	{"plugins.ros2dds.domain", "dds.domain"},
}

// ZenohdKey is the key of this configuration for key written as zenohd's
// --cfg takes it: with / or . between the parts (scouting/multicast/enabled,
// scouting.multicast.enabled) and named as zenohd names it (listen/endpoints
// is zenoh.listen, mode is zenoh.mode; zenohdKeys). A key of ours
// (zenoh.scouting.multicast.enabled, policy.batched.rate_hz) comes back as
// it is, with / turned into dots.
func ZenohdKey(key string) string {
	k := strings.ReplaceAll(strings.TrimSpace(key), "/", ".")
	for _, m := range zenohdKeys {
		if k == m.zenohd {
			return m.ours
		}
		if rest, ok := strings.CutPrefix(k, m.zenohd+"."); ok && !strings.HasPrefix(m.ours, m.zenohd) {
			return m.ours + "." + rest
		}
	}
	return k
}
