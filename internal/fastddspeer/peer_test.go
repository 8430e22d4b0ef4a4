package fastddspeer

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseSample(t *testing.T) {
	s, err := ParseSample("sample 3 size=4 src_ns=17 recv_ns=19 hex=00010000")
	require.NoError(t, err)
	require.Equal(t, Sample{Index: 3, Size: 4, SrcNs: 17, RecvNs: 19, Bytes: []byte{0, 1, 0, 0}}, s)
	_, err = ParseSample("matched 1")
	require.Error(t, err)
}

func TestParseSummary(t *testing.T) {
	s, err := ParseSummary("summary count=5 bytes=7500 first_src_ns=1 last_recv_ns=2 p50_us=95.5 p99_us=120.0 max_us=130.1")
	require.NoError(t, err)
	require.Equal(t, Summary{Count: 5, Bytes: 7500, FirstSrcNs: 1, LastRecvNs: 2, P50us: 95.5, P99us: 120, MaxUs: 130.1}, s)
	_, err = ParseSummary("summary sent=5 failed=0")
	require.Error(t, err)
}

// TestBuildAndLoopback builds the peer and runs a Fast DDS → Fast DDS
// exchange on loopback (no Cyclone involved): counts, sizes and the preset
// source timestamps arrive exactly.
func TestBuildAndLoopback(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	bin, err := Build(t.TempDir())
	require.NoError(t, err)
	dom := strconv.Itoa(20 + rand.IntN(200)) // concurrent test packages rarely share it
	sub, err := Start(bin, "--sub", "rt/peertest", "--count", "3", "--domain", dom, "--timeout", "20")
	require.NoError(t, err)
	defer sub.Kill()
	_, err = sub.WaitLine("ready", 10*time.Second)
	require.NoError(t, err)
	pub, err := Start(bin, "--pub", "rt/peertest", "--count", "3", "--size", "100", "--domain", dom,
		"--ts-ns", "1700000000000000007", "--ts-step-ns", "1000", "--timeout", "20")
	require.NoError(t, err)
	defer pub.Kill()
	require.NoError(t, sub.Wait(30*time.Second))
	require.NoError(t, pub.Wait(30*time.Second))
	got, err := sub.Samples()
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i, s := range got {
		require.Equal(t, 100, s.Size)
		require.Equal(t, int64(1700000000000000007+i*1000), s.SrcNs)
	}
	line, err := sub.WaitLine("summary", time.Second)
	require.NoError(t, err)
	sum, err := ParseSummary(line)
	require.NoError(t, err)
	require.Equal(t, 3, sum.Count)
	require.Equal(t, int64(300), sum.Bytes)
}
