package bpfgen

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

func format(t *testing.T, src, system string) *parse.Format {
	t.Helper()
	f, err := parse.ParseFormat("format", src)
	if err != nil {
		t.Fatalf("ParseFormat: %+v", err)
	}
	f.System = system
	return f
}

func recordSpec(evs ...RecordEvent) *RecordSpec {
	return &RecordSpec{Events: evs, CPUs: 2, RingSize: 1 << 20, MaxRecord: 4064}
}

// lines returns the instructions of a listing, one a line, without
// indices, comments and labels.
func lines(insns asm.Instructions) string {
	var out []string
	for _, l := range strings.Split(fmt.Sprint(insns), "\n") {
		l = strings.TrimSpace(l)
		if _, ins, ok := strings.Cut(l, ": "); ok && !strings.HasPrefix(l, ";") && !strings.HasSuffix(l, ":") {
			out = append(out, ins)
		}
	}
	return strings.Join(out, "\n")
}

func TestRecordLayout(t *testing.T) {
	fixed, dyn := RecordLayout(testutil.Format(t, "raw_syscalls:sys_enter"))
	if fixed != 64 || len(dyn) != 0 {
		t.Errorf("RecordLayout(sys_enter) = %d, %d dynamic fields, want 64, 0", fixed, len(dyn))
	}
	fixed, dyn = RecordLayout(format(t, filterFormat, "test"))
	if fixed != 76 || len(dyn) != 3 || dyn[0].Name != "name" || dyn[1].Name != "path" || dyn[2].Name != "mask" {
		t.Errorf("RecordLayout(made_up) = %d, %v, want 76 and name, path, mask", fixed, dyn)
	}
}

// TestRecordFixed checks the shape of a program for an event of constant
// length: the sample appended to the CPU's batch, the batch written to the
// ring without a wakeup when full or old, lost batches counted, and 0
// returned on every path.
func TestRecordFixed(t *testing.T) {
	f := testutil.Format(t, "raw_syscalls:sys_enter")
	p, err := Record(recordSpec(RecordEvent{Format: f}))
	if err != nil {
		t.Fatal(err)
	}
	insns := p.Collection.Programs[RecordProgName(0)].Instructions
	calls := helperCalls(insns)
	want := "map_lookup_elem get_current_pid_tgid map_lookup_elem ktime_get_ns get_smp_processor_id map_lookup_elem ringbuf_output map_lookup_elem get_smp_processor_id map_lookup_elem"
	if calls != want {
		t.Errorf("helper calls:\n%s\nwant\n%s", calls, want)
	}
	got := lines(insns)
	limit := BatchData - 80 // a sample: 16-byte header + 64-byte record
	for _, frag := range []string{
		"MovReg dst: r8 src: r0\nLdXMemDW dst: r1 src: r8 off: 16 imm: 0\nJNEImm dst: r1 off: -1 imm: 0 <nested_8>\nStMemDW dst: r8 src: r0 off: 16 imm: 1\nCall FnKtimeGetNs", // busy
		fmt.Sprintf("LdXMemW dst: r1 src: r8 off: 0 imm: 0\nJGTImm dst: r1 off: -1 imm: %d <flush_3>\nJEqImm dst: r1 off: -1 imm: 0 <first_6>", limit),
		"SubReg dst: r2 src: r3\nJLEImm dst: r2 off: -1 imm: 1000000 <append_7>", // flushAge
		"MovReg dst: r2 src: r8\nAddImm dst: r2 imm: 24\nLdXMemW dst: r3 src: r8 off: 0 imm: 0\nJGTImm dst: r3 off: -1 imm: 16360 <reset_5>\nMovImm dst: r4 imm: 1\nCall FnRingbufOutput",
		"LdXMemW dst: r1 src: r8 off: 4 imm: 0\nStXAtomicAddDW dst: r0 src: r1 off: 0",  // lost += count
		"StMemDW dst: r8 src: r0 off: 0 imm: 0\nStXMemDW dst: r8 src: r7 off: 8 imm: 0", // empty, first timestamp
		fmt.Sprintf("LdXMemW dst: r1 src: r8 off: 0 imm: 0\nJGTImm dst: r1 off: -1 imm: %d <done_2>\nMovReg dst: r2 src: r8\nAddReg dst: r2 src: r1\nStXMemDW dst: r2 src: r7 off: 24 imm: 0", limit),
		"MovImm dst: r1 imm: 1\nStXAtomicAddDW dst: r0 src: r1 off: 0\nJa off: -1 <out_1>", // nested: lost += 1
		"StMemDW dst: r7 src: r0 off: 8 imm: 64",                                            // length
		"LdXMemDW dst: r1 src: r6 off: 8 imm: 0\nStXMemDW dst: r7 src: r1 off: 24 imm: 0",   // id, loaded from ctx
		"LdXMemDW dst: r1 src: r6 off: 56 imm: 0\nStXMemDW dst: r7 src: r1 off: 72 imm: 0",  // args[5]
		fmt.Sprintf("OrImm dst: r1 imm: %d\nStXMemDW dst: r7 src: r1 off: 16 imm: 0", f.ID), // common_type, common_pid
		"MovImm dst: r1 imm: 80\nLdImmDW dst: r2 imm: 4294967296\nAddReg dst: r1 src: r2\nLdXMemDW dst: r3 src: r8 off: 0 imm: 0\nAddReg dst: r3 src: r1\nStXMemDW dst: r8 src: r3 off: 0 imm: 0\nStMemDW dst: r8 src: r0 off: 16 imm: 0\nMovImm dst: r0 imm: 0\nExit", // count, free the batch
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("program lacks\n%s\nin\n%s", frag, got)
		}
	}
	if ps := p.Collection.Programs[RecordProgName(0)]; ps.Type != ebpf.TracePoint {
		t.Errorf("program type %v without Direct, want TracePoint", ps.Type)
	}
	checkReturnsZero(t, insns)
	rings := p.Collection.Maps[RingsMapName]
	if rings.Type != ebpf.ArrayOfMaps || rings.MaxEntries != 2 || rings.InnerMap.Type != ebpf.RingBuf || rings.InnerMap.MaxEntries != 1<<20 {
		t.Errorf("rings map %+v, inner %+v", rings, rings.InnerMap)
	}
	if lost := p.Collection.Maps[LostMapName]; lost.Flags&mapMmapable == 0 || lost.MaxEntries != 2 {
		t.Errorf("lost map %+v: want an mmapable array of 2 counters", lost)
	}
	if m := p.Collection.Maps[BatchMapName]; m.Type != ebpf.PerCPUArray || m.ValueSize != BatchHeader+BatchData {
		t.Errorf("batch map %+v, want a per-CPU array of %d bytes", m, BatchHeader+BatchData)
	}
}

