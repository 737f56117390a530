package bpfgen

import (
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/internal/testutil"
)

// The formats of the fork and free events of a 6.18 x86-64 kernel (kept
// here, not in testutil's formats, whose every file is an event of the
// fake tracefs of other packages' tests).
const (
	forkFormat = `name: sched_process_fork
ID: 366
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:__data_loc char[] parent_comm;	offset:8;	size:4;	signed:0;
	field:pid_t parent_pid;	offset:12;	size:4;	signed:1;
	field:__data_loc char[] child_comm;	offset:16;	size:4;	signed:0;
	field:pid_t child_pid;	offset:20;	size:4;	signed:1;

print fmt: "comm=%s pid=%d child_comm=%s child_pid=%d", __get_str(parent_comm), REC->parent_pid, __get_str(child_comm), REC->child_pid
`
	freeFormat = `name: sched_process_free
ID: 370
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:__data_loc char[] comm;	offset:8;	size:4;	signed:0;
	field:pid_t pid;	offset:12;	size:4;	signed:1;
	field:int prio;	offset:16;	size:4;	signed:1;

print fmt: "comm=%s pid=%d prio=%d", __get_str(comm), REC->pid, REC->prio
`
)

func followSpec(t *testing.T) *FollowSpec {
	return &FollowSpec{Fork: format(t, forkFormat, "sched"), Free: format(t, freeFormat, "sched")}
}

// TestFollowPrograms checks the map and the two programs that keep it:
// the fork program adds child_pid, read at the offset the format gives,
// when the current tgid is in the map; the free program deletes pid.
func TestFollowPrograms(t *testing.T) {
	s := followSpec(t)
	// Offsets come from the formats, not from constants.
	s.Fork.Field("child_pid").Offset = 24
	c := NewCollection()
	if err := c.AddFollow(s); err != nil {
		t.Fatal(err)
	}
	spec := c.Spec()
	m := spec.Maps[FollowMapName]
	if m == nil || m.Type != ebpf.Hash || m.KeySize != 4 || m.ValueSize != 4 || m.MaxEntries != FollowEntries {
		t.Errorf("follow map %+v, want a hash of %d u32 -> u32", m, FollowEntries)
	}
	fork := spec.Programs[FollowForkProgName]
	if fork == nil || fork.Type != ebpf.TracePoint {
		t.Fatalf("fork program %+v, want a tracepoint program", fork)
	}
	if got, want := helperCalls(fork.Instructions), "get_current_pid_tgid map_lookup_elem map_update_elem"; got != want {
		t.Errorf("fork program calls %s, want %s", got, want)
	}
	got := lines(fork.Instructions)
	for _, frag := range []string{
		"Call FnGetCurrentPidTgid\nRShImm dst: r0 imm: 32\nStXMemW dst: rfp src: r0 off: -4 imm: 0\nLoadMapPtr dst: r1 fd: 0 <gtrace_follow>",
		"Call FnMapLookupElem\nJEqImm dst: r0 off: -1 imm: 0 <out_1>\nLdXMemW dst: r1 src: r6 off: 24 imm: 0\nStXMemW dst: rfp src: r1 off: -4 imm: 0",
		"MovImm dst: r4 imm: 0\nCall FnMapUpdateElem", // BPF_ANY
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("fork program lacks\n%s\nin\n%s", frag, got)
		}
	}
	checkReturnsZero(t, fork.Instructions)
	free := spec.Programs[FollowFreeProgName]
	if free == nil || free.Type != ebpf.TracePoint {
		t.Fatalf("free program %+v, want a tracepoint program", free)
	}
	if got, want := lines(free.Instructions), "LdXMemW dst: r1 src: r1 off: 12 imm: 0\nStXMemW dst: rfp src: r1 off: -4 imm: 0\nLoadMapPtr dst: r1 fd: 0 <gtrace_follow>\nMovReg dst: r2 src: rfp\nAddImm dst: r2 imm: -4\nCall FnMapDeleteElem\nMovImm dst: r0 imm: 0\nExit"; got != want {
		t.Errorf("free program:\n%s\nwant\n%s", got, want)
	}

	s.Entries = 128
	c = NewCollection()
	if err := c.AddFollow(s); err != nil || c.Spec().Maps[FollowMapName].MaxEntries != 128 {
		t.Errorf("AddFollow(Entries: 128) = %v, map of %d entries", err, c.Spec().Maps[FollowMapName].MaxEntries)
	}
}

