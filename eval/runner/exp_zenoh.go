package runner

import (
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/picobridge/picobridge/eval/measure"
	"github.com/picobridge/picobridge/sim/linkemu"
)

//go:embed zbench.py
var zbenchPy []byte

// zenohKey is the key expression /scan travels on (rmw_zenoh-like, without type hash).
const zenohKey = "0/scan/sensor_msgs::msg::dds_::LaserScan_"

func freeTCP() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// runZenohRouter is experiment 2: the bag publisher (a Zenoh client, reliable, congestion
// control BLOCK) → the stock Rust Zenoh router (eclipse-zenoh's router in a Python process)
// → a critical device (client subscriber, direct) and an impaired device (client subscriber
// connected through the linkemu TCP proxy applying the level's profile to its link only).
func runZenohRouter(ctx context.Context, cfg Config, level string, res *Result) error {
	rec := NewRecorder(res.Run)
	dir, err := os.MkdirTemp("", "picoeval-zenoh-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "zbench.py")
	if err := os.WriteFile(script, zbenchPy, 0o644); err != nil {
		return err
	}
	py := pythonZenoh()
	var procs []*child
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
	}()
	start := func(name, consumer string, args ...string) (*child, error) {
		c, err := startProc(name, exec.Command(py, append([]string{script}, args...)...), rec, consumer)
		if err != nil {
			return nil, err
		}
		procs = append(procs, c)
		_, err = c.waitLine("ready", 30*time.Second)
		return c, err
	}
	addr, err := freeTCP()
	if err != nil {
		return err
	}
	router, err := start("rust router", "", "router", "tcp/"+addr)
	if err != nil {
		return err
	}
	prof, err := linkemu.LookupProfile(level)
	if err != nil {
		return err
	}
	proxy, err := linkemu.NewTCPProxy("127.0.0.1:0", addr, linkemu.Config{Profile: prof, Seed: cfg.Seed, Framing: linkemu.FramingZenoh})
	if err != nil {
		return err
	}
	defer proxy.Close()
	res.ExpectedLoss = prof.ToDevice.ExpectedLoss()
	res.Impairment = fmt.Sprintf("impaired device's TCP link through linkemu TCPProxy, profile %s (both directions; GE loss ⇒ RTO stall with head-of-line blocking)", level)
	if _, err := start("critical device", Critical, "sub", "tcp/"+addr, zenohKey); err != nil {
		return err
	}
	if _, err := start("impaired device", Impaired, "sub", "tcp/"+proxy.Addr(), zenohKey); err != nil {
		return err
	}
	time.Sleep(time.Second) // subscriber declarations reach the router
	pub, err := start("publisher", "", "pub", "tcp/"+addr, zenohKey)
	if err != nil {
		return err
	}
	if _, err := pub.waitLine("matched", 30*time.Second); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)

	var buf []byte
	next := 0 // index of the next "ok" answer
	write := func(cdr []byte, _ time.Time) (time.Duration, error) {
		buf = binary.LittleEndian.AppendUint32(buf[:0], uint32(len(cdr)))
		buf = append(buf, cdr...)
		if _, err := pub.stdin.Write(buf); err != nil {
			return 0, err
		}
		next++
		l, err := pub.waitNth("ok ", next, 10*time.Minute)
		if err != nil {
			return 0, err
		}
		ns, _ := strconv.ParseInt(strings.TrimPrefix(l, "ok "), 10, 64)
		return time.Duration(ns), nil
	}
	before, _ := measure.ProcUsage(router.pid())
	d := cfg.runDuration(level)
	s, e, err := replayScan(ctx, cfg, rec, d, write)
	if err != nil {
		return err
	}
	res.StartNs, res.EndNs = s, e
	time.Sleep(time.Second)
	if after, err := measure.ProcUsage(router.pid()); err == nil {
		u := after.Sub(before)
		res.Gateway = &u
	}
	st := proxy.Stats()
	res.ProducedLoss = st.ProducedLoss()
	res.Notes = append(res.Notes, fmt.Sprintf("linkemu: to device %d packets, %d lost, %d retransmits; produced loss %.2f %% (expected %.2f %%)",
		st.ToDevice.Packets, st.ToDevice.Lost, st.ToDevice.Retransmits, 100*res.ProducedLoss, 100*res.ExpectedLoss))
	res.Notes = append(res.Notes, "gateway CPU/RSS = the Python process hosting the Rust router (includes the interpreter)")
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop()
	}
	procs = nil
	rec.fill(res)
	return nil
}
