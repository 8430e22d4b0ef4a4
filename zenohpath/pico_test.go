package zenohpath_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/internal/picotest"
	"github.com/picobridge/picobridge/zenohpath"
)

// startPico runs <dir>/<example> -m client -e ep args..., line-buffered
// (stdbuf -oL), stopped with SIGINT (then SIGKILL) in t.Cleanup.
func startPico(t *testing.T, dir, example, ep string, args ...string) *picotest.Proc {
	t.Helper()
	return picotest.StartExample(t, dir, example, append([]string{"-m", "client", "-e", ep}, args...)...)
}

// TestInteropPico runs the zenoh-pico examples against the Go router, at
// each build found (batch 65535 and 2048), with the Go client (and Python
// for one scenario) on the other side.
func TestInteropPico(t *testing.T) {
	skipShort(t)
	for _, b := range picotest.Builds(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, sc := range picoScenarios {
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					ep := startGoRouter(t)
					sc.run(t, b.Dir, ep)
				})
			}
		})
	}
}

var picoScenarios = []struct {
	name string
	run  func(t *testing.T, dir, ep string)
}{
	{"z_sub", picoSub},
	{"z_pub", picoPub},
	{"z_put", picoPut},
	{"z_get", picoGet},
	{"z_queryable", picoQueryable},
	{"z_querier", picoQuerier},
	{"z_liveliness", picoLiveliness},
	{"z_sub_liveliness", picoSubLiveliness},
	{"z_get_liveliness", picoGetLiveliness},
	{"z_ping_z_pong", picoPingPong},
	{"python_put_z_sub", picoSubFromPython},
	{"udp_z_sub_z_pub", picoUDP},
	{"go_peer_to_pico_peer", picoPeer},
}

// z_sub (aggregated nothing: a plain subscriber) receives Go publications.
func picoSub(t *testing.T, dir, ep string) {
	sub := startPico(t, dir, "z_sub", ep, "-k", "demo/example/**", "-n", "3")
	sub.WaitLine("Press CTRL-C", 10*time.Second)
	s := openClient(t, ep)
	pub, err := s.DeclarePublisher("demo/example/go", zenohpath.PublisherOptions{})
	require.NoError(t, err)
	eventually(t, "pico subscriber declared", 10*time.Second, pub.HasMatchingSubscribers)
	for i := range 3 {
		require.NoError(t, pub.Put([]byte(fmt.Sprintf("go %d", i)), nil))
	}
	for i := range 3 {
		sub.WaitLine(fmt.Sprintf("('demo/example/go': 'go %d')", i), 10*time.Second)
	}
	require.Zero(t, sub.Wait(10*time.Second))
}

// z_pub -a: the aggregated publisher interest is answered, pico reports the
// match and its PUSHes (scope = its own key id, M) reach a Go subscriber.
func picoPub(t *testing.T, dir, ep string) {
	s := openClient(t, ep)
	got := make(chan zenohpath.Sample, 8)
	_, err := s.DeclareSubscriber("demo/example/**", func(smp zenohpath.Sample) { got <- smp })
	require.NoError(t, err)
	pub := startPico(t, dir, "z_pub", ep, "-k", "demo/example/pico-pub", "-n", "2", "-a")
	pub.WaitLine("Publisher has matching subscribers.", 10*time.Second)
	for i := range 2 {
		smp := recvSample(t, got)
		require.Equal(t, "demo/example/pico-pub", smp.KeyExpr())
		require.Equal(t, fmt.Sprintf("[%4d] Pub from Pico!", i), string(smp.Payload()))
	}
	require.Zero(t, pub.Wait(10*time.Second))
}

// z_put: a session-level put (DeclareKeyExpr + PUSH on scope 1).
func picoPut(t *testing.T, dir, ep string) {
	s := openClient(t, ep)
	got := make(chan zenohpath.Sample, 8)
	_, err := s.DeclareSubscriber("demo/example/**", func(smp zenohpath.Sample) { got <- smp })
	require.NoError(t, err)
	// pico drops a put with congestion control DROP while its lease task
	// holds the TX lock (README of the transcripts): retry a few times.
	for attempt := 0; ; attempt++ {
		put := startPico(t, dir, "z_put", ep, "-k", "demo/example/pico-put", "-v", "once")
		require.Zero(t, put.Wait(10*time.Second))
		select {
		case smp := <-got:
			require.Equal(t, "demo/example/pico-put", smp.KeyExpr())
			require.Equal(t, "once", string(smp.Payload()))
			return
		case <-time.After(interop.Scale(2 * time.Second)):
			require.Less(t, attempt, 2, "no sample after 3 z_put runs")
		}
	}
}

