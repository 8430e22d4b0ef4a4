package bridge_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

func TestSupervisorTransitions(t *testing.T) {
	s := bridge.NewSupervisor(bridge.DefaultConfig().Supervisor) // degraded 0.7/100ms/10, emergency 0.95/1s/100, recover 0.5/50ms/0 ×3
	calm := bridge.Health{QueueOccupancy: 0.1}
	between := bridge.Health{QueueOccupancy: 0.6} // below degraded, above recover
	type step struct {
		h    bridge.Health
		want bridge.SupervisorMode
	}
	steps := []step{
		{calm, bridge.Normal},
		{bridge.Health{QueueOccupancy: 0.7}, bridge.Degraded}, // at the limit enters at once
		{between, bridge.Degraded},
		{calm, bridge.Degraded},
		{calm, bridge.Degraded},
		{between, bridge.Degraded}, // resets the calm count
		{calm, bridge.Degraded},
		{calm, bridge.Degraded},
		{calm, bridge.Normal},                                   // 3 calm readings in a row
		{bridge.Health{Lag: 2 * time.Second}, bridge.Emergency}, // straight to EMERGENCY
		{bridge.Health{QueueOccupancy: 0.8}, bridge.Emergency},  // degraded-level reading: stays
		{calm, bridge.Emergency},
		{calm, bridge.Emergency},
		{calm, bridge.Degraded}, // one level down at a time
		{bridge.Health{Errors: 10}, bridge.Degraded},
		{calm, bridge.Degraded},
		{calm, bridge.Degraded},
		{calm, bridge.Normal},
		{bridge.Health{Errors: 9, Lag: 99 * time.Millisecond, QueueOccupancy: 0.69}, bridge.Normal},
		{bridge.Health{Errors: 100}, bridge.Emergency},
	}
	n := 0
	for i, st := range steps {
		_, changed := s.Observe(st.h, t0.Add(time.Duration(i)*time.Second))
		if changed {
			n++
		}
		require.Equal(t, st.want, s.Mode(), "step %d %+v", i, st.h)
	}
	status := s.Status()
	require.Equal(t, uint64(n), status.Transitions)
	require.Equal(t, uint64(6), status.Transitions)
	require.Equal(t, bridge.ModeChange{At: t0.Add(1 * time.Second), From: bridge.Normal, To: bridge.Degraded,
		Health: bridge.Health{QueueOccupancy: 0.7}, Reason: "queue occupancy 0.70 ≥ 0.70"}, status.History[0])
	require.Equal(t, "3 calm evaluations", status.History[1].Reason)
	require.Equal(t, "lag 2s ≥ 1s", status.History[2].Reason)
	require.Equal(t, "100 errors ≥ 100", status.History[5].Reason)
}
