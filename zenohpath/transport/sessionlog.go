package transport

import (
	"context"
	"log/slog"
)

// sessionHandler gives a session's log records its attributes (session,
// zid, remote) when a record is handled, instead of formatting them for
// every session when it opens (slog.Logger.With pre-formats them, a few
// hundred bytes per session with the text and JSON handlers): an idle
// session that never logs holds two pointers.
type sessionHandler struct {
	h slog.Handler
	s *Session
}

func newSessionLogger(base *slog.Logger, s *Session) *slog.Logger {
	return slog.New(&sessionHandler{h: base.Handler(), s: s})
}

func (h *sessionHandler) attrs() []slog.Attr {
	return []slog.Attr{slog.Uint64("session", h.s.id), slog.String("zid", h.s.p.peerZID.String()),
		slog.String("remote", h.s.remote.String())}
}

func (h *sessionHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

// Handle passes r on with the session's attributes first, as With would
// have placed them.
func (h *sessionHandler) Handle(ctx context.Context, r slog.Record) error {
	nr := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	nr.AddAttrs(h.attrs()...)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(a)
		return true
	})
	return h.h.Handle(ctx, nr)
}

func (h *sessionHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.h.WithAttrs(h.attrs()).WithAttrs(as)
}

func (h *sessionHandler) WithGroup(name string) slog.Handler {
	return h.h.WithAttrs(h.attrs()).WithGroup(name)
}