func TestFollowBadFormats(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(s *FollowSpec)
		want   string
	}{
		{"no child_pid", func(s *FollowSpec) { s.Fork.Field("child_pid").Name = "child" }, "event sched:sched_process_fork has no field child_pid"},
		{"pid of 8 bytes", func(s *FollowSpec) { s.Free.Field("pid").Size = 8 }, "field pid of sched:sched_process_free is 8 bytes at offset 12, want an aligned pid_t"},
		{"misaligned", func(s *FollowSpec) { s.Fork.Field("child_pid").Offset = 22 }, "field child_pid of sched:sched_process_fork is 4 bytes at offset 22"},
		{"no format", func(s *FollowSpec) { s.Free = nil }, "no format for the field pid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := followSpec(t)
			tc.change(s)
			if err := NewCollection().AddFollow(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("AddFollow = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// followGate is the gate's lookup of the current tgid (in r0) in the
// follow map, with the key at fp-16.
const followGate = "StXMemW dst: rfp src: r0 off: -16 imm: 0\nLoadMapPtr dst: r1 fd: 0 <gtrace_follow>\nMovReg dst: r2 src: rfp\nAddImm dst: r2 imm: -16\nCall FnMapLookupElem\nJEqImm dst: r0 off: -1 imm: 0 <out_1>"

// TestFollowGate checks the gate of a program that follows processes:
// gtrace's own pid first, then the lookup; a miss returns.
func TestFollowGate(t *testing.T) {
	f := testutil.Format(t, "syscalls:sys_enter_getppid")
	p := &Prog{Name: "p", Source: Tracepoint{}, Gate: Gate{ExcludeTGID: 42, Follow: FollowMapName}, ID: EventID{Const: f.ID}}
	ps, err := p.Generate()
	if err != nil {
		t.Fatal(err)
	}
	want := "MovReg dst: r6 src: r1\nCall FnGetCurrentPidTgid\nMovReg dst: r9 src: r0\nMovReg dst: r0 src: r9\nRShImm dst: r0 imm: 32\nJEqImm dst: r0 off: -1 imm: 42 <out_1>\n" + followGate + "\nMovImm dst: r0 imm: 0\nExit"
	if got := lines(ps.Instructions); got != want {
		t.Errorf("program:\n%s\nwant\n%s", got, want)
	}

	// With a cookie, the key slot is below the ID's.
	p.ID = EventID{Cookie: true}
	if ps, err = p.Generate(); err != nil {
		t.Fatal(err)
	}
	if got := lines(ps.Instructions); !strings.Contains(got, "StXMemDW dst: rfp src: r0 off: -8 imm: 0") || !strings.Contains(got, followGate) {
		t.Errorf("program with a cookie:\n%s", got)
	}

	c := NewCollection()
	if err := c.Add(p); err == nil || !strings.Contains(err.Error(), "no follow map") {
		t.Errorf("Add without the follow map = %v, want an error", err)
	}
	p.Gate.OnlyTGIDs = []uint32{7}
	if _, err := p.Generate(); err == nil {
		t.Errorf("Generate of a gate with Follow and OnlyTGIDs: no error")
	}
}

// TestFollowRecordHist checks that every program of a recording and of a
// hist that follow processes looks the map up, the syscall groups' too,
// and that the follow programs come along.
func TestFollowRecordHist(t *testing.T) {
	enter := testutil.Format(t, "raw_syscalls:sys_enter")
	getppid := testutil.Format(t, "syscalls:sys_enter_getppid")
	s := recordSpec(RecordEvent{Format: enter}, RecordEvent{Format: testutil.Format(t, "sched:sched_switch")})
	for n := range uint32(minGroup) {
		s.Events = append(s.Events, RecordEvent{Format: getppid, Syscall: &n})
	}
	s.Follow, s.ExcludeTGID, s.Shared = followSpec(t), 42, true
	if runtime.GOARCH == "amd64" {
		s.Direct = &DirectOptions{TaskStatusOff: 16}
	}
	p, err := Record(s)
	if err != nil {
		t.Fatal(err)
	}
	checkFollowed(t, p.Collection)
	if runtime.GOARCH == "amd64" && p.Collection.Programs[SysEnterProgName] == nil {
		t.Errorf("no syscall group program: %v", p.Collection.Programs)
	}

	s.OnlyTGIDs = []uint32{7}
	if _, err := Record(s); err == nil {
		t.Errorf("Record with Follow and OnlyTGIDs: no error")
	}

	h := &HistSpec{Event: enter, Follow: followSpec(t), Gate: Gate{ExcludeTGID: 42}}
	h.KeySize, h.ValueSize, h.MaxEntries, h.CommOff = 8, 8, 16, -1
	h.Keys = []KeySlot{{Src: SrcField, Field: enter.Field("id"), Size: 8}}
	hp, err := Hist(h)
	if err != nil {
		t.Fatal(err)
	}
	checkFollowed(t, hp.Collection)
}

// checkFollowed checks that a collection has the follow programs and
// that each of its other programs, but the comm program, gates on the
// follow map.
func checkFollowed(t *testing.T, c *ebpf.CollectionSpec) {
	t.Helper()
	if c.Maps[FollowMapName] == nil || c.Programs[FollowForkProgName] == nil || c.Programs[FollowFreeProgName] == nil {
		t.Fatalf("collection lacks the follow map or programs: %v", c.Programs)
	}
	n := 0
	for name, ps := range c.Programs {
		switch name {
		case FollowForkProgName, FollowFreeProgName, CommProgName:
			continue
		}
		n++
		if !looksUp(ps.Instructions, FollowMapName) || !strings.Contains(lines(ps.Instructions), "JEqImm dst: r0 off: -1 imm: 42") {
			t.Errorf("program %s does not exclude gtrace and gate on the follow map:\n%s", name, lines(ps.Instructions))
		}
	}
	if n == 0 {
		t.Errorf("no gated program in %v", c.Programs)
	}
}

// looksUp reports whether insns look an element of the named map up.
func looksUp(insns asm.Instructions, name string) bool {
	ref := false
	for _, ins := range insns {
		switch {
		case ins.IsLoadFromMap():
			ref = ins.Reference() == name
		case ins.IsBuiltinCall() && asm.BuiltinFunc(ins.Constant) == asm.FnMapLookupElem && ref:
			return true
		}
	}
	return false
}
