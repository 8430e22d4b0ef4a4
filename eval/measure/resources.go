package measure

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Usage is the resource use of a process.
type Usage struct {
	CPU     time.Duration // user + system CPU time
	PeakRSS int64         // bytes (VmHWM, or ru_maxrss)
}

// clockTicks is USER_HZ, the unit of utime/stime in /proc/PID/stat (100 on Linux).
const clockTicks = 100

// ProcUsage reads the CPU time and peak RSS of a live process from /proc.
func ProcUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, err
	}
	return parseProc(stat, status)
}

func parseProc(stat, status []byte) (Usage, error) {
	// comm may hold spaces and parentheses: fields start after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return Usage{}, fmt.Errorf("measure: malformed /proc stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return Usage{}, fmt.Errorf("measure: short /proc stat (%d fields)", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return Usage{}, fmt.Errorf("measure: bad utime/stime in /proc stat")
	}
	u := Usage{CPU: time.Duration(ut+st) * time.Second / clockTicks}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return Usage{}, fmt.Errorf("measure: bad VmHWM %q", line)
			}
			u.PeakRSS = kb << 10
		}
	}
	return u, nil
}

// SelfUsage is the calling process's CPU time and peak RSS from getrusage(RUSAGE_SELF)
// (Linux reports ru_maxrss in KiB).
func SelfUsage() Usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Usage{}
	}
	return Usage{
		CPU:     time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		PeakRSS: ru.Maxrss << 10,
	}
}

// Sub is the CPU used between two readings of one process (peak RSS is the later reading's).
func (u Usage) Sub(before Usage) Usage {
	return Usage{CPU: u.CPU - before.CPU, PeakRSS: u.PeakRSS}
}
