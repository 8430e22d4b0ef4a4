//go:build cgo && cyclonedds

package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/fastddspeer"
	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
)

// TestServiceFastDDSServerAnswersZenohGet: a Fast DDS 2.9 AddTwoInts server
// in rmw_fastrtps's convention (plain CDR; replies carry the related sample
// identity in inline QoS, which Cyclone cannot read) answers Zenoh gets
// through the gateway: requests go without the Cyclone header, one at a
// time, so the next reply is the answer, also when the gets come at once.
func TestServiceFastDDSServerAnswersZenohGet(t *testing.T) {
	if err := fastddspeer.Check(); err != nil {
		if interop.InCI() {
			t.Fatalf("Fast DDS is required in CI: %v", err)
		}
		t.Skipf("skipping Fast DDS service interop: %v", err)
	}
	cache := filepath.Join(os.TempDir(), "picobridge-fastddspeer-cache") // Compile names binaries by source hash
	require.NoError(t, os.MkdirAll(cache, 0o755))
	bin, err := fastddspeer.BuildAddServer(cache)
	require.NoError(t, err)

	domain := svcDomain()
	s := startDDSServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\nservices:\n  queries_timeout: {default: 5s}\n", domain))
	name := fmt.Sprintf("/fadd_%d_%d", os.Getpid(), rand.Uint32())
	peer, err := fastddspeer.Start(bin, "--service", name, "--domain", fmt.Sprint(domain))
	require.NoError(t, err)
	t.Cleanup(peer.Kill)
	_, err = peer.WaitLine("ready", 30*time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, st := range s.Routez().Services {
			if st.Name == name && st.Ready && st.Vendor == "fastdds" {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "Fast DDS server bridged")

	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer cli.Close()
	key := name[1:]
	for i := range int64(10) {
		ok, msg, _ := getOne(t, cli, key, addRequest(i, 5))
		require.Equal(t, addReply(i+5), ok, "call %d: %s", i, msg)
	}
	// Five at once: queued at the gateway, each gets its own sum.
	var wg sync.WaitGroup
	got := make([][]byte, 5)
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, _ = getOne(t, cli, key, addRequest(int64(100*i), 1))
		}()
	}
	wg.Wait()
	for i := range 5 {
		require.Equal(t, addReply(int64(100*i+1)), got[i], "concurrent call %d", i)
	}
	require.Equal(t, 15.0, testutil.ToFloat64(s.svcStats.calls.WithLabelValues(dirToDDS, callOK)))
	require.Eventually(t, func() bool { return strings.Count(peer.Output(), "served ") == 15 }, 10*time.Second, 20*time.Millisecond, "the peer prints after it replied")
	require.Equal(t, 0, strings.Count(peer.Output(), "related=1"), "the gateway's requests carry no related identity")
}
