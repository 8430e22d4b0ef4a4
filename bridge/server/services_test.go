//go:build cgo && cyclonedds

package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/zenohpath"
)

const (
	addReqType = "example_interfaces::srv::dds_::AddTwoInts_Request_"
	addRepType = "example_interfaces::srv::dds_::AddTwoInts_Response_"
)

// addRequest is an AddTwoInts request as plain CDR little endian: enc · a · b.
func addRequest(a, b int64) []byte {
	p := []byte{0, 1, 0, 0}
	p = binary.LittleEndian.AppendUint64(p, uint64(a))
	return binary.LittleEndian.AppendUint64(p, uint64(b))
}

func addReply(sum int64) []byte {
	return binary.LittleEndian.AppendUint64([]byte{0, 1, 0, 0}, uint64(sum))
}

// ddsAddServer is an AddTwoInts server that speaks rmw_cyclonedds's layout
// (16-byte header after the encapsulation). A request with a == -1 is
// never answered.
type ddsAddServer struct {
	rd *ddspath.Reader
	w  *ddspath.Writer
	mu sync.Mutex
	n  int
}

func startDDSAddServer(t *testing.T, p *ddspath.Participant, name string) *ddsAddServer {
	t.Helper()
	rq, rr, err := ros2.ServiceToDDS(name)
	require.NoError(t, err)
	q := ddspath.ROSDefaultQoS()
	rd, err := p.NewReader(rq, addReqType, q)
	require.NoError(t, err)
	w, err := p.NewWriter(rr, addRepType, q)
	require.NoError(t, err)
	s := &ddsAddServer{rd: rd, w: w}
	go func() {
		for smp := range rd.C() {
			h, body, err := ros2.SplitServiceHeader(smp.CDR)
			if err != nil || len(body) < 20 {
				continue
			}
			a := int64(binary.LittleEndian.Uint64(body[4:]))
			b := int64(binary.LittleEndian.Uint64(body[12:]))
			s.mu.Lock()
			s.n++
			s.mu.Unlock()
			if a == -1 {
				continue
			}
			rep, _ := ros2.JoinServiceHeader(addReply(a+b), h)
			_ = w.Write(rep, time.Time{})
		}
	}()
	return s
}

