package benchkit

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/pprofserve"
)

func TestSlug(t *testing.T) {
	require.Equal(t, "throughput-go-pub-go-sub-8b", Slug("throughput, Go pub → Go sub", "8B"))
	require.Equal(t, "pico-z-ping-z-pong-64b-run2", Slug("pico z_ping ↔ z_pong", "64B", "run2"))
	require.Equal(t, "", Slug("→ —"))
}

// TestStartProfilesWritesFiles profiles this test process through a loopback pprof
// server: three non-empty files.
func TestStartProfilesWritesFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: takes a 1 s CPU profile")
	}
	s, err := pprofserve.Start("127.0.0.1:0")
	require.NoError(t, err)
	defer s.Close()
	dir := filepath.Join(t.TempDir(), "prof")
	p := StartProfiles("http://"+s.Addr(), dir, "row", 200*time.Millisecond)
	require.NoError(t, p.Wait())
	for _, k := range ProfileKinds {
		st, err := os.Stat(filepath.Join(dir, "row."+k))
		require.NoError(t, err)
		require.Positive(t, st.Size(), k)
	}
}

func TestStartProfilesErrors(t *testing.T) {
	s, err := pprofserve.Start("127.0.0.1:0")
	require.NoError(t, err)
	addr := s.Addr()
	require.NoError(t, s.Close())
	p := StartProfiles("http://"+addr, t.TempDir(), "row", time.Millisecond)
	require.ErrorContains(t, p.Wait(), "profile cpu")
	var none *Profiling
	require.NoError(t, none.Wait())
}
