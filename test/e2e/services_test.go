//go:build cgo && cyclonedds

package e2e

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/internal/interop"
)

const (
	addReqType = "example_interfaces::srv::dds_::AddTwoInts_Request_"
	addRepType = "example_interfaces::srv::dds_::AddTwoInts_Response_"
)

func addRequest(a, b int64) []byte {
	p := []byte{0, 1, 0, 0}
	p = binary.LittleEndian.AppendUint64(p, uint64(a))
	return binary.LittleEndian.AppendUint64(p, uint64(b))
}

func addReply(sum int64) []byte {
	return binary.LittleEndian.AppendUint64([]byte{0, 1, 0, 0}, uint64(sum))
}

func requirePython(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: starts processes")
	}
	interop.FindPython(t) // skips with the pip command, fails in CI (docs/interop.md)
}

// serveAddTwoInts answers AddTwoInts requests in rmw_cyclonedds's layout on
// name until the participant closes; a == -1 is never answered.
func serveAddTwoInts(t *testing.T, p *ddspath.Participant, name string) {
	t.Helper()
	rq, rr, err := ros2.ServiceToDDS(name)
	require.NoError(t, err)
	rd, err := p.NewReader(rq, addReqType, ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	w, err := p.NewWriter(rr, addRepType, ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	go func() {
		for smp := range rd.C() {
			h, body, err := ros2.SplitServiceHeader(smp.CDR)
			if err != nil || len(body) < 20 {
				continue
			}
			a, b := int64(binary.LittleEndian.Uint64(body[4:])), int64(binary.LittleEndian.Uint64(body[12:]))
			if a == -1 {
				continue
			}
			rep, _ := ros2.JoinServiceHeader(addReply(a+b), h)
			_ = w.Write(rep, time.Time{})
		}
	}()
}

func (g *gateway) serviceReady(t *testing.T, name, dir string) bool {
	var rz server.RoutezResponse
	g.get(t, server.PathRoutez, &rz)
	for _, s := range rz.Services {
		if s.Name == name && s.Direction == dir && s.Ready {
			return true
		}
	}
	return false
}

// metric returns the value of one sample line of /metrics ("name{labels}").
func (g *gateway) metric(t *testing.T, series string) string {
	t.Helper()
	resp, err := http.Get("http://" + g.http + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return ""
}

// pyGet calls AddTwoInts n times (a = i, b = 100) with eclipse-zenoh's get,
// then once with a = -1, and prints one JSON line.
const pyGet = `
import json, struct, sys, time, zenoh
ep, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = zenoh.Config()
c.insert_json5("mode", '"client"')
c.insert_json5("connect/endpoints", json.dumps([ep]))
s = zenoh.open(c)
ok = 0; bad = []; rtts = []
for i in range(n):
    t0 = time.monotonic()
    got = None
    for r in s.get(key, payload=struct.pack("<4sqq", b"\x00\x01\x00\x00", i, 100), timeout=10.0):
        if r.ok is not None:
            got = r.ok.payload.to_bytes()
        else:
            bad.append(r.err.payload.to_bytes().decode())
    rtts.append(time.monotonic() - t0)
    if got == struct.pack("<4sq", b"\x00\x01\x00\x00", i + 100):
        ok += 1
    else:
        bad.append("call %d: %r" % (i, got))
errs = []
for r in s.get(key, payload=struct.pack("<4sqq", b"\x00\x01\x00\x00", -1, 0), timeout=10.0):
    errs.append(r.err.payload.to_bytes().decode() if r.err is not None else "ok?")
rtts.sort()
print(json.dumps({"ok": ok, "bad": bad, "timeout_errors": errs,
                  "rtt_p50_ms": rtts[len(rtts)//2]*1e3, "rtt_max_ms": rtts[-1]*1e3}), flush=True)
s.close()
`

// TestE2EServiceDDSServerToPythonGet: a DDS AddTwoInts server (ddspath,
// rmw_cyclonedds layout) answers a Python eclipse-zenoh get through
// `picobridge run`: every call correct, an unanswered one gets a timeout
// error reply, the calls are counted in /metrics.
func TestE2EServiceDDSServerToPythonGet(t *testing.T) {
	requirePython(t)
	dir := t.TempDir()
	bin := buildPicobridge(t, dir)
	domain := 1 + rand.IntN(19)
	cfg := filepath.Join(dir, "pb.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf("dds:\n  domain: %d\nservices:\n  queries_timeout: {services: 2s}\n", domain)), 0o644))
	gw := startGateway(t, bin, cfg, interop.FreePort(t), interop.FreePort(t))

	p, err := ddspath.Open(ddspath.Config{DomainID: uint32(domain)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	name := fmt.Sprintf("/e2e_add_%d", rand.Uint32())
	serveAddTwoInts(t, p, name)
	waitFor(t, 30*time.Second, "service queryable", func() bool { return gw.serviceReady(t, name, "zenoh_to_dds") })

	const n = 50
	out, err := exec.Command("python3", "-c", pyGet, gw.zenoh, name[1:], fmt.Sprint(n)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var res struct {
		OK            int      `json:"ok"`
		Bad           []string `json:"bad"`
		TimeoutErrors []string `json:"timeout_errors"`
		P50           float64  `json:"rtt_p50_ms"`
		Max           float64  `json:"rtt_max_ms"`
	}
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	require.Equal(t, n, res.OK, "%s", out)
	require.Empty(t, res.Bad)
	require.Len(t, res.TimeoutErrors, 1)
	require.Contains(t, res.TimeoutErrors[0], "no reply from the DDS server within 2s")
	require.Equal(t, fmt.Sprint(n), gw.metric(t, `picobridge_service_calls_total{direction="zenoh_to_dds",result="ok"}`))
	require.Equal(t, "1", gw.metric(t, `picobridge_service_calls_total{direction="zenoh_to_dds",result="timeout"}`))
	t.Logf("Python get → picobridge → DDS server: %d/%d calls, round trip p50 %.2f ms, max %.2f ms", res.OK, n, res.P50, res.Max)
}

// pyQueryable serves AddTwoInts on a key (complete), prints "ready", and the
// number of queries served when stdin closes.
const pyQueryable = `
import struct, sys, threading, zenoh, json
ep, key = sys.argv[1], sys.argv[2]
c = zenoh.Config()
c.insert_json5("mode", '"client"')
c.insert_json5("connect/endpoints", json.dumps([ep]))
s = zenoh.open(c)
n = [0]; lock = threading.Lock()
def on_query(q):
    enc, a, b = struct.unpack("<4sqq", q.payload.to_bytes())
    q.reply(q.key_expr, struct.pack("<4sq", enc, a + b))
    with lock:
        n[0] += 1
qbl = s.declare_queryable(key, on_query, complete=True)
print("ready", flush=True)
sys.stdin.read()
print("served", n[0], flush=True)
s.close()
`

// TestE2EServicePythonQueryableToDDSClient: a Python eclipse-zenoh
// queryable becomes, through `picobridge run`, a DDS AddTwoInts server that
// a DDS client (rmw_cyclonedds layout) calls: every reply carries the
// client's own header and the right sum.
func TestE2EServicePythonQueryableToDDSClient(t *testing.T) {
	requirePython(t)
	dir := t.TempDir()
	bin := buildPicobridge(t, dir)
	domain := 1 + rand.IntN(19)
	gw := startGateway(t, bin, "", interop.FreePort(t), interop.FreePort(t), "--domain", fmt.Sprint(domain))
	name := fmt.Sprintf("/e2e_zadd_%d", rand.Uint32())

	py := exec.Command("python3", "-c", pyQueryable, gw.zenoh, name[1:])
	stdin, err := py.StdinPipe()
	require.NoError(t, err)
	stdout, err := py.StdoutPipe()
	require.NoError(t, err)
	py.Stderr = os.Stderr
	require.NoError(t, py.Start())
	t.Cleanup(func() { _ = py.Process.Kill(); _ = py.Wait() })
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan())
	require.Equal(t, "ready", lines.Text())

	p, err := ddspath.Open(ddspath.Config{DomainID: uint32(domain)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	rq, rr, err := ros2.ServiceToDDS(name)
	require.NoError(t, err)
	w, err := p.NewWriter(rq, addReqType, ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	rd, err := p.NewReader(rr, addRepType, ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	ih, err := w.InstanceHandle()
	require.NoError(t, err)
	waitFor(t, 30*time.Second, "gateway's DDS server matched", func() bool { return w.Matched() > 0 && rd.Matched() > 0 })

	const n = 50
	var rtts []time.Duration
	var mu sync.Mutex
	for i := range int64(n) {
		req, err := ros2.JoinServiceHeader(addRequest(i, 7), ros2.ServiceHeader{GUID: ih, Seq: i + 1})
		require.NoError(t, err)
		t0 := time.Now()
		require.NoError(t, w.Write(req, time.Time{}))
		select {
		case smp := <-rd.C():
			h, body, err := ros2.SplitServiceHeader(smp.CDR)
			require.NoError(t, err)
			require.Equal(t, ros2.ServiceHeader{GUID: ih, Seq: i + 1}, h)
			require.Equal(t, addReply(i+7), body)
			mu.Lock()
			rtts = append(rtts, time.Since(t0))
			mu.Unlock()
		case <-time.After(15 * time.Second):
			t.Fatalf("call %d not answered", i)
		}
	}
	require.NoError(t, stdin.Close())
	require.True(t, lines.Scan())
	require.Equal(t, fmt.Sprintf("served %d", n), lines.Text())
	// A call is counted when its query is final, which comes after its
	// reply went to the DDS client (service_client.go): the last one may
	// not be counted yet when its reply arrives (49 of 50 once, at load 4).
	waitFor(t, 5*time.Second, fmt.Sprintf("%d calls counted ok", n), func() bool {
		return gw.metric(t, `picobridge_service_calls_total{direction="dds_to_zenoh",result="ok"}`) == fmt.Sprint(n)
	})
	slices.Sort(rtts)
	t.Logf("DDS client → picobridge → Python queryable: %d/%d calls, round trip p50 %v, max %v", len(rtts), n, rtts[len(rtts)/2], rtts[len(rtts)-1])
}
