package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
)

// zenoh.connect_as router: gateway A dials gateway B as a router, so both
// run the router link-state (each lists the other among its mesh routers)
// and a publication on A reaches a subscriber on B through the sourced
// declarations. With the default (client) A is B's client: no mesh, data
// still flows.
func TestGatewayConnectAsRouter(t *testing.T) {
	for _, as := range []string{"router", "client"} {
		t.Run(as, func(t *testing.T) {
			b := startTestServer(t, "zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: 127.0.0.1:0\n")
			a := startTestServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\n  connect: [%s]\n  connect_as: %s\nmetrics:\n  listen: 127.0.0.1:0\n",
				b.Endpoints()[0], as))
			sb, err := zenohpath.Open(context.Background(), zenohpath.Config{Router: b.Router()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = sb.Close() })
			var got recorder
			_, err = sb.DeclareSubscriber("mesh/**", got.add)
			require.NoError(t, err)
			sa, err := zenohpath.Open(context.Background(), zenohpath.Config{Router: a.Router()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = sa.Close() })
			pub, err := sa.DeclarePublisher("mesh/x", zenohpath.PublisherOptions{})
			require.NoError(t, err)
			eventually(t, "A's publisher matches B's subscriber", pub.HasMatchingSubscribers)
			if as == "router" {
				require.Equal(t, []string{b.Router().ZID().String()}, a.Router().MeshRouters())
				eventually(t, "B knows A as a mesh router", func() bool {
					rs := b.Router().MeshRouters()
					return len(rs) == 1 && rs[0] == a.Router().ZID().String()
				})
			} else {
				require.Empty(t, a.Router().MeshRouters())
				require.Empty(t, b.Router().MeshRouters())
			}
			require.NoError(t, pub.Put([]byte("1"), nil))
			eventually(t, "the sample crosses", func() bool { return len(got.get()) == 1 })
			require.Equal(t, []string{"mesh/x=1"}, got.get())
		})
	}
}

// TestGatewayAdminSpacePythonGet: a Python client of a Rust router that
// dialled the gateway gets @/** and receives, as JSON, the gateway's
// summary, each device under @/<zid>/picobridge/devices/<name> and the
// routes, beside the router's own @/<zid>/router.
func TestGatewayAdminSpacePythonGet(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Zenoh process")
	}
	interop.FindPython(t)
	s := startTestServer(t, "zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: 127.0.0.1:0\n")
	ctx := context.Background()
	dev, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	_, err = DeclareProbeResponder(dev, "dev1")
	require.NoError(t, err)
	_, err = dev.DeclareSubscriber("adm/x", func(zenohpath.Sample) {})
	require.NoError(t, err)
	eventually(t, "dev1 attached", func() bool { return s.Gateway().Device("dev1") != nil })
	rustEP := interop.FreeEndpoint(t)
	interop.StartReady(t, "router", "--mode", "router", "--listen", rustEP, "--connect", s.Endpoints()[0])
	eventually(t, "the Rust router in the gateway's mesh", func() bool { return len(s.Router().MeshRouters()) == 1 })

	root := s.AdminKey()
	require.Equal(t, "@/"+s.Router().ZID().String()+"/picobridge", root)
	got := map[string]string{}
	deadline := time.Now().Add(interop.Scale(30 * time.Second))
	for got[root+"/devices/dev1"] == "" || got[root] == "" || got[root+"/routes"] == "" {
		require.False(t, time.Now().After(deadline), "replies seen: %v", got)
		get := interop.Start(t, "get", "@/**", "--connect", rustEP, "--target", "all", "--payload-limit", "1000000")
		get.WaitEvent("done", interop.Scale(20*time.Second))
		clear(got)
		for _, ev := range get.Events() {
			if ev.Ev == "reply" && ev.OK && ev.Payload != nil {
				got[ev.Key] = *ev.Payload
			}
		}
	}
	require.Contains(t, got, "@/"+s.Router().ZID().String()+"/router", "the router's own admin space answers too")
	var sum AdminSummary
	require.NoError(t, json.Unmarshal([]byte(got[root]), &sum))
	require.Equal(t, s.Router().ZID().String(), sum.ZID)
	require.Equal(t, []string{"dev1"}, sum.Devices)
	require.Equal(t, "router", sum.Mode)
	require.Equal(t, s.Router().MeshRouters(), sum.MeshRouters)
	var d bridge.DeviceStatus
	require.NoError(t, json.Unmarshal([]byte(got[root+"/devices/dev1"]), &d))
	require.Equal(t, "dev1", d.Name)
	require.Equal(t, dev.ZID().String(), strings.TrimLeft(d.ZID, "0"))
	require.Contains(t, d.Subscriptions, "adm/x")
	var rz RoutezResponse
	require.NoError(t, json.Unmarshal([]byte(got[root+"/routes"]), &rz))
	require.False(t, rz.DDS)
	require.NotEmpty(t, rz.Faces)
	for k := range got {
		require.True(t, strings.HasPrefix(k, "@/"), "reply %s outside the admin space", k)
	}
}
