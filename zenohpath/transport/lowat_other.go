//go:build !linux

package transport

import "net"

// setNotSentLowat is Linux-only (TCP_NOTSENT_LOWAT); elsewhere the kernel
// default applies.
func setNotSentLowat(net.Conn, int) error { return nil }

func getNotSentLowat(*net.TCPConn) (int, error) { return 0, ErrLowatUnsupported }
