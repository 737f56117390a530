package eval

import (
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestMatchCPUs checks a CPU number against CPUS{list} as the kernel does
// (kernel/trace/trace_events_filter.c): & is "in the list"; a one-CPU list
// is a plain comparison with that CPU (& and == alike), and a list of
// several CPUs never equals one CPU. In particular common_cpu & CPUS{1}
// does not match on CPU 0: the CPU is not "at most 1".
func TestMatchCPUs(t *testing.T) {
	write := testutil.Format(t, "syscalls:sys_enter_write")
	rec := func(count uint64) []byte { return newRecord(write).num("fd", 1).num("count", count).buf }
	tests := []struct {
		src   string
		cpu   int
		count uint64
		want  bool
	}{
		{"common_cpu & CPUS{1}", 0, 0, false},
		{"common_cpu & CPUS{1}", 1, 0, true},
		{"common_cpu & CPUS{1}", 2, 0, false},
		{"common_cpu & CPUS{0}", 0, 0, true},
		{"common_cpu & CPUS{0}", 1, 0, false},
		{"cpu & CPUS{1}", 0, 0, false},
		{"CPU & CPUS{3}", 2, 0, false},
		{"common_cpu & CPUS{0-1}", 0, 0, true},
		{"common_cpu & CPUS{0,2}", 1, 0, false},
		{"common_cpu & CPUS{3,5}", 4, 0, false},
		{"common_cpu & CPUS{3,5}", 5, 0, true},
		{"common_cpu & CPUS{3-4,7}", 6, 0, false},
		{"common_cpu & CPUS{3-4,7}", 7, 0, true},
		{"common_cpu & CPUS{1,1}", 0, 0, false},
		{"common_cpu == CPUS{1}", 0, 0, false},
		{"common_cpu == CPUS{1}", 1, 0, true},
		{"common_cpu != CPUS{1}", 0, 0, true},
		{"common_cpu != CPUS{1}", 1, 0, false},
		{"common_cpu == CPUS{0-1}", 1, 0, false},
		{"common_cpu != CPUS{0-1}", 1, 0, true},
		// A field that holds a CPU number.
		{"count & CPUS{7}", 0, 6, false},
		{"count & CPUS{7}", 0, 7, true},
		{"count & CPUS{2,7}", 0, 1, false},
		{"count == CPUS{7}", 0, 7, true},
	}
	for _, tt := range tests {
		bf := bind(t, write, tt.src)
		if got := Match(bf, rec(tt.count), Context{PID: 1, CPU: tt.cpu}); got != tt.want {
			t.Errorf("Match(%q) on CPU %d, count %d = %v, want %v", tt.src, tt.cpu, tt.count, got, tt.want)
		}
	}
}
