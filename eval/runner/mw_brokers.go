package runner

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/picobridge/picobridge/internal/testpki"
	"github.com/picobridge/picobridge/sim/linkemu"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
)

// mwProxyConfig is the subscriber link of every system: clean at first (setup), each
// phase sets its profile. Framing is chunk for all systems (1448-byte packets, one TCP
// segment each), so a loss costs every protocol the same per byte; Zenoh framing would
// make a whole 64 KiB batch one packet, and TLS records are not Zenoh batches anyway.
func mwProxyConfig(cfg Config) linkemu.Config {
	return linkemu.Config{Profile: linkemu.Clean, Seed: cfg.Seed, Framing: linkemu.FramingChunk}
}

// mwPKI is a CA and a certificate for 127.0.0.1 made for one TLS session.
type mwPKI struct {
	dir  string
	ca   *testpki.CA
	leaf testpki.Leaf
}

func newMWPKI() (*mwPKI, error) {
	dir, err := os.MkdirTemp("", "picoeval-mw-pki-")
	if err != nil {
		return nil, err
	}
	ca, err := testpki.NewCAIn(dir, "picoeval mw CA")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	leaf, err := ca.IssueE("picoeval mw broker", "127.0.0.1")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &mwPKI{dir: dir, ca: ca, leaf: leaf}, nil
}

// cleanup chain: run in reverse order of registration.
type cleanups []func()

func (c *cleanups) add(f func()) { *c = append(*c, f) }
func (c cleanups) run() {
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
}

// openZenohClients opens the Go publisher (direct to the broker at ep) and subscriber
// (through proxy), both zenohpath clients: reliable, congestion control BLOCK.
func openZenohClients(ctx context.Context, ep string, proxy *linkemu.TCPProxy, pki *mwPKI, sink *mwSink, cl *cleanups) (func(ctx context.Context, rec *mwRecorder, n, size int, interval time.Duration) error, error) {
	scheme := "tcp/"
	var tc *transport.TLSConfig
	if pki != nil {
		scheme = "tls/"
		tc = &transport.TLSConfig{RootCACertificate: pki.ca.File}
	}
	sub, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{scheme + proxy.Addr()}, TLS: tc})
	if err != nil {
		return nil, fmt.Errorf("zenoh subscriber: %w", err)
	}
	cl.add(func() { sub.Close() })
	if _, err := sub.DeclareSubscriber(mwKey, func(s zenohpath.Sample) { sink.payload(s.Payload()) }); err != nil {
		return nil, err
	}
	pubS, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}, TLS: tc})
	if err != nil {
		return nil, fmt.Errorf("zenoh publisher: %w", err)
	}
	cl.add(func() { pubS.Close() })
	pub, err := pubS.DeclarePublisher(mwKey, zenohpath.PublisherOptions{CongestionControl: zenohpath.CongestionControlBlock, Reliability: zenohpath.ReliabilityReliable})
	if err != nil {
		return nil, err
	}
	if err := waitFor("zenoh publisher matched", 30*time.Second, pub.HasMatchingSubscribers); err != nil {
		return nil, err
	}
	return inProcessPublish(func(b []byte) error { return pub.Put(b, nil) }), nil
}

// openMWZenohRust: the stock Rust Zenoh router (eclipse-zenoh 1.10.2 in a Python
// process, zbench.py router) as the broker; Go zenohpath publisher and subscriber.
func openMWZenohRust(ctx context.Context, cfg Config, useTLS bool, sink *mwSink) (conn *mwConn, err error) {
	var cl cleanups
	defer func() {
		if err != nil {
			cl.run()
		}
	}()
	dir, err := os.MkdirTemp("", "picoeval-mw-zenoh-")
	if err != nil {
		return nil, err
	}
	cl.add(func() { os.RemoveAll(dir) })
	script := filepath.Join(dir, "zbench.py")
	if err := os.WriteFile(script, zbenchPy, 0o644); err != nil {
		return nil, err
	}
	addr, err := freeTCP()
	if err != nil {
		return nil, err
	}
	args := []string{script, "router", "tcp/" + addr}
	var pki *mwPKI
	if useTLS {
		if pki, err = newMWPKI(); err != nil {
			return nil, err
		}
		cl.add(func() { os.RemoveAll(pki.dir) })
		args = []string{script, "router", "tls/" + addr, pki.leaf.CertFile, pki.leaf.KeyFile}
	}
	router, err := startProc("rust router", exec.Command(pythonZenoh(), args...), nil, "")
	if err != nil {
		return nil, err
	}
	cl.add(router.stop)
	if _, err := router.waitLine("ready", 30*time.Second); err != nil {
		return nil, err
	}
	proxy, err := linkemu.NewTCPProxy("127.0.0.1:0", addr, mwProxyConfig(cfg))
	if err != nil {
		return nil, err
	}
	cl.add(func() { proxy.Close() })
	ep := "tcp/" + addr
	if useTLS {
		ep = "tls/" + addr
	}
	publish, err := openZenohClients(ctx, ep, proxy, pki, sink, &cl)
	if err != nil {
		return nil, err
	}
	return &mwConn{publish: publish, proxy: proxy, brokerPID: router.pid(), broker: "Python process hosting the Rust router", close: cl.run,
		notes: []string{"broker: stock Rust Zenoh router (eclipse-zenoh 1.10.2, Python host process); clients: Go zenohpath, reliable, congestion control BLOCK" + tlsNote(useTLS)}}, nil
}

