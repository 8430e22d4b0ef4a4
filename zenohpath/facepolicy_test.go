package zenohpath

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestUnsupportedFaceTable: which role pairs are refused, and that every
// refusal says what to do.
func TestUnsupportedFaceTable(t *testing.T) {
	R, P, C := wire.WhatAmIRouter, wire.WhatAmIPeer, wire.WhatAmIClient
	for _, tc := range []struct {
		ours, remote  wire.WhatAmI
		dialled, mesh bool
		refused       bool
	}{
		{R, C, false, false, false},
		{R, P, false, false, false},
		{R, R, false, false, true},
		{R, R, false, true, false},
		{R, R, true, false, false}, // we dialled as a client: the router serves us as one
		{P, R, false, false, true},
		{P, R, false, true, true},
		{P, R, true, false, false},
		{P, P, false, false, false},
		{C, R, true, false, false},
	} {
		why := unsupportedFace(tc.ours, tc.remote, tc.dialled, tc.mesh)
		require.Equal(t, tc.refused, why != "", "%+v: %q", tc, why)
		if tc.refused {
			require.Contains(t, why, "-e <its endpoint>")
		}
	}
}

// TestRefuseRouterOnPeerListener: a session that opens as a router to a
// picobridge running as a peer gets CLOSE(UNSUPPORTED) right after OPEN,
// and the gateway logs a WARN naming what to do; no face is left.
func TestRefuseRouterOnPeerListener(t *testing.T) {
	var logs interop.SyncBuffer
	r := NewRouter(RouterConfig{WhatAmI: wire.WhatAmIPeer, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(func() { _ = r.Close() })
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)

	s, err := transport.Dial(context.Background(), ln.Endpoint(),
		transport.Config{ZID: RandomZID(), WhatAmI: wire.WhatAmIRouter}, nopHandler{})
	require.NoError(t, err)
	select {
	case <-s.Done():
	case <-time.After(interop.Scale(10 * time.Second)):
		t.Fatal("session not closed by the peer-mode gateway")
	}
	var ce *transport.CloseError
	require.True(t, errors.As(s.Err(), &ce), "%v", s.Err())
	require.Equal(t, transport.ReasonRemoteClose, ce.Reason)
	require.Equal(t, wire.CloseUnsupported, ce.Remote)
	require.Empty(t, r.Faces())
	out := logs.String()
	require.Contains(t, out, "level=WARN msg=\"session refused: unsupported combination of roles\"")
	require.Contains(t, out, "-e <its endpoint>")
	require.False(t, bytes.Contains([]byte(out), []byte("face opened")), out)
}

type nopHandler struct{}

func (nopHandler) HandleNetwork(*transport.Session, wire.NetworkMessage) {}
func (nopHandler) HandleClose(*transport.Session, error)                 {}

// TestOwnFaceLoggedAtDebug: the router's own in-process session (the admin
// space of `picobridge router`) opens and closes its face at Debug, so the
// startup log shows no "face opened ... whatami=client" of the router itself;
// a session from outside still opens its face at Info.
func TestOwnFaceLoggedAtDebug(t *testing.T) {
	var logs interop.SyncBuffer
	r := NewRouter(RouterConfig{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	adm, err := r.ServeAdminSpace(AdminConfig{})
	require.NoError(t, err)
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	s, err := transport.Dial(context.Background(), ln.Endpoint(),
		transport.Config{ZID: RandomZID(), WhatAmI: wire.WhatAmIClient}, nopHandler{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(r.Faces()) == 1 }, interop.Scale(10*time.Second), 5*time.Millisecond)
	require.NoError(t, s.Close(transport.ReasonGeneric))
	require.NoError(t, adm.Close())
	r.Close()
	self := "zid=" + r.ZID().String()
	var own, other int
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, `msg="face opened"`) {
			continue
		}
		if strings.Contains(line, self) {
			own++
			require.Contains(t, line, "level=DEBUG", line)
		} else {
			other++
			require.Contains(t, line, "level=INFO", line)
		}
	}
	require.Equal(t, 1, own, logs.String())
	require.Equal(t, 1, other, logs.String())
}
