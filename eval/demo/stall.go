package demo

import (
	"sync"
	"time"
)

// stallMonitor measures how late this process's goroutines wake up: a
// goroutine sleeps 5 ms at a time and records how much later than asked it
// ran. A loaded host delays every goroutine the same way, including the
// gateway's express sender and the replay's writer; a delay longer than a
// critical topic's period lets a newer sample replace a pending one.
type stallMonitor struct {
	mu     sync.Mutex
	max    time.Duration // over the run
	window time.Duration // since the last take
	over   int           // wake-ups later than threshold
	thresh time.Duration
	stop   chan struct{}
	done   chan struct{}
}

func startStallMonitor(threshold time.Duration) *stallMonitor {
	m := &stallMonitor{thresh: threshold, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		const step = 5 * time.Millisecond
		t := time.NewTimer(step)
		defer t.Stop()
		for {
			asked := time.Now()
			t.Reset(step)
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
			late := time.Since(asked) - step
			m.mu.Lock()
			m.max = max(m.max, late)
			m.window = max(m.window, late)
			if late > m.thresh {
				m.over++
			}
			m.mu.Unlock()
		}
	}()
	return m
}

// take returns the largest lateness since the previous take.
func (m *stallMonitor) take() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.window
	m.window = 0
	return w
}

func (m *stallMonitor) result() (maxLate time.Duration, over int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.max, m.over
}

func (m *stallMonitor) close() {
	close(m.stop)
	<-m.done
}
