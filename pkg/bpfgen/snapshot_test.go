package bpfgen

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestSnapshotAction checks the program of an event with a snapshot
// trigger and a stack trigger: its own program, the record, then the
// stack, then the mark (a sample whose length word is SnapshotMark),
// each written to the ring at once in a streaming recording, and the
// count of the snapshot's counter.
func TestSnapshotAction(t *testing.T) {
	f := testutil.Format(t, "syscalls:sys_enter_getppid")
	c := &Counter{Map: CounterMap(testCounts, []uint64{2})}
	s := &RecordSpec{CPUs: 2, RingSize: 1 << 16, MaxRecord: 4064, Shared: true, Stream: true,
		Events: []RecordEvent{{Format: f, Stack: &StackTrigger{ID: 4}, Snapshot: &SnapshotTrigger{Counter: c}}}}
	p, err := Record(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Control == nil {
		t.Fatal("no control map")
	}
	ins := p.Collection.Programs[p.Recorders[0].Prog].Instructions
	text := ins.String()
	rec := strings.Index(text, "copy ")
	stack := strings.Index(text, "callers: bpf_get_stack")
	mark := strings.Index(text, "the mark: length 0xfffffffe")
	if rec < 0 || stack < rec || mark < stack {
		t.Fatalf("want the record, the stack, then the mark; at %d, %d, %d:\n%v", rec, stack, mark, ins)
	}
	if !strings.Contains(text[mark:], "write the batch to this CPU's ring") {
		t.Errorf("the mark is not written to the ring at once:\n%s", text[mark:])
	}
	if !strings.Contains(text[stack:mark], "count: "+testCounts+"[0]") {
		t.Errorf("the mark's count is not taken before it:\n%s", text[stack:mark])
	}
	found := false
	for i, in := range ins {
		if in.OpCode.IsDWordLoad() && in.Constant == SnapshotMark && i+1 < len(ins) &&
			ins[i+1].OpCode == asm.StoreMem(asm.R7, 8, asm.R1, asm.DWord).OpCode && ins[i+1].Offset == 8 {
			found = true
		}
	}
	if !found {
		t.Errorf("no store of SnapshotMark into the sample's length:\n%v", ins)
	}
}