func (s *ddsAddServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// ddsClient is a DDS service client with rmw_cyclonedds's layout: header
// guid = its request writer's instance handle, seq from 1.
type ddsClient struct {
	w   *ddspath.Writer
	rd  *ddspath.Reader
	ih  uint64
	seq int64
}

func newDDSClient(t *testing.T, p *ddspath.Participant, name, reqType string) *ddsClient {
	t.Helper()
	rq, rr, err := ros2.ServiceToDDS(name)
	require.NoError(t, err)
	q := ddspath.ROSDefaultQoS()
	w, err := p.NewWriter(rq, reqType, q)
	require.NoError(t, err)
	rd, err := p.NewReader(rr, otherType(reqType), q)
	require.NoError(t, err)
	ih, err := w.InstanceHandle()
	require.NoError(t, err)
	return &ddsClient{w: w, rd: rd, ih: ih}
}

// call sends one request and waits up to d for the reply with its header.
func (c *ddsClient) call(t *testing.T, payload []byte, d time.Duration) ([]byte, bool) {
	t.Helper()
	c.seq++
	req, err := ros2.JoinServiceHeader(payload, ros2.ServiceHeader{GUID: c.ih, Seq: c.seq})
	require.NoError(t, err)
	require.NoError(t, c.w.Write(req, time.Time{}))
	deadline := time.After(d)
	for {
		select {
		case smp := <-c.rd.C():
			h, body, err := ros2.SplitServiceHeader(smp.CDR)
			require.NoError(t, err)
			if h.GUID == c.ih && h.Seq == c.seq {
				return body, true
			}
		case <-deadline:
			return nil, false
		}
	}
}

func svcDomain() uint32 { return 230 + uint32(rand.IntN(3)) }

func startDDSServer(t *testing.T, yaml string) *Server {
	t.Helper()
	cfg, err := bridge.ParseConfig("test.yaml", []byte(yaml))
	require.NoError(t, err)
	noDefaultMetrics(cfg, yaml)
	s, err := Start(context.Background(), Options{Config: cfg})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func serviceReady(s *Server, name, dir string) bool {
	for _, st := range s.Routez().Services {
		if st.Name == name && st.Direction == dir && st.Ready {
			return true
		}
	}
	return false
}

func getOne(t *testing.T, sess *zenohpath.Session, key string, payload []byte) (ok []byte, errMsg string, n int) {
	t.Helper()
	replies, err := sess.Get(key, &zenohpath.GetOptions{Payload: payload, Timeout: 20 * time.Second})
	require.NoError(t, err)
	for rep := range replies {
		n++
		if s, good := rep.Ok(); good {
			ok = s.Payload()
		} else if e, bad := rep.Err(); bad {
			errMsg = string(e.Payload())
		}
	}
	return ok, errMsg, n
}

// TestServiceDDSServerAnswersZenohGet: a DDS AddTwoInts server (rmw_cyclonedds
// layout) answers Zenoh gets through the gateway, each call with its own
// header; an unanswered request gets a timeout error reply; once the server
// is gone a get gets a no_server error reply; every call counted.
func TestServiceDDSServerAnswersZenohGet(t *testing.T) {
	domain := svcDomain()
	s := startDDSServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\nservices:\n  queries_timeout: {default: 3s}\n", domain))
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	name := fmt.Sprintf("/add_%d_%d", os.Getpid(), rand.Uint32())
	srv := startDDSAddServer(t, p, name)
	require.Eventually(t, func() bool { return serviceReady(s, name, dirToDDS) }, 20*time.Second, 20*time.Millisecond, "queryable declared")

	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer cli.Close()
	key := name[1:]
	const n = 20
	for i := range int64(n) {
		ok, msg, replies := getOne(t, cli, key, addRequest(i, 100))
		require.Equal(t, 1, replies, msg)
		require.Equal(t, addReply(i+100), ok)
	}
	ok, msg, _ := getOne(t, cli, key, addRequest(-1, 0))
	require.Nil(t, ok)
	require.Contains(t, msg, "no reply from the DDS server within 3s")
	ok, msg, _ = getOne(t, cli, key, []byte{0, 7, 0, 0, 1}) // XCDR2: cannot carry the header
	require.Nil(t, ok)
	require.Contains(t, msg, "unsupported encapsulation")
	require.Equal(t, n+1, srv.requests())

	require.NoError(t, p.Close()) // the server goes away
	require.Eventually(t, func() bool {
		_, msg, _ := getOne(t, cli, key, addRequest(1, 2))
		return msg != ""
	}, 20*time.Second, 100*time.Millisecond)
	_, msg, _ = getOne(t, cli, key, addRequest(1, 2))
	require.Contains(t, msg, "no DDS service server")

	calls := s.svcStats.calls
	require.Equal(t, float64(n), testutil.ToFloat64(calls.WithLabelValues(dirToDDS, callOK)))
	require.Equal(t, 1.0, testutil.ToFloat64(calls.WithLabelValues(dirToDDS, callTimeout)))
	require.Equal(t, 1.0, testutil.ToFloat64(calls.WithLabelValues(dirToDDS, callBadPayload)))
	require.GreaterOrEqual(t, testutil.ToFloat64(calls.WithLabelValues(dirToDDS, callNoServer)), 2.0)
	require.Equal(t, 0.0, testutil.ToFloat64(s.svcStats.dropped.WithLabelValues(replyLate)))
}

// TestServiceZenohQueryableServesDDSClient: a Zenoh queryable (another
// session on the gateway) becomes a DDS AddTwoInts server: a DDS client's
// calls are answered with its own header; an error reply and a queryable
// that never answers leave the DDS client unanswered and are counted.
func TestServiceZenohQueryableServesDDSClient(t *testing.T) {
	domain := svcDomain()
	s := startDDSServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\nservices:\n  queries_timeout: {default: 3s}\n", domain))
	name := fmt.Sprintf("/zadd_%d_%d", os.Getpid(), rand.Uint32())
	key := name[1:]
	zs, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer zs.Close()
	var mu sync.Mutex
	var held []*zenohpath.Query
	_, err = zs.DeclareQueryable(key, func(q *zenohpath.Query) {
		b := q.Payload()
		if len(b) < 20 {
			_ = q.ReplyErr([]byte("short"), nil)
			return
		}
		a, c := int64(binary.LittleEndian.Uint64(b[4:])), int64(binary.LittleEndian.Uint64(b[12:]))
		switch a {
		case -1:
			_ = q.ReplyErr([]byte("negative"), nil)
		case -2:
			q.Detach() // never answered
			mu.Lock()
			held = append(held, q)
			mu.Unlock()
		default:
			_ = q.Reply(q.KeyExpr(), addReply(a+c), nil)
		}
	}, &zenohpath.QueryableOptions{Complete: true})
	require.NoError(t, err)
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, q := range held {
			q.Finish()
		}
	}()

	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	defer p.Close()
	c := newDDSClient(t, p, name, addReqType)
	require.Eventually(t, func() bool { return c.w.Matched() > 0 && c.rd.Matched() > 0 }, 20*time.Second, 20*time.Millisecond, "gateway DDS server matched")
	const n = 20
	for i := range int64(n) {
		body, ok := c.call(t, addRequest(i, 1000), 10*time.Second)
		require.True(t, ok, "call %d", i)
		require.Equal(t, addReply(i+1000), body)
	}
	_, ok := c.call(t, addRequest(-1, 0), 2*time.Second)
	require.False(t, ok)
	_, ok = c.call(t, addRequest(-2, 0), 4*time.Second) // beyond the 3 s timeout
	require.False(t, ok)
	calls := s.svcStats.calls
	require.Eventually(t, func() bool { return testutil.ToFloat64(calls.WithLabelValues(dirToZenoh, callTimeout)) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, float64(n), testutil.ToFloat64(calls.WithLabelValues(dirToZenoh, callOK)))
	require.Equal(t, 1.0, testutil.ToFloat64(calls.WithLabelValues(dirToZenoh, callErrorReply)))
	require.True(t, serviceReady(s, name, dirToZenoh))
}
