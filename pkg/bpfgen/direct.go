package bpfgen

// Direct record builders. A BPF program on a classic tracepoint runs after
// the kernel has built the event's record for perf, about 40 ns on the
// project's test machine before the program's first instruction. A
// BTF-enabled raw tracepoint program (tp_btf) gets the tracepoint's C
// arguments instead, at a fraction of that cost, and can load from the
// structures they point to directly. For the events whose records are
// plain functions of those arguments, the syscall events of raw_syscalls,
// gtrace builds the record itself, field for field as the kernel's
// TP_fast_assign does, on the stack. The rest of the program is unchanged:
// it reads the record from R6 as from a classic tracepoint's ctx.

import (
	"runtime"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// directBuilder builds the record of one event from the arguments of a raw
// tracepoint.
type directBuilder struct {
	tracepoint string        // the raw tracepoint, as tp_btf names it
	fields     []directField // the format's fields past the common ones, as the builder writes them
	// emit stores the record's fields past the common ones at R10+rec,
	// reading the tracepoint's arguments from ctx in R6. It may clobber
	// R0-R5.
	emit func(b *Builder, o *DirectOptions, rec int16)
}

// DirectOptions are what programs built on raw tracepoints need to know
// of the running kernel.
type DirectOptions struct {
	// TaskStatusOff is the offset in task_struct of thread_info's status
	// word, whose TS_COMPAT bit marks a 32-bit (ia32) system call, from
	// the kernel's BTF. 0 when unknown: the code segment in pt_regs then
	// tells 32-bit processes alone, which misses a 64-bit process's
	// int 0x80.
	TaskStatusOff int
}

// tsCompat is x86's TS_COMPAT thread status bit.
const tsCompat = 0x0002

// directRecordMax is the most stack a builder's record takes.
const directRecordMax = 64

// emitDirect builds the record of the event id at R10+rec with d, common
// fields included (R9 holds pid_tgid), and points R6 at it.
func emitDirect(b *Builder, d *directBuilder, o *DirectOptions, id EventID, rec int16) {
	b.Comment("build the record from the arguments of raw tracepoint %s", d.tracepoint)
	d.emit(b, o, rec)
	emitCommon(b, asm.R10, rec, id)
	b.Comment("R6 = the record")
	b.Emit(asm.Mov.Reg(asm.R6, asm.R10), asm.Add.Imm(asm.R6, int32(rec)))
}

// directSpec makes ps a tp_btf program on a raw tracepoint.
func directSpec(ps *ebpf.ProgramSpec, tracepoint string) {
	ps.Type, ps.AttachType, ps.AttachTo = ebpf.Tracing, ebpf.AttachTraceRawTp, tracepoint
}

// directField is a field that a builder writes.
type directField struct {
	name         string
	offset, size int
}

// x86-64 struct pt_regs: the offsets of the registers that carry a system
// call's number and arguments (arch/x86/include/asm/ptrace.h, the layout
// ptrace's user_regs_struct shares).
const (
	regsBP    = 32
	regsBX    = 40
	regsR10   = 56
	regsR9    = 64
	regsR8    = 72
	regsCX    = 88
	regsDX    = 96
	regsSI    = 104
	regsDI    = 112
	regsOrigA = 120
	regsIP    = 128
	regsCS    = 136
)

// user32CS is __USER32_CS, the code segment of 32-bit processes.
const user32CS = 0x23

// amd64Builders are the direct builders for x86-64.
var amd64Builders = map[string]*directBuilder{
	"raw_syscalls:sys_enter": {
		tracepoint: "sys_enter",
		fields:     []directField{{"id", 8, 8}, {"args", 16, 48}},
		emit:       emitSysEnter,
	},
	"raw_syscalls:sys_exit": {
		tracepoint: "sys_exit",
		fields:     []directField{{"id", 8, 8}, {"ret", 16, 8}},
		emit:       emitSysExit,
	},
}

// direct returns the builder of an event's records, or nil when its
// records come from its classic tracepoint: no builder for the event on
// this architecture, or a format other than the builder writes.
func direct(f *parse.Format) *directBuilder {
	if runtime.GOARCH != "amd64" {
		return nil
	}
	d := amd64Builders[f.FullName()]
	if d == nil {
		return nil
	}
	var own []parse.Field
	for _, fld := range f.Fields {
		if !fld.Common {
			own = append(own, fld)
		}
	}
	if len(own) != len(d.fields) {
		return nil
	}
	for i, want := range d.fields {
		got := own[i]
		if got.Name != want.name || got.Offset != want.offset || got.Size != want.size || got.Class == parse.ClassDataLoc || got.Class == parse.ClassRelLoc {
			return nil
		}
	}
	return d
}

// DirectTracepoint returns the raw tracepoint whose program builds the
// records of f when a recording is Direct, or "" when f's program is on
// its classic tracepoint.
func DirectTracepoint(f *parse.Format) string {
	if d := direct(f); d != nil {
		return d.tracepoint
	}
	return ""
}

// emitCompat jumps to compat when the current system call is a 32-bit
// one, as syscall_get_arguments tells it (the TS_COMPAT bit of the task's
// thread_info status), and cheaply where it can: a 32-bit process runs in
// the 32-bit code segment; a 64-bit process entered with the syscall
// instruction, which leaves the return address in RCX, so that regs->cx
// equals regs->ip. Only when neither tells (int 0x80 from 64-bit code,
// or a CPU that enters otherwise) is the status read, where its offset
// is known. Leaves regs in R1 on both paths. Clobbers R0-R5.
func emitCompat(b *Builder, o *DirectOptions, compat string) {
	b.Emit(
		asm.LoadMem(asm.R1, asm.R6, 0, asm.DWord), // regs
		asm.LoadMem(asm.R2, asm.R1, regsCS, asm.Half),
		asm.JEq.Imm(asm.R2, user32CS, compat),
	)
	if o.TaskStatusOff <= 0 {
		return
	}
	native := b.Label("syscall64")
	b.Emit(
		asm.LoadMem(asm.R2, asm.R1, regsCX, asm.DWord),
		asm.LoadMem(asm.R3, asm.R1, regsIP, asm.DWord),
		asm.JEq.Reg(asm.R2, asm.R3, native),
		asm.FnGetCurrentTaskBtf.Call(),
		asm.LoadMem(asm.R2, asm.R0, int16(o.TaskStatusOff), asm.Word), // current->thread_info.status
		asm.LoadMem(asm.R1, asm.R6, 0, asm.DWord),                     // regs again
		asm.JSet.Imm(asm.R2, tsCompat, compat),
	)
	b.Mark(native)
}

// emitSysEnter builds raw_syscalls:sys_enter from sys_enter(struct pt_regs
// *regs, long id): id, then the six argument registers as
// syscall_get_arguments reads them, those of the i386 ABI for a 32-bit
// system call.
func emitSysEnter(b *Builder, o *DirectOptions, rec int16) {
	compat := b.Label("ia32")
	built := b.Label("built")
	emitCompat(b, o, compat)
	b.Emit(
		asm.LoadMem(asm.R2, asm.R6, 8, asm.DWord), // id
		asm.StoreMem(asm.R10, rec+8, asm.R2, asm.DWord),
	)
	emitRegs(b, rec, regsDI, regsSI, regsDX, regsR10, regsR8, regsR9)
	b.Emit(asm.Ja.Label(built))
	b.Mark(compat)
	b.Emit(
		asm.LoadMem(asm.R2, asm.R6, 8, asm.DWord), // id
		asm.StoreMem(asm.R10, rec+8, asm.R2, asm.DWord),
	)
	emitRegs(b, rec, regsBX, regsCX, regsDX, regsSI, regsDI, regsBP)
	b.Mark(built)
}

// emitRegs stores the registers at the given pt_regs offsets (pointer in
// R1) as args[0..5] of a sys_enter record at R10+rec. Clobbers R2.
func emitRegs(b *Builder, rec int16, offs ...int16) {
	for i, off := range offs {
		b.Emit(
			asm.LoadMem(asm.R2, asm.R1, off, asm.DWord),
			asm.StoreMem(asm.R10, rec+16+int16(8*i), asm.R2, asm.DWord),
		)
	}
}

// emitSysExit builds raw_syscalls:sys_exit from sys_exit(struct pt_regs
// *regs, long ret): id is syscall_get_nr(), the int in orig_ax, widened to
// a long; then ret.
func emitSysExit(b *Builder, _ *DirectOptions, rec int16) {
	b.Emit(
		asm.LoadMem(asm.R1, asm.R6, 0, asm.DWord), // regs
		asm.LoadMem(asm.R2, asm.R1, regsOrigA, asm.DWord),
		asm.LSh.Imm(asm.R2, 32),
		asm.ArSh.Imm(asm.R2, 32),
		asm.StoreMem(asm.R10, rec+8, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, asm.R6, 8, asm.DWord), // ret
		asm.StoreMem(asm.R10, rec+16, asm.R2, asm.DWord),
	)
}
