package bridge_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

func TestDefaultConfig(t *testing.T) {
	c := bridge.DefaultConfig()
	require.NoError(t, c.Validate())
	require.Equal(t, bridge.ModeRouter, c.Zenoh.Mode)
	require.Equal(t, []string{"tcp/0.0.0.0:7447", "udp/0.0.0.0:7447"}, c.Zenoh.Listen)
	require.Empty(t, c.Zenoh.Connect)
	require.Equal(t, 0, c.DDS.Domain)
	require.Equal(t, "/", c.DDS.Namespace)
	require.True(t, c.Routes.AutoBridge)
	require.Equal(t, bridge.KeyPlain, c.Routes.KeyStyle)
	require.Equal(t, bridge.Noncritical, c.Routes.DefaultCriticality)
	require.Equal(t, bridge.DefaultExpressDepth, c.Policy.Express.Depth)
	c.Policy.Express.Depth = 0
	require.ErrorContains(t, c.Validate(), "policy.express.depth: must be ≥ 1 (got 0)")
	c.Policy.Express.Depth = bridge.DefaultExpressDepth
	cl := c.Classifier
	require.Equal(t, 200*time.Millisecond, cl.ProbeInterval)
	require.Equal(t, 50, cl.Window)
	require.Equal(t, time.Second, cl.EvaluationInterval)
	require.Equal(t, 50*time.Millisecond, cl.DemoteRTT)
	require.Equal(t, 0.015, cl.DemoteLoss)
	require.Equal(t, 35*time.Millisecond, cl.PromoteRTT)
	require.Equal(t, 0.005, cl.PromoteLoss)
	require.Equal(t, 3, cl.Consecutive)
	require.False(t, cl.AllowUnknownState)
	require.Equal(t, 10.0, c.Policy.Batched.RateHz)
	require.Equal(t, 3.0, c.Policy.Batched.NoncriticalRateHz)
	require.Equal(t, 200*time.Millisecond, c.Policy.Batched.StaleAfter)
	require.Equal(t, "127.0.0.1:9464", c.Metrics.Listen)
}

func TestParseConfigOverDefault(t *testing.T) {
	c, err := bridge.ParseConfig("pb.yaml", []byte(`
zenoh:
  mode: peer
  connect: [tcp/10.0.0.2:7447]
routes:
  critical: ["/scan", "/cmd_.*"]
  key_style: rmw_zenoh
devices:
  list:
    - name: imu-1
      zid: A1B2C3
      platform: zephyr
      board: native_sim
      env: {ZPICO_TX_BATCH: "0"}
      class: noncritical
policy:
  batched:
    rate_hz: 20
`))
	require.NoError(t, err)
	require.Equal(t, bridge.ModePeer, c.Zenoh.Mode)
	require.Equal(t, []string{"tcp/0.0.0.0:7447", "udp/0.0.0.0:7447"}, c.Zenoh.Listen, "unset keys keep the default")
	require.Equal(t, 20.0, c.Policy.Batched.RateHz)
	require.Equal(t, 3.0, c.Policy.Batched.NoncriticalRateHz)
	require.True(t, c.Routes.Critical[0].Match("/scan"))
	require.False(t, c.Routes.Critical[0].Match("/scan2"), "patterns match the whole name")
	require.True(t, c.Routes.Critical[1].Match("/cmd_vel"))
	d := c.Device("imu-1")
	require.NotNil(t, d)
	require.Equal(t, bridge.OverrideNoncritical, d.Class)
	require.Equal(t, "zephyr", d.Platform)

	cat, err := firmware.Catalog()
	require.NoError(t, err)
	r, capa, err := c.ResolveProfile(cat, d.DeviceProfile)
	require.NoError(t, err)
	require.False(t, r.Bool(knobs.TxBatch))
	require.Equal(t, "pb.yaml", r.Get(knobs.TxBatch).Source.File)
	require.Positive(t, capa.MaxMessageBytes)
	require.Positive(t, capa.RingDepth)
}

