package bpfgen

import (
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Stack keys. A hist key common_stacktrace is the id bpf_get_stackid gives
// the event's kernel stack in a stack-trace map beside the hist's hash map;
// user space reads the frames of each id once. The program is then on the
// event's classic tracepoint (its ctx is the record, in R6), whose context
// the helper takes.

// StacksMapName is the name of a hist's stack-trace map.
const StacksMapName = "stacks"

// StackDepth is the most frames a stack key keeps, as the kernel's
// HIST_STACKTRACE_DEPTH.
const StackDepth = 16

// StackSkip returns how many innermost frames bpf_get_stackid leaves out
// of the stacks of event sys:name, so that the first frame kept is the
// first the kernel's own hist prints (checked against the kernel's hist,
// 6.12, in test/vm): on a classic tracepoint the stack starts in the
// event's perf glue (perf_trace_CLASS, where the helper's regs were
// taken), and a syscalls:sys_enter_* event also has syscall_trace_enter
// before it, which the kernel's fixed skip of its own frames drops (its
// exit path keeps syscall_exit_to_user_mode, as the kernel does).
func StackSkip(sys, name string) int {
	if sys == "syscalls" && strings.HasPrefix(name, "sys_enter_") {
		return 2
	}
	return 1
}

// HasStack reports whether a key or a variable of l takes the event's
// stack from the program's context: a stack key (an id or frames), a
// frames variable of the event's own stack.
func (l *HistLayout) HasStack() bool {
	for _, k := range l.Keys {
		if k.Src == SrcStack || k.Src == SrcUStack {
			return true
		}
	}
	for _, v := range l.Vars {
		if v.Kind == VarFrames && !v.FromRef {
			return true
		}
	}
	return false
}

// hasStackIDs reports whether a key of l is a stack's id in the stack
// map.
func (l *HistLayout) hasStackIDs() bool {
	for _, k := range l.Keys {
		if (k.Src == SrcStack || k.Src == SrcUStack) && !k.Frames() {
			return true
		}
	}
	return false
}

// Frames reports whether the key is a stack's frames (FramesSize bytes,
// innermost first, zero after the last) rather than a number or a
// stack's id: the event's kernel stack (SrcStack) taken whole, or a
// synthetic event's stack field (SrcField, an unsigned long[]).
func (k *KeySlot) Frames() bool {
	return k.Size == FramesSize && (k.Src == SrcStack || k.Src == SrcField && k.Field != nil && isStackField(k.Field))
}

// stackMapScale is how many buckets the stack map has per entry of the
// hist: bpf_get_stackid keeps one stack per bucket and refuses (-EEXIST) a
// new stack whose hash lands on a bucket in use, so the map is sparser
// than the table to make those refusals rare.
const stackMapScale = 4

// stackMap is the stack-trace map of a layout with a stack id key, sized as
// the hist (stackMapScale times its entries), or nil.
func stackMap(l *HistLayout) *ebpf.MapSpec {
	if !l.hasStackIDs() {
		return nil
	}
	return &ebpf.MapSpec{Name: StacksMapName, Type: ebpf.StackTrace, KeySize: 4, ValueSize: 8 * StackDepth, MaxEntries: uint32(stackMapScale * l.MaxEntries)}
}

// userStackFlag is BPF_F_USER_STACK: bpf_get_stackid takes the user stack.
const userStackFlag = 1 << 8

// emitStackKey stores the id of the event's kernel stack (SrcStack), or of
// its user stack with the process's tgid in the high half (SrcUStack), at
// R7+slot.Off; when the helper finds no room for the stack (-ENOMEM, or
// -EEXIST when another stack holds its bucket), or no user stack (a kernel
// thread: -EFAULT), the event goes to dropped, as an entry that finds the
// table full. R6 must be the tracepoint's ctx, R9 pid_tgid. Clobbers
// R0-R5.
func emitStackKey(b *Builder, k *KeySlot, dropped string) {
	if k.Src == SrcUStack {
		b.Comment("key ustacktrace")
	} else {
		b.Comment("key common_stacktrace")
	}
	emitStackID(b, k.Src, k.Skip, dropped)
	b.Emit(asm.StoreMem(asm.R7, int16(k.Off), asm.R0, asm.DWord))
}

// emitFramesKey stores the frames of key k at R7+k.Off: the event's
// kernel stack by bpf_get_stack (zero-padded; an event whose stack the
// helper cannot take goes to dropped), or the frames of a synthetic
// event's stack field of the record at R6 (after its count, as the
// kernel's key takes them), zero after them. Clobbers R0-R5.
func emitFramesKey(b *Builder, k *KeySlot, dropped string) {
	off := int32(k.Off)
	if k.Src == SrcStack {
		b.Comment("key common_stacktrace (frames): bpf_get_stack(ctx, key, %d, skip %d)", FramesSize, k.Skip)
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Reg(asm.R2, asm.R7),
			asm.Add.Imm(asm.R2, off),
			asm.Mov.Imm(asm.R3, FramesSize),
			asm.Mov.Imm(asm.R4, int32(k.Skip&bpfFSkipMask)),
			asm.FnGetStack.Call(),
			asm.JSLT.Imm(asm.R0, 0, dropped),
		)
		return
	}
	b.Comment("key %s.stacktrace (the frames after the count of the record's __data_loc)", k.Field.Name)
	full := b.Label("frames_len")
	done := b.Label("frames_done")
	zero(b, asm.R7, int16(off), FramesSize)
	b.Emit(
		asm.LoadMem(asm.R3, asm.R6, int16(k.Field.Offset), asm.Word),
		asm.Mov.Reg(asm.R2, asm.R3),
		asm.RSh.Imm(asm.R2, 16),
		asm.And.Imm(asm.R3, 0xffff),
		asm.Add.Reg(asm.R3, asm.R6),
		asm.Add.Imm(asm.R3, 8),
		asm.JLE.Imm(asm.R2, 8, done),
		asm.Add.Imm(asm.R2, -8),
		asm.JLE.Imm(asm.R2, FramesSize, full),
		asm.Mov.Imm(asm.R2, FramesSize),
	)
	b.Mark(full)
	b.Emit(
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, off),
		asm.FnProbeReadKernel.Call(),
	)
	b.Mark(done)
}
