package bpfgen

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/attach"
	"github.com/gtrace/gtrace/pkg/parse"
)

// TestHistDirect checks the hist program on a raw tracepoint: the record
// built at the bottom of the stack, below the filter's scratch area, and
// the classic tracepoint when keys and values leave no room for it or the
// event has no builder.
func TestHistDirect(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("records are built on raw tracepoints only on amd64")
	}
	exit := testutil.Format(t, "raw_syscalls:sys_exit")
	spec := func(f *HistSpec) *HistSpec {
		f.KeySize, f.ValueSize, f.MaxEntries, f.CommOff = 8, 8, 16, -1
		f.Keys = []KeySlot{{Src: SrcField, Field: exit.Field("ret"), Size: 8}}
		f.Direct, f.Event = &DirectOptions{TaskStatusOff: 16}, exit
		return f
	}
	p, err := Hist(spec(&HistSpec{}))
	if err != nil {
		t.Fatal(err)
	}
	ps := p.Collection.Programs[HistProgName]
	if ps.Type != ebpf.Tracing || ps.AttachType != ebpf.AttachTraceRawTp || ps.AttachTo != "sys_exit" {
		t.Errorf("program %v, %v, %q, want tp_btf on sys_exit", ps.Type, ps.AttachType, ps.AttachTo)
	}
	got := lines(ps.Instructions)
	for _, frag := range []string{
		"LdXMemDW dst: r2 src: r1 off: 120 imm: 0\nLShImm dst: r2 imm: 32\nArShImm dst: r2 imm: 32\nStXMemDW dst: rfp src: r2 off: -72 imm: 0",
		"OrImm dst: r1 imm: 442\nStXMemDW dst: rfp src: r1 off: -80 imm: 0\nMovReg dst: r6 src: rfp\nAddImm dst: r6 imm: -80",
		"LdXMemDW dst: r0 src: r6 off: 16 imm: 0", // the key, ret, read from the record
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("hist program lacks\n%s\nin\n%s", frag, got)
		}
	}
	checkReturnsZero(t, ps.Instructions)

	big := spec(&HistSpec{})
	big.KeySize = maxStack - directRecordMax
	sw := spec(&HistSpec{})
	sw.Event = testutil.Format(t, "sched:sched_switch")
	classic := spec(&HistSpec{})
	classic.Direct = nil
	for name, s := range map[string]*HistSpec{"no room": big, "no builder": sw, "not Direct": classic} {
		if tp := HistTracepoint(s); tp != "" {
			t.Errorf("%s: HistTracepoint() = %q", name, tp)
		}
	}
	if tp := HistTracepoint(spec(&HistSpec{})); tp != "sys_exit" {
		t.Errorf("HistTracepoint(sys_exit) = %q", tp)
	}
}