// z_get → Go queryable: replies, then the final notification.
func picoGet(t *testing.T, dir, ep string) {
	s := openClient(t, ep)
	_, err := s.DeclareQueryable("demo/example/go-q", func(q *zenohpath.Query) {
		// The z_get example signals its condition variable from the reply
		// dropper without taking the mutex: when the final arrives before the
		// main thread waits (a reply within ~1 ms), the wakeup is lost and it
		// hangs. Answer a little later, as a remote queryable would.
		time.Sleep(50 * time.Millisecond)
		_ = q.Reply("demo/example/go-q", []byte("go reply"), nil)
	}, nil)
	require.NoError(t, err)
	routerKnows(t, ep, func(obs *zenohpath.Session) bool { return obs.HasMatchingQueryables("demo/example/go-q") })
	get := startPico(t, dir, "z_get", ep, "-k", "demo/example/**")
	get.WaitLine("('demo/example/go-q': 'go reply')", 10*time.Second)
	get.WaitLine("query final notification", 10*time.Second)
	require.Zero(t, get.Wait(10*time.Second))
}

// Go Get → pico z_queryable (RESPONSE with ResponderId ext + RESPONSE_FINAL).
func picoQueryable(t *testing.T, dir, ep string) {
	qbl := startPico(t, dir, "z_queryable", ep, "-k", "demo/example/pico-q", "-n", "1")
	qbl.WaitLine("Press CTRL-C", 10*time.Second)
	s := openClient(t, ep)
	eventually(t, "pico queryable declared", 10*time.Second, func() bool { return s.HasMatchingQueryables("demo/example/pico-q") })
	replies, err := s.Get("demo/example/pico-q?from=go", &zenohpath.GetOptions{Timeout: 5 * time.Second})
	require.NoError(t, err)
	var got []string
	for r := range replies {
		smp, ok := r.Ok()
		require.True(t, ok)
		got = append(got, smp.KeyExpr()+"="+string(smp.Payload()))
	}
	require.Equal(t, []string{"demo/example/pico-q=Queryable from Pico!"}, got)
	qbl.WaitLine("Received Query 'demo/example/pico-q", 5*time.Second) // pico prints key and parameters without the '?'
}

// z_querier: the aggregated querier interest (K,Q,R,M,A) is answered with a
// DeclareQueryable on the interest key; queries reach the Go queryable.
func picoQuerier(t *testing.T, dir, ep string) {
	s := openClient(t, ep)
	_, err := s.DeclareQueryable("demo/example/**", func(q *zenohpath.Query) {
		_ = q.Reply("demo/example/go-q", []byte("go answers"), nil)
	}, &zenohpath.QueryableOptions{Complete: true})
	require.NoError(t, err)
	qr := startPico(t, dir, "z_querier", ep, "-s", "demo/example/**", "-n", "2")
	qr.WaitLine("('demo/example/go-q': 'go answers')", 10*time.Second)
	require.Zero(t, qr.Wait(15*time.Second))
}

// z_liveliness: the pico token appears at a Go liveliness subscriber and
// disappears when pico closes.
func picoLiveliness(t *testing.T, dir, ep string) {
	s := openClient(t, ep)
	got := make(chan zenohpath.Sample, 8)
	// History: pico's token may reach the router before this interest does.
	_, err := s.Liveliness().DeclareSubscriber("group1/**", func(smp zenohpath.Sample) { got <- smp }, &zenohpath.LivelinessSubscriberOptions{History: true})
	require.NoError(t, err)
	lv := startPico(t, dir, "z_liveliness", ep, "-k", "group1/pico")
	smp := recvSample(t, got)
	require.Equal(t, "group1/pico", smp.KeyExpr())
	require.Equal(t, zenohpath.SampleKindPut, smp.Kind())
	lv.Stop()
	smp = recvSample(t, got)
	require.Equal(t, zenohpath.SampleKindDelete, smp.Kind())

	// SIGKILL: no undeclaration from pico; the router synthesizes it when the link drops.
	lv2 := startPico(t, dir, "z_liveliness", ep, "-k", "group1/pico2")
	require.Equal(t, "group1/pico2", recvSample(t, got).KeyExpr())
	require.NoError(t, lv2.Cmd.Process.Kill())
	smp = recvSample(t, got)
	require.Equal(t, "group1/pico2", smp.KeyExpr())
	require.Equal(t, zenohpath.SampleKindDelete, smp.Kind())
}

// z_sub_liveliness -h: history (CurrentFuture T interest) then a drop.
func picoSubLiveliness(t *testing.T, dir, ep string) {
	s := openClient(t, ep)
	tok, err := s.Liveliness().DeclareToken("group1/go")
	require.NoError(t, err)
	sub := startPico(t, dir, "z_sub_liveliness", ep, "-k", "group1/**", "-h", "-n", "3")
	sub.WaitLine("New alive token ('group1/go')", 10*time.Second)
	tok2, err := s.Liveliness().DeclareToken("group1/go2")
	require.NoError(t, err)
	sub.WaitLine("New alive token ('group1/go2')", 10*time.Second)
	require.NoError(t, tok.Undeclare())
	sub.WaitLine("Dropped token ('group1/go')", 10*time.Second)
	require.Zero(t, sub.Wait(10*time.Second))
	_ = tok2
}

