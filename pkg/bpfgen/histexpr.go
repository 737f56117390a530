package bpfgen

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// Expr is a number a hist key or value is computed from: an operand (a
// field of the record, the pid, the CPU, the time, a constant, a resolved
// reference or a variable of the entry) or an operator over operands.
type Expr struct {
	// Op is '+', '-', '*', '/' on L and R, 'n' for the negation of L, or
	// 0 for an operand.
	Op     byte
	L, R   *Expr
	Src    KeySrc       // an operand: SrcField, SrcPID, SrcCPU, SrcTime, SrcConst, SrcRef or SrcVar
	Field  *parse.Field // SrcField: a numeric field
	Const  uint64       // SrcConst
	Usecs  bool         // SrcTime: in microseconds, (ns+500)/1000, rather than ns
	Signed bool         // signed: '/' divides as int64
	// Ref is SrcRef's reference, an index in the layout's Refs: its
	// value as the hist's action resolved it, before the entry's update.
	Ref int
	// Var is SrcVar's variable, an index in the layout's Vars: the
	// number the entry holds, where the entry is at hand (a variable's
	// store, a handler, a synthetic event's parameter).
	Var int
}

// exprEnv is where an expression's operands and temporaries are.
type exprEnv struct {
	tmp   int16 // the u64 temporaries at fp+tmp
	clock int16 // the event's time at fp+clock
	// refs: the resolved number references at fp+refs, 8 bytes each,
	// nrefs of them; 0 of them outside a hist with references.
	refs  int16
	nrefs int
	// strRefs: each reference's slot in the scratch entry's strings,
	// -1 for a number.
	strRefs []int
	// refKinds: each reference's kind of variable.
	refKinds []VarKind
	// vars: the entry's variables, the entry at R8; nil where R8 is
	// not an entry.
	vars []VarSlot
}

// exprTemps is how many u64 temporaries an expression needs at most: one
// per pending left operand, one per operator (parse allows 3).
const exprTemps = 3

// depth returns the number of temporaries e needs.
func (e *Expr) depth() int {
	switch e.Op {
	case 0:
		return 0
	case 'n':
		return e.L.depth()
	}
	return max(e.L.depth(), 1+e.R.depth())
}

// usesExpr reports whether a hist layout computes a key or value from an
// expression or the time.
func (l *HistLayout) usesExpr() bool {
	for _, k := range l.Keys {
		if k.Expr != nil {
			return true
		}
	}
	for _, v := range l.Vals {
		if v.Expr != nil {
			return true
		}
	}
	return false
}

// usesTime reports whether e reads the time.
func (e *Expr) usesTime() bool {
	switch {
	case e == nil:
		return false
	case e.Op == 0:
		return e.Src == SrcTime
	}
	return e.L.usesTime() || e.R.usesTime()
}

// usesTime reports whether a hist layout's keys, values or variables
// read the time: it is read once per event, so that every common_timestamp of the event is the same.
func (l *HistLayout) usesTime() bool {
	for _, k := range l.Keys {
		if k.Expr.usesTime() {
			return true
		}
	}
	for _, v := range l.Vals {
		if v.Expr.usesTime() {
			return true
		}
	}
	for _, v := range l.Vars {
		if v.Expr.usesTime() {
			return true
		}
	}
	return false
}

// exprTime is the offset, from the temporaries, of the event's time.
const exprTime = 8 * exprTemps

// emitExpr leaves the value of e in R0, using the u64 temporaries and
// operands of env. Clobbers R0-R5.
func emitExpr(b *Builder, e *Expr, env exprEnv) error {
	if e.depth() > exprTemps {
		return fmt.Errorf("hist expression too deep: %d temporaries, at most %d", e.depth(), exprTemps)
	}
	return emitExprAt(b, e, env)
}

