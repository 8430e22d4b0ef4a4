package bridge_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/picobridge/picobridge/bridge"
)

// The defaults are zenoh-bridge-ros2dds's (config.rs 1.10:
// DEFAULT_TRANSIENT_LOCAL_CACHE_MULTIPLIER 10, no max frequencies, no
// priorities, no allow/deny) except reliable_routes_blocking: theirs is true,
// ours false, because a blocked put would hold the route for every device
// behind it (docs/bridge.md).
func TestRoutesConfigROS2DDSDefaults(t *testing.T) {
	c := bridge.DefaultConfig()
	r := c.Routes
	require.False(t, r.ReliableRoutesBlocking)
	require.Equal(t, 10, r.TransientLocalCacheMultiplier)
	require.Empty(t, r.PubMaxFrequencies)
	require.Empty(t, r.PubPriorities)
	require.False(t, r.Allow.Set())
	require.False(t, r.Deny.Set())
	rt := bridge.NewRoutes(c)
	for k := bridge.KindPublisher; k <= bridge.KindActionClient; k++ {
		require.True(t, rt.AllowedKind(k, "/anything"), k.String())
	}
}

// routes.allow as zenoh-bridge-ros2dds's allow block (its config.rs
// test_allowance, same names and expectations): a kind with a list bridges
// what matches (full match), a kind without one bridges nothing.
func TestRoutesAllowPerKind(t *testing.T) {
	r := bridge.NewRoutes(testConfig(t, `
routes:
  allow:
    publishers: ["/tf", ".*/pose"]
    subscribers: []
    service_servers: [".*"]
    action_servers: [".*/rotate_absolute"]
    action_clients: [""]
`))
	pub, sub := bridge.KindPublisher, bridge.KindSubscriber
	for _, c := range []struct {
		k    bridge.EntityKind
		name string
		want bool
	}{
		{pub, "/tf", true}, {pub, "/x/y/pose", true}, {pub, "/abc/rotate_absolute", false}, {pub, "/cmd_vel", false},
		{sub, "/tf", false}, {sub, "/x/y/pose", false}, {sub, "/cmd_vel", false},
		{bridge.KindServiceServer, "/tf", true}, {bridge.KindServiceServer, "/some_pseudo_random_name", true},
		{bridge.KindServiceClient, "/tf", false}, {bridge.KindServiceClient, "/some_pseudo_random_name", false},
		{bridge.KindActionServer, "/abc/rotate_absolute", true}, {bridge.KindActionServer, "/cmd_vel", false},
		{bridge.KindActionClient, "/abc/rotate_absolute", false}, {bridge.KindActionClient, "/tf", false},
	} {
		require.Equal(t, c.want, r.AllowedKind(c.k, c.name), "%s %s", c.k, c.name)
	}
	// the DDS entity's side picks the kind; an action's topics and
	// services are checked as the action's, under its name
	require.True(t, r.AllowedTopic(true, "/tf"))
	require.False(t, r.AllowedTopic(false, "/tf"))
	require.True(t, r.AllowedTopic(true, "/abc/rotate_absolute/_action/feedback"), "feedback is published by the action server")
	require.False(t, r.AllowedTopic(false, "/abc/rotate_absolute/_action/status"), "a status subscriber is the action client's")
	require.True(t, r.AllowedService(true, "/abc/rotate_absolute/_action/send_goal"))
	require.False(t, r.AllowedService(false, "/abc/rotate_absolute/_action/send_goal"))
	require.True(t, r.AllowedService(true, "/set_bool"))
	require.False(t, r.AllowedService(false, "/set_bool"))
	require.True(t, r.AllowSet())
	require.True(t, r.Allowed("/tf"), "Allowed: either side")
	require.False(t, r.Allowed("/cmd_vel"))
}