// openMWPicobridge: `picobridge router` (zenohpath's router) as the broker; the same Go
// clients as the Rust router.
func openMWPicobridge(ctx context.Context, cfg Config, useTLS bool, sink *mwSink) (conn *mwConn, err error) {
	pbOnce.Do(func() { pbBin, pbErr = picobridgeBinary() })
	if pbErr != nil {
		return nil, pbErr
	}
	var cl cleanups
	defer func() {
		if err != nil {
			cl.run()
		}
	}()
	addr, err := freeTCP()
	if err != nil {
		return nil, err
	}
	haddr, err := freeTCP()
	if err != nil {
		return nil, err
	}
	ep := "tcp/" + addr
	var pki *mwPKI
	args := []string{"router", "--metrics", haddr, "--log-level", "error"}
	if useTLS {
		if pki, err = newMWPKI(); err != nil {
			return nil, err
		}
		cl.add(func() { os.RemoveAll(pki.dir) })
		ep = "tls/" + addr
		args = append(args, "--cfg", "transport/link/tls/listen_certificate:"+pki.leaf.CertFile,
			"--cfg", "transport/link/tls/listen_private_key:"+pki.leaf.KeyFile)
	}
	args = append(args, "-l", ep)
	gw, err := startProc("picobridge router", exec.Command(pbBin, args...), nil, "")
	if err != nil {
		return nil, err
	}
	cl.add(gw.terminate)
	if err := waitFor("picobridge router /metrics", 30*time.Second, func() bool {
		r, err := http.Get("http://" + haddr + "/metrics")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}); err != nil {
		return nil, fmt.Errorf("%w: %s", err, gw.stderr.String())
	}
	proxy, err := linkemu.NewTCPProxy("127.0.0.1:0", addr, mwProxyConfig(cfg))
	if err != nil {
		return nil, err
	}
	cl.add(func() { proxy.Close() })
	publish, err := openZenohClients(ctx, ep, proxy, pki, sink, &cl)
	if err != nil {
		return nil, err
	}
	return &mwConn{publish: publish, proxy: proxy, brokerPID: gw.pid(), broker: "`picobridge router`", close: cl.run,
		notes: []string{"broker: `picobridge router` (zenohpath router, default settings); clients: Go zenohpath, reliable, congestion control BLOCK" + tlsNote(useTLS)}}, nil
}

func tlsNote(on bool) string {
	if on {
		return "; TLS (tls/ endpoints, one CA, broker certificate for 127.0.0.1)"
	}
	return ""
}

// mosquittoBin is the Mosquitto broker ($PICOEVAL_MOSQUITTO, else mosquitto on PATH or
// Debian's /usr/sbin/mosquitto).
func mosquittoBin() (string, error) {
	if p := os.Getenv("PICOEVAL_MOSQUITTO"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto", nil
	}
	return "", errors.New("mosquitto not found")
}

// mosquittoMissing says why the MQTT runs cannot run ("" when they can).
func mosquittoMissing() string {
	if _, err := mosquittoBin(); err != nil {
		return "Mosquitto broker (apt-get install mosquitto; scripts/setup.sh)"
	}
	return ""
}

// mosquittoConfig is the generated broker configuration: one listener on loopback,
// anonymous clients, no persistence, errors and warnings to stderr, Mosquitto's default
// set_tcp_nodelay false (Nagle on: with TLS a 16 KiB message takes ≈ 23 ms instead of
// ≈ 1.5, docs/results/2026-12-04-mosquitto-tls-nagle.md); with TLS the listener
// presents the certificate. `user root` keeps a broker started as root from switching
// to the mosquitto user (who could not read the key in our temp dir).
func mosquittoConfig(port int, pki *mwPKI) string {
	var b strings.Builder
	fmt.Fprintf(&b, "user root\npersistence false\nlog_dest stderr\nlog_type error\nlog_type warning\nallow_anonymous true\nlistener %d 127.0.0.1\n", port)
	if pki != nil {
		fmt.Fprintf(&b, "certfile %s\nkeyfile %s\n", pki.leaf.CertFile, pki.leaf.KeyFile)
	}
	return b.String()
}

