package record

import (
	"os"
	"strconv"
	"syscall"
)

// recordNice is the nice value of gtrace's threads while it records. A
// workload that keeps every CPU busy, which is what a syscall storm is,
// otherwise delays the readers by tens of milliseconds now and then, long
// enough for a ring buffer to fill. At -10 a reader that wakes up gets its
// CPU at once; it needs well under a tenth of it.
const recordNice = -10

// raisePriority sets the nice value of every thread of the process to
// nice, and returns a function that sets back the values it changed.
// Threads created meanwhile inherit the value of the thread that creates
// them: the function sets those still at nice back to the value the
// process's main thread had, so that nothing the process starts later
// (a traced command, another recording's threads) inherits it. Without
// CAP_SYS_NICE nothing changes.
func raisePriority(nice int) (restore func()) {
	tids := threads()
	if tids == nil {
		return func() {}
	}
	old := map[int]int{}
	base := 0
	if prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, os.Getpid()); err == nil {
		base = 20 - prio // the system call returns 20 - nice
	}
	for _, tid := range tids {
		prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		if err != nil || 20-prio <= nice {
			continue
		}
		if syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice) == nil {
			old[tid] = 20 - prio
		}
	}
	if len(old) == 0 {
		return func() {}
	}
	return func() {
		for _, tid := range threads() {
			if n, ok := old[tid]; ok {
				_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, n)
				continue
			}
			if prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil && 20-prio == nice {
				_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, base)
			}
		}
	}
}

// threads returns the ids of the process's threads; nil if /proc cannot
// say.
func threads() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var tids []int
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids
}
