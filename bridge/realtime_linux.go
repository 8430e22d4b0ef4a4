//go:build linux

package bridge

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// linuxThreads sets a thread's scheduling with sched_setattr(2) on its tid:
// on Linux each thread has its own policy, priority and nice, and a new
// thread starts with its creator's.
type linuxThreads struct {
	task        string // /proc/self/task
	resetOnFork bool   // SCHED_FLAG_RESET_ON_FORK: what a raised thread starts runs at normal priority
}

func osThreads() threadSys { return linuxThreads{task: "/proc/self/task"} }

func osThreadsResetOnFork() threadSys {
	return linuxThreads{task: "/proc/self/task", resetOnFork: true}
}

func (l linuxThreads) flags() uint64 {
	if l.resetOnFork {
		return unix.SCHED_FLAG_RESET_ON_FORK
	}
	return 0
}

// threads lists /proc/self/task. A thread named like the process (its
// main thread's comm) is one of the Go runtime's: the runtime does not name
// threads; a C library names its own (Cyclone: recvUC, tev, gc, ...).
func (l linuxThreads) threads() ([]osThread, error) {
	self, err := os.ReadFile(filepath.Join(filepath.Dir(l.task), "comm"))
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(l.task)
	if err != nil {
		return nil, err
	}
	var ts []osThread
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(l.task, e.Name(), "comm"))
		if err != nil {
			continue // it ended meanwhile
		}
		role := RoleLibrary
		if strings.TrimSpace(string(comm)) == strings.TrimSpace(string(self)) {
			role = RoleRuntime
		}
		ts = append(ts, osThread{tid: tid, role: role})
	}
	return ts, nil
}

func (l linuxThreads) setFIFO(tid, prio int) error {
	return unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(prio), Flags: l.flags()}, 0)
}

func (l linuxThreads) setNice(tid, n int) error {
	return unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: int32(n), Flags: l.flags()}, 0)
}

// setGroupNice writes n to /proc/self/autogroup when the kernel groups
// sessions (/proc/sys/kernel/sched_autogroup_enabled 1; sched(7)).
func (l linuxThreads) setGroupNice(n int) error {
	on, err := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled")
	if err != nil || strings.TrimSpace(string(on)) != "1" {
		return errNoAutogroup
	}
	return os.WriteFile(filepath.Join(filepath.Dir(l.task), "autogroup"), []byte(strconv.Itoa(n)), 0)
}
