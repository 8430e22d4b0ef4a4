package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

func TestRunConfigFlagsOverFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(f, []byte("dds:\n  domain: 5\nzenoh:\n  connect: [tcp/10.0.0.1:7447]\n"), 0o644))
	given := map[string]bool{"listen": true, "mode": true, "namespace": true, "critical": true, "metrics": true, "key-style": true}
	o := runOptions{config: f, listen: []string{"tcp/127.0.0.1:7448"}, mode: "peer", namespace: "/bot1",
		critical: []string{"/scan"}, metrics: "off", keyStyle: "rmw_zenoh",
		cfg: []string{"policy.batched.rate_hz:20"}, changed: func(n string) bool { return given[n] }}
	cfg, err := buildRunConfig(o)
	require.NoError(t, err)
	require.Equal(t, []string{"tcp/127.0.0.1:7448"}, cfg.Zenoh.Listen)
	require.Equal(t, []string{"tcp/10.0.0.1:7447"}, cfg.Zenoh.Connect, "file kept where no flag")
	require.Equal(t, bridge.ModePeer, cfg.Zenoh.Mode)
	require.Equal(t, 5, cfg.DDS.Domain)
	require.Equal(t, "/bot1", cfg.DDS.Namespace)
	require.Equal(t, "", cfg.Metrics.Listen)
	require.Equal(t, 20.0, cfg.Policy.Batched.RateHz)
	require.Equal(t, bridge.Critical, bridge.NewRoutes(cfg).CriticalityOf("/scan"))

	o.domainFromEnv = "9"
	cfg, err = buildRunConfig(o)
	require.NoError(t, err)
	require.Equal(t, 9, cfg.DDS.Domain, "$ROS_DOMAIN_ID over the file")
	given["domain"], o.domain = true, 3
	cfg, err = buildRunConfig(o)
	require.NoError(t, err)
	require.Equal(t, 3, cfg.DDS.Domain, "--domain over everything")

	_, err = buildRunConfig(runOptions{mode: "bogus", changed: func(n string) bool { return n == "mode" }})
	require.Error(t, err)
	_, err = buildRunConfig(runOptions{cfg: []string{"nope"}})
	require.Error(t, err)
	cfg, err = buildRunConfig(runOptions{})
	require.NoError(t, err, "embedded default")
	require.Equal(t, []string{"tcp/0.0.0.0:7447", "udp/0.0.0.0:7447"}, cfg.Zenoh.Listen)

	require.Equal(t, 8<<20, cfg.Transport.MaxMessageSize, "default: 8 MiB")

	// --max-message-size sets transport.max_message_size; out of range names the flag, the key and the range
	mflag := func(n string) bool { return n == "max-message-size" }
	cfg, err = buildRunConfig(runOptions{maxMsgSize: 3 << 20, changed: mflag})
	require.NoError(t, err)
	require.Equal(t, 3<<20, cfg.Transport.MaxMessageSize)
	_, err = buildRunConfig(runOptions{maxMsgSize: 10, changed: mflag})
	require.EqualError(t, err, "--max-message-size: transport.max_message_size: must be in 1024..1073741824 bytes (got 10)")
	f2 := filepath.Join(dir, "m.yaml")
	require.NoError(t, os.WriteFile(f2, []byte("transport:\n  max_message_size: 0\n"), 0o644))
	_, err = buildRunConfig(runOptions{config: f2})
	require.EqualError(t, err, f2+":2:21: transport.max_message_size: must be in 1024..1073741824 bytes (got 0)")
}

// --connect-as sets zenoh.connect_as; a bad value names the flag, the key
// and the allowed values, as does router outside router mode.
func TestRunConnectAsFlag(t *testing.T) {
	ca := func(n string) bool { return n == "connect-as" }
	cfg, err := buildRunConfig(runOptions{connectAs: "router", changed: ca})
	require.NoError(t, err)
	require.Equal(t, bridge.ConnectAsRouter, cfg.Zenoh.ConnectAs)
	_, err = buildRunConfig(runOptions{connectAs: "peer", changed: ca})
	require.EqualError(t, err, `--connect-as: zenoh.connect_as: unknown value "peer" (allowed: client, router)`)
	_, err = buildRunConfig(runOptions{connectAs: "router", mode: "peer", changed: func(n string) bool { return n == "connect-as" || n == "mode" }})
	require.ErrorContains(t, err, "zenoh.connect_as: router needs zenoh.mode router")
}

// $PICOBRIDGE_EXPRESS_REALTIME sets policy.express.realtime over the file and
// under --cfg; a bad value names the variable, the key and the allowed values.
func TestRunRealtimeEnv(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(f, []byte("policy:\n  express:\n    realtime: nice\n"), 0o644))
	cfg, err := buildRunConfig(runOptions{config: f})
	require.NoError(t, err)
	require.Equal(t, bridge.RealtimeNice, cfg.Policy.Express.Realtime, "the file's")
	cfg, err = buildRunConfig(runOptions{config: f, realtimeFromEnv: "fifo"})
	require.NoError(t, err)
	require.Equal(t, bridge.RealtimeFIFO, cfg.Policy.Express.Realtime, "the environment over the file")
	cfg, err = buildRunConfig(runOptions{config: f, realtimeFromEnv: "fifo", cfg: []string{"policy.express.realtime:off"}})
	require.NoError(t, err)
	require.Equal(t, bridge.RealtimeOff, cfg.Policy.Express.Realtime, "--cfg over the environment")
	_, err = buildRunConfig(runOptions{realtimeFromEnv: "rt"})
	require.EqualError(t, err, `environment: PICOBRIDGE_EXPRESS_REALTIME: policy.express.realtime: unknown value "rt" (allowed: off, nice, fifo)`)
	require.NoError(t, os.WriteFile(f, []byte("policy:\n  express:\n    realtime: true\n"), 0o644))
	_, err = buildRunConfig(runOptions{config: f})
	require.EqualError(t, err, f+`:3:15: policy.express.realtime: unknown value "true" (allowed: off, nice, fifo)`)
}
