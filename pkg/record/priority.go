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
// them. Without CAP_SYS_NICE nothing changes.
func raisePriority(nice int) (restore func()) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return func() {}
	}
	old := map[int]int{}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// The system call returns 20 - nice.
		prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		if err != nil || 20-prio <= nice {
			continue
		}
		if syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice) == nil {
			old[tid] = 20 - prio
		}
	}
	return func() {
		for tid, n := range old {
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, n)
		}
	}
}
