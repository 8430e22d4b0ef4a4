package bridge

import (
	"syscall"
	"time"
)

// ReadProcessCPU is the CPU time the gateway's process has used, user and
// system, all threads (getrusage(2) RUSAGE_SELF).
func ReadProcessCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