// TestRecordCopy checks how the fixed part is copied: loads from ctx
// that stay inside it (the kernel refuses to attach a program that reads
// past the event's fixed part), or bpf_probe_read_kernel when it is long.
func TestRecordCopy(t *testing.T) {
	short := format(t, `name: short
ID: 9
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int ret;	offset:8;	size:4;	signed:1;
	field:char c;	offset:12;	size:1;	signed:0;

print fmt: "ret=%d", REC->ret
`, "test")
	p, err := Record(recordSpec(RecordEvent{Format: short}))
	if err != nil {
		t.Fatal(err)
	}
	got := lines(p.Collection.Programs[RecordProgName(0)].Instructions)
	want := "LdXMemW dst: r1 src: r6 off: 8 imm: 0\nStXMemW dst: r7 src: r1 off: 24 imm: 0\nLdXMemB dst: r1 src: r6 off: 12 imm: 0\nStXMemB dst: r7 src: r1 off: 28 imm: 0\nMovReg dst: r1 src: r9"
	if !strings.Contains(got, want) || !strings.Contains(got, "MovImm dst: r1 imm: 32\nLdImmDW") {
		t.Errorf("a 13-byte record is not copied with a word and a byte load into a 32-byte sample:\n%s", got)
	}

	long := format(t, strings.Replace(testutil.FormatText(t, "raw_syscalls:sys_enter"), "unsigned long args[6];\toffset:16;\tsize:48;", "unsigned long args[60];\toffset:16;\tsize:480;", 1), "raw_syscalls")
	if p, err = Record(recordSpec(RecordEvent{Format: long})); err != nil {
		t.Fatal(err)
	}
	got = lines(p.Collection.Programs[RecordProgName(0)].Instructions)
	if !strings.Contains(got, "MovReg dst: r1 src: r7\nAddImm dst: r1 imm: 16\nMovImm dst: r2 imm: 496\nMovReg dst: r3 src: r6\nCall FnProbeReadKernel") || strings.Contains(got, "LdXMemDW dst: r1 src: r6") {
		t.Errorf("a 496-byte record is not copied with bpf_probe_read_kernel:\n%s", got)
	}
}

