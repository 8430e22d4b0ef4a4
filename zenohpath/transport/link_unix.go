//go:build unix

package transport

import (
	"syscall"
)

// rawConnOf returns r's syscall.RawConn when r is a socket, else nil.
func rawConnOf(r any) syscall.RawConn {
	sc, ok := r.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// sysRead reads from the non-blocking socket fd; again reports that the
// read would block (EAGAIN). EINTR is retried.
func sysRead(fd uintptr, p []byte) (n int, again bool, err error) {
	for {
		n, err = syscall.Read(int(fd), p)
		switch err {
		case nil:
			return n, false, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, true, nil
		}
		return 0, false, err
	}
}
