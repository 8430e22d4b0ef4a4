//go:build cgo && cyclonedds

package ddspath

import (
	"sync"
	"sync/atomic"
)

// sampleQueue is a reader's bounded queue: a buffered channel the consumer
// ranges over, with the overflow policy applied by the (single, serialized)
// producer. Close closes the channel once no producer can run any more.
type sampleQueue struct {
	ch      chan *Sample
	policy  Overflow
	done    <-chan struct{} // closed when the owner shuts down (unblocks Block)
	mu      sync.Mutex      // serializes producers (listener threads may differ)
	dropped atomic.Uint64
	recv    atomic.Uint64
}

func newSampleQueue(n int, policy Overflow, done <-chan struct{}) *sampleQueue {
	return &sampleQueue{ch: make(chan *Sample, n), policy: policy, done: done}
}

// push enqueues s according to the overflow policy. It reports false when the
// owner shut down while blocked.
func (q *sampleQueue) push(s *Sample) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.recv.Add(1)
	select {
	case q.ch <- s:
		return true
	default:
	}
	switch q.policy {
	case DropNewest:
		q.dropped.Add(1)
		return true
	case Block:
		select {
		case q.ch <- s:
			return true
		case <-q.done:
			q.dropped.Add(1)
			return false
		}
	default: // DropOldest
		for {
			select {
			case <-q.ch:
				q.dropped.Add(1)
			default:
			}
			select {
			case q.ch <- s:
				return true
			default: // the consumer did not take the freed slot; we did: retry
			}
		}
	}
}

// close closes the channel; call only when no push can happen any more.
func (q *sampleQueue) close() {
	q.mu.Lock()
	close(q.ch)
	q.mu.Unlock()
}
