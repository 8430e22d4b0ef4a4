package server

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
)

// routerLogHandler is the handler of the gateway's router logger. It moves to
// Debug what the router logs at Info about the gateway itself, which an
// operator did not configure and cannot act on: the faces of the gateway's
// own in-process sessions (their zid is the router's) opening and closing,
// and each "listening" line (Start logs the listen endpoints as configured
// in its "picobridge running" line instead).
type routerLogHandler struct {
	next     slog.Handler
	self     *atomic.Pointer[string] // the router's zid, set once it exists
	internal bool                    // the logger's attributes name a face of the gateway itself
}

func newRouterLogHandler(next slog.Handler) *routerLogHandler {
	return &routerLogHandler{next: next, self: new(atomic.Pointer[string])}
}

func (h *routerLogHandler) setSelf(zid string) { h.self.Store(&zid) }

func (h *routerLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *routerLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo && h.demoted(r.Message) {
		if !h.next.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r = r.Clone()
		r.Level = slog.LevelDebug
	}
	return h.next.Handle(ctx, r)
}

func (h *routerLogHandler) demoted(msg string) bool {
	switch msg {
	case "listening":
		return true
	case "face opened", "face closed":
		return h.internal
	}
	return false
}

func (h *routerLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := &routerLogHandler{next: h.next.WithAttrs(as), self: h.self, internal: h.internal}
	if self := h.self.Load(); self != nil {
		for _, a := range as {
			if a.Key == "zid" && a.Value.String() == *self {
				c.internal = true
			}
		}
	}
	return c
}

func (h *routerLogHandler) WithGroup(name string) slog.Handler {
	return &routerLogHandler{next: h.next.WithGroup(name), self: h.self, internal: h.internal}
}

// shownEndpoint is a listen endpoint as configured (tcp/0.0.0.0:7447, not
// the tcp/[::]:7447 the socket reports), with the port the system chose when
// the configured one is 0.
func shownEndpoint(configured, bound string) string {
	cfgAddr, cfgPort, ok := cutPort(configured)
	if !ok || cfgPort != "0" {
		return configured
	}
	if _, port, ok := cutPort(bound); ok {
		return cfgAddr + ":" + port
	}
	return configured
}

// cutPort splits "proto/host:port[#config]" at its port.
func cutPort(ep string) (head, port string, ok bool) {
	ep, _, _ = strings.Cut(ep, "#")
	i := strings.LastIndexByte(ep, ':')
	if i < 0 {
		return "", "", false
	}
	if _, p, err := net.SplitHostPort("x" + ep[i:]); err == nil {
		return ep[:i], p, true
	}
	return "", "", false
}
