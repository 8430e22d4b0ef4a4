package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
)

func freeUDPAddr(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	return pc.LocalAddr().String()
}

func TestScoutRouterCfgKeys(t *testing.T) {
	o := routerOptions{cfg: []string{"scouting/multicast/enabled:true", `scouting.multicast.interface:"eth0,wlan0"`,
		"scouting/multicast/address:224.0.0.225:7446", "scouting/unicast/address:127.0.0.1:7446"}}
	c, err := o.scouting()
	require.NoError(t, err)
	require.Equal(t, zenohpath.ScoutingConfig{
		Multicast: zenohpath.MulticastScoutingConfig{Enabled: true, Address: "224.0.0.225:7446", Interface: "eth0,wlan0"},
		Unicast:   zenohpath.UnicastScoutingConfig{Address: "127.0.0.1:7446"},
	}, c)
	c, err = (&routerOptions{}).scouting()
	require.NoError(t, err)
	require.Equal(t, zenohpath.ScoutingConfig{}, c, "off by default")

	for _, tc := range []struct{ cfg, want string }{
		{"scouting/multicast/enabled:true", "--cfg scouting/multicast/interface: required when scouting.multicast.enabled is true"},
		{"scouting/multicast/enabled:yes", `--cfg scouting/multicast/enabled: "yes": want true or false`},
		{"scouting/multicast/interface:auto", `--cfg scouting/multicast/interface: "auto" is not supported`},
		{"scouting/multicast/address:10.0.0.1:7446", `--cfg scouting/multicast/address: "10.0.0.1:7446": "10.0.0.1" is not an IPv4 multicast address`},
		{"scouting/multicast/ttl:2", `--cfg "scouting/multicast/ttl:2": unknown key "scouting/multicast/ttl" (allowed: scouting/multicast/address, scouting/multicast/enabled, scouting/multicast/interface, scouting/unicast/address, access_control, transport/auth/usrpwd/dictionary_file`},
		{"transport/link/tx/queue/size/data:4", `unknown key "transport/link/tx/queue/size/data"`},
		{"scouting", `--cfg "scouting": want KEY:VALUE`},
	} {
		err := runRouter(context.Background(), routerOptions{listen: []string{"tcp/127.0.0.1:0"}, lease: 10 * time.Second, batch: 65535, logLevel: "info", cfg: []string{tc.cfg}},
			&interop.SyncBuffer{}, func(*zenohpath.Router, []string) { t.Fatal("router started") })
		require.ErrorContains(t, err, tc.want, tc.cfg)
	}
	// an interface that does not exist is found when scouting starts, before the router is ready
	err = runRouter(context.Background(), routerOptions{listen: []string{"tcp/127.0.0.1:0"}, lease: 10 * time.Second, batch: 65535, logLevel: "info",
		cfg: []string{"scouting/multicast/enabled:true", "scouting/multicast/interface:nosuch0"}},
		&interop.SyncBuffer{}, func(*zenohpath.Router, []string) { t.Fatal("router started") })
	require.ErrorContains(t, err, `--cfg: zenohpath: scouting.multicast.interface: no interface "nosuch0" (have: `)
}

// Item 4 of issue 18: a UDP multicast endpoint is refused at start, naming
// it and what is supported.
func TestScoutRouterRefusesMulticastEndpoint(t *testing.T) {
	for _, tc := range []struct {
		o    routerOptions
		want string
	}{
		{routerOptions{listen: []string{"udp/224.0.0.224:7447#iface=lo"}},
			`--listen: endpoint "udp/224.0.0.224:7447#iface=lo": UDP multicast endpoints (the Zenoh multicast transport) are not supported; supported: tcp/HOST:PORT and udp/HOST:PORT with a unicast address`},
		{routerOptions{listen: []string{"tcp/127.0.0.1:0"}, connect: []string{"udp/239.255.0.1:7447"}},
			`--connect: endpoint "udp/239.255.0.1:7447": UDP multicast endpoints`},
	} {
		o := tc.o
		o.lease, o.batch, o.logLevel = 10*time.Second, 65535, "info"
		err := runRouter(context.Background(), o, &interop.SyncBuffer{}, func(*zenohpath.Router, []string) { t.Fatal("router started") })
		require.ErrorContains(t, err, tc.want)
	}
}

