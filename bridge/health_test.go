package bridge_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

func TestParseProcStat(t *testing.T) {
	h, err := bridge.ParseProcStat([]byte("cpu  75629 1206 19443 76035 629 0 1328 1857 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1\n"))
	require.NoError(t, err)
	require.Equal(t, bridge.HostStats{CPUTotal: 75629 + 1206 + 19443 + 76035 + 629 + 0 + 1328 + 1857, CPUSteal: 1857}, h, "guest time is in user already")
	h, err = bridge.ParseProcStat([]byte("cpu 1 2 3 4\n")) // an old kernel: no steal column
	require.NoError(t, err)
	require.Equal(t, bridge.HostStats{CPUTotal: 10}, h)
	_, err = bridge.ParseProcStat([]byte("cpu 1 x 3\n"))
	require.ErrorContains(t, err, "cpu field 2")
	_, err = bridge.ParseProcStat([]byte("cpu 18446744073709551615 1\n"))
	require.ErrorContains(t, err, "overflow")
	_, err = bridge.ParseProcStat([]byte("intr 1\n"))
	require.ErrorContains(t, err, "no cpu line")
	if hs, err := bridge.ReadHostStats(); err == nil { // Linux
		require.Positive(t, hs.CPUTotal)
		require.Positive(t, hs.CPUs)
	}
}

// FuzzParseProcStat: any input gives a reading or an error, never a panic,
// and steal never exceeds the total.
func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("cpu  75629 1206 19443 76035 629 0 1328 1857 0 0\n"))
	f.Add([]byte("cpu 1 2\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := bridge.ParseProcStat(b)
		if err == nil && h.CPUSteal > h.CPUTotal {
			t.Fatalf("steal %d > total %d", h.CPUSteal, h.CPUTotal)
		}
	})
}
