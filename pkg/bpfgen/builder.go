package bpfgen

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// Builder accumulates instructions and hands out unique labels.
type Builder struct {
	insns   asm.Instructions
	n       int
	pending string // label to attach to the next emitted instruction
	comment string // source comment to attach to the next emitted instruction
}

// Label returns a fresh label "name_N" that no other call returns.
func (b *Builder) Label(name string) string {
	b.n++
	return fmt.Sprintf("%s_%d", name, b.n)
}

// Mark places label at the next emitted instruction.
func (b *Builder) Mark(label string) {
	if b.pending != "" {
		// Two labels at one place: give the first its own no-op jump.
		b.Emit(asm.Ja.Label(label))
	}
	b.pending = label
}

// Comment tags the next emitted instruction with a source comment, shown
// in listings (--dry-run).
func (b *Builder) Comment(format string, args ...any) {
	b.comment = fmt.Sprintf(format, args...)
}

// Emit appends instructions.
func (b *Builder) Emit(insns ...asm.Instruction) {
	for _, ins := range insns {
		if b.pending != "" {
			ins = ins.WithSymbol(b.pending)
			b.pending = ""
		}
		if b.comment != "" {
			ins = ins.WithSource(asm.Comment(b.comment))
			b.comment = ""
		}
		b.insns = append(b.insns, ins)
	}
}

// referenced reports whether an instruction emitted so far jumps to
// label.
func (b *Builder) referenced(label string) bool {
	for _, ins := range b.insns {
		if ins.Reference() == label {
			return true
		}
	}
	return false
}

// Instructions returns what was emitted. A label still pending gets a
// final "return 0" so that jumps to it resolve.
func (b *Builder) Instructions() asm.Instructions {
	if b.pending != "" {
		b.Emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	}
	return b.insns
}

// StackArea is a region of the BPF stack, [R10+Off, R10+Off+Size), that an
// emitter may use freely. Off is negative.
type StackArea struct {
	Off  int16
	Size int16
}

// storeImm64 is *(u64 *)(dst + off) = v, with v sign-extended from 32
// bits (BPF_ST | BPF_DW), which asm.StoreImm does not emit.
func storeImm64(dst asm.Register, off int16, v int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: int64(v)}
}