// TestScoutCommandUnicast: `picobridge router --cfg
// scouting/unicast/address:…` answers `picobridge scout --address …` with
// its zid and locator (text and JSON); a SCOUT for clients only, or to an
// address nobody answers on, ends in the "no HELLO" error.
func TestScoutCommandUnicast(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := freeUDPAddr(t)
	var logs interop.SyncBuffer
	ready := make(chan []string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runRouter(ctx, routerOptions{listen: []string{"tcp/127.0.0.1:0"}, id: "abc123", lease: 10 * time.Second, batch: 65535, logLevel: "info",
			cfg: []string{"scouting/unicast/address:" + addr}}, &logs, func(_ *zenohpath.Router, eps []string) { ready <- eps })
	}()
	var eps []string
	select {
	case eps = <-ready:
	case err := <-done:
		t.Fatalf("router exited: %v", err)
	}
	require.Contains(t, logs.String(), `msg="answering scouts" mode=unicast addr=`+addr)

	var out bytes.Buffer
	require.NoError(t, runScout(ctx, scoutOptions{address: addr, what: "router|peer", timeout: interop.Scale(2 * time.Second), ttl: 1}, &out))
	require.Equal(t, fmt.Sprintf("Hello { zid: abc123, whatami: router, locators: [%s] }\n", eps[0]), out.String())

	out.Reset()
	require.NoError(t, runScout(ctx, scoutOptions{address: addr, what: "router", timeout: interop.Scale(time.Second), ttl: 1, jsonLines: true}, &out))
	var h struct {
		ZID, WhatAmI, From string
		Locators           []string
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &h))
	require.Equal(t, "abc123", h.ZID)
	require.Equal(t, "router", h.WhatAmI)
	require.Equal(t, eps, h.Locators)
	require.Equal(t, addr, h.From)
	require.Equal(t, 1, strings.Count(out.String(), "\n"), "one line per zid")

	err := runScout(ctx, scoutOptions{address: addr, what: "client", timeout: 200 * time.Millisecond, ttl: 1}, &out)
	require.EqualError(t, err, "no HELLO within 200ms from udp/"+addr+" (what=client)")
	require.ErrorContains(t, runScout(ctx, scoutOptions{address: addr, what: "robot", timeout: time.Second, ttl: 1}, &out), `--what "robot": want router, peer and/or client`)
	require.ErrorContains(t, runScout(ctx, scoutOptions{address: addr, what: "router", timeout: 0, ttl: 1}, &out), "--timeout 0s")
	require.ErrorContains(t, runScout(ctx, scoutOptions{address: addr, what: "router", timeout: time.Second, ttl: 0}, &out), "--ttl 0: want 1 to 255")
	require.ErrorContains(t, runScout(ctx, scoutOptions{address: "nowhere", what: "router", timeout: time.Second, ttl: 1}, &out), `scout address "nowhere"`)

	cancel()
	require.NoError(t, <-done)
}

func TestScoutCommandFlags(t *testing.T) {
	cmd := newScoutCommand()
	require.NoError(t, cmd.ParseFlags(nil))
	a, _ := cmd.Flags().GetString("address")
	require.Equal(t, "224.0.0.224:7446", a)
	w, _ := cmd.Flags().GetString("what")
	require.Equal(t, "router|peer", w)
	to, _ := cmd.Flags().GetDuration("timeout")
	require.Equal(t, time.Second, to)
}

// `picobridge run` takes the same keys under zenoh.scouting (file or --cfg);
// bad values are refused naming the key; a unicast address is answered.
func TestScoutRunConfig(t *testing.T) {
	_, err := buildRunConfig(runOptions{cfg: []string{"zenoh.scouting.multicast.enabled:true"}})
	require.ErrorContains(t, err, "zenoh.scouting.multicast.interface: required when scouting.multicast.enabled is true")
	_, err = buildRunConfig(runOptions{cfg: []string{"zenoh.scouting.multicast.address:10.1.1.1:7446"}})
	require.ErrorContains(t, err, `zenoh.scouting.multicast.address: "10.1.1.1:7446": "10.1.1.1" is not an IPv4 multicast address`)
	_, err = buildRunConfig(runOptions{cfg: []string{"zenoh.scouting.multicast.ttl:1"}})
	require.ErrorContains(t, err, "ttl")
	require.ErrorContains(t, err, "allowed: address, enabled, interface")
	_, err = buildRunConfig(runOptions{cfg: []string{"zenoh.listen:[udp/224.0.0.224:7447]"}, changed: func(string) bool { return false }})
	require.NoError(t, err, "the bridge's syntax check passes it; the router refuses it at start")

	addr := freeUDPAddr(t)
	given := map[string]bool{"listen": true, "metrics": true}
	cfg, err := buildRunConfig(runOptions{listen: []string{"tcp/127.0.0.1:0"}, metrics: "off", noDDS: true,
		cfg: []string{"zenoh.scouting.unicast.address:" + addr, "classifier.enabled:false"}, changed: func(n string) bool { return given[n] }})
	require.NoError(t, err)
	require.Equal(t, addr, cfg.Zenoh.Scouting.Unicast.Address)
	require.False(t, cfg.Zenoh.Scouting.Multicast.Enabled, "multicast off by default")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan []string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runGateway(ctx, runOptions{noDDS: true, logLevel: "info"}, cfg, &interop.SyncBuffer{}, func(s *server.Server) { ready <- s.Endpoints() })
	}()
	var eps []string
	select {
	case eps = <-ready:
	case err := <-done:
		t.Fatalf("gateway exited: %v", err)
	}
	var out bytes.Buffer
	require.NoError(t, runScout(ctx, scoutOptions{address: addr, what: "router", timeout: interop.Scale(2 * time.Second), ttl: 1}, &out))
	require.Contains(t, out.String(), fmt.Sprintf("whatami: router, locators: [%s] }", eps[0]))
	cancel()
	require.NoError(t, <-done)

	// a multicast endpoint in zenoh.listen stops the gateway at start with the router's message
	cfg, err = buildRunConfig(runOptions{listen: []string{"udp/224.0.0.224:7447#iface=lo"}, metrics: "off", noDDS: true,
		changed: func(n string) bool { return given[n] }})
	require.NoError(t, err)
	err = runGateway(context.Background(), runOptions{noDDS: true, logLevel: "info"}, cfg, &interop.SyncBuffer{}, func(*server.Server) { t.Fatal("started") })
	require.ErrorContains(t, err, `endpoint "udp/224.0.0.224:7447#iface=lo": UDP multicast endpoints (the Zenoh multicast transport) are not supported`)
}
