//go:build !unix

package transport

import (
	"errors"
	"syscall"
)

// rawConnOf: outside unix the stream reader uses the io.Reader path.
func rawConnOf(any) syscall.RawConn { return nil }

func sysRead(uintptr, []byte) (int, bool, error) {
	return 0, false, errors.New("transport: raw reads are not supported on this platform")
}
