package bpfgen

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

// stackSpec is a recording of sys_enter_getppid with a stack trigger.
func stackSpec(t *testing.T, st *StackTrigger) *RecordSpec {
	f := testutil.Format(t, "syscalls:sys_enter_getppid")
	return &RecordSpec{CPUs: 2, RingSize: 1 << 16, MaxRecord: 4064, Shared: true, Direct: &DirectOptions{},
		Events: []RecordEvent{{Format: f, Stack: st}}}
}

// TestStackAction checks the program of an event with a stack trigger:
// its own classic tracepoint program, the record action, then the stack
// action: bpf_get_stack from ctx into the sample after the 16-byte
// kernel_stack header, with the skip in its flags, and a kernel_stack
// record header of the format's ID.
func TestStackAction(t *testing.T) {
	p, err := Record(stackSpec(t, &StackTrigger{ID: 4, Skip: 2}))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Recorders[0]
	if r.Group || r.Shared() || r.Point.Kind.String() != "tracepoint" {
		t.Fatalf("recorder %+v: want a classic tracepoint program of its own", r)
	}
	ins := p.Collection.Programs[r.Prog].Instructions
	call := -1
	for i, in := range ins {
		if in.IsBuiltinCall() && in.Constant == int64(asm.FnGetStack) {
			call = i
		}
	}
	if call < 5 {
		t.Fatalf("no bpf_get_stack call:\n%v", ins)
	}
	want := []asm.Instruction{
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, SampleHeader+stackHeader),
		asm.Mov.Imm(asm.R3, 8*StackFrames),
		asm.Mov.Imm(asm.R4, 2),
	}
	for i, w := range want {
		if got := ins[call-5+i]; got.OpCode != w.OpCode || got.Dst != w.Dst || got.Src != w.Src || got.Constant != w.Constant {
			t.Errorf("instruction %d before bpf_get_stack: %v, want %v", 5-i, got, w)
		}
	}
	if !strings.Contains(ins.String(), "common_type = 4, common_pid = pid") {
		t.Errorf("no kernel_stack header of ID 4:\n%v", ins)
	}
	if p.Collection.Maps[testCounts] != nil {
		t.Errorf("a counter map without a count")
	}
}

// testCounts names the counter map of the tests.
const testCounts = "counts"

// TestStackCounter checks the count: the counter map, with its word
// initialised, and an atomic fetch-and-add of -1 whose instruction
// carries BPF_FETCH in its imm when marshalled.
func TestStackCounter(t *testing.T) {
	c := &Counter{Map: CounterMap(testCounts, []uint64{7, 3}), Index: 1}
	p, err := Record(stackSpec(t, &StackTrigger{ID: 4, Counter: c}))
	if err != nil {
		t.Fatal(err)
	}
	m := p.Collection.Maps[testCounts]
	if m == nil || len(m.Contents) != 2 || m.Contents[1].Value != uint64(3) {
		t.Fatalf("counter map %+v: want words 7 and 3", m)
	}
	ins := p.Collection.Programs[p.Recorders[0].Prog].Instructions
	found := false
	for _, in := range ins {
		if in.OpCode.AtomicOp() != asm.FetchAdd {
			continue
		}
		found = true
		var b bytes.Buffer
		if _, err := in.Marshal(&b, binary.LittleEndian); err != nil {
			t.Fatal(err)
		}
		// imm, little endian: BPF_ADD (0) | BPF_FETCH (1).
		if imm := b.Bytes()[4]; imm != 1 {
			t.Errorf("fetch-and-add marshals with imm %#x, want BPF_FETCH (1)", imm)
		}
	}
	if !found {
		t.Errorf("no fetch-and-add of the count:\n%v", ins)
	}
}

// TestStackActionErrors: a stack action outside a recording, or with an
// ID common_type cannot hold, is refused.
func TestStackActionErrors(t *testing.T) {
	f := testutil.Format(t, "syscalls:sys_enter_getppid")
	p := &Prog{Name: "p", Source: Tracepoint{}, ID: EventID{Const: f.ID}, Actions: []Action{&StackAction{ID: 4}}}
	if _, err := p.Generate(); err == nil || !strings.Contains(err.Error(), "not in a recording") {
		t.Errorf("stack action alone: %v", err)
	}
	if _, err := Record(stackSpec(t, &StackTrigger{ID: 1 << 16})); err == nil || !strings.Contains(err.Error(), "want 1 to 65535") {
		t.Errorf("ID 65536: %v", err)
	}
}

// TestStackUser: UserID adds a second bpf_get_stack, with
// BPF_F_USER_STACK, and the user_stack header, after the kernel stack,
// both after the event's record.
func TestStackUser(t *testing.T) {
	p, err := Record(stackSpec(t, &StackTrigger{ID: 4, UserID: 13}))
	if err != nil {
		t.Fatal(err)
	}
	ins := p.Collection.Programs[p.Recorders[0].Prog].Instructions
	text := ins.String()
	event := strings.Index(text, "bytes of record")
	kernel := strings.Index(text, "common_type = 4, common_pid = pid")
	user := strings.Index(text, "common_type = 13, common_pid = pid")
	if event < 0 || kernel < event || user < kernel {
		t.Errorf("event at %d, kernel stack at %d, user stack at %d: want them in that order:\n%v", event, kernel, user, ins)
	}
	var flags []int64
	for i, in := range ins {
		if in.IsBuiltinCall() && in.Constant == int64(asm.FnGetStack) {
			flags = append(flags, ins[i-1].Constant)
		}
	}
	if len(flags) != 2 || flags[0] != 0 || flags[1] != bpfFUserStack {
		t.Errorf("bpf_get_stack flags %v, want [0 %d]", flags, bpfFUserStack)
	}
}

// TestStackFilter: the event's filter gates the record only, the
// trigger's filter the stack: the program has no skeleton filter, the
// record's gate tests the event's filter, and the stack's gate, after
// the record, tests the trigger's, then the count, then tracing off.
func TestStackFilter(t *testing.T) {
	f := testutil.Format(t, "syscalls:sys_enter_write")
	bind := func(src string) *parse.BoundFilter {
		expr, err := parse.ParseFilter("-R", src)
		if err != nil {
			t.Fatal(err)
		}
		bf, err := parse.BindFilter("-R", src, expr, f)
		if err != nil {
			t.Fatal(err)
		}
		return bf
	}
	c := &Counter{Map: CounterMap(testCounts, []uint64{2})}
	s := &RecordSpec{CPUs: 2, RingSize: 1 << 16, MaxRecord: 4064, Shared: true,
		Events: []RecordEvent{{Format: f, Filter: bind("fd == 7"), Stack: &StackTrigger{ID: 4, Counter: c, Filter: bind("fd == 9")}}}}
	p, err := Record(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Control == nil {
		t.Fatal("a recording with a stack trigger has no control map")
	}
	text := p.Collection.Programs[p.Recorders[0].Prog].Instructions.String()
	order := []string{"fd == 7", "copy 40 bytes of record", "fd == 9", "count: " + testCounts, "tracing off: the firing writes nothing", "callers: bpf_get_stack"}
	at := 0
	for _, w := range order {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("no %q after offset %d, want the order %q:\n%s", w, at, order, text)
		}
		at += i + len(w)
	}
}
