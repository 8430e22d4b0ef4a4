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
