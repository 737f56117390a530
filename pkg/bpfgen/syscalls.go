package bpfgen

// Syscall groups. The kernel's syscalls:sys_enter_NAME and sys_exit_NAME
// events are not tracepoints of their own: ftrace and perf make them from
// the sys_enter and sys_exit tracepoints, one event per system call
// number. A recording of many of them (-e 'syscalls:*' names ~700) would
// take a classic tracepoint program and a perf event each, and the kernel
// waits a grace period to tear down each perf event. With Direct, the
// events that have no filter share one program on the sys_enter raw
// tracepoint and one on sys_exit: an array map indexed by the system
// call's number gives the event's format ID and record length (0: not
// recorded), and the program builds the record as the kernel does:
//
//	sys_enter_NAME: common fields, int __syscall_nr, 4 bytes of padding
//	                (0 here), then the call's arguments as unsigned longs
//	sys_exit_NAME:  common fields, int __syscall_nr, padding, long ret
//
// Like the kernel, they skip 32-bit system calls (trace_get_syscall_nr),
// and numbers outside the table. A filter that reads only what every
// syscalls event has alike (common_pid, comm, cpu, the common fields) is
// compiled into the group's program when all its events share it, as one
// -f given to -e 'syscalls:*' is; events with other filters keep programs
// of their own.

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// Names of the syscall group programs and their maps.
const (
	SysEnterProgName = "gtrace_sysenter"
	SysExitProgName  = "gtrace_sysexit"
	sysEnterMapName  = "sysenter_ids"
	sysExitMapName   = "sysexit_ids"
)

// syscallGroup describes the group of one raw tracepoint.
type syscallGroup struct {
	prog, ids  string // the program's and the map's names
	tracepoint string // sys_enter or sys_exit
	prefix     string // of its events' names
}

var (
	sysEnterGroup = &syscallGroup{SysEnterProgName, sysEnterMapName, "sys_enter", "sys_enter_"}
	sysExitGroup  = &syscallGroup{SysExitProgName, sysExitMapName, "sys_exit", "sys_exit_"}
)

// maxSyscallArgs is the most arguments a system call has.
const maxSyscallArgs = 6

// minGroup is the fewest events a syscall group records. A group's
// program runs on every system call, and costs those of no event in it
// about 20 ns each (the kernel's bitmap of enabled syscalls events costs
// them nothing), to save each event of it about 55 ns and, at the end of
// a recording, the ~30 ms the kernel takes to tear down each classic
// program's perf event: worth it for many events, not for a few.
const minGroup = 8

// groups returns the syscall group that records each event of s (nil for
// an event with a program of its own), and each group's filter.
func groups(s *RecordSpec) ([]*syscallGroup, map[*syscallGroup]*parse.BoundFilter) {
	elig := make([]*syscallGroup, len(s.Events))
	filters := map[*syscallGroup]*parse.BoundFilter{}
	seen := map[*syscallGroup]bool{}
	count := map[*syscallGroup]int{}
	for i, ev := range s.Events {
		g := eligible(s, ev)
		if g == nil {
			continue
		}
		if !seen[g] {
			// A group's filter is its first event's.
			seen[g], filters[g] = true, ev.Filter
		}
		if filterSrc(ev.Filter) == filterSrc(filters[g]) {
			elig[i] = g
			count[g]++
		}
	}
	for i, g := range elig {
		if g != nil && count[g] < minGroup {
			elig[i] = nil
		}
	}
	return elig, filters
}

func filterSrc(bf *parse.BoundFilter) string {
	if bf == nil {
		return ""
	}
	return bf.Src
}

// commonOnly reports whether a filter reads nothing but what every
// syscalls event has at the same place.
func commonOnly(bf *parse.BoundFilter) bool {
	ok := true
	parse.WalkPreds(bf.Root, func(p *parse.BoundPred) {
		ok = ok && (p.Operand != parse.OperandField || p.Field.Common)
	})
	return ok
}

