//go:build linux

package bridge

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// tcpCALoss is Linux's TCP_CA_Loss congestion-avoidance state (include/net/tcp.h):
// the sender is recovering from a retransmission timeout.
const tcpCALoss = 4

// ReadTCPInfo reads TCP_INFO from conn's socket.
func ReadTCPInfo(conn *net.TCPConn) (TCPInfo, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return TCPInfo{}, err
	}
	var ti *unix.TCPInfo
	var serr error
	if err := raw.Control(func(fd uintptr) {
		ti, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return TCPInfo{}, err
	}
	if serr != nil {
		return TCPInfo{}, serr
	}
	return TCPInfo{
		RTT:          time.Duration(ti.Rtt) * time.Microsecond,
		RTTVar:       time.Duration(ti.Rttvar) * time.Microsecond,
		TotalRetrans: uint64(ti.Total_retrans),
		SegsOut:      uint64(ti.Segs_out),
		DeliveryRate: ti.Delivery_rate,
		PacingRate:   ti.Pacing_rate,
		NotSent:      uint64(ti.Notsent_bytes),
		MinRTT:       time.Duration(ti.Min_rtt) * time.Microsecond,
		BytesAcked:   ti.Bytes_acked,
		RwndLimited:  time.Duration(ti.Rwnd_limited) * time.Microsecond,
		Stalled:      ti.Ca_state == tcpCALoss || ti.Retransmits > 0,
	}, nil
}
