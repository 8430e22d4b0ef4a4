package zenohpath_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
)

// startGoRouter is an interop.RouterFunc: the Go router, in-process, as
// `picobridge router -l tcp/127.0.0.1:0` runs it; stopped in t.Cleanup.
func startGoRouter(t *testing.T) string {
	t.Helper()
	r := zenohpath.NewRouter(zenohpath.RouterConfig{Logger: testLogger(t)})
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return ln.Endpoint()
}

// RouterLogEnv names the environment variable that turns on the Go router's
// logs in the interop tests (a slog level: debug, info...), written to the test log.
const RouterLogEnv = "PICOBRIDGE_ROUTER_LOG"

func testLogger(t *testing.T) *slog.Logger {
	lvl := os.Getenv(RouterLogEnv)
	if lvl == "" {
		return nil
	}
	var l slog.Level
	_ = l.UnmarshalText([]byte(lvl))
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: l}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Zenoh processes (eclipse-zenoh " + interop.ZenohVersion + ")")
	}
}

// TestInteropPythonThroughGoRouter (c): real Rust Zenoh clients talk to each
// other through the Go router: the shared router conformance suite (10 000
// reliable samples batched and express, fragments, put/delete, get/queryable,
// liveliness with SIGKILL).
func TestInteropPythonThroughGoRouter(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	interop.RunRouterSuite(t, startGoRouter)
}

// TestInteropGoClientGoRouter (a): Python clients and a Go client session
// through the Go router.
func TestInteropGoClientGoRouter(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	goClientScenarios(t, startGoRouter(t))
}

// TestInteropGoClientPythonRouter (b): the Go client session against the
// real Rust router (Python zenoh in router mode), with Python clients.
func TestInteropGoClientPythonRouter(t *testing.T) {
	skipShort(t)
	interop.FindPython(t)
	goClientScenarios(t, interop.StartPythonRouter(t))
}

func openClient(t *testing.T, ep string) *zenohpath.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), interop.Scale(10*time.Second))
	defer cancel()
	s, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// eventually polls cond (never sleeps longer than 10 ms).
func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(interop.Scale(d))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// zpqSeq reads zpeer's sequenced payload: "zpq1" + u64 little-endian.
func zpqSeq(b []byte) (uint64, bool) {
	if len(b) < 12 || string(b[:4]) != "zpq1" {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[4:12]), true
}

func zpqPayload(seq uint64, size int) []byte {
	b := make([]byte, max(size, 12))
	copy(b, "zpq1")
	binary.LittleEndian.PutUint64(b[4:], seq)
	for i := 12; i < len(b); i++ {
		b[i] = 'x'
	}
	return b
}

const samples = 10000

