package server

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestShownEndpoint(t *testing.T) {
	for _, tc := range []struct{ configured, bound, want string }{
		{"tcp/0.0.0.0:7447", "tcp/[::]:7447", "tcp/0.0.0.0:7447"},
		{"udp/0.0.0.0:0", "udp/[::]:40001", "udp/0.0.0.0:40001"},
		{"tcp/localhost:0", "tcp/127.0.0.1:40002", "tcp/localhost:40002"},
		{"tcp/[::1]:0", "tcp/[::1]:40003", "tcp/[::1]:40003"},
		{"tcp/127.0.0.1:0#iface=lo", "tcp/127.0.0.1:40004", "tcp/127.0.0.1:40004"},
	} {
		require.Equal(t, tc.want, shownEndpoint(tc.configured, tc.bound), tc.configured)
	}
}

// TestRouterLogHandler: the gateway's own faces and the listener lines go to
// debug; another session's face stays at info.
func TestRouterLogHandler(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		h := newRouterLogHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level,
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
		log := slog.New(h).With("part", "router")
		h.setSelf("aa")
		log.With("face", 1, "zid", "aa").Info("face opened")
		log.With("face", 2, "zid", "bb").Info("face opened")
		log.Info("listening", "endpoint", "tcp/[::]:7447")
		log.With("face", 1, "zid", "aa").Warn("face closed")
		want := "level=INFO msg=\"face opened\" part=router face=2 zid=bb\n" +
			"level=WARN msg=\"face closed\" part=router face=1 zid=aa\n"
		if level == slog.LevelDebug {
			want = "level=DEBUG msg=\"face opened\" part=router face=1 zid=aa\n" +
				"level=INFO msg=\"face opened\" part=router face=2 zid=bb\n" +
				"level=DEBUG msg=listening part=router endpoint=tcp/[::]:7447\n" +
				"level=WARN msg=\"face closed\" part=router face=1 zid=aa\n"
		}
		require.Equal(t, want, buf.String(), level)
	}
}
