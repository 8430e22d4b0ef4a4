package bridge_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

func TestServicesConfigDefaultsAndTimeouts(t *testing.T) {
	c := bridge.DefaultConfig()
	s := c.Services
	require.True(t, s.Enabled)
	require.Equal(t, 256, s.MaxPending)
	q := s.QueriesTimeout
	require.Equal(t, 5*time.Second, q.TimeoutFor("/add_two_ints"))
	require.Equal(t, 5*time.Second, q.TimeoutFor("/fib/_action/send_goal"))
	require.Equal(t, 5*time.Second, q.TimeoutFor("/fib/_action/cancel_goal"))
	require.Equal(t, 300*time.Second, q.TimeoutFor("/fib/_action/get_result"))
	require.Equal(t, 5*time.Second, q.HistoryTimeout())

	c, err := bridge.ParseConfig("pb.yaml", []byte(`
services:
  queries_timeout: {default: 2s, services: 1s, actions: {send_goal: 3s}, transient_local: 4s}
`))
	require.NoError(t, err)
	q = c.Services.QueriesTimeout
	require.Equal(t, time.Second, q.TimeoutFor("/x"))
	require.Equal(t, 3*time.Second, q.TimeoutFor("/a/_action/send_goal"))
	require.Equal(t, 2*time.Second, q.TimeoutFor("/a/_action/cancel_goal"))
	require.Equal(t, 300*time.Second, q.TimeoutFor("/a/_action/get_result"))
	require.Equal(t, 4*time.Second, q.HistoryTimeout())
}

func TestServicesConfigRefused(t *testing.T) {
	_, err := bridge.ParseConfig("pb.yaml", []byte(`
services:
  queries_timeout: {default: 0s, services: -1s}
  max_pending: 0
`))
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "pb.yaml:3:30: services.queries_timeout.default: must be > 0 (got 0s")
	require.Contains(t, msg, "services.queries_timeout.services: must be ≥ 0 (got -1s; 0: queries_timeout.default)")
	require.Contains(t, msg, "pb.yaml:4:16: services.max_pending: must be in 1..65536 calls (got 0)")
	_, err = bridge.ParseConfig("pb.yaml", []byte("services:\n  queries_timeout: {default: 5}\n"))
	require.ErrorContains(t, err, `services.queries_timeout.default: cannot parse "5" as a duration`)
	_, err = bridge.ParseConfig("pb.yaml", []byte("services:\n  timeout: 5s\n"))
	require.ErrorContains(t, err, "services.timeout: unknown key in services (allowed: enabled, max_pending, queries_timeout)")
}
