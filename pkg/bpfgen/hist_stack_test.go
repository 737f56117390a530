package bpfgen

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestHistStackKeys checks a hist with kernel and user stack keys: on the
// classic tracepoint even when a raw tracepoint is offered, a stack map
// with 4 buckets per entry, the helper's flags (the skip, the user stack)
// and a failed helper counted as dropped.
func TestHistStackKeys(t *testing.T) {
	enter := testutil.Format(t, "syscalls:sys_enter_getppid")
	s := &HistSpec{Event: enter, Direct: &DirectOptions{TaskStatusOff: 16}}
	s.KeySize, s.ValueSize, s.MaxEntries, s.CommOff = 16, 8, 64, -1
	s.Keys = []KeySlot{
		{Src: SrcStack, Size: 8, Skip: StackSkip(enter.System, enter.Name)},
		{Src: SrcUStack, Off: 8, Size: 8},
	}
	p, err := Hist(s)
	if err != nil {
		t.Fatal(err)
	}
	if HistTracepoint(s) != "" {
		t.Errorf("a stack hist on raw tracepoint %s", HistTracepoint(s))
	}
	ps := p.Collection.Programs[HistProgName]
	if ps.Type != ebpf.TracePoint {
		t.Errorf("program type %v, want TracePoint", ps.Type)
	}
	m := p.Collection.Maps[StacksMapName]
	if m == nil || m.Type != ebpf.StackTrace || m.MaxEntries != 256 || m.ValueSize != 8*StackDepth {
		t.Fatalf("stack map %+v, want a StackTrace of 256 entries of %d bytes", m, 8*StackDepth)
	}
	got := lines(ps.Instructions)
	for _, frag := range []string{
		"MovImm dst: r3 imm: 2\nCall FnGetStackid",   // skip perf glue and syscall_trace_enter
		"MovImm dst: r3 imm: 256\nCall FnGetStackid", // BPF_F_USER_STACK
		"RShImm dst: r1 imm: 32\nLShImm dst: r1 imm: 32\nOrReg dst: r0 src: r1\nStXMemDW dst: r7 src: r0 off: 8",
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("hist program lacks\n%s\nin\n%s", frag, got)
		}
	}
	if n := strings.Count(got, "JSLTImm dst: r0 off: "); n != 2 {
		t.Errorf("%d checks of the helper's result, want 2 (each to dropped)", n)
	}
	checkReturnsZero(t, ps.Instructions)
}

func TestStackSkip(t *testing.T) {
	for _, c := range []struct {
		sys, name string
		want      int
	}{{"syscalls", "sys_enter_getppid", 2}, {"syscalls", "sys_exit_getppid", 1}, {"raw_syscalls", "sys_enter", 1}, {"sched", "sched_switch", 1}} {
		if got := StackSkip(c.sys, c.name); got != c.want {
			t.Errorf("StackSkip(%s, %s) = %d, want %d", c.sys, c.name, got, c.want)
		}
	}
}