// TestRecordDynamic checks an event with __data_loc and __rel_loc fields:
// its length is measured and capped, and the record copied after the
// common fields; a batch keeps room for the longest record.
func TestRecordDynamic(t *testing.T) {
	f := format(t, filterFormat, "test")
	p, err := Record(recordSpec(RecordEvent{Format: f}))
	if err != nil {
		t.Fatal(err)
	}
	insns := p.Collection.Programs[RecordProgName(0)].Instructions
	want := "map_lookup_elem get_current_pid_tgid map_lookup_elem ktime_get_ns get_smp_processor_id map_lookup_elem ringbuf_output map_lookup_elem get_smp_processor_id map_lookup_elem probe_read_kernel"
	if calls := helperCalls(insns); calls != want {
		t.Errorf("helper calls:\n%s\nwant\n%s", calls, want)
	}
	got := lines(insns)
	for _, frag := range []string{
		fmt.Sprintf("JGTImm dst: r1 off: -1 imm: %d <flush_3>", BatchData-16-4064),
		"OrImm dst: r1 imm: 77\nStXMemDW dst: r7 src: r1 off: 16 imm: 0\nMovImm dst: r9 imm: 76",
		// name: __data_loc at 48, offset + length from the record start.
		"LdXMemW dst: r1 src: r6 off: 48 imm: 0\nMovReg dst: r2 src: r1\nRShImm dst: r2 imm: 16\nAndImm dst: r1 imm: 65535\nAddReg dst: r1 src: r2\nJLEReg dst: r1 off: -1 src: r9 <shorter_10>",
		// path: __rel_loc at 52, counted from the end of its word.
		"LdXMemW dst: r1 src: r6 off: 52 imm: 0\nMovReg dst: r2 src: r1\nRShImm dst: r2 imm: 16\nAndImm dst: r1 imm: 65535\nAddReg dst: r1 src: r2\nAddImm dst: r1 imm: 56",
		"JLEImm dst: r9 off: -1 imm: 4064 <fits_13>\nMovImm dst: r9 imm: 4064",
		"JGEImm dst: r9 off: -1 imm: 76 <long_enough_14>\nMovImm dst: r9 imm: 76",
		"StXMemDW dst: r7 src: r9 off: 8 imm: 0\nMovReg dst: r1 src: r7\nAddImm dst: r1 imm: 24\nMovReg dst: r2 src: r9\nSubImm dst: r2 imm: 8\nMovReg dst: r3 src: r6\nAddImm dst: r3 imm: 8\nCall FnProbeReadKernel",
		"MovReg dst: r1 src: r9\nAddImm dst: r1 imm: 23\nAndImm dst: r1 imm: -8\nLdImmDW dst: r2 imm: 4294967296",
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("program lacks\n%s\nin\n%s", frag, got)
		}
	}
	checkReturnsZero(t, insns)
}

func TestRecordProcessesFilterClock(t *testing.T) {
	f := testutil.Format(t, "raw_syscalls:sys_enter")
	e, err := parse.ParseFilter("-f", "id == 110")
	if err != nil {
		t.Fatal(err)
	}
	bf, err := parse.BindFilter("-f", "id == 110", e, f)
	if err != nil {
		t.Fatal(err)
	}
	s := recordSpec(RecordEvent{Format: f, Filter: bf})
	s.ExcludeTGID, s.OnlyTGIDs, s.Clock, s.CommEntries = 42, []uint32{7, 8}, ClockBoot, 1024
	p, err := Record(s)
	if err != nil {
		t.Fatal(err)
	}
	insns := p.Collection.Programs[RecordProgName(0)].Instructions
	got := lines(insns)
	for _, frag := range []string{
		"MovReg dst: r0 src: r9\nRShImm dst: r0 imm: 32\nJEqImm dst: r0 off: -1 imm: 42 <out_1>\nJEqImm dst: r0 off: -1 imm: 7 <pid_ok_3>\nJEqImm dst: r0 off: -1 imm: 8 <pid_ok_3>\nJa off: -1 <out_1>",
		"JNEImm dst: r0 off: -1 imm: 110 <out_1>",
		"Call FnKtimeGetBootNs",
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("program lacks\n%s\nin\n%s", frag, got)
		}
	}
	if strings.Contains(got, "FnKtimeGetNs") {
		t.Error("boot clock program calls bpf_ktime_get_ns")
	}
	comm := p.Collection.Programs[CommProgName]
	if comm == nil || p.Collection.Maps[CommsMapName] == nil || p.Collection.Maps[CommsMapName].MaxEntries != 1024 {
		t.Fatal("no comm program or map of 1024 entries")
	}
	if calls := helperCalls(comm.Instructions); calls != "get_current_pid_tgid get_current_comm map_lookup_elem map_update_elem" {
		t.Errorf("comm program calls %s", calls)
	}
	checkReturnsZero(t, comm.Instructions)
}