// openMWMosquitto: a Mosquitto broker (own process, generated config) with paho.mqtt.golang
// publisher and subscriber, MQTT 3.1.1, QoS 1 both ways.
func openMWMosquitto(ctx context.Context, cfg Config, useTLS bool, sink *mwSink) (conn *mwConn, err error) {
	bin, err := mosquittoBin()
	if err != nil {
		return nil, err
	}
	var cl cleanups
	defer func() {
		if err != nil {
			cl.run()
		}
	}()
	dir, err := os.MkdirTemp("", "picoeval-mw-mqtt-")
	if err != nil {
		return nil, err
	}
	cl.add(func() { os.RemoveAll(dir) })
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	var pki *mwPKI
	if useTLS {
		if pki, err = newMWPKI(); err != nil {
			return nil, err
		}
		cl.add(func() { os.RemoveAll(pki.dir) })
	}
	conf := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(conf, []byte(mosquittoConfig(port, pki)), 0o644); err != nil {
		return nil, err
	}
	broker, err := startProc("mosquitto", exec.Command(bin, "-c", conf), nil, "")
	if err != nil {
		return nil, err
	}
	cl.add(broker.terminate)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitFor("mosquitto listening", 30*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}); err != nil {
		return nil, fmt.Errorf("%w: %s", err, broker.stderr.String())
	}
	proxy, err := linkemu.NewTCPProxy("127.0.0.1:0", addr, mwProxyConfig(cfg))
	if err != nil {
		return nil, err
	}
	cl.add(func() { proxy.Close() })
	var tc *tls.Config
	scheme := "tcp://"
	if pki != nil {
		pem, err := os.ReadFile(pki.ca.File)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tc = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		scheme = "ssl://"
	}
	connect := func(id, hostport string) (mqtt.Client, error) {
		o := mqtt.NewClientOptions().AddBroker(scheme + hostport).SetClientID(id).SetCleanSession(true).
			SetAutoReconnect(false).SetConnectTimeout(30 * time.Second).SetKeepAlive(30 * time.Second)
		if tc != nil {
			o.SetTLSConfig(tc)
		}
		c := mqtt.NewClient(o)
		t := c.Connect()
		if !t.WaitTimeout(60 * time.Second) {
			return nil, fmt.Errorf("mqtt %s: connect timed out", id)
		}
		if t.Error() != nil {
			return nil, fmt.Errorf("mqtt %s: %w", id, t.Error())
		}
		return c, nil
	}
	sub, err := connect("picoeval-sub", proxy.Addr())
	if err != nil {
		return nil, err
	}
	cl.add(func() { sub.Disconnect(100) })
	st := sub.Subscribe(mwKey, 1, func(_ mqtt.Client, m mqtt.Message) { sink.payload(m.Payload()) })
	if !st.WaitTimeout(30*time.Second) || st.Error() != nil {
		return nil, fmt.Errorf("mqtt subscribe: %v", st.Error())
	}
	pub, err := connect("picoeval-pub", addr)
	if err != nil {
		return nil, err
	}
	cl.add(func() { pub.Disconnect(100) })
	put := func(b []byte) error {
		t := pub.Publish(mwKey, 1, false, b)
		t.Wait() // QoS 1: until the broker's PUBACK
		return t.Error()
	}
	return &mwConn{publish: inProcessPublish(put), proxy: proxy, brokerPID: broker.pid(), broker: "mosquitto", close: cl.run,
		notes: []string{"broker: Mosquitto (Debian package, generated config, loopback listener, Nagle on as by default: set_tcp_nodelay false); clients: paho.mqtt.golang v1.5.1, MQTT 3.1.1, QoS 1 publish (waits for PUBACK) and subscription" + tlsNote(useTLS)}}, nil
}

// startCotenants starts n CPU busy loops (separate `sh` processes) and returns the
// function that stops them; n ≤ 0 starts nothing.
func startCotenants(n int) (stop func()) {
	var cmds []*exec.Cmd
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		// Killed with us should picoeval die before stop runs (Linux PR_SET_PDEATHSIG).
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			continue
		}
		cmds = append(cmds, c)
	}
	return func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
}
