package zenohpath_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/internal/picotest"
	"github.com/picobridge/picobridge/zenohpath"
)

// startGoRouterUpstream runs the Go router with an upstream (picobridge
// router -l tcp/127.0.0.1:0 -e upstream) and waits for the upstream session.
func startGoRouterUpstream(t *testing.T, upstream string) string {
	t.Helper()
	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), interop.Scale(10*time.Second))
	defer cancel()
	require.NoError(t, r.Connect(ctx, upstream, true))
	return ln.Endpoint()
}

// TestInteropUpstream: the Go router connected as a client to the real Rust
// router (-e): clients on either side see each other's publications, queries
// and tokens.
func TestInteropUpstream(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	rust := interop.StartPythonRouter(t)
	goEP := startGoRouterUpstream(t, rust)

	for _, dir := range []struct{ name, subEP, pubEP string }{
		{"rust_to_go", goEP, rust},
		{"go_to_rust", rust, goEP},
	} {
		t.Run("pubsub_"+dir.name, func(t *testing.T) {
			key := "interop/up/" + dir.name
			n := 2000
			sub := interop.StartReady(t, "sub", key, "--connect", dir.subEP, "--count", strconv.Itoa(n), "--quiet", "--timeout", interop.Seconds(20*time.Second))
			pub := interop.Start(t, "pub", key, "--connect", dir.pubEP, "--count", strconv.Itoa(n), "--wait-matching")
			pub.WaitEvent("matched", 10*time.Second)
			var s interop.SubSummary
			require.NoError(t, sub.WaitEvent("done", 20*time.Second).Decode(&s))
			require.True(t, s.Complete, "%+v", s)
			require.True(t, s.InOrder)
			require.Zero(t, s.Dups)
		})
		t.Run("get_"+dir.name, func(t *testing.T) {
			key := "interop/upq/" + dir.name
			interop.StartReady(t, "queryable", key, "--connect", dir.subEP, "--reply-count", "1")
			get := interop.Start(t, "get", key, "--connect", dir.pubEP, "--wait-matching")
			r := get.WaitEvent("reply", 10*time.Second)
			require.True(t, r.OK)
			require.Equal(t, key, r.Key)
			get.WaitEvent("done", 10*time.Second)
		})
		t.Run("liveliness_"+dir.name, func(t *testing.T) {
			key := "interop/uplv/" + dir.name
			lsub := interop.StartReady(t, "liveliness-sub", key, "--connect", dir.pubEP)
			tok := interop.StartReady(t, "token", key, "--connect", dir.subEP)
			ev := lsub.WaitEvent("liveliness", 10*time.Second)
			require.Equal(t, "put", ev.Kind)
			tok.Kill()
			ev = lsub.WaitEvent("liveliness", 10*time.Second)
			require.Equal(t, "delete", ev.Kind)
		})
	}
}

// TestInteropPicoUpstream: the fleet layout: a zenoh-pico device on the Go
// router, the Go router connected upstream to the Rust router, Rust clients
// there. pico's aggregated publisher interest is answered from the upstream's
// subscriber; pico's samples reach the Rust subscriber, and Rust samples reach
// pico's subscriber.
func TestInteropPicoUpstream(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	dir := picotest.Builds(t)[0].Dir
	rust := interop.StartPythonRouter(t)
	goEP := startGoRouterUpstream(t, rust)

	sub := interop.StartReady(t, "sub", "fleet/**", "--connect", rust, "--count", "2", "--timeout", interop.Seconds(20*time.Second))
	pub := startPico(t, dir, "z_pub", goEP, "-k", "fleet/pico/telemetry", "-n", "2", "-a")
	pub.WaitLine("Publisher has matching subscribers.", 10*time.Second)
	var s interop.SubSummary
	require.NoError(t, sub.WaitEvent("done", 20*time.Second).Decode(&s))
	require.True(t, s.Complete, "%+v", s)
	require.Zero(t, pub.Wait(10*time.Second))

	psub := startPico(t, dir, "z_sub", goEP, "-k", "fleet/cmd/**", "-n", "1")
	psub.WaitLine("Press CTRL-C", 10*time.Second)
	rpub := interop.Start(t, "pub", "fleet/cmd/go", "--connect", rust, "--count", "1", "--size", "16", "--wait-matching")
	rpub.WaitEvent("sent", 15*time.Second)
	psub.WaitLine("'fleet/cmd/go'", 10*time.Second)
	require.Zero(t, psub.Wait(10*time.Second))
}
