package runner

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// --gateway-cfg settings are named in a run's notes, as picobridge run --cfg takes them.
func TestGatewayCfgNote(t *testing.T) {
	require.Equal(t, "", gatewayCfgNote(nil))
	require.Equal(t, ", --cfg policy.express.realtime:fifo --cfg policy.batched.rate_hz:20",
		gatewayCfgNote([]string{"policy.express.realtime:fifo", "policy.batched.rate_hz:20"}))
}