// routes.deny per kind (config.rs test_allowance's deny half): a name the
// list of its kind matches is refused, a kind without a list refuses none.
func TestRoutesDenyPerKind(t *testing.T) {
	r := bridge.NewRoutes(testConfig(t, `
routes:
  deny:
    publishers: ["/tf", ".*/pose"]
    subscribers: []
    service_servers: [".*"]
    action_servers: [".*/rotate_absolute"]
    action_clients: [""]
`))
	for _, c := range []struct {
		k    bridge.EntityKind
		name string
		want bool
	}{
		{bridge.KindPublisher, "/tf", false}, {bridge.KindPublisher, "/x/y/pose", false}, {bridge.KindPublisher, "/cmd_vel", true},
		{bridge.KindSubscriber, "/tf", true}, {bridge.KindSubscriber, "/x/y/pose", true},
		{bridge.KindServiceServer, "/tf", false}, {bridge.KindServiceServer, "/cmd_vel", false},
		{bridge.KindServiceClient, "/tf", true},
		{bridge.KindActionServer, "/abc/rotate_absolute", false}, {bridge.KindActionServer, "/cmd_vel", true},
		{bridge.KindActionClient, "/abc/rotate_absolute", true},
	} {
		require.Equal(t, c.want, r.AllowedKind(c.k, c.name), "%s %s", c.k, c.name)
	}
	require.False(t, r.AllowSet())
	require.True(t, r.AllowedTopic(false, "/tf"))
	require.False(t, r.AllowedTopic(true, "/tf"))
}

// The plain-list form (picobridge's earlier one, and -a/--allow) applies to
// every kind; with both allow and deny, deny wins (zenoh-bridge-ros2dds
// refuses that configuration).
func TestRoutesAllowFlatListEveryKind(t *testing.T) {
	r := bridge.NewRoutes(testConfig(t, `
routes:
  allow: ["/scan", "/fib"]
  deny: {publishers: ["/scan"]}
`))
	for k := bridge.KindPublisher; k <= bridge.KindActionClient; k++ {
		require.True(t, r.AllowedKind(k, "/fib"), k.String())
		require.False(t, r.AllowedKind(k, "/other"), k.String())
	}
	require.False(t, r.AllowedKind(bridge.KindPublisher, "/scan"), "deny wins")
	require.True(t, r.AllowedKind(bridge.KindSubscriber, "/scan"))
	require.True(t, r.AllowedService(false, "/fib/_action/get_result"))

	// an override (-a) replaces the mapping with a flat list, and back
	c := testConfig(t, "routes: {allow: {publishers: [/a]}}\n")
	require.NoError(t, c.Override("routes.allow", `["/b"]`))
	require.NoError(t, c.Validate())
	require.True(t, bridge.NewRoutes(c).AllowedKind(bridge.KindSubscriber, "/b"))
	require.False(t, bridge.NewRoutes(c).AllowedKind(bridge.KindPublisher, "/a"))
	require.NoError(t, c.Override("routes.allow.publishers", `["/p"]`))
	require.NoError(t, c.Validate())
	rt := bridge.NewRoutes(c)
	require.True(t, rt.AllowedKind(bridge.KindPublisher, "/p"))
	require.False(t, rt.AllowedKind(bridge.KindPublisher, "/b"))
	require.True(t, rt.AllowedKind(bridge.KindSubscriber, "/b"), "the other kinds keep the plain list")
}

