//go:build !linux

package bridge

import "net"

// ReadTCPInfo returns ErrTCPInfoUnsupported outside Linux; callers skip the
// passive signal.
func ReadTCPInfo(conn *net.TCPConn) (TCPInfo, error) { return TCPInfo{}, ErrTCPInfoUnsupported }
