package live

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// signalTree sends sig to the process pid and to every process that
// descends from it (children, grandchildren, ...), as /proc shows them
// at the time: a shell's children die with it rather than live on as
// orphans. Processes that have left the tree (a daemon) are not reached.
// The tree is read first and pid signalled first: a shell waiting for a
// child that the signal kills would otherwise return from its wait and
// exit 0 before its own signal arrived, and the command's status would
// depend on the order in which the kernel delivers them.
func signalTree(pid int, sig syscall.Signal) {
	tree := descendants(pid)
	_ = syscall.Kill(pid, sig)
	for _, p := range tree {
		_ = syscall.Kill(p, sig)
	}
}

// descendants returns the processes below pid, read from /proc/*/stat.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf returns a process's parent pid, the fourth field of
// /proc/PID/stat (after the command name in parentheses, which may hold
// blanks and parentheses itself).
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}
