package zenohpath

import (
	"errors"
	"sync/atomic"
)

// ErrQueryFinished is returned by a reply to a query that was already
// finished (its handler returned without Detach, or Finish was called).
var ErrQueryFinished = errors.New("zenohpath: query already finished")

// queryFinisher counts the parts of one received query that are still
// running (the handler loop, plus each detached Query) and runs fn, which
// sends RESPONSE_FINAL or ends the local Get part, when the count reaches 0.
type queryFinisher struct {
	n  atomic.Int32
	fn func()
}

func newQueryFinisher(fn func()) *queryFinisher {
	f := &queryFinisher{fn: fn}
	f.n.Store(1)
	return f
}

func (f *queryFinisher) add() { f.n.Add(1) }

func (f *queryFinisher) done() {
	if f.n.Add(-1) == 0 && f.fn != nil {
		f.fn()
	}
}

// Detach keeps the query open after its handler returns, so that it can be
// answered from another goroutine (a DDS service reply, say) without
// holding the session's dispatcher: Reply, ReplyDel and ReplyErr stay valid
// until Finish, which sends RESPONSE_FINAL (for the last detached query of
// a request). Call it from inside the handler, at most once (later calls do
// nothing). A detached query that is never finished is ended by the
// querier's timeout on the router (zenoh-wire.md §9.3), but its
// RESPONSE_FINAL is then never sent by this session: always call Finish.
func (q *Query) Detach() {
	if q.fin == nil || q.finished.Load() || !q.detached.CompareAndSwap(false, true) {
		return
	}
	q.fin.add()
}

// Finish ends a detached query: no reply is accepted after it
// (ErrQueryFinished). Safe to call more than once and from any goroutine;
// it does nothing for a query that was not detached.
func (q *Query) Finish() {
	if !q.detached.Load() || !q.finished.CompareAndSwap(false, true) {
		return
	}
	q.fin.done()
}