// Every problem at once, each with file, line, column, key and the allowed values.
func TestConfigErrorsPositions(t *testing.T) {
	_, err := bridge.ParseConfig("pb.yaml", []byte(`zenoh:
  mode: bridge
  listen: [tcp/0.0.0.0]
routes:
  alow: [".*"]
  critical: ["(unclosed"]
classifier:
  window: many
  probe_interval: 200
  demote_loss: 2
devices:
  list:
    - name: a
      zid: xyz
    - name: a
      class: sometimes
policy:
  batched:
    rate_hz: -1
`))
	require.Error(t, err)
	var ce *knobs.ConfigError
	require.True(t, errors.As(err, &ce))
	// decode problems come first (all of them), in document order
	require.Equal(t, `pb.yaml:2:9: zenoh.mode: unknown value "bridge" (allowed: router, peer, client)
pb.yaml:5:3: routes.alow: unknown key in routes (allowed: allow, auto_bridge, critical, default_criticality, deny, key_style, pub_max_frequencies, pub_priorities, reliable_routes_blocking, transient_local_cache_multiplier)
pb.yaml:6:14: routes.critical[0]: bad regular expression: missing closing )
pb.yaml:8:11: classifier.window: want an integer (got "many")
pb.yaml:9:19: classifier.probe_interval: cannot parse "200" as a duration (want a number with a unit: ns, us, ms, s, m, h)
pb.yaml:16:14: devices.list[1].class: unknown value "sometimes" (allowed: auto, critical, noncritical)`, err.Error())
	require.ErrorIs(t, err, knobs.ErrUnknownKey)
	require.ErrorIs(t, err, knobs.ErrBadValue)

	// with the decode problems fixed, Validate reports range problems, all at once
	_, err = bridge.ParseConfig("pb.yaml", []byte(`zenoh:
  listen: [tcp/0.0.0.0]
classifier:
  demote_loss: 2
devices:
  list:
    - name: a
      zid: xyz
    - name: a
policy:
  batched:
    rate_hz: -1
`))
	require.Error(t, err)
	require.Equal(t, `pb.yaml:2:12: zenoh.listen[0]: want <host>:<port> after tcp/ (got "0.0.0.0") (allowed: tcp/<host>:<port>, udp/<host>:<port>, tls/<host>:<port>)
pb.yaml:8:12: devices.list[0].zid: want 1..16 bytes in hex (got "xyz")
pb.yaml:9:13: devices.list[1].name: "a" already names devices.list[0]
pb.yaml:4:16: classifier.demote_loss: must be a ratio in 0..1 (got 2)
pb.yaml:12:14: policy.batched.rate_hz: must be > 0 (got -1)`, err.Error())
	require.ErrorIs(t, err, knobs.ErrRange)
}

func TestConfigSyntaxAndTypeErrors(t *testing.T) {
	_, err := bridge.ParseConfig("pb.yaml", []byte("zenoh:\n  mode: [router\n"))
	require.ErrorIs(t, err, knobs.ErrSyntax)
	require.Contains(t, err.Error(), "pb.yaml:")

	_, err = bridge.ParseConfig("pb.yaml", []byte("zenoh: router\nroutes:\n  auto_bridge: yes please\ndds:\n  domain: 1.5\n"))
	require.Error(t, err)
	require.Equal(t, `pb.yaml:1:8: zenoh: want a mapping with keys connect, connect_as, id, listen, mode, routing, scouting (got "router")
pb.yaml:3:16: routes.auto_bridge: want true or false (got "yes please")
pb.yaml:5:11: dds.domain: want an integer (got "1.5")`, err.Error())

	c, err := bridge.ParseConfig("empty.yaml", nil)
	require.NoError(t, err)
	require.Equal(t, bridge.DefaultConfig().Zenoh, c.Zenoh)
}

func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pb.yaml")
	require.NoError(t, os.WriteFile(p, []byte("dds:\n  domain: 300\n"), 0o600))
	_, err := bridge.LoadConfig(p)
	require.EqualError(t, err, p+":2:11: dds.domain: must be in 0..232 (got 300)")
	_, err = bridge.LoadConfig(filepath.Join(dir, "missing.yaml"))
	require.Error(t, err)
}

