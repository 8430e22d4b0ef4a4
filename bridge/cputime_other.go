//go:build !linux

package bridge

import (
	"errors"
	"time"
)

// ReadProcessCPU is not implemented here: the supervisor then counts every
// lag as the gateway's (Options.ProcessCPU).
func ReadProcessCPU() (time.Duration, error) {
	return 0, errors.New("bridge: process CPU time is read on Linux only")
}
