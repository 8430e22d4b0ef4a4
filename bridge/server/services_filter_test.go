//go:build cgo && cyclonedds

package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/zenohpath"
)

// TestServicePerNameTimeoutAndAllow: services.allow.service_servers lets
// one DDS server through and keeps the other off Zenoh; a per-name
// queries_timeout entry bounds the allowed server's unanswered call at 1 s
// (the default is 20 s), while a name the list does not match keeps the
// default.
func TestServicePerNameTimeoutAndAllow(t *testing.T) {
	domain := svcDomain()
	tag := fmt.Sprintf("%d_%d", os.Getpid(), rand.Uint32())
	okName, deniedName := "/sa_ok_"+tag, "/sa_no_"+tag
	s := startDDSServer(t, fmt.Sprintf(`zenoh:
  listen: [tcp/127.0.0.1:0]
metrics:
  listen: ""
dds:
  domain: %d
services:
  queries_timeout:
    default: 20s
    services: [".*_ok_%s=1s", "never_matches=2s"]
  allow:
    service_servers: ["/sa_ok_.*"]
`, domain, tag))
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	defer p.Close()
	srv := startDDSAddServer(t, p, okName)
	startDDSAddServer(t, p, deniedName)
	require.Eventually(t, func() bool { return serviceReady(s, okName, dirToDDS) }, 20*time.Second, 20*time.Millisecond, "allowed server bridged")
	for _, st := range s.Routez().Services {
		require.NotEqual(t, deniedName, st.Name, "denied server has no route")
	}
	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer cli.Close()
	require.False(t, cli.HasMatchingQueryables(deniedName[1:]))

	ok, errMsg, n := getOne(t, cli, okName[1:], addRequest(2, 3))
	require.Equal(t, 1, n, errMsg)
	require.Equal(t, addReply(5), ok)
	t0 := time.Now()
	_, errMsg, n = getOne(t, cli, okName[1:], addRequest(-1, 0)) // the server never answers -1
	took := time.Since(t0)
	require.Equal(t, 1, n)
	require.Contains(t, errMsg, "no reply from the DDS server within 1s (services.queries_timeout)")
	require.GreaterOrEqual(t, took, time.Second)
	t.Logf("per-name timeout 1s: error reply after %v", took)
	require.Equal(t, 2, srv.requests())
	require.Equal(t, 1.0, testutil.ToFloat64(s.svcStats.calls.WithLabelValues(dirToDDS, callTimeout)))
	require.Equal(t, 20*time.Second, s.cfg.Services.QueriesTimeout.TimeoutFor(strings.Replace(okName, "_ok_", "_other_", 1)))
}
