package probe_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/probe"
)

func TestWindow(t *testing.T) {
	w := probe.NewWindow(4)
	require.Equal(t, probe.Stats{}, w.Stats(), "empty")
	w.Answered(10 * time.Millisecond)
	w.Lost()
	w.Answered(30 * time.Millisecond)
	require.Equal(t, probe.Stats{Samples: 3, Replies: 2, RTT: 20 * time.Millisecond, Loss: 1.0 / 3}, w.Stats())
	w.Lost()
	w.Answered(50 * time.Millisecond) // overwrites the first (10 ms)
	require.Equal(t, probe.Stats{Samples: 4, Replies: 2, RTT: 40 * time.Millisecond, Loss: 0.5}, w.Stats())
	w.Lost()
	w.Lost()
	w.Lost()
	require.Equal(t, probe.Stats{Samples: 4, Replies: 1, RTT: 50 * time.Millisecond, Loss: 0.75}, w.Stats())
	w.Lost()
	require.Equal(t, probe.Stats{Samples: 4, Replies: 0, Loss: 1}, w.Stats(), "all lost: no RTT")

	one := probe.NewWindow(0) // at least 1
	one.Answered(time.Second)
	one.Answered(2 * time.Second)
	require.Equal(t, probe.Stats{Samples: 1, Replies: 1, RTT: 2 * time.Second}, one.Stats())
}

func TestMessageRTT(t *testing.T) {
	p := probe.Message{Kind: probe.Pong, DevRecv: 1000, DevSend: 4000} // 3 µs on the device
	require.Equal(t, 7*time.Microsecond, p.RTT(10*time.Microsecond))
	require.Equal(t, 2*time.Microsecond, p.RTT(2*time.Microsecond), "processing not shorter than elapsed: kept whole")
	p.DevSend = 500 // device clock went backwards
	require.Equal(t, 10*time.Microsecond, p.RTT(10*time.Microsecond))
}
