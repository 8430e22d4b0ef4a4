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