func TestRecordErrors(t *testing.T) {
	f := testutil.Format(t, "raw_syscalls:sys_enter")
	cases := []struct {
		name string
		edit func(*RecordSpec)
		want string
	}{
		{"ring not a power of two", func(s *RecordSpec) { s.RingSize = 3 << 12 }, "want a power of two"},
		{"no CPUs", func(s *RecordSpec) { s.CPUs = 0 }, "0 CPUs"},
		{"no events", func(s *RecordSpec) { s.Events = nil }, "no events"},
		{"record too small", func(s *RecordSpec) { s.MaxRecord = 56 }, "more than a record may"},
		{"bad max", func(s *RecordSpec) { s.MaxRecord = 100 }, "multiple of 8"},
		{"record longer than a batch", func(s *RecordSpec) { s.MaxRecord = BatchData }, "a batch holds"},
		{"ring smaller than two batches", func(s *RecordSpec) { s.RingSize = 16 << 10 }, "less than two batches"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := recordSpec(RecordEvent{Format: f})
			tc.edit(s)
			if _, err := Record(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Record() = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestParseClock(t *testing.T) {
	for _, c := range []Clock{ClockMono, ClockBoot, ClockTAI} {
		if got, err := ParseClock(c.String()); err != nil || got != c {
			t.Errorf("ParseClock(%q) = %v, %v", c.String(), got, err)
		}
	}
	if _, err := ParseClock("local"); err == nil || !strings.Contains(err.Error(), "use mono, boot or tai") {
		t.Errorf("ParseClock(local) = %v", err)
	}
}

// helperCalls names the helpers a program calls, in order.
func helperCalls(insns asm.Instructions) string {
	var names []string
	for _, ins := range insns {
		if ins.IsBuiltinCall() {
			n := strings.TrimPrefix(asm.BuiltinFunc(ins.Constant).String(), "Fn")
			var snake []rune
			for i, r := range n {
				if r >= 'A' && r <= 'Z' {
					if i > 0 {
						snake = append(snake, '_')
					}
					r += 'a' - 'A'
				}
				snake = append(snake, r)
			}
			names = append(names, string(snake))
		}
	}
	return strings.Join(names, " ")
}

// checkReturnsZero wants every exit to be preceded by r0 = 0.
func checkReturnsZero(t *testing.T, insns asm.Instructions) {
	t.Helper()
	for i, ins := range insns {
		if ins.OpCode.JumpOp() == asm.Exit {
			if i == 0 || insns[i-1].OpCode != asm.Mov.Op(asm.ImmSource) || insns[i-1].Dst != asm.R0 || insns[i-1].Constant != 0 {
				t.Errorf("exit at %d does not return 0", i)
			}
		}
	}
}

// TestRecordDirect checks the programs built on raw tracepoints: sys_enter
// and sys_exit get tp_btf programs that build the record on the stack from
// pt_regs, as the kernel fills it, and filter and copy it from there;
// other events, and raw_syscalls formats of another layout, stay on their
// classic tracepoints.
func TestRecordDirect(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("records are built on raw tracepoints only on amd64")
	}
	enter := testutil.Format(t, "raw_syscalls:sys_enter")
	exit := testutil.Format(t, "raw_syscalls:sys_exit")
	sw := testutil.Format(t, "sched:sched_switch")
	e, err := parse.ParseFilter("-f", "id == 7")
	if err != nil {
		t.Fatal(err)
	}
	bf, err := parse.BindFilter("-f", "id == 7", e, enter)
	if err != nil {
		t.Fatal(err)
	}
	s := recordSpec(RecordEvent{Format: enter, Filter: bf}, RecordEvent{Format: exit}, RecordEvent{Format: sw})
	s.Direct, s.CommEntries = &DirectOptions{}, 64
	p, err := Record(s)
	if err != nil {
		t.Fatal(err)
	}
	// The comm program reads no argument: on the raw tracepoint, it needs
	// no perf event.
	if ps := p.Collection.Programs[CommProgName]; ps.Type != ebpf.Tracing || ps.AttachTo != "sched_switch" {
		t.Errorf("comm program %v on %q, want tp_btf on sched_switch", ps.Type, ps.AttachTo)
	}
	for i, want := range []string{"sys_enter", "sys_exit", ""} {
		ps := p.Collection.Programs[RecordProgName(i)]
		if want == "" {
			if ps.Type != ebpf.TracePoint || ps.AttachTo != "" {
				t.Errorf("program %d: %v attached to %q, want a classic tracepoint program", i, ps.Type, ps.AttachTo)
			}
			continue
		}
		if ps.Type != ebpf.Tracing || ps.AttachType != ebpf.AttachTraceRawTp || ps.AttachTo != want {
			t.Errorf("program %d: %v, %v, %q, want a tp_btf program on %s", i, ps.Type, ps.AttachType, ps.AttachTo, want)
		}
		checkReturnsZero(t, ps.Instructions)
	}
	got := lines(p.Collection.Programs[RecordProgName(0)].Instructions)
	for _, frag := range []string{
		// the i386 check on regs->cs, then id from the second argument
		"LdXMemDW dst: r1 src: r6 off: 0 imm: 0\nLdXMemH dst: r2 src: r1 off: 136 imm: 0\nJEqImm dst: r2 off: -1 imm: 35 <ia32_2>\nLdXMemDW dst: r2 src: r6 off: 8 imm: 0\nStXMemDW dst: rfp src: r2 off: -64 imm: 0",
		// x86-64: di, si, dx, r10, r8, r9
		"LdXMemDW dst: r2 src: r1 off: 112 imm: 0\nStXMemDW dst: rfp src: r2 off: -56 imm: 0\nLdXMemDW dst: r2 src: r1 off: 104 imm: 0\nStXMemDW dst: rfp src: r2 off: -48 imm: 0\nLdXMemDW dst: r2 src: r1 off: 96 imm: 0\nStXMemDW dst: rfp src: r2 off: -40 imm: 0\nLdXMemDW dst: r2 src: r1 off: 56 imm: 0\nStXMemDW dst: rfp src: r2 off: -32 imm: 0\nLdXMemDW dst: r2 src: r1 off: 72 imm: 0\nStXMemDW dst: rfp src: r2 off: -24 imm: 0\nLdXMemDW dst: r2 src: r1 off: 64 imm: 0\nStXMemDW dst: rfp src: r2 off: -16 imm: 0",
		// i386: bx, cx, dx, si, di, bp
		"LdXMemDW dst: r2 src: r1 off: 40 imm: 0\nStXMemDW dst: rfp src: r2 off: -56 imm: 0\nLdXMemDW dst: r2 src: r1 off: 88 imm: 0\nStXMemDW dst: rfp src: r2 off: -48 imm: 0\nLdXMemDW dst: r2 src: r1 off: 96 imm: 0\nStXMemDW dst: rfp src: r2 off: -40 imm: 0\nLdXMemDW dst: r2 src: r1 off: 104 imm: 0\nStXMemDW dst: rfp src: r2 off: -32 imm: 0\nLdXMemDW dst: r2 src: r1 off: 112 imm: 0\nStXMemDW dst: rfp src: r2 off: -24 imm: 0\nLdXMemDW dst: r2 src: r1 off: 32 imm: 0\nStXMemDW dst: rfp src: r2 off: -16 imm: 0",
		// common fields, then R6 points at the record for the filter and the copy
		"OrImm dst: r1 imm: 443\nStXMemDW dst: rfp src: r1 off: -72 imm: 0\nMovReg dst: r6 src: rfp\nAddImm dst: r6 imm: -72",
		"LdXMemDW dst: r0 src: r6 off: 8 imm: 0\nJNEImm dst: r0 off: -1 imm: 7 <out_1>",
		"LdXMemDW dst: r1 src: r6 off: 8 imm: 0\nStXMemDW dst: r7 src: r1 off: 24 imm: 0",
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("sys_enter program lacks\n%s\nin\n%s", frag, got)
		}
	}
	got = lines(p.Collection.Programs[RecordProgName(1)].Instructions)
	// id: syscall_get_nr(), the int in orig_ax; ret from the second argument
	frag := "LdXMemDW dst: r1 src: r6 off: 0 imm: 0\nLdXMemDW dst: r2 src: r1 off: 120 imm: 0\nLShImm dst: r2 imm: 32\nArShImm dst: r2 imm: 32\nStXMemDW dst: rfp src: r2 off: -64 imm: 0\nLdXMemDW dst: r2 src: r6 off: 8 imm: 0\nStXMemDW dst: rfp src: r2 off: -56 imm: 0"
	if !strings.Contains(got, frag) {
		t.Errorf("sys_exit program lacks\n%s\nin\n%s", frag, got)
	}

	// With the offset of thread_info's status, TS_COMPAT tells 32-bit
	// system calls, int 0x80 from 64-bit code included.
	s.Direct = &DirectOptions{TaskStatusOff: 16}
	if p, err = Record(s); err != nil {
		t.Fatal(err)
	}
	got = lines(p.Collection.Programs[RecordProgName(0)].Instructions)
	// The code segment first, then regs->cx == regs->ip (the syscall
	// instruction), and the task's status only when neither tells.
	frag = "LdXMemH dst: r2 src: r1 off: 136 imm: 0\nJEqImm dst: r2 off: -1 imm: 35 <ia32_2>\nLdXMemDW dst: r2 src: r1 off: 88 imm: 0\nLdXMemDW dst: r3 src: r1 off: 128 imm: 0\nJEqReg dst: r2 off: -1 src: r3 <syscall64_4>\nCall FnGetCurrentTaskBtf\nLdXMemW dst: r2 src: r0 off: 16 imm: 0\nLdXMemDW dst: r1 src: r6 off: 0 imm: 0\nJSetImm dst: r2 off: -1 imm: 2 <ia32_2>\nLdXMemDW dst: r2 src: r6 off: 8 imm: 0"
	if !strings.Contains(got, frag) {
		t.Errorf("sys_enter program with TaskStatusOff lacks\n%s\nin\n%s", frag, got)
	}

	// A format that is not the layout the builder writes stays classic.
	odd := *exit
	odd.Fields = append([]parse.Field(nil), exit.Fields...)
	odd.Fields[len(odd.Fields)-1].Offset = 24
	for _, f := range []*parse.Format{&odd, sw} {
		if tp := DirectTracepoint(f); tp != "" {
			t.Errorf("DirectTracepoint(%s, fields %v) = %q, want none", f.FullName(), f.Fields, tp)
		}
	}
	if tp := DirectTracepoint(enter); tp != "sys_enter" {
		t.Errorf("DirectTracepoint(sys_enter) = %q", tp)
	}
}

// TestFilterFirst checks where the skeleton puts a filter: before the
// switch and the pid_tgid call when it reads only numbers of a classic
// tracepoint's record, after the gate when it needs the current task
// (common_pid, comm) or the record is built on a raw tracepoint.
func TestFilterFirst(t *testing.T) {
	f := testutil.Format(t, "raw_syscalls:sys_enter")
	bind := func(src string) *parse.BoundFilter {
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
	for _, tc := range []struct {
		filter string
		direct bool
		first  bool
	}{
		{"id == 99999", false, true},
		{"id > 3 && (id & 0x10 || !(id == 99999))", false, true},
		{"common_pid == 1 || id == 99999", false, false},
		{`comm ~ "*zz*" && id == 99999`, false, false},
		{"cpu == 1 && id == 99999", false, false},
		{"id == 99999", true, false},
	} {
		spec := recordSpec(RecordEvent{Format: f, Filter: bind(tc.filter)})
		spec.ExcludeTGID = 42
		if tc.direct {
			spec.Direct = &DirectOptions{}
		}
		p, err := Record(spec)
		if err != nil {
			t.Fatalf("Record(%q) = %v", tc.filter, err)
		}
		text := lines(p.Collection.Programs[RecordProgName(0)].Instructions)
		filter := strings.Index(text, "imm: 99999")
		lookup := strings.Index(text, "Call FnMapLookupElem")
		pidTgid := strings.Index(text, "Call FnGetCurrentPidTgid")
		if first := filter >= 0 && filter < lookup && filter < pidTgid; first != tc.first {
			t.Errorf("filter %q (direct %v): runs first %v, want %v:\n%s", tc.filter, tc.direct, first, tc.first, text)
		}
		if tc.first && !strings.HasPrefix(text, "MovReg dst: r6 src: r1\n") {
			t.Errorf("filter %q: does not start by keeping ctx in R6:\n%s", tc.filter, text)
		}
	}
}

// TestRecordStream checks that a streaming recording's programs write the
// batch to the ring right after each sample (a second ringbuf_output
// after the count), in event programs and syscall groups alike, and that
// a recording that does not stream keeps one write, before the sample.
func TestRecordStream(t *testing.T) {
	nr := func(n uint32) *uint32 { return &n }
	openat := testutil.Format(t, "syscalls:sys_enter_openat")
	events := []RecordEvent{{Format: testutil.Format(t, "raw_syscalls:sys_enter")}}
	for n := range uint32(minGroup) {
		events = append(events, RecordEvent{Format: openat, Syscall: nr(200 + n)})
	}
	for _, stream := range []bool{false, true} {
		s := recordSpec(events...)
		s.Direct = &DirectOptions{TaskStatusOff: 16}
		s.Stream = stream
		p, err := Record(s)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if stream {
			want = 2
		}
		for _, name := range []string{RecordProgName(0), SysEnterProgName} {
			ps := p.Collection.Programs[name]
			if ps == nil {
				if name == SysEnterProgName && runtime.GOARCH != "amd64" {
					continue
				}
				t.Fatalf("stream %v: no program %s", stream, name)
			}
			insns := ps.Instructions
			if got := strings.Count(helperCalls(insns), "ringbuf_output"); got != want {
				t.Errorf("stream %v: %s writes to the ring %d times, want %d", stream, name, got, want)
			}
			count := "AddReg dst: r3 src: r1\nStXMemDW dst: r8 src: r3 off: 0 imm: 0\nCall FnGetSmpProcessorId"
			if got := strings.Contains(lines(insns), count); got != stream {
				t.Errorf("stream %v: %s writes the batch right after the count: %v", stream, name, got)
			}
			checkReturnsZero(t, insns)
		}
	}
}

// TestRecordStamp checks RecordSpec.Stamp: the program of an event on its
// classic tracepoint without a filter zeroes the stamp's ID before it
// takes the batch and stamps the sample's timestamp and the event's ID
// after it; a filtered event's program and a raw tracepoint's do not,
// and their recorders say so.
func TestRecordStamp(t *testing.T) {
	waking := testutil.Format(t, "sched:sched_waking")
	sw := testutil.Format(t, "sched:sched_switch")
	enter := testutil.Format(t, "raw_syscalls:sys_enter")
	e, err := parse.ParseFilter("-f", "next_pid == 1")
	if err != nil {
		t.Fatal(err)
	}
	bf, err := parse.BindFilter("-f", "next_pid == 1", e, sw)
	if err != nil {
		t.Fatal(err)
	}
	s := recordSpec(RecordEvent{Format: waking}, RecordEvent{Format: sw, Filter: bf}, RecordEvent{Format: enter})
	s.Direct = &DirectOptions{TaskStatusOff: 16}
	s.Stamp = true
	p, err := Record(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Collection.Maps[StampMapName] == nil {
		t.Fatalf("no %s map in the collection", StampMapName)
	}
	want := []bool{true, false, runtime.GOARCH != "amd64"}
	for i, r := range p.Recorders {
		if r.Stamped != want[i] {
			t.Errorf("event %s: stamped %v, want %v", s.Events[i].Format.FullName(), r.Stamped, want[i])
		}
		insns := p.Collection.Programs[r.Prog].Instructions
		if got := strings.Count(fmt.Sprint(insns), "<"+StampMapName+">"); got != map[bool]int{true: 2}[want[i]] {
			t.Errorf("event %s: %d lookups of the stamp map", s.Events[i].Format.FullName(), got)
		}
		checkReturnsZero(t, insns)
	}
	stamp := fmt.Sprintf("MovImm dst: r1 imm: %d\nStXMemDW dst: r0 src: r1 off: 8 imm: 0", waking.ID)
	if !strings.Contains(lines(p.Collection.Programs[p.Recorders[0].Prog].Instructions), stamp) {
		t.Errorf("the program of sched_waking does not stamp its ID:\n%s", p.Collection.Programs[p.Recorders[0].Prog].Instructions)
	}
}
