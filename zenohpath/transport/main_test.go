package transport

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/picobridge/picobridge/internal/interop"
)

// TestMain fails the package if any goroutine outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("os/exec.(*Cmd).watchCtx"))
	_ = interop.LiveProcs
}

// TestNoGoroutineLeak: a Listener with sessions in every state (open,
// handshaking, closed by the peer) and a dialled session leave no goroutine
// behind after Close.
func TestNoGoroutineLeak(t *testing.T) {
	before := goleak.IgnoreCurrent()
	cfg := testConfig()
	for _, proto := range []string{"tcp", "udp"} {
		ln, err := Listen(context.Background(), proto+"/127.0.0.1:0", cfg, func(s *Session) Handler { return newRecorder() })
		require.NoError(t, err)
		var sessions []*Session
		for i := 0; i < 5; i++ {
			dc := testConfig()
			dc.WhatAmI = 2
			s, err := Dial(context.Background(), ln.Endpoint(), dc, newRecorder())
			require.NoError(t, err)
			sessions = append(sessions, s)
		}
		_ = sessions[0].Close(ReasonShutdown)
		if proto == "tcp" {
			// A link stuck in handshake.
			c, err := (&netDialer{}).dial(ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
		}
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, ln.Close())
		for _, s := range sessions {
			select {
			case <-s.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("dialled session did not end after the listener closed")
			}
		}
	}
	goleak.VerifyNone(t, before)
}
