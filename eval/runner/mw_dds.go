package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/sim/linkemu"
)

// Cyclone DDS through the userspace link emulator (docs/eval.md, "How DDS crosses
// linkemu"). Cyclone's UDP locators cannot be pointed at a proxy on loopback:
// General/ExternalNetworkAddress is refused unless there is a unique non-loopback
// interface ("external network address specification only supported if there is a
// unique non-loopback interface", Cyclone 0.10.2), and a participant sends to the
// locators its peer advertises, not to the address it was reached at. Cyclone's TCP
// transport can: the publisher listens on a fixed TCP port (TCP/Port); the subscriber
// listens on none (TCP/Port -1) and has the proxy as its only discovery peer, so its one
// connection is subscriber → proxy → publisher; TCP/AlwaysUsePeeraddrForUnicast makes
// the publisher answer on that connection instead of the (absent) advertised locator.
// Every RTPS message of the pair (discovery, data, heartbeats, ACKNACKs) then crosses the
// emulated link.

// mwTopic and mwType: the comparison's DDS topic; the payload is opaque CDR (ddspath's raw
// sertype), so any type name both sides agree on works.
const (
	mwTopic = "picoeval_mw"
	mwType  = "picoeval::msg::dds_::Blob_"
	mwKey   = "picoeval/mw" // Zenoh key expression and MQTT topic
)

// mwCycloneXML is the Cyclone configuration of one side: listen > 0 listens on that TCP
// port (publisher); peer != "" connects there and listens nowhere (subscriber).
// Writer-history watermarks are 16 MiB (ddspath Config.WhcHigh: with Cyclone's 30 kB
// start a sample above it waits for an ACK before the next write); TCP read and write
// timeouts 30 s instead of 2 s, so that a loss stall of the emulated 4G link does not
// close the connection.
func mwCycloneXML(listen int, peer string) string {
	var b strings.Builder
	b.WriteString(`<CycloneDDS><Domain id="any"><General><Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>`)
	b.WriteString(`<AllowMulticast>false</AllowMulticast><Transport>tcp</Transport></General>`)
	// SPDP every second (Cyclone's default is 30 s): the subscriber's first SPDP may find
	// no publisher behind the proxy yet, and each SPDP is also its next connection attempt.
	b.WriteString(`<Discovery><ParticipantIndex>none</ParticipantIndex><SPDPInterval>1s</SPDPInterval>`)
	if peer != "" {
		fmt.Fprintf(&b, `<Peers><Peer address="%s"/></Peers>`, esc(peer))
	}
	b.WriteString(`</Discovery><TCP>`)
	if listen > 0 {
		fmt.Fprintf(&b, `<Port>%d</Port>`, listen)
	} else {
		b.WriteString(`<Port>-1</Port>`)
	}
	b.WriteString(`<AlwaysUsePeeraddrForUnicast>true</AlwaysUsePeeraddrForUnicast><ReadTimeout>30s</ReadTimeout><WriteTimeout>30s</WriteTimeout></TCP>`)
	const whc = 16 << 20
	fmt.Fprintf(&b, `<Internal><Watermarks><WhcHigh>%dB</WhcHigh><WhcHighInit>%dB</WhcHighInit><WhcAdaptive>false</WhcAdaptive></Watermarks></Internal>`, whc, whc)
	b.WriteString(`</Domain></CycloneDDS>`)
	return b.String()
}

func esc(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}

// mwDDSQoS: RELIABLE KEEP_ALL, writes block without limit (rmw_cyclonedds's
// max_blocking_time), so nothing is dropped at the writer; the analogue of Zenoh's
// reliable + BLOCK and MQTT's QoS 1.
var mwDDSQoS = ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepAll, MaxBlocking: -1}