func TestRoutesAllowDenyRefused(t *testing.T) {
	_, err := bridge.ParseConfig("pb.yaml", []byte(`
routes:
  allow:
    publisher: ["/tf"]
    subscribers: ["(x"]
  deny: 3
`))
	require.Error(t, err)
	require.Equal(t, `pb.yaml:4:5: routes.allow.publisher: unknown key in routes.allow (allowed: action_clients, action_servers, publishers, service_clients, service_servers, subscribers)
pb.yaml:5:19: routes.allow.subscribers[0]: bad regular expression: missing closing )
pb.yaml:6:9: routes.deny: want a list of regexes (every kind) or a mapping with keys action_clients, action_servers, publishers, service_clients, service_servers, subscribers (got "3")`, err.Error())

	// service kinds in routes.allow and services.allow both: which wins is unclear
	_, err = bridge.ParseConfig("pb.yaml", []byte(`
routes:
  allow: {service_servers: ["/a"]}
services:
  allow: {service_servers: ["/b"]}
`))
	require.EqualError(t, err, `pb.yaml:3:28: routes.allow.service_servers: set in services.allow too: give the service and action kinds in one place (routes.allow, zenoh-bridge-ros2dds's layout; or services.allow)`)
}

// pub_max_frequencies entries: "<regex>=<Hz>", regex not anchored, first
// match wins (config.rs get_pub_max_frequencies); a bare number is every
// topic (its deserialize_vec_regex_f32).
func TestPubMaxFrequenciesParse(t *testing.T) {
	c := testConfig(t, `
routes:
  pub_max_frequencies: ["/scan=10", ".*/camera/.*=2.5", "/scan2=100"]
`)
	r := c.Routes
	m, ok := r.MaxFrequencyOf("/scan")
	require.True(t, ok)
	require.Equal(t, 10.0, m.Hz)
	require.Equal(t, 100*time.Millisecond, m.Period())
	m, ok = r.MaxFrequencyOf("/scan2")
	require.True(t, ok)
	require.Equal(t, 10.0, m.Hz, "not anchored: /scan matches /scan2 first")
	m, ok = r.MaxFrequencyOf("/bot/camera/image")
	require.True(t, ok)
	require.Equal(t, 400*time.Millisecond, m.Period())
	_, ok = r.MaxFrequencyOf("/odom")
	require.False(t, ok)

	c = testConfig(t, "routes: {pub_max_frequencies: 20}\n")
	m, ok = c.Routes.MaxFrequencyOf("/anything")
	require.True(t, ok)
	require.Equal(t, 20.0, m.Hz)

	_, err := bridge.ParseConfig("pb.yaml", []byte(`
routes:
  pub_max_frequencies:
    - /scan
    - "/scan=fast"
    - "/scan=0"
    - "(x=1"
`))
	require.Error(t, err)
	require.Equal(t, `pb.yaml:4:7: routes.pub_max_frequencies[0]: want "<regex>=<Hz>" (got "/scan")
pb.yaml:5:7: routes.pub_max_frequencies[1]: frequency of "/scan": want a number of Hz > 0, e.g. "/scan=10" (got "fast")
pb.yaml:6:7: routes.pub_max_frequencies[2]: frequency of "/scan": want a number of Hz > 0, e.g. "/scan=10" (got "0")
pb.yaml:7:7: routes.pub_max_frequencies[3]: bad regular expression "(x": missing closing )`, err.Error())
	_, err = bridge.ParseConfig("pb.yaml", []byte("routes:\n  pub_max_frequencies: fast\n"))
	require.EqualError(t, err, `pb.yaml:2:24: routes.pub_max_frequencies: want a list of "<regex>=<Hz>" or a number of Hz > 0 for every topic (got "fast")`)
}

