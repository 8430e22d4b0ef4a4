package bridge

import (
	"errors"
	"time"
)

// TCPInfo is the passive link signal read from a device's TCP socket
// (Linux TCP_INFO): smoothed RTT and retransmissions. The classifier uses it
// when classifier.tcp_info is on (Classifier.ObserveTCP).
type TCPInfo struct {
	RTT          time.Duration `json:"rtt_ns"`    // tcpi_rtt (smoothed)
	RTTVar       time.Duration `json:"rttvar_ns"` // tcpi_rttvar
	TotalRetrans uint64        `json:"total_retrans"`
	SegsOut      uint64        `json:"segs_out"`
	// DeliveryRate and PacingRate are the kernel's tcpi_delivery_rate and
	// tcpi_pacing_rate in bytes/s (0 when unknown): the link budget's
	// estimate (policy.link.estimate: tcp_info).
	DeliveryRate uint64 `json:"delivery_rate"`
	PacingRate   uint64 `json:"pacing_rate"`
	// NotSent is tcpi_notsent_bytes: bytes written but not yet sent.
	NotSent uint64 `json:"notsent_bytes"`
	// MinRTT is tcpi_min_rtt (the kernel's windowed minimum), BytesAcked
	// tcpi_bytes_acked (cumulative) and RwndLimited tcpi_rwnd_limited (the
	// cumulative time stalled by the receive window): the learned link
	// budget's signals (policy.link.estimate: learn, linkest.go).
	MinRTT      time.Duration `json:"min_rtt_ns"`
	BytesAcked  uint64        `json:"bytes_acked"`
	RwndLimited time.Duration `json:"rwnd_limited_ns"`
	// Stalled says the connection is in retransmission-timeout recovery
	// (tcpi_ca_state TCP_CA_Loss, or tcpi_retransmits > 0): nothing it
	// sends arrives until the lost segment is repaired, and then everything
	// queued behind it arrives at once.
	Stalled bool `json:"stalled"`

	retransRatio float64 // since the previous observation, set by ObserveTCP
}

// TCPInfoSource is what a DeviceSink may also implement to feed the passive
// signal (classifier.tcp_info): the lead's TCP link calls ReadTCPInfo on its
// *net.TCPConn. It is read once per classifier evaluation.
type TCPInfoSource interface {
	TCPInfo() (TCPInfo, error)
}

// ErrTCPInfoUnsupported is returned by ReadTCPInfo where TCP_INFO is not available.
var ErrTCPInfoUnsupported = errors.New("tcp_info: not supported on this platform")

// TxBacklogSource is what a DeviceSink may also implement so the lanes see
// the bytes its transport session still holds (Session.TxBacklog): the
// link budget counts them as spent and the classifier subtracts the delay
// they cause from the device's probes.
type TxBacklogSource interface {
	TxBacklogBytes() int
}

// PublishedSource is what a DeviceSink may also implement to report what
// the device itself has published since its session opened (samples, and
// payload bytes): the device's TX, which its socket window and TX knobs cap
// (knobs.Capacity.TxCapacity). ObservedTraffic turns it into the device's
// published topic, so `knobs advise --gateway` can tell a TX-bound image.
type PublishedSource interface {
	Published() (samples, bytes int64)
}

// TxRateSetter is what a DeviceSink may also implement to pace the
// device's transport session (Session.SetTxRate, bytes/s, 0: unpaced): the
// gateway sets it to the link budget × policy.link.headroom, so the queue
// forms in the gateway, where priority decides, not in the bottleneck.
type TxRateSetter interface {
	SetTxRate(bytesPerSecond float64)
}