// runMWChild runs the DDS publisher ("mwpub") or subscriber ("mwsub") of the comparison.
//
//	mwsub: prints "ready", "matched", then "r <stamp_ns> <recv_ns>" per sample; exits on stdin EOF.
//	mwpub: prints "ready", "matched"; then per stdin line "run N SIZE INTERVAL_NS" publishes N
//	       samples paced INTERVAL_NS apart, printing "s <stamp_ns> <write_ns> <failed 0|1>"
//	       per sample and "done" after the last; exits on stdin EOF.
func runMWChild(cs childSpec) error {
	out := &lineOut{w: bufio.NewWriter(os.Stdout)}
	p, err := ddspath.Open(ddspath.Config{DomainID: cs.Domain, CycloneXML: cs.CycloneXML})
	if err != nil {
		return err
	}
	defer p.Close()
	if cs.Role == "mwsub" {
		r, err := p.NewReader(mwTopic, mwType, mwDDSQoS, ddspath.WithHandler(func(s *ddspath.Sample) {
			now := time.Now().UnixNano()
			if st, ok := mwStamp(s.CDR); ok {
				out.printf("r %d %d", st, now)
			}
		}))
		if err != nil {
			return err
		}
		out.printf("ready")
		go func() {
			for r.Matched() < 1 {
				time.Sleep(10 * time.Millisecond)
			}
			out.printf("matched")
		}()
		waitStdinEOF()
		return r.Close()
	}
	w, err := p.NewWriter(mwTopic, mwType, mwDDSQoS)
	if err != nil {
		return err
	}
	out.printf("ready")
	for w.Matched() < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	out.printf("matched")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var n, size int
		var interval time.Duration
		if _, err := fmt.Sscanf(sc.Text(), "run %d %d %d", &n, &size, &interval); err != nil {
			return fmt.Errorf("mwpub: bad command %q: %w", sc.Text(), err)
		}
		if size < mwMinSize {
			return fmt.Errorf("mwpub: size %d below %d bytes", size, mwMinSize)
		}
		t0 := time.Now()
		for i := range n {
			if d := time.Until(t0.Add(time.Duration(i) * interval)); d > 0 {
				time.Sleep(d)
			}
			buf := make([]byte, size)
			now := time.Now()
			mwPayload(buf, now.UnixNano())
			err := w.Write(buf, now)
			failed := 0
			if err != nil {
				failed = 1
			}
			out.printf("s %d %d %d", now.UnixNano(), time.Since(now).Nanoseconds(), failed)
		}
		out.printf("done")
	}
	return w.Close()
}

// openMWCyclone starts the DDS subscriber and publisher (each its own process) with the
// proxy between them.
func openMWCyclone(ctx context.Context, cfg Config, _ bool, sink *mwSink) (*mwConn, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	proxy, err := linkemu.NewTCPProxy("127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", port), mwProxyConfig(cfg))
	if err != nil {
		return nil, err
	}
	var procs []*child
	closeAll := func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
		proxy.Close()
	}
	dom := domainID()
	pub, err := startChild("dds publisher", childSpec{Role: "mwpub", Domain: dom, CycloneXML: mwCycloneXML(port, "")}, nil, "")
	if err != nil {
		closeAll()
		return nil, err
	}
	procs = append(procs, pub)
	// The publisher listens once its domain exists ("ready"); connecting before that costs
	// the subscriber a discovery round.
	if _, err := pub.waitLine("ready", 60*time.Second); err != nil {
		closeAll()
		return nil, err
	}
	sub, err := startMWChild("dds subscriber", childSpec{Role: "mwsub", Domain: dom, CycloneXML: mwCycloneXML(0, proxy.Addr())}, sink)
	if err != nil {
		closeAll()
		return nil, err
	}
	procs = append(procs, sub)
	for _, c := range procs {
		if _, err := c.waitLine("matched", 60*time.Second); err != nil {
			closeAll()
			return nil, err
		}
	}
	runs := 0
	publish := func(ctx context.Context, rec *mwRecorder, n, size int, interval time.Duration) error {
		if _, err := fmt.Fprintf(pub.stdin, "run %d %d %d\n", n, size, interval.Nanoseconds()); err != nil {
			return err
		}
		runs++
		_, err := pub.waitNth("done", runs, time.Duration(n)*interval+5*time.Minute)
		return err
	}
	// The publisher's "s" lines go to the sink too.
	pub.setLineHandler(sink)
	return &mwConn{publish: publish, proxy: proxy, close: closeAll,
		notes: []string{"Cyclone DDS 0.10.2 (ddspath) peer to peer over its TCP transport: publisher listens, subscriber connects through the proxy (docs/eval.md); RELIABLE KEEP_ALL, max_blocking_time ∞; no broker"}}, nil
}

// startMWChild starts a re-executed child whose stdout lines go to sink.
func startMWChild(name string, spec childSpec, sink *mwSink) (*child, error) {
	c, err := startChild(name, spec, nil, "")
	if err != nil {
		return nil, err
	}
	c.setLineHandler(sink)
	return c, nil
}