// pub_priorities entries: "<regex>=<1..7>[:express]" (config.rs
// deserialize_vec_regex_prio), not anchored, first match; an express or
// priority 1..2 entry makes the route critical, any other entry
// noncritical; routes.critical still wins.
func TestPubPrioritiesParseAndCriticality(t *testing.T) {
	c := testConfig(t, `
routes:
  critical: ["/estop"]
  pub_priorities: ["/cmd_vel=1:express", "/camera=6", "/pose=2", "/tf=4:express", "/estop=7"]
`)
	r := bridge.NewRoutes(c)
	for _, x := range []struct {
		topic   string
		prio    uint8
		express bool
		crit    bridge.Criticality
	}{
		{"/cmd_vel", 1, true, bridge.Critical},
		{"/bot/camera/image", 6, false, bridge.Noncritical},
		{"/pose", 2, false, bridge.Critical},
		{"/tf", 4, true, bridge.Critical},
		{"/estop", 7, false, bridge.Critical},
		{"/odom", 0, false, bridge.Noncritical},
	} {
		rt, ok := r.Resolve(x.topic, "t/msg/T", "")
		require.True(t, ok)
		require.Equal(t, x.prio, rt.Priority, x.topic)
		require.Equal(t, x.express, rt.Express, x.topic)
		require.Equal(t, x.crit, rt.Criticality, x.topic)
	}
	c = testConfig(t, "routes: {default_criticality: critical, pub_priorities: [/camera=5]}\n")
	require.Equal(t, bridge.Noncritical, bridge.NewRoutes(c).CriticalityOf("/camera"), "an entry overrides default_criticality")
	require.Equal(t, bridge.Critical, bridge.NewRoutes(c).CriticalityOf("/odom"))

	_, err := bridge.ParseConfig("pb.yaml", []byte(`
routes:
  pub_priorities: ["/a=0", "/b=8:express", "/c=1:fast", "/d", {x: 1}]
`))
	require.Error(t, err)
	allowed := "allowed: 1 real_time, 2 interactive_high, 3 interactive_low, 4 data_high, 5 data, 6 data_low, 7 background"
	require.Equal(t, `pb.yaml:3:20: routes.pub_priorities[0]: priority of "/a": want 1..7, optionally followed by :express (got "0"; `+allowed+`)
pb.yaml:3:28: routes.pub_priorities[1]: priority of "/b": want 1..7, optionally followed by :express (got "8:express"; `+allowed+`)
pb.yaml:3:44: routes.pub_priorities[2]: priority of "/c": want 1..7, optionally followed by :express (got "1:fast"; `+allowed+`)
pb.yaml:3:57: routes.pub_priorities[3]: want "<regex>=<1..7>[:express]" (got "/d")
pb.yaml:3:63: routes.pub_priorities[4]: want "<regex>=<1..7>[:express]", e.g. "/cmd_vel=1:express" (got a mapping)`, err.Error())
}

func TestReliableRoutesBlockingAndCacheMultiplierConfig(t *testing.T) {
	c := testConfig(t, "routes: {reliable_routes_blocking: false, transient_local_cache_multiplier: 3}\n")
	r := bridge.NewRoutes(c)
	require.False(t, r.ReliableBlocking())
	require.Equal(t, 3, r.TransientLocalCacheMultiplier())

	_, err := bridge.ParseConfig("pb.yaml", []byte(`
routes:
  reliable_routes_blocking: yes
  transient_local_cache_multiplier: 0
`))
	require.EqualError(t, err, `pb.yaml:3:29: routes.reliable_routes_blocking: want true or false (got "yes")`)
	_, err = bridge.ParseConfig("pb.yaml", []byte(`
routes:
  transient_local_cache_multiplier: 0
`))
	require.EqualError(t, err, `pb.yaml:3:37: routes.transient_local_cache_multiplier: must be in 1..10000 (got 0; zenoh-bridge-ros2dds default: 10)`)
}

