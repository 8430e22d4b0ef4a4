package bridge_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

func TestServicesConfigDefaultsAndTimeouts(t *testing.T) {
	c := bridge.DefaultConfig()
	s := c.Services
	require.True(t, s.Enabled)
	require.Equal(t, 256, s.MaxPending)
	q := s.QueriesTimeout
	require.Equal(t, 5*time.Second, q.TimeoutFor("/add_two_ints"))
	require.Equal(t, 5*time.Second, q.TimeoutFor("/fib/_action/send_goal"))
	require.Equal(t, 5*time.Second, q.TimeoutFor("/fib/_action/cancel_goal"))
	require.Equal(t, 300*time.Second, q.TimeoutFor("/fib/_action/get_result"))
	require.Equal(t, 5*time.Second, q.HistoryTimeout("/t"))

	c, err := bridge.ParseConfig("pb.yaml", []byte(`
services:
  queries_timeout: {default: 2s, services: 1s, actions: {send_goal: 3s}, transient_local: 4s}
`))
	require.NoError(t, err)
	q = c.Services.QueriesTimeout
	require.Equal(t, time.Second, q.TimeoutFor("/x"))
	require.Equal(t, 3*time.Second, q.TimeoutFor("/a/_action/send_goal"))
	require.Equal(t, 2*time.Second, q.TimeoutFor("/a/_action/cancel_goal"))
	require.Equal(t, 300*time.Second, q.TimeoutFor("/a/_action/get_result"))
	require.Equal(t, 4*time.Second, q.HistoryTimeout("/t"))
}

func TestServicesConfigRefused(t *testing.T) {
	_, err := bridge.ParseConfig("pb.yaml", []byte(`
services:
  queries_timeout: {default: 0s, services: -1s}
  max_pending: 0
`))
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "pb.yaml:3:30: services.queries_timeout.default: must be > 0 (got 0s")
	require.Contains(t, msg, "services.queries_timeout.services: must be ≥ 0 (got -1s; 0: queries_timeout.default)")
	require.Contains(t, msg, "pb.yaml:4:16: services.max_pending: must be in 1..65536 calls (got 0)")
	_, err = bridge.ParseConfig("pb.yaml", []byte("services:\n  queries_timeout: {default: 5}\n"))
	require.ErrorContains(t, err, `services.queries_timeout.default: cannot parse "5" as a duration`)
	_, err = bridge.ParseConfig("pb.yaml", []byte("services:\n  timeout: 5s\n"))
	require.ErrorContains(t, err, "services.timeout: unknown key in services (allowed: allow, deny, enabled, max_pending, queries_timeout)")
}

// Per-name timeouts as zenoh-bridge-ros2dds's queries_timeout lists: regex
// not anchored, first match wins, unmatched names take the default; action
// entries match the action's name; seconds as bare numbers are accepted.
func TestServicesConfigPerNameTimeouts(t *testing.T) {
	c, err := bridge.ParseConfig("pb.yaml", []byte(`
services:
  queries_timeout:
    default: 5.0s
    services: [".*/set_bool=1.0", "/set_.*=2s", "^/exact$=250ms"]
    actions:
      send_goal: 1.5
      get_result: [".*long_mission=3600", ".*short_action=10s"]
    transient_local: ["/map=30s"]
`))
	require.NoError(t, err)
	q := c.Services.QueriesTimeout
	require.Equal(t, time.Second, q.TimeoutFor("/robot/set_bool"))
	require.Equal(t, 2*time.Second, q.TimeoutFor("/set_mode"))
	require.Equal(t, 2*time.Second, q.TimeoutFor("/x/set_mode"), "not anchored")
	require.Equal(t, 250*time.Millisecond, q.TimeoutFor("/exact"))
	require.Equal(t, 5*time.Second, q.TimeoutFor("/other"))
	require.Equal(t, 1500*time.Millisecond, q.TimeoutFor("/any/_action/send_goal"))
	require.Equal(t, 5*time.Second, q.TimeoutFor("/any/_action/cancel_goal"))
	require.Equal(t, time.Hour, q.TimeoutFor("/bot/long_mission/_action/get_result"))
	require.Equal(t, 10*time.Second, q.TimeoutFor("/short_action/_action/get_result"))
	require.Equal(t, 5*time.Second, q.TimeoutFor("/fib/_action/get_result"), "a list replaces the 300s default; unmatched → default")
	require.Equal(t, 30*time.Second, q.HistoryTimeout("/map"))
	require.Equal(t, 5*time.Second, q.HistoryTimeout("/scan"))
	require.Equal(t, "[.*/set_bool=1s /set_.*=2s ^/exact$=250ms]", q.Services.String())
}

