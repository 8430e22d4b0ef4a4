package zenohpath_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/internal/picotest"
	"github.com/picobridge/picobridge/zenohpath"
)

// startGoRouterAt runs a Go router on a given endpoint; the returned stop
// closes it (also run in t.Cleanup).
func startGoRouterAt(t *testing.T, ep string) func() {
	t.Helper()
	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	var err error
	for range 50 { // the port of a router just closed may take a moment
		if _, err = r.Listen(context.Background(), ep); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return func() { require.NoError(t, r.Close()) }
}

// TestClientReconnect: when its router goes away and comes back, a client
// session dials again and declares its subscriber again; data flows.
func TestClientReconnect(t *testing.T) {
	ep := interop.FreeEndpoint(t)
	stop := startGoRouterAt(t, ep)
	sub := openClient(t, ep)
	got, err := sub.DeclareSubscriberChan("re/**", 4)
	require.NoError(t, err)
	stop()
	startGoRouterAt(t, ep)
	pub := openClient(t, ep)
	p, err := pub.DeclarePublisher("re/1", zenohpath.PublisherOptions{})
	require.NoError(t, err)
	eventually(t, "subscriber declared again after reconnect", 15*time.Second, p.HasMatchingSubscribers)
	require.NoError(t, p.Put([]byte("back"), nil))
	select {
	case s := <-got.Samples():
		require.Equal(t, "back", string(s.Payload()))
	case <-time.After(interop.Scale(5 * time.Second)):
		t.Fatal("no sample after reconnect")
	}
}

// TestInteropPicoReconnect: the router shuts down (CLOSE to pico) and a new
// one starts on the same port: pico reconnects with the same ZID, declares
// its subscriber again (scope + suffix form) and receives data.
func TestInteropPicoReconnect(t *testing.T) {
	skipShort(t)
	builds := picotest.Builds(t)
	dir := builds[0].Dir
	ep := interop.FreeEndpoint(t)
	stop := startGoRouterAt(t, ep)
	sub := startPico(t, dir, "z_sub", ep, "-k", "demo/example/**")
	sub.WaitLine("Press CTRL-C", 10*time.Second)
	stop()
	startGoRouterAt(t, ep)
	s := openClient(t, ep)
	p, err := s.DeclarePublisher("demo/example/again", zenohpath.PublisherOptions{})
	require.NoError(t, err)
	eventually(t, "pico subscriber after its reconnect", 20*time.Second, p.HasMatchingSubscribers)
	require.NoError(t, p.Put([]byte("hello again"), nil))
	sub.WaitLine("('demo/example/again': 'hello again')", 10*time.Second)
}
