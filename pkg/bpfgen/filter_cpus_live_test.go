package bpfgen

import (
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/parse"
)

// TestPrivilegedFilterBPFCPUs runs CPUS{} filters in the kernel on the
// writes of a child pinned to CPU 0: common_cpu & CPUS{1} must not match
// them (it did when it compiled to cpu <= 1) and common_cpu & CPUS{0}
// must match them all, and BPF must count what the interpreter accepts.
// CPU 1 need not exist: the filter only has to leave CPU 0 out.
func TestPrivilegedFilterBPFCPUs(t *testing.T) {
	testutil.RequirePrivileged(t)
	f := liveFormat(t, "syscalls", "sys_enter_write")
	w := startWriter(t, 0)
	tests := []struct {
		src  string
		want int // how many of the child's childWrites writes pass
	}{
		{"common_cpu & CPUS{1}", 0},
		{"common_cpu & CPUS{0}", childWrites},
		{"cpu & CPUS{1}", 0},
		{"CPU & CPUS{0-1}", childWrites},
		{"common_cpu & CPUS{1,3}", 0},
		{"common_cpu & CPUS{0,3}", childWrites},
		{"common_cpu == CPUS{1}", 0},
		{"common_cpu != CPUS{1}", childWrites},
		{"!(common_cpu & CPUS{1})", childWrites},
		{"count & CPUS{7}", 1},
		{"count & CPUS{2-3,250}", 3},
		{"count & CPUS{299-300}", 2},
		{"count == CPUS{1}", 1},
	}
	pidTgid := uint64(w.tgid)<<32 | uint64(w.tid)
	counters := make([]*counter, len(tests))
	bound := make([]*parse.BoundFilter, len(tests))
	for i, tt := range tests {
		bound[i] = bindLive(t, f, tt.src)
		counters[i] = loadCounter(t, bound[i], pidTgid)
		l := counters[i].attach(t, "syscalls", "sys_enter_write")
		defer l.Close()
	}
	w.run(t)
	ctx := eval.Context{PID: int32(w.tid), CPU: w.cpu, Comm: w.comm}
	rec := make([]byte, recordSize(f))
	for i, tt := range tests {
		interp := 0
		for n := 1; n <= childWrites; n++ {
			putField(t, f, rec, "common_type", uint64(f.ID))
			putField(t, f, rec, "common_pid", uint64(w.tid))
			putField(t, f, rec, "__syscall_nr", 1)
			putField(t, f, rec, "fd", childFD)
			putField(t, f, rec, "count", uint64(n))
			if eval.Match(bound[i], rec, ctx) {
				interp++
			}
		}
		got := int(counters[i].count(t))
		if got != tt.want || interp != tt.want {
			t.Errorf("filter %q on CPU 0: BPF counted %d of %d writes, the interpreter %d, want %d",
				tt.src, got, childWrites, interp, tt.want)
		}
	}
}
