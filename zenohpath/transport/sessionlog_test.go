package transport

import (
	"bytes"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestSessionLogger: a session's records carry session, zid and remote
// first, as slog.Logger.With would put them, also through With and
// WithGroup; and creating the logger costs far less than With.
func TestSessionLogger(t *testing.T) {
	text := func(buf *bytes.Buffer) *slog.Logger {
		return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	}
	var got, want bytes.Buffer
	zid := wire.MustZID([]byte{0xab, 0xcd})
	s := &Session{id: 42, p: params{peerZID: zid}, remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7447}}
	for _, log := range []*slog.Logger{
		newSessionLogger(text(&got), s),
		text(&want).With("session", 42, "zid", zid.String(), "remote", "127.0.0.1:7447"),
	} {
		log.Info("hello", "k", 1)
		log.With("w", 2).Warn("with")
		log.WithGroup("g").Info("grouped", "k", 3)
	}
	require.Equal(t, want.String(), got.String())
	require.Equal(t, 3, strings.Count(got.String(), "session=42 zid="+zid.String()+" remote=127.0.0.1:7447"))
	base := text(&bytes.Buffer{})

	if raceEnabled {
		return
	}
	cost := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		for range 1000 {
			f()
		}
		runtime.ReadMemStats(&b)
		return (b.TotalAlloc - a.TotalAlloc) / 1000
	}
	var sink *slog.Logger
	lazy := cost(func() { sink = newSessionLogger(base, s) })
	with := cost(func() { sink = base.With("session", s.id, "zid", zid.String(), "remote", s.remote.String()) })
	_ = sink
	t.Logf("per-session logger: %d B (With: %d B)", lazy, with)
	require.Less(t, lazy, with/2)
}