// --print-config writes the new keys in a form the decoder reads back.
func TestRoutesConfigPrintRoundTrip(t *testing.T) {
	in := `
routes:
  allow: {publishers: ["/tf"], action_clients: [".*"]}
  deny: ["/x"]
  pub_max_frequencies: ["/scan=10", ".*=2.5"]
  pub_priorities: ["/cmd_vel=1:express", "/cam=6"]
  reliable_routes_blocking: false
  transient_local_cache_multiplier: 4
`
	c := testConfig(t, in)
	var buf bytes.Buffer
	require.NoError(t, yaml.NewEncoder(&buf).Encode(c))
	c2, err := bridge.ParseConfig("printed.yaml", buf.Bytes())
	require.NoError(t, err, buf.String())
	require.Equal(t, c.Routes.Allow.List(bridge.KindPublisher), c2.Routes.Allow.List(bridge.KindPublisher))
	require.Equal(t, c.Routes.Deny.List(bridge.KindServiceServer), c2.Routes.Deny.List(bridge.KindServiceServer))
	require.Len(t, c2.Routes.PubMaxFrequencies, 2)
	require.Len(t, c2.Routes.PubPriorities, 2)
	require.Contains(t, buf.String(), "- /cmd_vel=1:express")
	require.Contains(t, buf.String(), "- .*=2.5")
	require.Equal(t, 4, c2.Routes.TransientLocalCacheMultiplier)
}

// ros_discovery_info names the gateway's node with dds.nodename in
// dds.namespace (zenoh-bridge-ros2dds nodename/namespace), its Gid layout
// with dds.ros_distro; bad values name file:line and what is allowed (the
// announcement itself: server TestGatewayROSNode).
func TestDDSNodeConfig(t *testing.T) {
	c := testConfig(t, "dds: {namespace: /robot1, nodename: pico_gw, ros_distro: jazzy}\n")
	require.Equal(t, "/robot1", c.DDS.Namespace)
	require.Equal(t, "pico_gw", c.DDS.Nodename)
	require.Equal(t, "jazzy", c.DDS.ROSDistro)
	_, err := bridge.ParseConfig("pb.yaml", []byte(`
dds:
  namespace: robot1
  nodename: "a b"
  ros_distro: ardent
`))
	require.Error(t, err)
	require.Equal(t, `pb.yaml:3:14: dds.namespace: want "/" or /name[/name...] (got "robot1")
pb.yaml:4:13: dds.nodename: want [A-Za-z0-9_.-]{1,64} (got "a b")
pb.yaml:5:15: dds.ros_distro: want one of foxy, galactic, humble, iron, jazzy, kilted, rolling (got "ardent")`, err.Error())
}

// --cfg takes the plugin's keys as zenohd does (plugins/ros2dds/...).
func TestROS2DDSPluginKeys(t *testing.T) {
	for in, want := range map[string]string{
		"plugins/ros2dds/allow/publishers":                 "routes.allow.publishers",
		"plugins/ros2dds/pub_max_frequencies":              "routes.pub_max_frequencies",
		"plugins/ros2dds/pub_priorities":                   "routes.pub_priorities",
		"plugins/ros2dds/reliable_routes_blocking":         "routes.reliable_routes_blocking",
		"plugins/ros2dds/transient_local_cache_multiplier": "routes.transient_local_cache_multiplier",
		"plugins/ros2dds/queries_timeout/default":          "services.queries_timeout.default",
		"plugins/ros2dds/nodename":                         "dds.nodename",
		"plugins/ros2dds/namespace":                        "dds.namespace",
		"plugins/ros2dds/domain":                           "dds.domain",
	} {
		require.Equal(t, want, bridge.ZenohdKey(in), in)
	}
	c := bridge.DefaultConfig()
	require.NoError(t, c.OverrideFrom("--cfg plugins/ros2dds/pub_priorities", bridge.ZenohdKey("plugins/ros2dds/pub_priorities"), `["/cmd_vel=1:express"]`))
	require.NoError(t, c.Validate())
	p, ok := c.Routes.PriorityOf("/cmd_vel")
	require.True(t, ok)
	require.Equal(t, bridge.PubPriority{}.Priority+1, p.Priority)
	require.True(t, p.Express)
	err := c.OverrideFrom("--cfg plugins/ros2dds/pub_priorities", "routes.pub_priorities", `["/x=9"]`)
	require.ErrorContains(t, err, `--cfg plugins/ros2dds/pub_priorities: routes.pub_priorities[0]: priority of "/x": want 1..7`)
}
