//go:build linux

package transport

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// setNotSentLowat sets TCP_NOTSENT_LOWAT on c (Linux, since 3.12): the
// socket reports itself writable, and accepts more data, only while fewer
// than n bytes wait unsent in the kernel. The writer's batches therefore
// queue in our priority queues, not in the socket buffer, where a
// higher-priority batch could not overtake them (architecture invariant 7).
func setNotSentLowat(c net.Conn, n int) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, n)
	}); err != nil {
		return err
	}
	return serr
}

func getNotSentLowat(c *net.TCPConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var v int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
	}); err != nil {
		return 0, err
	}
	return v, gerr
}
