package zenohpath

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Bounds of the in-process link between the router and a Session.
const (
	// localQueueLimit is how many data messages (PUSH, REQUEST, RESPONSE) may
	// wait for a Session's dispatcher; control messages are never dropped.
	localQueueLimit = 4096
	// localBlockTimeout bounds a BLOCK send to a full Session queue (the same
	// bound as transport.DefaultBlockTimeout).
	localBlockTimeout = time.Second
)

var (
	errLocalFull         = errors.New("zenohpath: session queue full, message dropped")
	errLocalBlockTimeout = fmt.Errorf("zenohpath: session queue: %w", transport.ErrBlockTimeout)
)

// localLink is the face link of an in-process Session: send copies the
// message onto a queue that the Session's dispatcher goroutine drains, so
// the router never runs user callbacks and never waits on them with its
// lock held.
type localLink struct {
	maxMsg int // larger messages are refused (ErrTooLarge)
	mu     sync.Mutex
	q      []localItem
	data   int
	closed bool
	wake   chan struct{}
	space  chan struct{}
}

// localItem is a message from the router, or a task the session posted to
// run on its dispatcher (local queries and liveliness, in order with the
// router's messages).
type localItem struct {
	m  wire.NetworkMessage
	fn func()
}

// post queues fn for the dispatcher; false once closed.
func (l *localLink) post(fn func()) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.q = append(l.q, localItem{fn: fn})
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return true
}

func newLocalLink(maxMsg int) *localLink {
	return &localLink{maxMsg: maxMsg, wake: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

func isData(m wire.NetworkMessage) bool {
	switch m.(type) {
	case *wire.Push, *wire.Request, *wire.Response:
		return true
	}
	return false
}

func (l *localLink) send(m wire.NetworkMessage, o sendOptions) error {
	if l.maxMsg > 0 && m.Len() > l.maxMsg {
		return ErrTooLarge
	}
	data := isData(m)
	c := cloneNetwork(m)
	var deadline <-chan time.Time
	l.mu.Lock()
	for data && l.data >= localQueueLimit && !l.closed {
		l.mu.Unlock()
		if !o.Block {
			return errLocalFull
		}
		if deadline == nil {
			t := time.NewTimer(localBlockTimeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-l.space:
		case <-deadline:
			return errLocalBlockTimeout
		}
		l.mu.Lock()
	}
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.q = append(l.q, localItem{m: c})
	if data {
		l.data++
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

// sendShared queues a copy of the message (the dispatcher needs the
// message, not its bytes).
func (l *localLink) sendShared(s *shared, o sendOptions) error { return l.send(s.m, o) }

func (l *localLink) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// drain waits for queued messages and takes them all; false once closed.
func (l *localLink) drain() ([]localItem, bool) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, false
		}
		if len(l.q) > 0 {
			q := l.q
			l.q, l.data = nil, 0
			l.mu.Unlock()
			select {
			case l.space <- struct{}{}:
			default:
			}
			return q, true
		}
		l.mu.Unlock()
		<-l.wake
	}
}