func goClientScenarios(t *testing.T, ep string) {
	t.Run("go_pub_python_sub", func(t *testing.T) {
		for _, express := range []bool{false, true} {
			t.Run(fmt.Sprintf("express=%v", express), func(t *testing.T) {
				key := fmt.Sprintf("interop/gopub/%v", express)
				args := []string{"sub", key, "--connect", ep, "--count", strconv.Itoa(samples), "--timeout", interop.Seconds(30 * time.Second)}
				if !express {
					args = append(args, "--quiet")
				}
				sub := interop.StartReady(t, args...)
				s := openClient(t, ep)
				pub, err := s.DeclarePublisher(key, zenohpath.PublisherOptions{Express: express, CongestionControl: zenohpath.CongestionControlBlock})
				require.NoError(t, err)
				eventually(t, "matching subscriber", 10*time.Second, pub.HasMatchingSubscribers)
				t0 := time.Now()
				for i := range samples {
					require.NoError(t, pub.Put(zpqPayload(uint64(i), 64), nil))
				}
				var sum interop.SubSummary
				require.NoError(t, sub.WaitEvent("done", 30*time.Second).Decode(&sum))
				require.True(t, sum.Complete, "%+v", sum)
				require.Equal(t, samples, sum.Unique)
				require.Zero(t, sum.Dups)
				require.True(t, sum.InOrder, "first anomaly %v", sum.FirstAnomaly)
				if express {
					var first struct{ Express bool }
					require.NoError(t, sub.WaitEvent("sample", time.Second).Decode(&first))
					require.True(t, first.Express)
				}
				t.Logf("%d samples Go→Python in %.3fs", samples, time.Since(t0).Seconds())
			})
		}
	})

	t.Run("python_pub_go_sub", func(t *testing.T) {
		for _, express := range []bool{false, true} {
			t.Run(fmt.Sprintf("express=%v", express), func(t *testing.T) {
				key := fmt.Sprintf("interop/pypub/%v", express)
				s := openClient(t, ep)
				var mu sync.Mutex
				var n, outOfOrder, expressSeen int
				next := uint64(0)
				done := make(chan struct{})
				_, err := s.DeclareSubscriber(key, func(smp zenohpath.Sample) {
					seq, ok := zpqSeq(smp.Payload())
					mu.Lock()
					defer mu.Unlock()
					if !ok || seq != next {
						outOfOrder++
					}
					next = seq + 1
					if smp.Express() {
						expressSeen++
					}
					n++
					if n == samples {
						close(done)
					}
				})
				require.NoError(t, err)
				args := []string{"pub", key, "--connect", ep, "--count", strconv.Itoa(samples), "--size", "64", "--wait-matching"}
				if express {
					args = append(args, "--express")
				}
				t0 := time.Now()
				pub := interop.Start(t, args...)
				pub.WaitEvent("matched", 10*time.Second)
				pub.WaitEvent("sent", 30*time.Second)
				select {
				case <-done:
				case <-time.After(interop.Scale(30 * time.Second)):
				}
				mu.Lock()
				defer mu.Unlock()
				require.Equal(t, samples, n)
				require.Zero(t, outOfOrder)
				if express {
					require.Equal(t, samples, expressSeen)
				} else {
					require.Zero(t, expressSeen)
				}
				t.Logf("%d samples Python→Go in %.3fs", samples, time.Since(t0).Seconds())
			})
		}
	})

	t.Run("go_get_python_queryable", func(t *testing.T) {
		qbl := interop.StartReady(t, "queryable", "interop/gq/**", "--connect", ep, "--reply-count", "2")
		s := openClient(t, ep)
		eventually(t, "matching queryable", 10*time.Second, func() bool { return s.HasMatchingQueryables("interop/gq/a") })
		replies, err := s.Get("interop/gq/a?p=1", &zenohpath.GetOptions{Payload: []byte("ask"), Timeout: 5 * time.Second})
		require.NoError(t, err)
		var got []string
		for r := range replies {
			smp, ok := r.Ok()
			require.True(t, ok)
			require.Equal(t, "interop/gq/a", smp.KeyExpr())
			got = append(got, string(smp.Payload()))
		}
		require.Equal(t, []string{"reply 0", "reply 1"}, got)
		q := qbl.WaitEvent("query", 5*time.Second)
		require.Equal(t, "ask", *q.Payload)
		// No queryable: the channel closes at once (RESPONSE_FINAL), not at the timeout.
		t0 := time.Now()
		replies, err = s.Get("interop/none/**", &zenohpath.GetOptions{Timeout: 5 * time.Second})
		require.NoError(t, err)
		for range replies {
			t.Fatal("unexpected reply")
		}
		require.Less(t, time.Since(t0), 3*time.Second)
	})

	t.Run("python_get_go_queryable", func(t *testing.T) {
		s := openClient(t, ep)
		_, err := s.DeclareQueryable("interop/goq/**", func(q *zenohpath.Query) {
			_ = q.Reply(q.KeyExpr(), []byte("go says "+q.Parameters()), nil)
			_ = q.ReplyErr([]byte("and an error"), nil)
		}, &zenohpath.QueryableOptions{Complete: true})
		require.NoError(t, err)
		get := interop.Start(t, "get", "interop/goq/x?k=v", "--connect", ep, "--wait-matching", "--timeout", interop.Seconds(10*time.Second))
		r := get.WaitEvent("reply", 10*time.Second)
		require.True(t, r.OK)
		require.Equal(t, "interop/goq/x", r.Key)
		require.Equal(t, "go says k=v", *r.Payload)
		r2 := get.WaitEvent("reply", 10*time.Second)
		require.False(t, r2.OK)
		require.Equal(t, "and an error", *r2.Payload)
		done := get.WaitEvent("done", 10*time.Second)
		require.Equal(t, 2, done.Count)
	})

	t.Run("liveliness", func(t *testing.T) {
		s := openClient(t, ep)
		// Go token → Python liveliness subscriber and get.
		lsub := interop.StartReady(t, "liveliness-sub", "interop/lv/**", "--connect", ep, "--history") // history: its interest may reach the router after the token
		tok, err := s.Liveliness().DeclareToken("interop/lv/go")
		require.NoError(t, err)
		ev := lsub.WaitEvent("liveliness", 10*time.Second)
		require.Equal(t, "interop/lv/go", ev.Key)
		require.Equal(t, "put", ev.Kind)
		lget := interop.StartReady(t, "liveliness-get", "interop/lv/**", "--connect", ep)
		require.Equal(t, "interop/lv/go", lget.WaitEvent("liveliness", 10*time.Second).Key)
		lget.WaitEvent("done", 10*time.Second)
		require.NoError(t, tok.Undeclare())
		ev = lsub.WaitEvent("liveliness", 10*time.Second)
		require.Equal(t, "delete", ev.Kind)

		// Python token → Go liveliness subscriber (with history) and get; SIGKILL → delete.
		events := make(chan zenohpath.Sample, 8)
		py := interop.StartReady(t, "token", "interop/lv/py", "--connect", ep)
		var sub *zenohpath.Subscriber
		eventually(t, "token known", 10*time.Second, func() bool {
			alive, err := s.Liveliness().Get("interop/lv/**", &zenohpath.LivelinessGetOptions{Timeout: time.Second})
			require.NoError(t, err)
			n := 0
			for r := range alive {
				smp, _ := r.Ok()
				if smp.KeyExpr() == "interop/lv/py" {
					n++
				}
			}
			return n == 1
		})
		sub, err = s.Liveliness().DeclareSubscriber("interop/lv/**", func(smp zenohpath.Sample) { events <- smp }, &zenohpath.LivelinessSubscriberOptions{History: true})
		require.NoError(t, err)
		smp := recvSample(t, events)
		require.Equal(t, "interop/lv/py", smp.KeyExpr())
		require.Equal(t, zenohpath.SampleKindPut, smp.Kind())
		py.Kill()
		smp = recvSample(t, events)
		require.Equal(t, "interop/lv/py", smp.KeyExpr())
		require.Equal(t, zenohpath.SampleKindDelete, smp.Kind())
		require.NoError(t, sub.Undeclare())
	})
}

func recvSample(t *testing.T, ch <-chan zenohpath.Sample) zenohpath.Sample {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(interop.Scale(10 * time.Second)):
		t.Fatal("no sample within 10 s")
		return zenohpath.Sample{}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if n := interop.LiveProcs(); n != 0 {
		fmt.Fprintf(os.Stderr, "zenohpath: %d zpeer processes still alive\n", n)
		code = 1
	}
	os.Exit(code)
}