// eligible returns the group that could record ev, whatever the other
// events' filters.
func eligible(s *RecordSpec, ev RecordEvent) *syscallGroup {
	if s.Direct == nil || ev.Syscall == nil || ev.Stack != nil || (ev.Filter != nil && !commonOnly(ev.Filter)) {
		return nil
	}
	return syscallLayout(ev.Format)
}

// syscallLayout returns the raw tracepoint group of a syscalls event
// whose records gtrace can build (on amd64, in the kernel's layout), or
// nil.
func syscallLayout(f *parse.Format) *syscallGroup {
	if runtime.GOARCH != "amd64" || f.System != "syscalls" {
		return nil
	}
	var own []parse.Field
	for _, fld := range f.Fields {
		if !fld.Common {
			own = append(own, fld)
		}
	}
	if len(own) == 0 || own[0].Name != "__syscall_nr" || own[0].Offset != 8 || own[0].Size != 4 {
		return nil
	}
	plain := func(fld parse.Field, off int) bool {
		return fld.Offset == off && fld.Size == 8 && fld.Class != parse.ClassDataLoc && fld.Class != parse.ClassRelLoc
	}
	switch {
	case strings.HasPrefix(f.Name, sysEnterGroup.prefix):
		if len(own)-1 > maxSyscallArgs {
			return nil
		}
		for i, fld := range own[1:] {
			if !plain(fld, 16+8*i) {
				return nil
			}
		}
		return sysEnterGroup
	case strings.HasPrefix(f.Name, sysExitGroup.prefix):
		if len(own) != 2 || own[1].Name != "ret" || !plain(own[1], 16) {
			return nil
		}
		return sysExitGroup
	}
	return nil
}

// addSyscallGroups adds the group programs and maps for the events of s
// that in groups records.
func addSyscallGroups(s *RecordSpec, in []*syscallGroup, filters map[*syscallGroup]*parse.BoundFilter, c *Collection) error {
	for _, g := range []*syscallGroup{sysEnterGroup, sysExitGroup} {
		var kvs []ebpf.MapKV
		maxNr := uint32(0)
		for i, ev := range s.Events {
			if in[i] != g {
				continue
			}
			f := ev.Format
			if f.ID <= 0 || f.ID > 0xffff {
				return fmt.Errorf("event %s: format ID %d does not fit common_type", f.FullName(), f.ID)
			}
			fixed, _ := RecordLayout(f)
			kvs = append(kvs, ebpf.MapKV{Key: *ev.Syscall, Value: uint64(fixed)<<32 | uint64(f.ID)})
			maxNr = max(maxNr, *ev.Syscall)
		}
		if len(kvs) == 0 {
			continue
		}
		err := c.AddMap(&ebpf.MapSpec{
			Name:       g.ids,
			Type:       ebpf.Array,
			KeySize:    4,
			ValueSize:  8,
			MaxEntries: maxNr + 1,
			Contents:   kvs,
		})
		if err != nil {
			return err
		}
		insns, err := syscallGroupProgram(s, g, maxNr, filters[g])
		if err != nil {
			return err
		}
		ps := &ebpf.ProgramSpec{Name: g.prog, License: "GPL", Instructions: insns}
		directSpec(ps, g.tracepoint)
		if err := c.AddSpec(ps); err != nil {
			return err
		}
	}
	return nil
}

// emitSyscallNr leaves in R2 the number of the system call of group g's
// raw tracepoint (ctx in R6). Clobbers R1.
func emitSyscallNr(b *Builder, g *syscallGroup) {
	b.Comment("R2 = the system call's number")
	if g == sysEnterGroup {
		b.Emit(asm.LoadMem(asm.R2, asm.R6, 8, asm.DWord)) // id
		return
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.R6, 0, asm.DWord),         // regs
		asm.LoadMem(asm.R2, asm.R1, regsOrigA, asm.DWord), // syscall_get_nr()
		asm.LSh.Imm(asm.R2, 32),
		asm.ArSh.Imm(asm.R2, 32),
	)
}

