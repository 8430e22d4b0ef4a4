//go:build cgo && cyclonedds

package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/internal/picotest"
)

const (
	triggerReqType = "std_srvs::srv::dds_::Trigger_Request_"
	picoWait       = 20 * time.Second
)

// triggerResponse is std_srvs/Trigger's response {success: true, message:
// "pico ok"} in little-endian CDR.
var triggerResponse = []byte{0, 1, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 'p', 'i', 'c', 'o', ' ', 'o', 'k', 0}

// TestServicePicoGetReachesDDSServer: zenoh-pico's z_get (1.9.0 example,
// ZENOH_PICO_EXAMPLES) calls a DDS std_srvs/Trigger server through the
// gateway: its query without payload becomes a request with an empty body
// (the bare CDR encapsulation, as zenoh-bridge-ros2dds), the DDS server's
// raw CDR response comes back as a PUT reply on the service's key.
func TestServicePicoGetReachesDDSServer(t *testing.T) {
	dir := picotest.Examples(t)
	domain := svcDomain()
	s := startDDSServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\n", domain))
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	defer p.Close()
	name := fmt.Sprintf("/ptrig_%d_%d", os.Getpid(), rand.Uint32())
	var mu sync.Mutex
	var reqs [][]byte
	serveDDS(t, p, name, triggerReqType, func(body []byte) []byte {
		mu.Lock()
		reqs = append(reqs, bytes.Clone(body))
		mu.Unlock()
		return triggerResponse
	})
	require.Eventually(t, func() bool { return serviceReady(s, name, dirToDDS) }, 20*time.Second, 20*time.Millisecond, "queryable")
	const runs = 5
	var took []time.Duration
	hung := 0
	for i := range runs {
		t0 := time.Now()
		get := picotest.StartExample(t, dir, "z_get", "-k", name[1:], "-e", s.Endpoints()[0])
		line := get.WaitLine(">> Received ", picoWait)
		took = append(took, time.Since(t0))
		require.Equal(t, fmt.Sprintf(">> Received PUT ('%s': '')", name[1:]), line, "run %d: an OK reply (its CDR starts with a 0 byte: printed empty)", i)
		get.WaitLine("final notification", picoWait)
		require.NotContains(t, get.Output(), "error")
		if !get.Exited(5 * time.Second) { // not part of the call: logged, counted in hung
			hung++
			get.Stop()
		}
	}
	mu.Lock()
	require.Len(t, reqs, runs)
	for _, r := range reqs {
		require.Equal(t, []byte{0, 1, 0, 0}, r, "the empty query became an empty request")
	}
	mu.Unlock()
	calls := s.svcStats.calls
	require.Equal(t, float64(runs), testutil.ToFloat64(calls.WithLabelValues(dirToDDS, callOK)))
	t.Logf("pico z_get → gateway → DDS server: %d/%d, process start to reply (incl. session open) %s; %d of %d z_get did not exit within 5 s after the final (z_drop of the session)",
		runs, runs, rttSummary(took), hung, runs)
}

// TestServicePicoQueryableGetsDDSRequest: a DDS client's request reaches
// zenoh-pico's z_queryable through the gateway (the gateway becomes the DDS
// server while the pico queryable is there). z_queryable answers with the
// C string of its -v value, which cannot be CDR (no encapsulation: a C
// string has no 0 byte), so the gateway refuses the reply (bad_reply,
// counted) and the DDS client gets none, as a ROS client cannot be sent an
// error.
func TestServicePicoQueryableGetsDDSRequest(t *testing.T) {
	dir := picotest.Examples(t)
	domain := svcDomain()
	s := startDDSServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\nservices:\n  queries_timeout: {default: 3s}\n", domain))
	name := fmt.Sprintf("/pqbl_%d_%d", os.Getpid(), rand.Uint32())
	qbl := picotest.StartExample(t, dir, "z_queryable", "-k", name[1:], "-v", "pico says hi", "-e", s.Endpoints()[0])
	qbl.WaitLine("Press CTRL-C", picoWait)
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	defer p.Close()
	c := newDDSClient(t, p, name, triggerReqType)
	require.Eventually(t, func() bool { return c.w.Matched() > 0 && c.rd.Matched() > 0 }, 20*time.Second, 20*time.Millisecond, "gateway DDS server for the pico queryable")
	const n = 3
	for i := range n {
		_, ok := c.call(t, []byte{0, 1, 0, 0}, 1500*time.Millisecond)
		require.False(t, ok, "call %d: a string reply is not CDR", i)
	}
	calls := s.svcStats.calls
	require.Eventually(t, func() bool { return testutil.ToFloat64(calls.WithLabelValues(dirToZenoh, callBadReply)) == n }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 0.0, testutil.ToFloat64(calls.WithLabelValues(dirToZenoh, callOK)))
	require.Equal(t, n, strings.Count(qbl.Output(), fmt.Sprintf(" >> [Queryable handler] Received Query '%s'", name[1:])))
}