// z_get_liveliness: a Current T interest, answered with the tokens and DeclareFinal.
func picoGetLiveliness(t *testing.T, dir, ep string) {
	s := openClient(t, ep)
	_, err := s.Liveliness().DeclareToken("group1/go")
	require.NoError(t, err)
	routerKnows(t, ep, func(obs *zenohpath.Session) bool {
		alive, err := obs.Liveliness().Get("group1/go", nil)
		require.NoError(t, err)
		n := 0
		for range alive {
			n++
		}
		return n == 1
	})
	get := startPico(t, dir, "z_get_liveliness", ep, "-k", "group1/**")
	get.WaitLine("Alive token ('group1/go')", 10*time.Second)
	start := time.Now()
	require.Zero(t, get.Wait(10*time.Second))
	require.Less(t, time.Since(start), 5*time.Second, "z_get_liveliness waited for its timeout: no DeclareFinal?")
}

// z_ping / z_pong: two pico clients routed through the Go router; one size
// that fits a batch and one that needs fragments on the 2048 build.
func picoPingPong(t *testing.T, dir, ep string) {
	pong := startPico(t, dir, "z_pong", ep)
	pong.WaitLine("Pong app is running", 10*time.Second)
	for _, size := range []string{"64", "3000"} {
		ping := startPico(t, dir, "z_ping", ep, "-n", "100", "-s", size, "-w", "200")
		require.Zero(t, ping.Wait(20*time.Second), "ping -s %s", size)
		n := 0
		for _, l := range strings.Split(ping.Output(), "\n") {
			if l != "" && strings.Trim(l, "0123456789") == "" {
				n++
			}
		}
		require.Equal(t, 100, n, "ping -s %s printed %d round-trip times", size, n)
	}
}

// Python (real Rust Zenoh client) puts reach a pico subscriber through the Go router.
func picoSubFromPython(t *testing.T, dir, ep string) {
	interop.FindPython(t)
	sub := startPico(t, dir, "z_sub", ep, "-k", "demo/example/**", "-n", "2")
	sub.WaitLine("Press CTRL-C", 10*time.Second)
	pub := interop.Start(t, "pub", "demo/example/py", "--connect", ep, "--count", "2", "--size", "16", "--wait-matching")
	pub.WaitEvent("sent", 10*time.Second)
	sub.WaitLine("'demo/example/py'", 10*time.Second)
	require.Zero(t, sub.Wait(10*time.Second))
}

// z_sub over UDP unicast and z_pub over TCP on the same router (-l udp/… -l tcp/…).
func picoUDP(t *testing.T, dir, _ string) {
	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	port := interop.FreePort(t)
	_, err := r.Listen(context.Background(), fmt.Sprintf("udp/127.0.0.1:%d", port))
	require.NoError(t, err)
	tcp, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	sub := startPico(t, dir, "z_sub", fmt.Sprintf("udp/127.0.0.1:%d", port), "-k", "demo/example/**", "-n", "2")
	sub.WaitLine("Press CTRL-C", 10*time.Second)
	s := openClient(t, tcp.Endpoint())
	p, err := s.DeclarePublisher("demo/example/udp", zenohpath.PublisherOptions{})
	require.NoError(t, err)
	eventually(t, "pico UDP subscriber", 10*time.Second, p.HasMatchingSubscribers)
	pub := startPico(t, dir, "z_pub", tcp.Endpoint(), "-k", "demo/example/pico-tcp", "-n", "1")
	require.NoError(t, p.Put([]byte("over udp"), nil))
	sub.WaitLine("('demo/example/udp': 'over udp')", 10*time.Second)
	sub.WaitLine("('demo/example/pico-tcp'", 10*time.Second)
	require.Zero(t, sub.Wait(10*time.Second))
	require.Zero(t, pub.Wait(10*time.Second))
}

// routerKnows waits until the router at ep has what cond checks, seen from a
// separate observer session (a session does not see its own declarations
// come back from the router).
func routerKnows(t *testing.T, ep string, cond func(obs *zenohpath.Session) bool) {
	t.Helper()
	obs := openClient(t, ep)
	eventually(t, "the router to know the declaration", 10*time.Second, func() bool { return cond(obs) })
}

// A Go peer-mode session dials a zenoh-pico peer (z_sub -m peer -l tcp/…):
// pico declares its subscriber to the Go peer, which then publishes to it.
func picoPeer(t *testing.T, dir, _ string) {
	port := interop.FreePort(t)
	ep := fmt.Sprintf("tcp/127.0.0.1:%d", port)
	sub := picotest.StartExample(t, dir, "z_sub", "-m", "peer", "-l", ep, "-k", "peer/**", "-n", "1")
	sub.WaitLine("Press CTRL-C", 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), interop.Scale(10*time.Second))
	defer cancel()
	p, err := zenohpath.Open(ctx, zenohpath.Config{Mode: zenohpath.ModePeer, Connect: []string{ep}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	pub, err := p.DeclarePublisher("peer/go", zenohpath.PublisherOptions{})
	require.NoError(t, err)
	eventually(t, "pico peer's subscriber", 10*time.Second, pub.HasMatchingSubscribers)
	require.NoError(t, pub.Put([]byte("hello peer"), nil))
	sub.WaitLine("('peer/go': 'hello peer')", 10*time.Second)
	require.Zero(t, sub.Wait(10*time.Second))
}
