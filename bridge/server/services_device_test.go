//go:build cgo && cyclonedds

package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/zenohpath"
)

// deviceDrops reads picobridge_bridge_samples_dropped_total for one device,
// lane and reason.
func deviceDrops(t *testing.T, s *Server, device, lane, reason string) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != bridge.MetricDropped {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["device"] == device && l["lane"] == lane && l["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestServiceToDeviceObeysLanes: a DDS client's calls to a device's
// queryable (a zenohpath session attached as device "svcdev", generic
// profile: 2048 B largest message) go through the device's rules: a
// request the device could not receive is refused before it is sent
// (counted too_large and as the device's oversize drop on the route's
// lane, the queryable never sees it), small ones are answered; a critical
// service goes on the express lane.
func TestServiceToDeviceObeysLanes(t *testing.T) {
	domain := svcDomain()
	tag := fmt.Sprintf("%d_%d", os.Getpid(), rand.Uint32())
	name, critName := "/devsvc_"+tag, "/devcrit_"+tag
	s := startDDSServer(t, fmt.Sprintf(`zenoh:
  listen: [tcp/127.0.0.1:0]
metrics:
  listen: ""
dds:
  domain: %d
devices:
  list:
    - {name: svcdev, zid: "5eedf00d", platform: generic}
classifier:
  enabled: false                # no probe answers here: the class must not change mid-test
routes:
  critical: ["%s"]
services:
  queries_timeout: {default: 3s}
`, domain, critName))
	zid, err := ParseZID("5eedf00d")
	require.NoError(t, err)
	dev, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints(), ZID: zid})
	require.NoError(t, err)
	defer dev.Close()
	eventually(t, "device attached", func() bool { return s.Gateway().Device("svcdev") != nil })
	var seen atomic.Int64
	answer := func(q *zenohpath.Query) {
		seen.Add(1)
		b := q.Payload()
		if len(b) < 20 {
			_ = q.ReplyErr([]byte("short"), nil)
			return
		}
		a, c := int64(binary.LittleEndian.Uint64(b[4:])), int64(binary.LittleEndian.Uint64(b[12:]))
		_ = q.Reply(q.KeyExpr(), addReply(a+c), nil)
	}
	for _, n := range []string{name, critName} {
		_, err = dev.DeclareQueryable(n[1:], answer, &zenohpath.QueryableOptions{Complete: true})
		require.NoError(t, err)
	}

	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	defer p.Close()
	calls := s.svcStats.calls
	for _, n := range []string{name, critName} {
		c := newDDSClient(t, p, n, addReqType)
		require.Eventually(t, func() bool { return c.w.Matched() > 0 && c.rd.Matched() > 0 }, 20*time.Second, 20*time.Millisecond, "gateway DDS server for %s", n)
		var rtts []time.Duration
		for i := range int64(10) {
			t0 := time.Now()
			body, ok := c.call(t, addRequest(i, 1), 10*time.Second)
			rtts = append(rtts, time.Since(t0))
			require.True(t, ok, "%s call %d", n, i)
			require.Equal(t, addReply(i+1), body)
		}
		t.Logf("%s: DDS client → device queryable 10/10, rtt %s", n, rttSummary(rtts))
		// 3000 bytes: above the generic profile's 2048 B frag_max_size.
		big := append(addRequest(5, 5), make([]byte, 3000)...)
		before := seen.Load()
		_, ok := c.call(t, big, 1500*time.Millisecond)
		require.False(t, ok, "an oversize request is not answered")
		require.Equal(t, before, seen.Load(), "the device never got the oversize request")
	}
	require.Equal(t, 20.0, testutil.ToFloat64(calls.WithLabelValues(dirToZenoh, callOK)))
	require.Equal(t, 2.0, testutil.ToFloat64(calls.WithLabelValues(dirToZenoh, callTooLarge)))
	require.Equal(t, 1.0, deviceDrops(t, s, "svcdev", bridge.LaneBatched.String(), bridge.DropOversize.String()), "noncritical service: batched lane")
	require.Equal(t, 1.0, deviceDrops(t, s, "svcdev", bridge.LaneExpress.String(), bridge.DropOversize.String()), "critical service: express lane")
	require.Equal(t, int64(20), seen.Load())
}
