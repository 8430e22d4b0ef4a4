//go:build cgo && cyclonedds

package ddspath

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// timeScale stretches test timeouts on slow machines (DDSPATH_TIMESCALE=5);
// the default 2 leaves room for a loaded 2-core CI runner. Polls return as
// soon as their condition holds, so this only matters for failures.
func timeScale() time.Duration {
	if v, err := strconv.Atoi(os.Getenv("DDSPATH_TIMESCALE")); err == nil && v > 0 {
		return time.Duration(v)
	}
	return 2
}

// testDomainBase is a per-process random domain id base so concurrent test
// processes (go test ./... runs packages in parallel) rarely share a domain.
var (
	testDomainBase = uint32(rand.IntN(100)) + 20
	testDomainSeq  atomic.Uint32
)

// newDomainID returns a fresh domain id for one test (Cyclone binds one
// configuration per domain id and process).
func newDomainID() uint32 { return 20 + (testDomainBase+testDomainSeq.Add(1))%200 }

// openPair opens two participants on a fresh loopback domain; both are
// closed in t.Cleanup.
func openPair(t *testing.T) (*Participant, *Participant) {
	t.Helper()
	cfg := Config{DomainID: newDomainID()}
	a, err := Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	b, err := Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return a, b
}

// uniqueTopic returns a DDS topic name unique to this test.
func uniqueTopic(t *testing.T, base string) string {
	return fmt.Sprintf("rt/%s_%d_%d", base, os.Getpid(), rand.Uint32())
}

// cdrSample builds an XCDR1-LE sample of exactly n bytes (n ≥ 8): the
// encapsulation header, a uint32 sequence number and a byte pattern.
func cdrSample(n int, seq uint32) []byte {
	b := make([]byte, n)
	copy(b, []byte{0x00, 0x01, 0x00, 0x00})
	binary.LittleEndian.PutUint32(b[4:], seq)
	for i := 8; i < n; i++ {
		b[i] = byte(i*7 + int(seq))
	}
	return b
}

// waitFor polls cond every 5 ms until it holds or d (scaled) passes.
func waitFor(t *testing.T, d time.Duration, msg string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, d*timeScale(), 5*time.Millisecond, msg)
}

// recv takes one sample from r within d or fails.
func recv(t *testing.T, r *Reader, d time.Duration) *Sample {
	t.Helper()
	select {
	case s, ok := <-r.C():
		require.True(t, ok, "reader queue closed")
		return s
	case <-time.After(d * timeScale()):
		require.FailNow(t, "no sample", "topic %s after %v", r.Topic(), d)
		return nil
	}
}

// assertEventually polls cond every 5 ms for d (scaled) and reports whether it held.
func assertEventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d * timeScale())
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}
