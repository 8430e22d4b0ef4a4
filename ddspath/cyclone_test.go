//go:build cgo && cyclonedds

package ddspath

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const laserType = "sensor_msgs::msg::dds_::LaserScan_"

func TestWriteReadExactBytesAndTimestamp(t *testing.T) {
	for _, mode := range []string{"waitset", "listener"} {
		t.Run(mode, func(t *testing.T) {
			a, b := openPair(t)
			topic := uniqueTopic(t, "scan")
			var opts []ReaderOption
			if mode == "listener" {
				opts = append(opts, WithListener())
			}
			r, err := b.NewReader(topic, laserType, ROSDefaultQoS(), opts...)
			require.NoError(t, err)
			w, err := a.NewWriter(topic, laserType, ROSDefaultQoS())
			require.NoError(t, err)
			waitFor(t, 5*time.Second, "match", func() bool { return w.Matched() == 1 && r.Matched() == 1 })

			for i, size := range []int{8, 1500, 64 << 10} {
				payload := cdrSample(size, uint32(i))
				ts := time.Unix(1700000000, int64(123456789+i))
				require.NoError(t, w.Write(payload, ts))
				s := recv(t, r, 5*time.Second)
				require.Equal(t, payload, s.CDR)
				require.Equal(t, ts.UnixNano(), s.SourceTimestamp.UnixNano())
				require.Equal(t, topic, s.Topic)
				require.Equal(t, laserType, s.TypeName)
				g, err := r.WriterGUID(s.PublicationHandle)
				require.NoError(t, err)
				require.NotEqual(t, GUID{}, g)
			}
			require.Equal(t, uint64(3), w.Stats().Written)
			require.Equal(t, uint64(3), r.Stats().Received)
		})
	}
}

func TestWriteRejectsShortSample(t *testing.T) {
	a, _ := openPair(t)
	w, err := a.NewWriter(uniqueTopic(t, "short"), laserType, ROSDefaultQoS())
	require.NoError(t, err)
	require.Error(t, w.Write([]byte{0, 1}, time.Time{}))
	require.NoError(t, w.Close())
	require.ErrorIs(t, w.Write(cdrSample(8, 0), time.Time{}), ErrClosed)
}

func TestQueueOverflowPolicies(t *testing.T) {
	for _, pol := range []Overflow{DropOldest, DropNewest} {
		t.Run(pol.String(), func(t *testing.T) {
			a, b := openPair(t)
			topic := uniqueTopic(t, "ovf")
			q := QoS{Reliability: Reliable, History: KeepAll}
			r, err := b.NewReader(topic, laserType, q, WithQueue(4, pol))
			require.NoError(t, err)
			w, err := a.NewWriter(topic, laserType, q)
			require.NoError(t, err)
			waitFor(t, 5*time.Second, "match", func() bool { return w.Matched() == 1 })
			for i := range 20 {
				require.NoError(t, w.Write(cdrSample(16, uint32(i)), time.Time{}))
			}
			waitFor(t, 5*time.Second, "all received", func() bool { return r.Stats().Received == 20 })
			st := r.Stats()
			require.Equal(t, uint64(16), st.Dropped)
			require.Equal(t, 4, st.Queued)
			first := uint32(16)
			if pol == DropNewest {
				first = 0
			}
			for i := range uint32(4) {
				s := recv(t, r, time.Second)
				require.Equal(t, cdrSample(16, first+i), s.CDR)
			}
		})
	}
}

func TestBlockOverflowRejectedWithListener(t *testing.T) {
	a, _ := openPair(t)
	_, err := a.NewReader(uniqueTopic(t, "blk"), laserType, ROSDefaultQoS(), WithListener(), WithQueue(1, Block))
	require.Error(t, err)
}

func TestTransientLocalLateJoiner(t *testing.T) {
	a, b := openPair(t)
	topic := uniqueTopic(t, "tl")
	q := QoS{Reliability: Reliable, History: KeepLast, Depth: 5, Durability: TransientLocal}
	w, err := a.NewWriter(topic, laserType, q)
	require.NoError(t, err)
	base := time.Unix(1700000100, 0)
	for i := range 8 {
		require.NoError(t, w.Write(cdrSample(32, uint32(i)), base.Add(time.Duration(i)*time.Millisecond)))
	}
	r, err := b.NewReader(topic, laserType, q)
	require.NoError(t, err)
	for i := 3; i < 8; i++ {
		s := recv(t, r, 5*time.Second)
		require.Equal(t, cdrSample(32, uint32(i)), s.CDR)
		require.Equal(t, base.Add(time.Duration(i)*time.Millisecond).UnixNano(), s.SourceTimestamp.UnixNano())
	}
}

func TestDiscoveryReportsRemoteEndpoints(t *testing.T) {
	a, b := openPair(t)
	topic := uniqueTopic(t, "disc")
	hash := "RIHS01_" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

	var mu sync.Mutex
	var events []Endpoint
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.WatchEndpoints(ctx, func(e Endpoint) {
			if e.Topic == topic {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
		})
	}()
	find := func(kind EndpointKind, alive bool) *Endpoint {
		mu.Lock()
		defer mu.Unlock()
		for i := range events {
			if events[i].Kind == kind && events[i].Alive == alive {
				e := events[i]
				return &e
			}
		}
		return nil
	}

	wq := QoS{Reliability: Reliable, MaxBlocking: 250 * time.Millisecond, History: KeepLast, Depth: 7,
		Durability: TransientLocal, UserData: []byte("typehash=" + hash + ";")}
	w, err := b.NewWriter(topic, laserType, wq)
	require.NoError(t, err)
	r, err := b.NewReader(topic, laserType, SensorDataQoS())
	require.NoError(t, err)
	// own endpoints are not reported
	_, err = a.NewReader(topic, laserType, ROSDefaultQoS())
	require.NoError(t, err)

	waitFor(t, 5*time.Second, "publication seen", func() bool { return find(Publication, true) != nil })
	waitFor(t, 5*time.Second, "subscription seen", func() bool { return find(Subscription, true) != nil })
	pub := find(Publication, true)
	require.Equal(t, laserType, pub.TypeName)
	require.Equal(t, Reliable, pub.QoS.Reliability)
	require.Equal(t, 250*time.Millisecond, pub.QoS.MaxBlocking)
	require.Equal(t, TransientLocal, pub.QoS.Durability)
	require.Equal(t, KeepLast, pub.QoS.History)
	require.Equal(t, int32(7), pub.QoS.Depth) // Cyclone-to-Cyclone extension
	require.Equal(t, hash, pub.TypeHash)
	bg := b.GUID()
	require.Equal(t, bg[:12], pub.Participant[:12])
	sub := find(Subscription, true)
	require.Equal(t, BestEffort, sub.QoS.Reliability)
	require.Equal(t, Volatile, sub.QoS.Durability)

	ag := a.GUID()
	mu.Lock()
	for _, e := range events {
		require.NotEqual(t, ag[:12], e.Participant[:12], "own endpoint reported")
	}
	mu.Unlock()

	require.NoError(t, w.Close())
	waitFor(t, 5*time.Second, "publication gone", func() bool { return find(Publication, false) != nil })
	gone := find(Publication, false)
	require.Equal(t, pub.GUID, gone.GUID)
	require.Equal(t, topic, gone.Topic)
	require.NoError(t, r.Close())

	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("WatchEndpoints did not return after cancel")
	}
}

func TestWatchEndpointsEndsOnParticipantClose(t *testing.T) {
	p, err := Open(Config{DomainID: newDomainID()})
	require.NoError(t, err)
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		done <- p.WatchEndpoints(context.Background(), func(Endpoint) {})
	}()
	<-started
	time.Sleep(20 * time.Millisecond) // let the watch start (closing earlier is fine too)
	require.NoError(t, p.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("WatchEndpoints did not return after Close")
	}
}

func TestSplitCriticalAndNoncritical(t *testing.T) {
	a, b := openPair(t)
	in, crit, non := uniqueTopic(t, "in"), uniqueTopic(t, "crit"), uniqueTopic(t, "noncrit")
	h, err := Split(b, SplitConfig{Input: in, CriticalOutput: crit, NoncriticalOutput: non, Type: laserType})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	require.Equal(t, CriticalQoS(), h.Critical().QoS().withoutDefaults(CriticalQoS()))

	rc, err := a.NewReader(crit, laserType, CriticalQoS())
	require.NoError(t, err)
	rn, err := a.NewReader(non, laserType, NoncriticalQoS())
	require.NoError(t, err)
	w, err := a.NewWriter(in, laserType, ROSDefaultQoS())
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "match", func() bool {
		return w.Matched() == 1 && h.Critical().Matched() == 1 && h.Noncritical().Matched() == 1
	})
	const n = 5
	for i := range n {
		ts := time.Unix(1700000200, int64(i))
		payload := cdrSample(1500, uint32(i))
		require.NoError(t, w.Write(payload, ts))
		for _, r := range []*Reader{rc, rn} {
			s := recv(t, r, 5*time.Second)
			require.Equal(t, payload, s.CDR)
			require.Equal(t, ts.UnixNano(), s.SourceTimestamp.UnixNano())
		}
	}
	// The readers may see the last sample before forward counts its write.
	waitFor(t, 5*time.Second, "split stats", func() bool { return h.Stats() == SplitStats{In: n, Critical: n, Noncritical: n} })
	_, err = Split(b, SplitConfig{Input: in, CriticalOutput: in, NoncriticalOutput: non, Type: laserType})
	require.Error(t, err)
}

// withoutDefaults lets a test compare a normalized QoS with a literal one.
func (q QoS) withoutDefaults(lit QoS) QoS {
	if lit.MaxBlocking == 0 {
		q.MaxBlocking = 0
	}
	if lit.MaxSamples == 0 {
		q.MaxSamples = 0
	}
	return q
}

func TestDomainConfigConflict(t *testing.T) {
	id := newDomainID()
	p, err := Open(Config{DomainID: id})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	_, err = Open(Config{DomainID: id, MaxAutoParticipantIndex: 3})
	require.ErrorIs(t, err, ErrDomainConfig)
}

func TestClosedParticipantRefusesNewEntities(t *testing.T) {
	p, err := Open(Config{DomainID: newDomainID()})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	_, err = p.NewWriter("rt/x", laserType, ROSDefaultQoS())
	require.ErrorIs(t, err, ErrClosed)
	_, err = p.NewReader("rt/x", laserType, ROSDefaultQoS())
	require.ErrorIs(t, err, ErrClosed)
}

// TestCloseReleasesEverything runs a busy pub/sub in all reception modes,
// closes the participants with the readers still open, and checks that no
// goroutine survives and every serdata was freed.
func TestCloseReleasesEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		cfg := Config{DomainID: newDomainID()}
		a, err := Open(cfg)
		require.NoError(t, err)
		b, err := Open(cfg)
		require.NoError(t, err)
		topic := uniqueTopic(t, "leak")
		w, err := a.NewWriter(topic, laserType, ROSDefaultQoS())
		require.NoError(t, err)
		r1, err := b.NewReader(topic, laserType, ROSDefaultQoS(), WithQueue(2, DropOldest))
		require.NoError(t, err)
		r2, err := b.NewReader(topic, laserType, ROSDefaultQoS(), WithListener(), WithQueue(2, DropNewest))
		require.NoError(t, err)
		_, err = b.NewReader(topic, laserType, ROSDefaultQoS(), WithQueue(1, Block))
		require.NoError(t, err)
		h, err := Split(b, SplitConfig{Input: topic, CriticalOutput: topic + "_c", NoncriticalOutput: topic + "_n", Type: laserType})
		require.NoError(t, err)
		watchDone := make(chan error, 1)
		go func() { watchDone <- a.WatchEndpoints(context.Background(), func(Endpoint) {}) }()
		waitFor(t, 5*time.Second, "match", func() bool { return w.Matched() == 4 })
		for i := range 200 {
			require.NoError(t, w.Write(cdrSample(4096, uint32(i)), time.Time{}))
		}
		waitFor(t, 5*time.Second, "received", func() bool {
			// KEEP_LAST 10 reader caches may overwrite samples before a take
			return r1.Stats().Received >= 10 && r2.Stats().Received >= 10 && h.Stats().In >= 10
		})
		require.NoError(t, b.Close()) // closes the blocked reader, the split, r1, r2
		require.NoError(t, a.Close())
		require.ErrorIs(t, <-watchDone, ErrClosed)
		n := 0
		for range r1.C() {
			n++
		}
		require.Equal(t, 2, n)
	}()
	if !assertEventually(5*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: before %d after %d\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
	waitFor(t, 5*time.Second, "serdata freed", func() bool { return liveSerdata() == 0 })
}

func TestErrorMapping(t *testing.T) {
	require.ErrorIs(t, &Error{Op: "x", Code: retTimeout}, ErrTimeout)
	require.ErrorIs(t, &Error{Op: "x", Code: retAlreadyDeleted}, ErrClosed)
	require.False(t, errors.Is(&Error{Op: "x", Code: retError}, ErrTimeout))
}

// TestIdleReaderWaitsInNetpoller checks that a reader's goroutine waits for
// data parked in Go's netpoller ("IO wait"), not inside a cgo call
// ("syscall"). A goroutine blocked in C keeps its P until sysmon retakes
// it, 10 to 20 ms in an idle process: the route goroutine it had just woken
// waited that long, the demo's critical-latency tail (no_loop_room p99
// 15 ms with dds_waitset_wait). Samples written meanwhile still arrive in
// order.
func TestIdleReaderWaitsInNetpoller(t *testing.T) {
	a, b := openPair(t)
	topic := uniqueTopic(t, "wait")
	r, err := b.NewReader(topic, laserType, ROSDefaultQoS())
	require.NoError(t, err)
	w, err := a.NewWriter(topic, laserType, ROSDefaultQoS())
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "match", func() bool { return w.Matched() == 1 && r.Matched() == 1 })

	for i := range uint32(3) {
		require.NoError(t, w.Write(cdrSample(64, i), time.Time{}))
		require.Equal(t, i, binary.LittleEndian.Uint32(recv(t, r, 5*time.Second).CDR[4:]))
		var state string
		waitFor(t, 5*time.Second, "reader goroutine waiting", func() bool {
			state = waitLoopState()
			return strings.Contains(state, "wait") || strings.Contains(state, "syscall")
		})
		require.Contains(t, state, "IO wait", "the idle reader's goroutine is %q", state)
	}
}

// waitLoopState is the state ("IO wait", "syscall", "runnable"...) of the
// first goroutine running Reader.waitLoop, from a dump of all goroutines.
func waitLoopState() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "ddspath.(*Reader).waitLoop") {
			continue
		}
		hdr, _, _ := strings.Cut(g, "\n")
		if i, j := strings.Index(hdr, "["), strings.Index(hdr, "]"); i >= 0 && j > i {
			return hdr[i+1 : j]
		}
	}
	return ""
}
