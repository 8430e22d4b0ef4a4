package server

import (
	"net"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/zenohpath"
)

// tcpFaceSink is the sink of a device on a TCP link: a faceSink that also
// feeds the classifier's passive signal (classifier.tcp_info) from the
// kernel's TCP_INFO of the device's socket. The gateway reads it once per
// evaluation, and only when classifier.tcp_info is on.
type tcpFaceSink struct {
	faceSink
	conn *net.TCPConn
}

var _ bridge.TCPInfoSource = tcpFaceSink{}

// TCPInfo reads the socket's smoothed RTT and retransmissions (Linux; an
// error elsewhere, or once the session ended, and the gateway skips it).
func (k tcpFaceSink) TCPInfo() (bridge.TCPInfo, error) { return bridge.ReadTCPInfo(k.conn) }

// newDeviceSink is the device's egress through its face; it is a
// bridge.TCPInfoSource only when the face's link is TCP.
func newDeviceSink(f zenohpath.Face) bridge.DeviceSink {
	if s := f.Session(); s != nil {
		if c, ok := s.TCPConn(); ok {
			return tcpFaceSink{faceSink: faceSink{f}, conn: c}
		}
	}
	return faceSink{f}
}