func TestConfigOverride(t *testing.T) {
	c := bridge.DefaultConfig()
	require.NoError(t, c.Override("zenoh.listen", "[tcp/127.0.0.1:0]"))
	require.NoError(t, c.Override("zenoh.mode", "client"))
	require.NoError(t, c.Override("zenoh.connect", "[tcp/127.0.0.1:7447]"))
	require.NoError(t, c.Override("dds.domain", "7"))
	require.NoError(t, c.Validate())
	require.Equal(t, []string{"tcp/127.0.0.1:0"}, c.Zenoh.Listen)
	require.Equal(t, 7, c.DDS.Domain)

	err := c.Override("zenoh.lisen", "[]")
	require.ErrorIs(t, err, knobs.ErrUnknownKey)
	require.Contains(t, err.Error(), "allowed: connect, connect_as, id, listen, mode")
	require.ErrorIs(t, c.Override("zenoh.mode", "bridge"), knobs.ErrBadValue)

	// a flag-set value has no position: the message names the key only
	c.DDS.Domain = 999
	require.EqualError(t, c.Validate(), "dds.domain: must be in 0..232 (got 999)")
	require.NoError(t, c.Override("dds.domain", "300"))
	require.EqualError(t, c.Validate(), "dds.domain: must be in 0..232 (got 300)")

	require.NoError(t, c.OverrideFrom("--domain", "dds.domain", "301"))
	require.NoError(t, c.OverrideFrom("-l", "zenoh.listen", "[tcp/0.0.0.0, udp/0.0.0.0:7447]"))
	require.EqualError(t, c.Validate(), `-l: zenoh.listen[0]: want <host>:<port> after tcp/ (got "0.0.0.0") (allowed: tcp/<host>:<port>, udp/<host>:<port>, tls/<host>:<port>)
--domain: dds.domain: must be in 0..232 (got 301)`)
	require.EqualError(t, c.OverrideFrom("-m", "zenoh.mode", "bridge"), `-m: zenoh.mode: unknown value "bridge" (allowed: router, peer, client)`)

	// the default itself is not modified by overrides of a copy
	require.Equal(t, 0, bridge.DefaultConfig().DDS.Domain)
}

func FuzzParseConfig(f *testing.F) {
	f.Add(bridge.DefaultYAML)
	f.Add([]byte("zenoh: {mode: peer}\ndevices: {list: [{name: a, zid: ab}]}\n"))
	f.Add([]byte("a: &x [1]\nb: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := bridge.ParseConfig("fuzz.yaml", data)
		if err == nil {
			require.NoError(t, c.Validate())
		}
	})
}

// zenoh.connect_as: client (default) or router; a bad value and router
// outside router mode name the file, the key and the allowed values.
func TestConfigConnectAs(t *testing.T) {
	c := bridge.DefaultConfig()
	require.Equal(t, bridge.ConnectAsClient, c.Zenoh.ConnectAs)
	c, err := bridge.ParseConfig("pb.yaml", []byte("zenoh:\n  connect: [tcp/127.0.0.1:7447]\n  connect_as: router\n"))
	require.NoError(t, err)
	require.Equal(t, bridge.ConnectAsRouter, c.Zenoh.ConnectAs)

	_, err = bridge.ParseConfig("pb.yaml", []byte("zenoh:\n  connect_as: peer\n"))
	require.EqualError(t, err, `pb.yaml:2:15: zenoh.connect_as: unknown value "peer" (allowed: client, router)`)
	require.ErrorIs(t, err, knobs.ErrBadValue)

	_, err = bridge.ParseConfig("pb.yaml", []byte("zenoh:\n  mode: peer\n  connect_as: router\n"))
	require.EqualError(t, err, `pb.yaml:3:15: zenoh.connect_as: router needs zenoh.mode router (got mode "peer"; allowed here: client)`)
	require.ErrorIs(t, err, knobs.ErrRange)

	c = bridge.DefaultConfig()
	require.EqualError(t, c.OverrideFrom("--connect-as", "zenoh.connect_as", "bridge"), `--connect-as: zenoh.connect_as: unknown value "bridge" (allowed: client, router)`)
}

