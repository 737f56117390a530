package probe

import (
	"time"

	"golang.org/x/sys/unix"
)

// membarrierCmdGlobal is MEMBARRIER_CMD_GLOBAL: the kernel returns from
// it after an RCU grace period (synchronize_rcu).
const membarrierCmdGlobal = 1

// quiesceFallback is how long Quiesce waits where the kernel has no
// global membarrier (nohz_full CPUs, CONFIG_MEMBARRIER off): far longer
// than a program runs, but a guess.
const quiesceFallback = 2 * time.Millisecond

// Quiesce returns when every BPF program that was running when it was
// called has returned. A program runs inside an RCU read-side section
// (tracepoints with preemption off, raw tracepoints and probes under
// rcu_read_lock), so an RCU grace period, which MEMBARRIER_CMD_GLOBAL
// waits for, outlasts it, however long its CPU was held up (a vCPU the
// host paused). After a switch (SwitchOff), the programs that had passed
// it have then written all they will.
func Quiesce() {
	if _, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdGlobal, 0, 0); errno != 0 {
		time.Sleep(quiesceFallback)
	}
}
