package transport

import (
	"encoding/binary"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// loopLink hands every batch the writer produces straight to a receiving
// session's parser (in the writer's goroutine) and checks the framing
// rules on it; reads block until close.
type loopLink struct {
	t      *testing.T
	max    int
	rx     *Session
	closed chan struct{}
	once   sync.Once
	bad    []string
}

func (l *loopLink) readBatch(time.Time) ([]byte, error) { <-l.closed; return nil, errLinkClosed }
func (l *loopLink) writeBatch(b []byte, _ time.Time) error {
	c := b[wire.StreamPrefixLen:]
	if len(c) > l.max {
		l.bad = append(l.bad, "batch over the negotiated size")
	}
	if m, n, err := wire.ParseTransport(c); err != nil {
		l.bad = append(l.bad, "batch does not decode: "+err.Error())
	} else if _, isFrame := m.(*wire.Frame); !isFrame && n != len(c) {
		l.bad = append(l.bad, "more than one transport message in a batch")
	}
	_ = l.rx.parser.WalkBatch(c, l.rx.walkFn)
	return nil
}
func (l *loopLink) stream() bool         { return true }
func (l *loopLink) maxBatch() int        { return 0xffff }
func (l *loopLink) close() error         { l.once.Do(func() { close(l.closed) }); return nil }
func (l *loopLink) remoteAddr() net.Addr { return &net.TCPAddr{} }

// FuzzTXPipeline sends a sequence of messages of random priority, channel,
// express flag and size (many larger than the 256-byte batch, so they are
// fragmented and interleaved) and checks, on a receiving session, that every
// message arrives exactly once, in order within its priority and channel,
// without any receive drop (so no fragment train was ever broken by a
// message of its own channel), and that every batch obeys the framing
// rules. Part of the sequence is queued before the writer starts, so the
// scheduler sees deep queues at every priority.
func FuzzTXPipeline(f *testing.F) {
	f.Add([]byte{0x05, 0x40, 0x00, 0x0d, 0x01, 0x01, 0x11, 0x00, 0x11, 0x07, 0xff, 0xf0, 0x08, 0x00, 0x21})
	f.Add([]byte{0x0d, 0x30, 0x00, 0x05, 0x30, 0x00, 0x09, 0x00, 0x10, 0x01, 0x00, 0x10, 0x0f, 0x20, 0x01})
	f.Add([]byte{0x00, 0xff, 0xf0, 0x08, 0xff, 0xf0, 0x17, 0x00, 0x00, 0x1f, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, script []byte) {
		wd := time.AfterFunc(30*time.Second, func() {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			panic("FuzzTXPipeline stuck:\n" + string(buf[:n]))
		})
		defer wd.Stop()
		type op struct {
			o    SendOptions
			size int
			late bool
		}
		var ops []op
		for i := 0; i+3 <= len(script) && len(ops) < 64; i += 3 {
			b0, b1, b2 := script[i], script[i+1], script[i+2]
			ops = append(ops, op{
				o:    SendOptions{Priority: wire.Priority(b0 & 7), Reliable: b0&8 != 0, Express: b0&16 != 0, Block: true},
				size: (int(b1)<<4 | int(b2)>>4) % 3000,
				late: b2&1 != 0,
			})
		}
		type got struct {
			id  uint32
			rel bool
		}
		var recv []got
		var mu sync.Mutex
		rxCfg := testConfig().withDefaults()
		rx := newSession(&rxCfg, nullLink{}, params{resolution: wire.DefaultResolution, batchSize: 256, patch: 1,
			peerLease: time.Hour, peerInitialSN: 77}, HandlerFuncs{Network: func(_ *Session, m wire.NetworkMessage) {
			p := m.(*wire.Push).Body.(*wire.Put).Payload
			mu.Lock()
			recv = append(recv, got{id: binary.LittleEndian.Uint32(p), rel: m.(*wire.Push).WireExpr.Suffix == "r"})
			mu.Unlock()
		}})
		link := &loopLink{t: t, max: 254, rx: rx, closed: make(chan struct{})}
		cfg := testConfig()
		cfg.TxQueueBytes = 1 << 20
		cfg = cfg.withDefaults()
		s := newSession(&cfg, link, params{resolution: wire.DefaultResolution, batchSize: 256, patch: 1,
			peerLease: time.Hour, ourInitialSN: 77, peerZID: testZID()}, HandlerFuncs{})
		send := func(id int, x op) {
			key := "b"
			if x.o.Reliable {
				key = "r"
			}
			payload := make([]byte, 4+x.size)
			binary.LittleEndian.PutUint32(payload, uint32(id))
			require.NoError(t, s.Send(push(key, payload), x.o))
		}
		for id, x := range ops {
			if !x.late {
				send(id, x)
			}
		}
		s.start()
		go s.readLoop()
		for id, x := range ops {
			if x.late {
				send(id, x)
			}
		}
		_ = s.Close(ReasonShutdown)
		<-s.Done()
		require.Empty(t, link.bad)
		require.Empty(t, rx.Stats().Dropped, "a fragment train was broken")
		require.Len(t, recv, len(ops))
		// Within one priority and channel, the order of Send (separately for
		// the messages queued before and after start).
		last := map[[3]int]int{}
		seen := map[uint32]bool{}
		for _, g := range recv {
			require.False(t, seen[g.id], "message %d twice", g.id)
			seen[g.id] = true
			x := ops[g.id]
			late := 0
			if x.late {
				late = 1
			}
			k := [3]int{int(x.o.Priority), late, 0}
			if x.o.Reliable {
				k[2] = 1
			}
			if prev, ok := last[k]; ok {
				require.Less(t, prev, int(g.id), "order within priority %d", x.o.Priority)
			}
			last[k] = int(g.id)
		}
	})
}