// zenoh.routing.router.linkstate.transport_weights (zenohd's
// routing/router/linkstate/transport_weights): entries {dst_zid, weight}
// reach the router as a map by zid; a bad zid, a weight outside
// 1..65535, a zid given twice, an unknown key and weights outside router
// mode name file:line:col, the key and the allowed values.
func TestConfigTransportWeights(t *testing.T) {
	require.Empty(t, bridge.DefaultConfig().Zenoh.Routing.Router.Linkstate.TransportWeights)
	c, err := bridge.ParseConfig("pb.yaml", []byte(`zenoh:
  routing:
    router:
      linkstate:
        transport_weights:
          - {dst_zid: a5, weight: 30}
          - dst_zid: 1234567890abcdef1122334455667788
            weight: 65535
`))
	require.NoError(t, err)
	m, err := c.Zenoh.Routing.TransportWeightMap()
	require.NoError(t, err)
	require.Equal(t, map[wire.ZID]uint16{
		wire.MustZID([]byte{0xa5}): 30,
		wire.MustZID([]byte{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xef, 0xcd, 0xab, 0x90, 0x78, 0x56, 0x34, 0x12}): 65535,
	}, m)

	_, err = bridge.ParseConfig("pb.yaml", []byte(`zenoh:
  routing:
    router:
      linkstate:
        transport_weights:
          - {dst_zid: xyz, weight: 30}
          - {dst_zid: "00", weight: 0}
          - {dst_zid: A5, weight: 65536}
          - {dst_zid: 0xa5, weight: 7}
          - {dst_zid: 112233445566778899aabbccddeeff0011, weight: -1}
`))
	require.EqualError(t, err, `pb.yaml:6:23: zenoh.routing.router.linkstate.transport_weights[0].dst_zid: want a zid as zenohd prints it: 1..32 hex digits (1..16 bytes), not all zero (got "xyz")
pb.yaml:7:23: zenoh.routing.router.linkstate.transport_weights[1].dst_zid: want a zid as zenohd prints it: 1..32 hex digits (1..16 bytes), not all zero (got "00")
pb.yaml:7:37: zenoh.routing.router.linkstate.transport_weights[1].weight: must be in 1..65535 (got 0)
pb.yaml:8:35: zenoh.routing.router.linkstate.transport_weights[2].weight: must be in 1..65535 (got 65536)
pb.yaml:9:23: zenoh.routing.router.linkstate.transport_weights[3].dst_zid: 0xa5 already has a weight in transport_weights[2] (allowed: one entry per zid)
pb.yaml:10:23: zenoh.routing.router.linkstate.transport_weights[4].dst_zid: want a zid as zenohd prints it: 1..32 hex digits (1..16 bytes), not all zero (got "112233445566778899aabbccddeeff0011")
pb.yaml:10:67: zenoh.routing.router.linkstate.transport_weights[4].weight: must be in 1..65535 (got -1)`)
	require.ErrorIs(t, err, knobs.ErrRange)

	_, err = bridge.ParseConfig("pb.yaml", []byte("zenoh:\n  routing:\n    router:\n      linkstate:\n        transport_weights: [{dst_zid: a5, wieght: 3}]\n"))
	require.EqualError(t, err, `pb.yaml:5:43: zenoh.routing.router.linkstate.transport_weights[0].wieght: unknown key in zenoh.routing.router.linkstate.transport_weights[0] (allowed: dst_zid, weight)`)
	require.ErrorIs(t, err, knobs.ErrUnknownKey)

	_, err = bridge.ParseConfig("pb.yaml", []byte("zenoh:\n  mode: peer\n  routing: {router: {linkstate: {transport_weights: [{dst_zid: a5, weight: 3}]}}}\n"))
	require.EqualError(t, err, `pb.yaml:3:53: zenoh.routing.router.linkstate.transport_weights: link weights need zenoh.mode router (got mode "peer"; allowed here: [])`)

	c = bridge.DefaultConfig()
	require.NoError(t, c.OverrideFrom("--cfg", "zenoh.routing.router.linkstate.transport_weights", "[{dst_zid: a5, weight: 0}]"))
	require.EqualError(t, c.Validate(), `--cfg: zenoh.routing.router.linkstate.transport_weights[0].weight: must be in 1..65535 (got 0)`)
}

// TestConfigSyntaxErrorPosition: a YAML syntax error names the line the
// fault is on and a column (yaml.v3 names the line its context started on,
// without column: a bad indent on line 8 came out as line 7).
func TestConfigSyntaxErrorPosition(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"under-indented key", "zenoh:\n  mode: router\n  listen:\n    - tcp/0.0.0.0:7447\ndds:\n  domain: 3\n  namespace: /robot1\n nodename: bridge\nroutes:\n  auto_bridge: true\n",
			"pb.yaml:8:2: did not find expected key"},
		{"over-indented key", "zenoh:\n  mode: router\ndds:\n  domain: 3\n   nodename: bridge\n",
			"pb.yaml:5:12: mapping values are not allowed in this context"},
		{"tab", "zenoh:\n  mode: router\n\tlisten: []\n",
			"pb.yaml:3:1: found a tab character that violates indentation"},
		{"unterminated quote after a multi-line flow list", "zenoh:\n  listen: [tcp/0.0.0.0:7447,\n           udp/0.0.0.0:7447]\ndds:\n  namespace: \"/robot1\nroutes:\n  auto_bridge: true\n",
			"pb.yaml:5:14: found unexpected end of stream"},
		{"unclosed flow mapping", "policy:\n  batched: {rate_hz: 20\n",
			"pb.yaml:2:13: did not find expected ',' or '}'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bridge.ParseConfig("pb.yaml", []byte(tc.doc))
			require.ErrorIs(t, err, knobs.ErrSyntax)
			require.Equal(t, tc.want, err.Error())
		})
	}
}