func emitExprAt(b *Builder, e *Expr, env exprEnv) error {
	switch e.Op {
	case 0:
		return emitOperand(b, e, env)
	case 'n':
		if err := emitExprAt(b, e.L, env); err != nil {
			return err
		}
		b.Emit(asm.Neg.Imm(asm.R0, 0))
		return nil
	}
	if err := emitExprAt(b, e.L, env); err != nil {
		return err
	}
	b.Emit(asm.StoreMem(asm.R10, env.tmp, asm.R0, asm.DWord))
	right := env
	right.tmp += 8
	if err := emitExprAt(b, e.R, right); err != nil {
		return err
	}
	b.Emit(asm.Mov.Reg(asm.R1, asm.R0), asm.LoadMem(asm.R0, asm.R10, env.tmp, asm.DWord))
	switch e.Op {
	case '+':
		b.Emit(asm.Add.Reg(asm.R0, asm.R1))
	case '-':
		b.Emit(asm.Sub.Reg(asm.R0, asm.R1))
	case '*':
		b.Emit(asm.Mul.Reg(asm.R0, asm.R1))
	case '/':
		emitDiv(b, e.Signed)
	default:
		return fmt.Errorf("hist expression: unknown operator %q", e.Op)
	}
	return nil
}

// emitDiv sets R0 = R0 / R1, exactly (truncated toward zero), as int64
// when signed; a division by zero gives -1 (all ones), as the kernel's
// does. Clobbers R1, R2.
func emitDiv(b *Builder, signed bool) {
	b.Comment("exact division; by zero: -1")
	nonzero := b.Label("div_nonzero")
	done := b.Label("div_done")
	b.Emit(
		asm.JNE.Imm(asm.R1, 0, nonzero),
		asm.Mov.Imm(asm.R0, -1),
		asm.Ja.Label(done),
	)
	b.Mark(nonzero)
	if !signed {
		b.Emit(asm.Div.Reg(asm.R0, asm.R1))
		b.Mark(done)
		return
	}
	// |R0| / |R1|, negated when the signs differ (R2 = 1).
	posA := b.Label("div_pos_a")
	posB := b.Label("div_pos_b")
	b.Emit(
		asm.Mov.Imm(asm.R2, 0),
		asm.JSGE.Imm(asm.R0, 0, posA),
		asm.Neg.Imm(asm.R0, 0),
		asm.Xor.Imm(asm.R2, 1),
	)
	b.Mark(posA)
	b.Emit(
		asm.JSGE.Imm(asm.R1, 0, posB),
		asm.Neg.Imm(asm.R1, 0),
		asm.Xor.Imm(asm.R2, 1),
	)
	b.Mark(posB)
	b.Emit(
		asm.Div.Reg(asm.R0, asm.R1),
		asm.JEq.Imm(asm.R2, 0, done),
		asm.Neg.Imm(asm.R0, 0),
	)
	b.Mark(done)
}

// emitOperand leaves the value of an operand in R0. Clobbers R0-R5.
func emitOperand(b *Builder, e *Expr, env exprEnv) error {
	switch e.Src {
	case SrcField:
		if e.Field == nil || (e.Field.Class != parse.ClassNumeric && e.Field.Class != parse.ClassStringPtr) {
			return fmt.Errorf("hist expression: operand is not a numeric field")
		}
		loadField(b, asm.R0, e.Field)
	case SrcPID:
		b.Emit(asm.Mov.Reg(asm.R0, asm.R9), asm.LSh.Imm(asm.R0, 32), asm.ArSh.Imm(asm.R0, 32))
	case SrcCPU:
		b.Emit(asm.FnGetSmpProcessorId.Call())
	case SrcTime:
		b.Emit(asm.LoadMem(asm.R0, asm.R10, env.clock, asm.DWord))
		if e.Usecs {
			b.Emit(asm.Add.Imm(asm.R0, 500), asm.Div.Imm(asm.R0, 1000))
		}
	case SrcConst:
		b.Emit(asm.LoadImm(asm.R0, int64(e.Const), asm.DWord))
	case SrcRef:
		if e.Ref < 0 || e.Ref >= env.nrefs {
			return fmt.Errorf("hist expression: reference %d of %d resolved here", e.Ref, env.nrefs)
		}
		b.Emit(asm.LoadMem(asm.R0, asm.R10, env.refs+int16(8*e.Ref), asm.DWord))
	case SrcVar:
		if e.Var < 0 || e.Var >= len(env.vars) || env.vars[e.Var].Kind != VarNumber {
			return fmt.Errorf("hist expression: variable %d is not a number of the entry at hand", e.Var)
		}
		b.Emit(asm.LoadMem(asm.R0, asm.R8, int16(env.vars[e.Var].Off), asm.DWord))
	default:
		return fmt.Errorf("hist expression: operand source %d", e.Src)
	}
	return nil
}
