package zenohpath

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// fakeLink records what the router sends to a face (as copies).
type fakeLink struct {
	mu     sync.Mutex
	msgs   []wire.NetworkMessage
	opts   []sendOptions
	closed bool
	// shared counts the messages that came through sendShared.
	shared int
}

func (l *fakeLink) send(m wire.NetworkMessage, o sendOptions) error {
	c := cloneNetwork(m)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, c)
	l.opts = append(l.opts, o)
	return nil
}

// sendShared records the message, and checks that its shared encoding
// is the message's.
func (l *fakeLink) sendShared(s *shared, o sendOptions) error {
	if want := s.m.Append(nil); string(want) != string(s.bytes()) {
		panic(fmt.Sprintf("fakeLink: shared bytes %x are not the encoding %x of %s", s.bytes(), want, describe(s.m)))
	}
	l.mu.Lock()
	l.shared++
	l.mu.Unlock()
	return l.send(s.m, o)
}

func (l *fakeLink) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// take returns and forgets what was sent so far.
func (l *fakeLink) take() []wire.NetworkMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.msgs
	l.msgs, l.opts = nil, nil
	return m
}

// waitN polls until at least n messages were sent, then takes them.
func (l *fakeLink) waitN(t *testing.T, n int, timeout time.Duration) []wire.NetworkMessage {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l.mu.Lock()
		got := len(l.msgs)
		l.mu.Unlock()
		if got >= n {
			return l.take()
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d messages, got %d: %v", n, got, describeAll(l.take()))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// describe renders a network message by meaning (kind, interest id, key,
// request id, payload), leaving out entity ids, which are per implementation.
func describe(m wire.NetworkMessage) string {
	switch m := m.(type) {
	case *wire.Declare:
		s := "DECLARE"
		if m.HasInterestID {
			s += fmt.Sprintf(" I=%d", m.InterestID)
		}
		switch b := m.Body.(type) {
		case *wire.DeclareKeyExpr:
			return s + " D_KEYEXPR " + weString(b.WireExpr)
		case *wire.UndeclareKeyExpr:
			return s + " U_KEYEXPR"
		case *wire.DeclareSubscriber:
			return s + " D_SUB " + weString(b.WireExpr)
		case *wire.UndeclareSubscriber:
			return s + " U_SUB"
		case *wire.DeclareQueryable:
			return s + " D_QBL " + weString(b.WireExpr)
		case *wire.UndeclareQueryable:
			return s + " U_QBL"
		case *wire.DeclareToken:
			return s + " D_TOKEN " + weString(b.WireExpr)
		case *wire.UndeclareToken:
			return s + " U_TOKEN"
		case *wire.DeclareFinal:
			return s + " FINAL"
		}
	case *wire.Interest:
		if m.Mode == wire.InterestFinal {
			return fmt.Sprintf("INTEREST Final id=%d", m.ID)
		}
		return fmt.Sprintf("INTEREST %v id=%d opts=%v %s", m.Mode, m.ID, m.Options&^(wire.InterestNamed|wire.InterestMapping), weString(m.WireExpr))
	case *wire.Push:
		return "PUSH " + weString(m.WireExpr) + " " + bodyString(m.Body)
	case *wire.Request:
		return fmt.Sprintf("REQUEST rid=%d %s", m.ID, weString(m.WireExpr))
	case *wire.Response:
		s := fmt.Sprintf("RESPONSE rid=%d %s", m.ID, weString(m.WireExpr))
		if rp, ok := m.Body.(*wire.Reply); ok {
			s += " REPLY " + bodyString(rp.Body)
		}
		return s
	case *wire.ResponseFinal:
		return fmt.Sprintf("RESPONSE_FINAL rid=%d", m.ID)
	}
	return fmt.Sprintf("%T", m)
}

func weString(w wire.WireExpr) string {
	if w.Scope == 0 {
		return "key=" + w.Suffix
	}
	return fmt.Sprintf("scope=%d%s suffix=%q", w.Scope, map[bool]string{true: "M", false: ""}[bool(w.Mapping)], w.Suffix)
}

func bodyString(b wire.ZenohMessage) string {
	switch b := b.(type) {
	case *wire.Put:
		return fmt.Sprintf("PUT %q", b.Payload)
	case *wire.Del:
		return "DEL"
	}
	return fmt.Sprintf("%T", b)
}

func describeAll(ms []wire.NetworkMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = describe(m)
	}
	return out
}

// zline is one data line of a zvec transcript with its network messages.
type zline struct {
	n    int    // line number (1-based)
	dir  string // "D>G" or "G>D"
	msgs []wire.NetworkMessage
}

// loadZvec reads testdata/<name>.zvec (copies of shared/testdata/zenoh-pico,
// real zenoh-pico transcripts) and decodes each batch's network messages.
func loadZvec(t *testing.T, name string) []zline {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".zvec"))
	require.NoError(t, err)
	defer f.Close()
	var out []zline
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		n++
		parts := strings.Fields(line)
		require.Len(t, parts, 3, "line %d", n)
		b, err := hex.DecodeString(parts[2])
		require.NoError(t, err)
		zl := zline{n: n, dir: parts[1]}
		var p wire.Parser
		err = p.WalkBatch(b, func(_ wire.TransportMessage, m wire.NetworkMessage) error {
			if m != nil {
				zl.msgs = append(zl.msgs, cloneNetwork(m))
			}
			return nil
		})
		require.NoError(t, err, "%s line %d", name, n)
		out = append(out, zl)
	}
	return out
}

// line returns the messages of data line n.
func zvecLine(t *testing.T, ls []zline, n int) []wire.NetworkMessage {
	t.Helper()
	for _, l := range ls {
		if l.n == n {
			return l.msgs
		}
	}
	t.Fatalf("no line %d", n)
	return nil
}

func mustHex(t *testing.T, h string) []byte {
	t.Helper()
	b, err := hex.DecodeString(h)
	require.NoError(t, err)
	return b
}

func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }
