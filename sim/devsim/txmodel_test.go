package devsim

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// sendTimes runs a sender that asks for the socket in a loop and records
// when each send got it, until ctx ends.
func sendTimes(ctx context.Context, l *fdLock, t0 time.Time, mu *sync.Mutex, out *[]time.Duration) {
	for {
		release, ok := l.acquire(ctx, nil)
		if !ok {
			return
		}
		mu.Lock()
		*out = append(*out, time.Since(t0))
		mu.Unlock()
		release()
	}
}

// TestFDLock: with no inbound traffic a device's sends get exactly one
// socket send per window; samples arriving every 33 ms release one send
// at each arrival; two senders share the one send per recv return.
func TestFDLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		l := newFDLock(100 * time.Millisecond)
		go l.run(ctx)
		t0 := time.Now()
		var mu sync.Mutex
		var got []time.Duration
		go sendTimes(ctx, l, t0, &mu, &got)
		time.Sleep(10*time.Second + time.Millisecond)
		mu.Lock()
		require.Len(t, got, 100, "one send per 100 ms window, no inbound traffic")
		for i, at := range got {
			require.Equal(t, time.Duration(i+1)*100*time.Millisecond, at)
		}
		got = got[:0]
		mu.Unlock()

		// Inbound samples every 33 ms: each ends the recv at once and
		// releases the waiting send then.
		t1 := time.Now()
		for k := 1; k <= 30; k++ {
			time.Sleep(33 * time.Millisecond)
			l.arrived()
			synctest.Wait()
		}
		mu.Lock()
		require.Len(t, got, 30)
		for i, at := range got {
			require.Equal(t, t1.Sub(t0)+time.Duration(i+1)*33*time.Millisecond, at, "send %d released at arrival %d", i, i+1)
		}
		mu.Unlock()
		st := l.stats()
		require.EqualValues(t, 100, st.RecvTimeouts)
		require.EqualValues(t, 30, st.RecvDataEnds)
		require.EqualValues(t, 130, st.TxGrants)
		cancel()
		synctest.Wait()

		// Two senders (a 100 Hz and a 10 Hz tier of one image) share the
		// one send per window: 10 s → 100 sends in all, alternating.
		ctx, cancel = context.WithCancel(t.Context())
		defer cancel()
		l = newFDLock(100 * time.Millisecond)
		go l.run(ctx)
		var a, b []time.Duration
		t2 := time.Now()
		go sendTimes(ctx, l, t2, &mu, &a)
		go sendTimes(ctx, l, t2, &mu, &b)
		time.Sleep(10*time.Second + time.Millisecond)
		mu.Lock()
		require.Equal(t, 100, len(a)+len(b))
		require.InDelta(t, 50, len(a), 1)
		mu.Unlock()
		cancel()
		synctest.Wait()

		// No lock (POSIX): at once. A send abandoned while waiting leaves
		// the queue.
		var none *fdLock
		rel, ok := none.acquire(t.Context(), nil)
		require.True(t, ok)
		rel()
		none.arrived()
		l = newFDLock(time.Second)
		ctx, cancel = context.WithCancel(t.Context())
		defer cancel()
		go l.run(ctx)
		stop := make(chan struct{})
		done := make(chan bool)
		go func() { _, ok := l.acquire(ctx, stop); done <- ok }()
		time.Sleep(10 * time.Millisecond)
		close(stop)
		require.False(t, <-done)
		require.Empty(t, l.queue)
		require.Nil(t, newFDLock(0))
	})
}

// txRig is a txPath over an fdLock with a counting socket write.
type txRig struct {
	p      *txPath
	mu     sync.Mutex
	sends  []int // messages per socket send
	writes int
}

func newTxRig(window time.Duration, batch, split bool, content int) *txRig {
	r := &txRig{}
	r.p = newTxPath(batch, split, content, newFDLock(window), func(msgs []pendingMsg, ok, single bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if ok {
			r.sends = append(r.sends, len(msgs))
			r.writes += len(msgs)
		}
	})
	return r
}

func (r *txRig) sent() (sends, msgs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sends), r.writes
}

func msg(size int) pendingMsg { return pendingMsg{size: size} }

// TestTxPathSplitLock: while the flush thread waits for the socket, a
// publisher appends at once with split lock and waits for the whole send
// without it (zenoh-pico holds the TX mutex across the send).
func TestTxPathSplitLock(t *testing.T) {
	for _, split := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := newTxRig(100*time.Millisecond, true, split, 1000)
			go r.p.lock.run(ctx)
			r.p.publish(ctx, nil, msg(100), false)
			go r.p.flush(ctx, nil) // takes the batch, waits for the socket until t = 100 ms
			time.Sleep(10 * time.Millisecond)
			t0 := time.Now()
			r.p.publish(ctx, nil, msg(100), false)
			blocked := time.Since(t0)
			if split {
				require.Zero(t, blocked, "split lock: the append does not wait for the send")
			} else {
				require.Equal(t, 90*time.Millisecond, blocked, "no split lock: the append waits for the flush's send")
			}
			time.Sleep(200 * time.Millisecond)
			sends, msgs := r.sent()
			require.Equal(t, 1, sends)
			require.Equal(t, 1, msgs, "the second sample waits in the next batch")
		})
	}
}

// TestTxPathExpressAndOverflow: an express put bypasses the batch (a send
// of its own, waiting for the socket); a put that would overflow the batch
// sends it first (inline without split lock; parked with it, the second
// overflow sending the parked one inline).
func TestTxPathExpressAndOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		r := newTxRig(100*time.Millisecond, true, false, 250)
		go r.p.lock.run(ctx)
		r.p.publish(ctx, nil, msg(100), false)
		t0 := time.Now()
		r.p.publish(ctx, nil, msg(10), true)
		require.Equal(t, 100*time.Millisecond, time.Since(t0), "express waits for the socket window")
		require.Equal(t, []int{1}, r.sends)
		r.p.publish(ctx, nil, msg(100), false) // 200 B batched
		t0 = time.Now()
		r.p.publish(ctx, nil, msg(100), false) // overflow: sends the 2 inline
		require.Equal(t, 100*time.Millisecond, time.Since(t0))
		require.Equal(t, []int{1, 2}, r.sends)
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		r := newTxRig(100*time.Millisecond, true, true, 250)
		go r.p.lock.run(ctx)
		t0 := time.Now()
		for range 4 { // two batches of 2: the 3rd put parks the first
			r.p.publish(ctx, nil, msg(100), false)
		}
		require.Zero(t, time.Since(t0), "split lock: the first overflow parks the batch")
		r.p.publish(ctx, nil, msg(100), false) // second overflow: the parked one goes inline
		require.Equal(t, 100*time.Millisecond, time.Since(t0))
		require.Equal(t, []int{2}, r.sends)
		r.p.flush(ctx, nil) // a batch is parked: this flush sends it
		require.Equal(t, []int{2, 2}, r.sends)
		require.Equal(t, 200*time.Millisecond, time.Since(t0))
		r.p.flush(ctx, nil) // then the current one
		require.Equal(t, []int{2, 2, 1}, r.sends)
		require.Equal(t, 300*time.Millisecond, time.Since(t0))
	})
}