func TestServicesConfigPerNameTimeoutsRefused(t *testing.T) {
	_, err := bridge.ParseConfig("pb.yaml", []byte(`
services:
  queries_timeout:
    services: [".*/set_bool", "(=1s", "/x=0s", "/y=soon", {a: b}]
    actions: {get_result: {x: 1}}
`))
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, `pb.yaml:4:16: services.queries_timeout.services[0]: want "<regex>=<duration>" (got ".*/set_bool")`)
	require.Contains(t, msg, `pb.yaml:4:31: services.queries_timeout.services[1]: bad regular expression "(": missing closing )`)
	require.Contains(t, msg, `services.queries_timeout.services[2]: timeout of "/x" must be > 0 (got 0s)`)
	require.Contains(t, msg, `services.queries_timeout.services[3]: cannot parse "soon" as a duration`)
	require.Contains(t, msg, `services.queries_timeout.services[4]: want "<regex>=<duration>", e.g. ".*/set_bool=1s" (got a mapping)`)
	require.Contains(t, msg, `services.queries_timeout.actions.get_result: want a duration (1s, or seconds: 1.0) or a list of "<regex>=<duration>" (got a mapping)`)
}

// allow / deny per kind, as zenoh-bridge-ros2dds: full-match regexes; under
// allow a kind without a list bridges nothing of that kind; actions are
// checked by their action name with the action lists.
func TestServicesConfigAllowDeny(t *testing.T) {
	c := bridge.DefaultConfig()
	require.True(t, c.Services.Allowed(true, "/anything"))
	require.True(t, c.Services.Allowed(false, "/fib/_action/send_goal"))

	c, err := bridge.ParseConfig("pb.yaml", []byte(`
services:
  allow:
    service_servers: ["/add_.*", "/bot/set_bool"]
    action_clients: ["/fib"]
`))
	require.NoError(t, err)
	s := c.Services
	require.True(t, s.Allowed(true, "/add_two_ints"))
	require.False(t, s.Allowed(true, "/x/add_two_ints"), "full match")
	require.True(t, s.Allowed(true, "/bot/set_bool"))
	require.False(t, s.Allowed(false, "/add_two_ints"), "no service_clients list under allow: none")
	require.True(t, s.Allowed(false, "/fib/_action/get_result"))
	require.False(t, s.Allowed(true, "/fib/_action/get_result"), "no action_servers list")
	require.False(t, s.Allowed(false, "/fibo/_action/get_result"))

	c, err = bridge.ParseConfig("pb.yaml", []byte(`
services:
  deny:
    service_clients: [".*/private/.*"]
    action_servers: ["/nav"]
`))
	require.NoError(t, err)
	s = c.Services
	require.False(t, s.Allowed(false, "/bot/private/reset"))
	require.True(t, s.Allowed(true, "/bot/private/reset"), "deny lists only the clients")
	require.False(t, s.Allowed(true, "/nav/_action/send_goal"))
	require.True(t, s.Allowed(false, "/nav/_action/send_goal"))
	require.True(t, s.Allowed(true, "/other"))

	_, err = bridge.ParseConfig("pb.yaml", []byte(`
services:
  allow: {service_servers: ["/a"]}
  deny: {service_clients: ["/b"], topics: ["/c"], action_servers: ["(x"]}
`))
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "services.deny.topics: unknown key in services.deny (allowed: action_clients, action_servers, service_clients, service_servers)")
	require.Contains(t, msg, "services.deny.action_servers[0]: bad regular expression: missing closing )")
	_, err = bridge.ParseConfig("pb.yaml", []byte("services:\n  allow: {service_servers: [\"/a\"]}\n  deny: {service_clients: [\"/b\"]}\n"))
	require.ErrorContains(t, err, "pb.yaml:3:9: services.deny: services.allow and services.deny are exclusive (zenoh-bridge-ros2dds): set one")
}