// TestSyscallGroups checks that syscalls events without a filter share a
// program per raw tracepoint, with their numbers mapped to their IDs and
// record lengths, and that the rest keep programs of their own.
func TestSyscallGroups(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("syscall groups exist only on amd64")
	}
	nr := func(n uint32) *uint32 { return &n }
	openat := testutil.Format(t, "syscalls:sys_enter_openat")
	exitOpenat := testutil.Format(t, "syscalls:sys_exit_openat")
	getppid := testutil.Format(t, "syscalls:sys_enter_getppid")
	write := testutil.Format(t, "syscalls:sys_enter_write")
	e, err := parse.ParseFilter("-f", "fd == 1")
	if err != nil {
		t.Fatal(err)
	}
	bf, err := parse.BindFilter("-f", "fd == 1", e, write)
	if err != nil {
		t.Fatal(err)
	}
	s := recordSpec(
		RecordEvent{Format: openat, Syscall: nr(257)},
		RecordEvent{Format: exitOpenat, Syscall: nr(257)},
		RecordEvent{Format: getppid, Syscall: nr(110)},
		RecordEvent{Format: write, Syscall: nr(1), Filter: bf},               // a filter: its own program
		RecordEvent{Format: testutil.Format(t, "syscalls:sys_enter_openat")}, // no number: its own program
	)
	// Groups of minGroup events: more entries and exits, under other
	// numbers.
	for n := range uint32(minGroup - 2) {
		s.Events = append(s.Events, RecordEvent{Format: openat, Syscall: nr(200 + n)})
	}
	for n := range uint32(minGroup - 1) {
		s.Events = append(s.Events, RecordEvent{Format: exitOpenat, Syscall: nr(200 + n)})
	}
	s.Direct = &DirectOptions{TaskStatusOff: 16}
	p, err := Record(s)
	if err != nil {
		t.Fatal(err)
	}
	enterRec := Recorder{Prog: SysEnterProgName, Point: attach.Point{Kind: attach.TpBTF, Target: "sys_enter"}, Group: true}
	exitRec := Recorder{Prog: SysExitProgName, Point: attach.Point{Kind: attach.TpBTF, Target: "sys_exit"}, Group: true}
	want := []Recorder{enterRec, exitRec, enterRec,
		{Prog: RecordProgName(0), Point: attach.TracepointAt("syscalls", "sys_enter_write")},
		{Prog: RecordProgName(1), Point: attach.TracepointAt("syscalls", "sys_enter_openat")}}
	for i := range s.Events {
		w := enterRec
		switch {
		case i < len(want):
			w = want[i]
		case i >= 5+minGroup-2:
			w = exitRec
		}
		if got := p.Recorders[i]; !reflect.DeepEqual(got, w) {
			t.Errorf("Recorders[%d] = %+v, want %+v", i, got, w)
		}
	}
	if p.Collection.Programs[RecordProgName(2)] != nil {
		t.Errorf("grouped events have programs of their own")
	}
	ids := p.Collection.Maps[sysEnterMapName]
	if ids == nil || ids.Type != ebpf.Array || ids.MaxEntries != 258 || len(ids.Contents) != minGroup ||
		ids.Contents[0] != (ebpf.MapKV{Key: uint32(257), Value: uint64(48)<<32 | uint64(openat.ID)}) ||
		ids.Contents[1] != (ebpf.MapKV{Key: uint32(110), Value: uint64(12)<<32 | uint64(getppid.ID)}) {
		t.Errorf("sys_enter ids map %+v", ids)
	}
	exitIDs := p.Collection.Maps[sysExitMapName]
	if exitIDs == nil || len(exitIDs.Contents) != minGroup || exitIDs.Contents[0] != (ebpf.MapKV{Key: uint32(257), Value: uint64(24)<<32 | uint64(exitOpenat.ID)}) {
		t.Errorf("sys_exit ids map %+v", exitIDs)
	}
	for name, frags := range map[string][]string{
		SysEnterProgName: {
			// 32-bit system calls have no syscalls events
			"Call FnGetCurrentTaskBtf\nLdXMemW dst: r2 src: r0 off: 16 imm: 0\nLdXMemDW dst: r1 src: r6 off: 0 imm: 0\nJSetImm dst: r2 off: -1 imm: 2 <out_1>",
			// the number, bounded by the map, stored as __syscall_nr and its padding
			"LdXMemDW dst: r2 src: r6 off: 8 imm: 0\nJGTImm dst: r2 off: -1 imm: 257 <out_1>\nStXMemDW dst: rfp src: r2 off: -64 imm: 0\nStXMemW dst: rfp src: r2 off: -4 imm: 0",
			"LdXMemDW dst: r3 src: r0 off: 0 imm: 0\nJEqImm dst: r3 off: -1 imm: 0 <out_1>",
			"LdXMemDW dst: r2 src: r1 off: 112 imm: 0\nStXMemDW dst: rfp src: r2 off: -56 imm: 0", // args[0] = di
			"LdXMemDW dst: r2 src: r1 off: 64 imm: 0\nStXMemDW dst: rfp src: r2 off: -16 imm: 0",  // args[5] = r9
			"AndImm dst: r2 imm: 65535\nOrReg dst: r1 src: r2\nStXMemDW dst: rfp src: r1 off: -72 imm: 0\nMovReg dst: r6 src: rfp\nAddImm dst: r6 imm: -72\nMovReg dst: r9 src: r3\nRShImm dst: r9 imm: 32",
			"LdXMemDW dst: r1 src: r6 off: 56 imm: 0\nStXMemDW dst: r7 src: r1 off: 72 imm: 0\nStXMemDW dst: r7 src: r9 off: 8 imm: 0\nMovReg dst: r1 src: r9\nAddImm dst: r1 imm: 23\nAndImm dst: r1 imm: -8",
		},
		SysExitProgName: {
			"LdXMemDW dst: r2 src: r1 off: 120 imm: 0\nLShImm dst: r2 imm: 32\nArShImm dst: r2 imm: 32\nJGTImm dst: r2 off: -1 imm: 257 <out_1>",
			"LdXMemDW dst: r2 src: r6 off: 8 imm: 0\nStXMemDW dst: rfp src: r2 off: -56 imm: 0", // ret
		},
	} {
		ps := p.Collection.Programs[name]
		if ps == nil || ps.Type != ebpf.Tracing || ps.AttachType != ebpf.AttachTraceRawTp {
			t.Fatalf("%s: %+v, want a tp_btf program", name, ps)
		}
		got := lines(ps.Instructions)
		for _, frag := range frags {
			if !strings.Contains(got, frag) {
				t.Errorf("%s lacks\n%s\nin\n%s", name, frag, got)
			}
		}
		checkReturnsZero(t, ps.Instructions)
	}

	// Without Direct, or with fewer than minGroup events for a raw
	// tracepoint, every event has a program of its own.
	few := *s
	few.Events = few.Events[:5+minGroup-3]
	s.Direct = nil
	for name, spec := range map[string]*RecordSpec{"classic": s, "too few": &few} {
		if p, err = Record(spec); err != nil {
			t.Fatal(err)
		}
		if p.Collection.Programs[SysEnterProgName] != nil || p.Collection.Programs[RecordProgName(0)] == nil || !reflect.DeepEqual(p.Recorders[0], Recorder{Prog: RecordProgName(0), Point: attach.TracepointAt("syscalls", "sys_enter_openat")}) {
			t.Errorf("%s: a syscall group for sys_enter", name)
		}
	}
	if p.Collection.Programs[SysExitProgName] != nil {
		t.Error("too few: a syscall group for sys_exit")
	}
}

