package cmd

import (
	"os"
	"runtime"
)

// init, in a workload (the test binary run as a command to trace), locks
// the main goroutine to the startup thread, whose tid is the process's
// pid: init functions run on that thread, and a lock taken there keeps
// main on it. Unlocked, main may move between threads, and the events of
// one workload then carry several tids (common_pid): several hist
// entries, or records that are not the traced pid's.
func init() {
	if os.Getenv(workloadEnv) != "" {
		runtime.LockOSThread()
	}
}