// emitSyscallFields stores the fields after __syscall_nr of group g's
// events at R10+rec: the arguments, as syscall_get_arguments reads them
// from regs in R1, or ret. Clobbers R2.
func emitSyscallFields(b *Builder, g *syscallGroup, rec int16) {
	if g == sysEnterGroup {
		b.Comment("the arguments")
		emitRegs(b, rec, regsDI, regsSI, regsDX, regsR10, regsR8, regsR9)
		return
	}
	b.Comment("ret")
	b.Emit(
		asm.LoadMem(asm.R2, asm.R6, 8, asm.DWord),
		asm.StoreMem(asm.R10, rec+16, asm.R2, asm.DWord),
	)
}

// lookupSlot keeps a group program's map value across helper calls.
const lookupSlot = recSlot - 8

// syscallGroupProgram generates the program of a group whose numbers run
// up to maxNr.
func syscallGroupProgram(s *RecordSpec, g *syscallGroup, maxNr uint32, bf *parse.BoundFilter) (asm.Instructions, error) {
	b := &Builder{}
	out := b.Label("out")
	done := b.Label("done")
	// Other system calls leave first thing, as the kernel's bitmap of
	// enabled syscalls events lets them.
	emitSwitch(b, SwitchMapName, out)
	b.Comment("syscall group %s: R6 = ctx", g.tracepoint)
	b.Emit(asm.Mov.Reg(asm.R6, asm.R1))
	emitSyscallNr(b, g)
	b.Comment("%s[nr]: record length << 32 | event ID, kept at %d; __syscall_nr, an int, and 4 bytes of padding", g.ids, lookupSlot)
	b.Emit(
		asm.JGT.Imm(asm.R2, int32(maxNr), out), // unsigned: negative numbers too
		asm.StoreMem(asm.R10, recSlot+8, asm.R2, asm.DWord),
		asm.StoreMem(asm.R10, keySlot, asm.R2, asm.Word),
	)
	emitLookup(b, g.ids, keySlot)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, out),
		asm.LoadMem(asm.R3, asm.R0, 0, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, out),
		asm.StoreMem(asm.R10, lookupSlot, asm.R3, asm.DWord),
	)
	b.Comment("R9 = pid_tgid")
	b.Emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
	)
	emitGate(b, s.gate(), keySlot, out)
	b.Comment("32-bit system calls have no syscalls events")
	emitCompat(b, s.Direct, out)
	emitSyscallFields(b, g, recSlot)
	b.Emit(asm.LoadMem(asm.R3, asm.R10, lookupSlot, asm.DWord))
	b.Comment("common_type = the event's ID, common_pid = pid; R6 = the record")
	b.Emit(
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.LSh.Imm(asm.R1, 32),
		asm.Mov.Reg(asm.R2, asm.R3),
		asm.And.Imm(asm.R2, 0xffff),
		asm.Or.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R10, recSlot, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R6, asm.R10),
		asm.Add.Imm(asm.R6, recSlot),
	)
	if bf != nil {
		if err := EmitFilter(b, bf, out, StackArea{Off: -maxStack, Size: maxStack + lookupSlot}); err != nil {
			return nil, err
		}
		b.Emit(asm.LoadMem(asm.R3, asm.R10, lookupSlot, asm.DWord))
	}
	b.Comment("R9 = record length")
	b.Emit(
		asm.Mov.Reg(asm.R9, asm.R3),
		asm.RSh.Imm(asm.R9, 32),
	)
	emitBatch(b, s.Clock, BatchData-SampleHeader-directRecordMax, keySlot, out, done)
	b.Comment("copy the record; its length is in R9")
	for off := int16(0); off < directRecordMax; off += 8 {
		b.Emit(
			asm.LoadMem(asm.R1, asm.R6, off, asm.DWord),
			asm.StoreMem(asm.R7, SampleHeader+off, asm.R1, asm.DWord),
		)
	}
	b.Emit(
		asm.StoreMem(asm.R7, 8, asm.R9, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, SampleHeader+7),
		asm.And.Imm(asm.R1, ^7),
	)
	emitCount(b)
	emitStreamWrite(b, s.Stream, keySlot)
	emitEnd(b, done, out)
	return b.Instructions(), nil
}