// TestSyscallGroupFilter compiles a filter on what all syscalls events
// share into the group's program, when the group's events share it; an
// event with another filter keeps a program of its own.
func TestSyscallGroupFilter(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("syscall groups exist only on amd64")
	}
	nr := func(n uint32) *uint32 { return &n }
	bindOn := func(f *parse.Format, src string) *parse.BoundFilter {
		e, err := parse.ParseFilter("-f", src)
		if err != nil {
			t.Fatal(err)
		}
		bf, err := parse.BindFilter("-f", src, e, f)
		if err != nil {
			t.Fatal(err)
		}
		return bf
	}
	openat := testutil.Format(t, "syscalls:sys_enter_openat")
	getppid := testutil.Format(t, "syscalls:sys_enter_getppid")
	write := testutil.Format(t, "syscalls:sys_enter_write")
	const common = `comm == "nginx" && common_pid != 1`
	s := recordSpec(
		RecordEvent{Format: openat, Syscall: nr(257), Filter: bindOn(openat, common)},
		RecordEvent{Format: getppid, Syscall: nr(110), Filter: bindOn(getppid, common)},
		RecordEvent{Format: write, Syscall: nr(1), Filter: bindOn(write, "common_pid == 7")}, // another filter
		RecordEvent{Format: write, Syscall: nr(1), Filter: bindOn(write, "fd == 1")},         // a field of its own
	)
	for n := range uint32(minGroup - 2) {
		s.Events = append(s.Events, RecordEvent{Format: openat, Syscall: nr(200 + n), Filter: bindOn(openat, common)})
	}
	s.Direct = &DirectOptions{TaskStatusOff: 16}
	p, err := Record(s)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{SysEnterProgName, SysEnterProgName, RecordProgName(0), RecordProgName(1), SysEnterProgName} {
		if got := p.Recorders[i].Prog; got != want {
			t.Errorf("Recorders[%d].Prog = %s, want %s", i, got, want)
		}
	}
	got := lines(p.Collection.Programs[SysEnterProgName].Instructions)
	for _, frag := range []string{
		// the map value kept across helper calls and the filter, which
		// reads the record
		"JEqImm dst: r3 off: -1 imm: 0 <out_1>\nStXMemDW dst: rfp src: r3 off: -80 imm: 0\nCall FnGetCurrentPidTgid",
		"MovImm dst: r2 imm: 16\nCall FnGetCurrentComm",
		"MovReg dst: r0 src: r9\nLShImm dst: r0 imm: 32\nArShImm dst: r0 imm: 32\nJEqImm dst: r0 off: -1 imm: 1 <out_1>", // common_pid from pid_tgid
		"LdXMemDW dst: r3 src: rfp off: -80 imm: 0\nMovReg dst: r9 src: r3\nRShImm dst: r9 imm: 32",
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("gtrace_sysenter lacks\n%s\nin\n%s", frag, got)
		}
	}
}
