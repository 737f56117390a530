package bpfgen

// Following a process tree (--follow). The gate of every program looks
// the current task's tgid up in a hash map of followed processes, and two
// programs that record nothing keep the map:
//
//	sched:sched_process_fork  runs in the parent before the child is
//	                          woken: if the parent's tgid is followed,
//	                          child_pid is added, so the child is
//	                          followed from its first event
//	sched:sched_process_free  the task's memory is freed (a process once
//	                          reaped, after its last thread): its pid is
//	                          removed
//
// User space puts the first processes in the map (-P, or the command held
// at its exec) before it attaches anything. A thread's creation adds its
// thread id too (the fork tracepoint cannot tell a thread from a
// process); a thread shares its process's tgid, so it is followed anyway,
// and its entry goes when it is freed. When the map is full, the children
// forked from then on are not added: they and their descendants are not
// traced until entries are freed.

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// Names of the follow map and its programs.
const (
	FollowMapName      = "gtrace_follow"
	FollowForkProgName = "gtrace_fork"
	FollowFreeProgName = "gtrace_free"
)

// FollowEntries is how many processes and threads the follow map holds
// when FollowSpec does not say.
const FollowEntries = 1 << 16

// FollowSpec describes the programs that keep the follow map: where
// they find their fields, from the events' formats.
type FollowSpec struct {
	Fork    *parse.Format // sched:sched_process_fork, with child_pid
	Free    *parse.Format // sched:sched_process_free, with pid
	Entries int           // processes and threads followed at once; 0: FollowEntries
}

// followField returns the offset of a pid field of an event, which the
// programs read as an aligned u32 from their classic tracepoint context.
func followField(f *parse.Format, name string) (int16, error) {
	if f == nil {
		return 0, fmt.Errorf("follow: no format for the field %s", name)
	}
	fld := f.Field(name)
	switch {
	case fld == nil:
		return 0, fmt.Errorf("follow: event %s has no field %s", f.FullName(), name)
	case fld.Size != 4 || fld.Offset%4 != 0 || fld.Offset < 8:
		return 0, fmt.Errorf("follow: field %s of %s is %d bytes at offset %d, want an aligned pid_t", name, f.FullName(), fld.Size, fld.Offset)
	}
	return int16(fld.Offset), nil
}

// AddFollow adds the follow map and the programs that keep it. Programs
// whose Gate.Follow names FollowMapName can then be added.
func (c *Collection) AddFollow(s *FollowSpec) error {
	child, err := followField(s.Fork, "child_pid")
	if err != nil {
		return err
	}
	pid, err := followField(s.Free, "pid")
	if err != nil {
		return err
	}
	n := s.Entries
	if n == 0 {
		n = FollowEntries
	}
	if err := c.AddMap(&ebpf.MapSpec{Name: FollowMapName, Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: uint32(n)}); err != nil {
		return err
	}
	if err := c.AddSpec(&ebpf.ProgramSpec{Name: FollowForkProgName, Type: ebpf.TracePoint, License: "GPL", Instructions: followFork(child)}); err != nil {
		return err
	}
	return c.AddSpec(&ebpf.ProgramSpec{Name: FollowFreeProgName, Type: ebpf.TracePoint, License: "GPL", Instructions: followFree(pid)})
}

// followFork: if the current tgid is followed, follow the child too.
func followFork(child int16) asm.Instructions {
	b := &Builder{}
	out := b.Label("out")
	b.Comment("a followed process forks: follow child_pid")
	b.Emit(
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.R10, -4, asm.R0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(FollowMapName),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, out),
		asm.LoadMem(asm.R1, asm.R6, child, asm.Word),
		asm.StoreMem(asm.R10, -4, asm.R1, asm.Word),
		asm.StoreImm(asm.R10, -8, 1, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(FollowMapName),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, int32(ebpf.UpdateAny)),
		asm.FnMapUpdateElem.Call(),
	)
	b.Mark(out)
	b.Emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	return b.Instructions()
}

// followFree: a freed task's pid is followed no more.
func followFree(pid int16) asm.Instructions {
	b := &Builder{}
	b.Comment("a task is freed: forget its pid")
	b.Emit(
		asm.LoadMem(asm.R1, asm.R1, pid, asm.Word),
		asm.StoreMem(asm.R10, -4, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(FollowMapName),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapDeleteElem.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	return b.Instructions()
}

// emitFollowGate returns unless the tgid in R0 is in the follow map, with
// R10+key as the lookup's key. Clobbers R0-R5.
func emitFollowGate(b *Builder, name string, key int16, out string) {
	b.Comment("followed processes only")
	b.Emit(
		asm.StoreMem(asm.R10, key, asm.R0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(name),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, out),
	)
}
