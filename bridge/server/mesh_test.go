package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

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
