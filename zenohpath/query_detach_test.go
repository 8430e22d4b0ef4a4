package zenohpath

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// collect reads every reply of a Get until the channel closes.
func collect(t *testing.T, ch <-chan Reply) (oks []string, errs []string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case rep, ok := <-ch:
			if !ok {
				return oks, errs
			}
			if s, ok := rep.Ok(); ok {
				oks = append(oks, string(s.Payload()))
			} else if e, ok := rep.Err(); ok {
				errs = append(errs, string(e.Payload()))
			}
		case <-timeout:
			t.Fatal("Get did not end")
		}
	}
}

// TestQueryDetach: a detached query is answered after its handler returned,
// from another goroutine; the Get ends only at Finish, and nothing is
// accepted after it. Both for a query from another session (through the
// router: RESPONSE_FINAL) and for the session's own Get (local part).
func TestQueryDetach(t *testing.T) {
	r, _ := newTestRouter(t)
	srv := openInProcess(t, r)
	cli := openInProcess(t, r)
	held := make(chan *Query, 4)
	_, err := srv.DeclareQueryable("svc/slow", func(q *Query) {
		q.Detach()
		q.Detach() // a second call changes nothing
		held <- q
	}, &QueryableOptions{Complete: true})
	require.NoError(t, err)
	for _, from := range []*Session{cli, srv} {
		replies, err := from.Get("svc/slow", &GetOptions{Target: QueryTargetAllComplete, Timeout: 5 * time.Second})
		require.NoError(t, err)
		q := recv(t, held)
		select {
		case rep, ok := <-replies:
			t.Fatalf("Get answered before the detached query replied: %v %v", rep, ok)
		case <-time.After(50 * time.Millisecond):
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			require.NoError(t, q.Reply("svc/slow", []byte("late"), nil))
			q.Finish()
			q.Finish()
			require.ErrorIs(t, q.Reply("svc/slow", []byte("after"), nil), ErrQueryFinished)
		}()
		oks, errs := collect(t, replies)
		<-done
		require.Equal(t, []string{"late"}, oks)
		require.Empty(t, errs)
	}
}

// TestQueryNotDetachedFinishedAfterHandler: without Detach the query ends
// when the handler returns; a reply kept for later is refused.
func TestQueryNotDetachedFinishedAfterHandler(t *testing.T) {
	r, _ := newTestRouter(t)
	srv := openInProcess(t, r)
	cli := openInProcess(t, r)
	kept := make(chan *Query, 1)
	_, err := srv.DeclareQueryable("svc/fast", func(q *Query) {
		_ = q.ReplyErr([]byte("no"), nil)
		q.Finish() // not detached: nothing
		kept <- q
	}, nil)
	require.NoError(t, err)
	replies, err := cli.Get("svc/fast", nil)
	require.NoError(t, err)
	oks, errs := collect(t, replies)
	require.Empty(t, oks)
	require.Equal(t, []string{"no"}, errs)
	require.ErrorIs(t, recv(t, kept).Reply("svc/fast", []byte("x"), nil), ErrQueryFinished)
}
