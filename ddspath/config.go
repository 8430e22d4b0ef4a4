package ddspath

import (
	"encoding/xml"
	"fmt"
	"strings"
)

// Config selects the DDS domain and Cyclone's network configuration.
//
// Unless CycloneXML is given, ddspath builds the Cyclone XML itself so no
// CYCLONEDDS_URI environment variable is ever consulted. The default is
// loopback only, unicast SPDP to 127.0.0.1 (what the tests use; Cyclone
// otherwise prefers a multicast-capable NIC, dds-cyclone.md §8.1).
type Config struct {
	// DomainID is the DDS domain id (ROS_DOMAIN_ID), 0..232.
	DomainID uint32
	// Interface is the network interface address or name Cyclone uses;
	// default "127.0.0.1".
	Interface string
	// Multicast enables multicast (SPDP and data); default false (unicast
	// discovery through Peers only).
	Multicast bool
	// Peers are unicast discovery addresses ("127.0.0.1", "10.0.0.7",
	// "host:7410"). Default: the loopback address when Multicast is false.
	Peers []string
	// MaxAutoParticipantIndex bounds the participant indices (and so the
	// unicast ports 7410+2i) probed on each peer; default 20.
	MaxAutoParticipantIndex int
	// WhcHigh is Cyclone's writer-history high watermark in bytes for
	// RELIABLE KEEP_ALL writers (Internal/Watermarks/WhcHigh and WhcHighInit,
	// adaptation off). 0 keeps Cyclone's defaults: start at 30 kB, adapt up
	// to 500 kB — which makes every sample above 30 kB wait for an ACK before
	// the next write (measured: 64 KB samples to Fast DDS at ~300/s instead
	// of ~5000/s with 4 MB; docs/dds.md).
	WhcHigh int
	// SocketReceiveBuffer is the UDP receive buffer size Cyclone requests
	// (Internal/SocketReceiveBufferSize max, capped by net.core.rmem_max);
	// default DefaultSocketReceiveBuffer. Small buffers drop fragments of
	// large samples, which reliable writers only repair at their next
	// heartbeat (Fast DDS: 3 s).
	SocketReceiveBuffer int
	// TraceFile and TraceVerbosity enable Cyclone tracing (e.g. "finest").
	TraceFile      string
	TraceVerbosity string
	// CycloneXML, when set, is passed verbatim to dds_create_domain and all
	// fields above except DomainID are ignored.
	CycloneXML string
}

// DefaultMaxAutoParticipantIndex bounds the participant index range probed on
// unicast peers. Cyclone's own default is 9; tests run more participants.
const DefaultMaxAutoParticipantIndex = 20

// DefaultSocketReceiveBuffer is the default Config.SocketReceiveBuffer: 4 MiB
// (Debian's net.core.rmem_max here; rmem_default is only 208 KiB).
const DefaultSocketReceiveBuffer = 4 << 20

// XML returns the Cyclone DDS configuration Open passes to dds_create_domain.
func (c Config) XML() string {
	if c.CycloneXML != "" {
		return c.CycloneXML
	}
	iface := c.Interface
	if iface == "" {
		iface = "127.0.0.1"
	}
	peers := c.Peers
	if len(peers) == 0 && !c.Multicast {
		peers = []string{"127.0.0.1"}
	}
	maxIdx := c.MaxAutoParticipantIndex
	if maxIdx <= 0 {
		maxIdx = DefaultMaxAutoParticipantIndex
	}
	attr := "address"
	if !looksLikeAddress(iface) {
		attr = "name"
	}
	var b strings.Builder
	b.WriteString(`<CycloneDDS><Domain id="any"><General><Interfaces>`)
	fmt.Fprintf(&b, `<NetworkInterface %s="%s" multicast="%t"/>`, attr, esc(iface), c.Multicast)
	b.WriteString(`</Interfaces>`)
	fmt.Fprintf(&b, `<AllowMulticast>%t</AllowMulticast>`, c.Multicast)
	b.WriteString(`</General><Discovery>`)
	b.WriteString(`<ParticipantIndex>auto</ParticipantIndex>`)
	fmt.Fprintf(&b, `<MaxAutoParticipantIndex>%d</MaxAutoParticipantIndex>`, maxIdx)
	if len(peers) > 0 {
		b.WriteString(`<Peers>`)
		for _, p := range peers {
			fmt.Fprintf(&b, `<Peer address="%s"/>`, esc(p))
		}
		b.WriteString(`</Peers>`)
	}
	b.WriteString(`</Discovery>`)
	rcvbuf := c.SocketReceiveBuffer
	if rcvbuf <= 0 {
		rcvbuf = DefaultSocketReceiveBuffer
	}
	fmt.Fprintf(&b, `<Internal><SocketReceiveBufferSize max="%dB"/>`, rcvbuf)
	if c.WhcHigh > 0 {
		fmt.Fprintf(&b, `<Watermarks><WhcHigh>%dB</WhcHigh><WhcHighInit>%dB</WhcHighInit><WhcAdaptive>false</WhcAdaptive></Watermarks>`,
			c.WhcHigh, c.WhcHigh)
	}
	b.WriteString(`</Internal>`)
	if c.TraceFile != "" {
		v := c.TraceVerbosity
		if v == "" {
			v = "config"
		}
		fmt.Fprintf(&b, `<Tracing><Verbosity>%s</Verbosity><OutputFile>%s</OutputFile></Tracing>`, esc(v), esc(c.TraceFile))
	}
	b.WriteString(`</Domain></CycloneDDS>`)
	return b.String()
}

func looksLikeAddress(s string) bool {
	return strings.ContainsAny(s, ".:") || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
