package bpfgen

// The filter backend: a bound filter becomes short-circuit jumping code.
//
// Register contract of EmitFilter:
//
//	R6      ctx, the raw record: read only
//	R9      the caller's bpf_get_current_pid_tgid(): read only (common_pid is its low half)
//	R0..R5  scratch, clobbered by the helpers called for cpu, comm and strings
//	R7, R8  scratch: a string's length (a glob's automaton states) and a cursor into it
//	stack   only inside the caller's scratch area, for strings
//
// A string that a predicate reads whole, and that the scratch area may
// not hold (a .ustring, a __data_loc string, a large array), is copied
// into the filter's buffer instead: the one entry of a per-CPU array
// (FilterBufferName) that the programs of a collection share. Its
// pointer is looked up before the copy (R7 across the helper call) and
// is in R5 while the copy is matched, loads relative to it as they are
// to R10 on the stack.
//
// Tracepoint context rules shape the code: bytes 0-7 of the record cannot
// be read (common_type is the format's ID, common_pid comes from R9);
// loads must be aligned to their size, so misaligned numbers and string
// chunks are read in aligned pieces; offsets into ctx must be constant,
// so dynamic strings are copied with bpf_probe_read_kernel_str from
// ctx + a variable offset. The target is little endian.

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// EmitFilter appends code that jumps to miss when the record in R6 does not
// pass bf and falls through when it does. Each predicate's first
// instruction carries the predicate's text as its source comment. Errors,
// *parse.Error pointing into the filter, name what the BPF backend cannot
// do yet; nothing is emitted then.
func EmitFilter(b *Builder, bf *parse.BoundFilter, miss string, scratch StackArea) error {
	// Emit into a builder of our own, which shares the caller's label
	// numbers, so that code the verifier would refuse is never handed over.
	own := &Builder{n: b.n}
	g := &filterGen{b: own, bf: bf, scratch: scratch, used: map[string]bool{}}
	if err := g.check(bf.Root); err != nil {
		return err
	}
	pass := own.Label("filter_pass")
	g.expr(bf.Root, pass, miss, true)
	g.place(pass)
	branches := 0
	for _, ins := range own.insns {
		if op := ins.OpCode.JumpOp(); op != asm.InvalidJumpOp && op != asm.Ja && op != asm.Call && op != asm.Exit {
			branches++
		}
	}
	whole := func(format string, args ...any) *parse.Error {
		return parse.Errorf(bf.Name, bf.Src, 0, len(bf.Src), format, args...).WithHint("simplify the filter, or split it between events")
	}
	if branches > maxFilterBranches {
		return whole("filter needs %d conditional jumps, more than the verifier follows on one path (%d)", branches, maxFilterBranches)
	}
	if n := own.insns.Size() / asm.InstructionSize; n > maxFilterInsns {
		return whole("filter compiles to %d BPF instructions, more than a jump can cross (%d)", n, maxFilterInsns)
	}
	if g.walked > maxFilterWalk {
		return whole("filter's string loops take the verifier about %d steps, more than it allows a filter (%d)", g.walked, maxFilterWalk)
	}
	b.n = own.n
	b.comment = "" // the first predicate's text wins
	b.Emit(own.insns...)
	b.pending = own.pending
	return nil
}

// Limits that keep a filter loadable. The verifier stacks every branch it
// has yet to explore along one path and gives up past 8192 of them (live
// tests load 8000 simple predicates and fail at 9000); jumps have 16-bit
// offsets, and also reach the caller's miss label a little further on.
// The verifier also walks each string loop once per byte the string may
// have, up to a million instructions in all; a filter's loops may take
// maxFilterWalk of them (a loop's exits add loopExitCost per byte, for
// the pruned paths out of it).
const (
	maxFilterBranches = 7500
	maxFilterInsns    = 30000
	maxFilterWalk     = 800000
	loopExitCost      = 8
)

// The filter's buffer, and the lengths of what is read into it.
const (
	// FilterBufferName names the per-CPU array of one entry that holds
	// the strings of a filter's predicates that the stack cannot.
	FilterBufferName = "gtrace_filter_buf"
	// filterBufferSize holds a dynamic string's first 4095 bytes and a
	// NUL (pkg/eval's MaxDynamicString): all of any string in a record of
	// the kernel's ring buffer with its default 4 KiB pages. The verifier
	// walks a loop over the buffer once per byte it may hold.
	filterBufferSize = 4096
	// pointerStringSize is what the kernel's filters read of a char *
	// (USTRING_BUF_SIZE in kernel/trace/trace_events_filter.c): 1023
	// bytes and a NUL, a longer string being compared by its first 1023.
	pointerStringSize = 1024
)

// FilterBufferSpec returns the spec of the filter's buffer map.
// Collection.AddSpec adds it for the programs whose filters use it.
func FilterBufferSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: FilterBufferName, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: filterBufferSize, MaxEntries: 1}
}

type filterGen struct {
	b       *Builder
	bf      *parse.BoundFilter
	scratch StackArea
	used    map[string]bool // labels that some jump references
	walked  int             // instructions the verifier walks in loops, at most
}

// emit appends instructions, noting the labels they jump to.
func (g *filterGen) emit(insns ...asm.Instruction) {
	for _, ins := range insns {
		if ref := ins.Reference(); ref != "" {
			g.used[ref] = true
		}
	}
	g.b.Emit(insns...)
}

// place marks label at the next instruction if anything jumps to it.
func (g *filterGen) place(label string) {
	if g.used[label] {
		g.b.Mark(label)
	}
}

// check rejects, before anything is emitted, what the backend cannot do.
func (g *filterGen) check(e parse.BoundExpr) error {
	switch e := e.(type) {
	case *parse.BoundLogical:
		for _, x := range e.X {
			if err := g.check(x); err != nil {
				return err
			}
		}
	case *parse.BoundNot:
		return g.check(e.X)
	case *parse.BoundPred:
		return g.checkPred(e)
	}
	return nil
}

func (g *filterGen) errorf(off, end int, format string, args ...any) *parse.Error {
	return parse.Errorf(g.bf.Name, g.bf.Src, off, end, format, args...)
}

func (g *filterGen) checkPred(p *parse.BoundPred) error {
	pr := p.Pred
	fieldEnd := pr.FieldOff + len(pr.Field)
	switch p.Compare {
	case parse.CompareFunction:
		if p.FuncHi <= p.FuncLo {
			return g.errorf(pr.Value.Off, pr.Value.End, "function %s has not been looked up in the kernel's symbols", pr.Value.Text)
		}
	case parse.CompareCPUMask:
		return g.errorf(pr.FieldOff, fieldEnd, "cpumask fields are not supported by the BPF backend yet")
	}
	if p.Operand == parse.OperandField && p.Field.Offset < ctxReadable && !isCommonType(p) {
		return g.errorf(pr.FieldOff, fieldEnd, "field %q is in the first %d bytes of the record, which BPF programs cannot read", pr.Field, ctxReadable)
	}
	if p.Compare != parse.CompareString {
		return nil
	}
	if p.Glob.Kind == parse.GlobFull {
		if msg := globError(p); msg != "" {
			return g.errorf(pr.Value.Off, pr.Value.End, "%s", msg).
				WithHint("split the pattern into several predicates joined by &&")
		}
	}
	a := g.area(p)
	if !a.copy {
		return nil
	}
	if g.scratch.Off > 0 || int(g.scratch.Off)+int(g.scratch.Size) > 0 || g.scratch.Off < -maxStack {
		return fmt.Errorf("filter scratch area [%d, %d) is not inside the BPF stack", g.scratch.Off, int(g.scratch.Off)+int(g.scratch.Size))
	}
	if a.buf && a.max >= filterBufferSize {
		return g.errorf(pr.FieldOff, pr.FieldOff+len(pr.Field), "%s is a char array of %d bytes, more than the filter's buffer holds (%d)", pr.Field, a.max, filterBufferSize-1)
	}
	need, what := a.max+1, "bytes of BPF stack"
	if a.buf {
		need, what = g.keySlot()+4-int(g.scratch.Off), "bytes of BPF stack for its buffer's key"
	}
	if need > int(g.scratch.Size) {
		return g.errorf(pr.Value.Off, pr.Value.End, "%s needs %d %s, the filter has %d", pr.String(), need, what, g.scratch.Size)
	}
	return nil
}

// ctxReadable is where a tracepoint program may start reading its record.
const ctxReadable = 8

func isCommonType(p *parse.BoundPred) bool {
	return p.Field.Common && p.Field.Name == "common_type"
}

// strArea is where a string predicate copies its string.
type strArea struct {
	copy bool // false: compared in place (an exact or prefix pattern on a char array)
	buf  bool // in the filter's buffer, else in the stack's scratch area
	max  int  // the most bytes of the string that the copy holds, its NUL aside
}

// area decides where p copies its string: the task name and what fits go
// to the stack; a string read whole that may be longer than the scratch
// area (a .ustring, a dynamic string, a large array) goes to the buffer.
func (g *filterGen) area(p *parse.BoundPred) strArea {
	kind := p.Glob.Kind
	whole := kind == parse.GlobSuffix || kind == parse.GlobSubstr || kind == parse.GlobFull
	a := strArea{copy: true}
	switch {
	case p.Operand == parse.OperandComm:
		a.max = CommLen - 1
		return a
	case p.Field.Class == parse.ClassString && !whole:
		return strArea{}
	case p.Field.Class == parse.ClassString:
		// One byte more than the array: the copy ends in a NUL even when
		// the array has none.
		a.max = p.Field.Size
	case kind == parse.GlobExact:
		a.max = len(p.Glob.Text) + 1 // one more, to see that the string ends
	case kind == parse.GlobPrefix:
		a.max = len(p.Glob.Text)
	case p.Field.Class == parse.ClassStringPtr:
		a.max = pointerStringSize - 1
	default:
		a.max = filterBufferSize - 1
	}
	a.buf = a.max >= int(g.scratch.Size)
	return a
}

// keySlot is the offset from R10 of the 4 bytes of the scratch area that
// hold the buffer's key.
func (g *filterGen) keySlot() int {
	return (int(g.scratch.Off) + 3) &^ 3
}

// base is the register that the copy is read through, and off the
// copy's offset from it.
func (g *filterGen) base(a strArea) (asm.Register, int) {
	if a.buf {
		return asm.R5, 0
	}
	return asm.R10, int(g.scratch.Off)
}

// lookupBuffer puts the buffer's pointer in R7 for a copy into a, or
// jumps to fault when it has none (never: the verifier requires the
// check). Clobbers R0-R5.
func (g *filterGen) lookupBuffer(a strArea, fault string) {
	if !a.buf {
		return
	}
	key := g.keySlot()
	g.emit(
		asm.StoreImm(asm.R10, int16(key), 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(FilterBufferName),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, fault),
		asm.Mov.Reg(asm.R7, asm.R0),
	)
}

// copyTo sets R1 to where a's copy goes: R7's buffer or the scratch area.
func (g *filterGen) copyTo(a strArea) {
	if a.buf {
		g.emit(asm.Mov.Reg(asm.R1, asm.R7))
		return
	}
	g.emit(asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, int32(g.scratch.Off)))
}

// copied follows the helper call that copied a string into a: the
// buffer's pointer moves to R5, where the matching code reads it.
func (g *filterGen) copied(a strArea) {
	if a.buf {
		g.emit(asm.Mov.Reg(asm.R5, asm.R7))
	}
}

// expr emits e so that control reaches t when e is true and f when it is
// false; one of the two is simply falling through, as fallTrue says, and
// the caller places that label right after the code.
func (g *filterGen) expr(e parse.BoundExpr, t, f string, fallTrue bool) {
	switch e := e.(type) {
	case *parse.BoundNot:
		g.expr(e.X, f, t, !fallTrue)
	case *parse.BoundLogical:
		last := len(e.X) - 1
		for _, x := range e.X[:last] {
			next := g.b.Label("filter_next")
			if e.Op == parse.OpAnd {
				g.expr(x, next, f, true)
			} else {
				g.expr(x, t, next, false)
			}
			g.place(next)
		}
		g.expr(e.X[last], t, f, fallTrue)
	case *parse.BoundPred:
		// A string that cannot be read makes the predicate false, even
		// a negated one.
		fault := f
		if e.Negate {
			t, f, fallTrue = f, t, !fallTrue
		}
		g.b.Comment("%s", e.Pred.String())
		r := g.pred(e, t, f, fault)
		switch {
		case r.loopFalse && fallTrue:
			g.emit(asm.Ja.Label(f))
		case r.loopFalse:
		case fallTrue:
			g.emit(r.test.jump(f, true))
		default:
			g.emit(r.test.jump(t, false))
		}
	}
}

// test is a predicate's last comparison, left for expr to emit as a jump
// to the true or the false target.
type test struct {
	op     asm.JumpOp
	dst    asm.Register
	src    asm.Register // with useReg
	imm    int32
	useReg bool
	jmp32  bool // compare the low 32 bits
}

var inverse = map[asm.JumpOp]asm.JumpOp{
	asm.JEq: asm.JNE, asm.JNE: asm.JEq,
	asm.JGT: asm.JLE, asm.JLE: asm.JGT,
	asm.JGE: asm.JLT, asm.JLT: asm.JGE,
	asm.JSGT: asm.JSLE, asm.JSLE: asm.JSGT,
	asm.JSGE: asm.JSLT, asm.JSLT: asm.JSGE,
}

// jump returns the jump to label taken when the test holds, or when it
// fails if negate is set.
func (t test) jump(label string, negate bool) asm.Instruction {
	op := t.op
	if negate {
		op = inverse[op]
	}
	switch {
	case t.useReg && t.jmp32:
		return op.Reg32(t.dst, t.src, label)
	case t.useReg:
		return op.Reg(t.dst, t.src, label)
	case t.jmp32:
		return op.Imm32(t.dst, t.imm, label)
	}
	return op.Imm(t.dst, t.imm, label)
}

// predResult ends a predicate: either a test, or (loopFalse) code that
// has already jumped to t on success and falls through on failure.
type predResult struct {
	test      test
	loopFalse bool
}

// constTest is a test with a known outcome. It stays a conditional jump
// on a register, so that the verifier sees no unreachable code.
func (g *filterGen) constTest(v bool) predResult {
	g.emit(asm.Mov.Imm(asm.R0, 0))
	if v {
		return predResult{test: test{op: asm.JEq, dst: asm.R0}}
	}
	return predResult{test: test{op: asm.JNE, dst: asm.R0}}
}

// pred emits a predicate's code up to its last test; earlier checks jump
// to t or f themselves, and to fault when a string cannot be read.
func (g *filterGen) pred(p *parse.BoundPred, t, f, fault string) predResult {
	switch p.Compare {
	case parse.CompareNumber:
		g.loadNumber(p)
		if p.Op == parse.CmpAnd {
			if fitsImm(p.Val) {
				g.emit(asm.And.Imm(asm.R0, int32(p.Val)))
			} else {
				g.emit(asm.LoadImm(asm.R1, int64(p.Val), asm.DWord), asm.And.Reg(asm.R0, asm.R1))
			}
			return predResult{test: test{op: asm.JNE, dst: asm.R0}}
		}
		return predResult{test: g.compareTo(jumpOps[p.Op][boolIndex(p.Signed)], p.Val)}
	case parse.CompareCPUs:
		return g.cpus(p, t, f)
	case parse.CompareFunction:
		// FuncLo <= v < FuncHi, unsigned (kernel addresses fit
		// sign-extended immediates).
		g.loadNumber(p)
		g.emit(g.compareTo(asm.JLT, p.FuncLo).jump(f, false))
		return predResult{test: g.compareTo(asm.JLT, p.FuncHi)}
	}
	return g.str(p, t, f, fault)
}

// jumpOps maps a comparison to its jump, unsigned and signed.
var jumpOps = map[parse.CmpOp][2]asm.JumpOp{
	parse.CmpEQ: {asm.JEq, asm.JEq},
	parse.CmpNE: {asm.JNE, asm.JNE},
	parse.CmpLT: {asm.JLT, asm.JSLT},
	parse.CmpLE: {asm.JLE, asm.JSLE},
	parse.CmpGT: {asm.JGT, asm.JSGT},
	parse.CmpGE: {asm.JGE, asm.JSGE},
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fitsImm reports whether v survives as a sign-extended 32-bit immediate.
func fitsImm(v uint64) bool { return int64(v) == int64(int32(v)) }

// compareTo returns the test R0 op v, loading v into R1 when it does not
// fit an immediate.
func (g *filterGen) compareTo(op asm.JumpOp, v uint64) test {
	if fitsImm(v) {
		return test{op: op, dst: asm.R0, imm: int32(v)}
	}
	g.emit(asm.LoadImm(asm.R1, int64(v), asm.DWord))
	return test{op: op, dst: asm.R0, src: asm.R1, useReg: true}
}

// loadNumber loads a predicate's numeric operand into R0, extended to 64
// bits as its type says. Clobbers R0, R1 (and R2-R5 for the CPU).
func (g *filterGen) loadNumber(p *parse.BoundPred) {
	switch {
	case p.Operand == parse.OperandCPU:
		g.emit(asm.FnGetSmpProcessorId.Call())
	case p.Operand == parse.OperandPID:
		g.emit(asm.Mov.Reg(asm.R0, asm.R9), asm.LSh.Imm(asm.R0, 32), asm.ArSh.Imm(asm.R0, 32))
	case isCommonType(p):
		// The record's type is the format's ID, a small number.
		g.emit(asm.Mov.Imm(asm.R0, int32(castWidth(uint64(g.bf.Format.ID), p.Size, p.Signed))))
	default:
		g.loadCtx(p.Offset, p.Size, p.Signed)
	}
}

// castWidth truncates v to size bytes and extends it back, signed or not.
func castWidth(v uint64, size int, signed bool) uint64 {
	if size >= 8 {
		return v
	}
	sh := uint(64 - 8*size)
	if signed {
		return uint64(int64(v<<sh) >> sh)
	}
	return v << sh >> sh
}

var sizes = map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}

// chunk returns the widest aligned load (1, 2, 4 or 8 bytes) at off that
// stays within n bytes.
func chunk(off, n int) int {
	for c := 8; c > 1; c /= 2 {
		if off%c == 0 && c <= n {
			return c
		}
	}
	return 1
}

// loadCtx loads size bytes of the record at off into R0, assembled from
// aligned pieces, and extends them to 64 bits. Clobbers R0, R1.
func (g *filterGen) loadCtx(off, size int, signed bool) {
	for i := 0; i < size; {
		c := chunk(off+i, size-i)
		if i == 0 {
			g.emit(asm.LoadMem(asm.R0, asm.R6, int16(off), sizes[c]))
		} else {
			g.emit(
				asm.LoadMem(asm.R1, asm.R6, int16(off+i), sizes[c]),
				asm.LSh.Imm(asm.R1, int32(8*i)),
				asm.Or.Reg(asm.R0, asm.R1),
			)
		}
		i += c
	}
	if signed && size < 8 {
		sh := int32(64 - 8*size)
		g.emit(asm.LSh.Imm(asm.R0, sh), asm.ArSh.Imm(asm.R0, sh))
	}
}

// cpus compares a number with a CPU list, unsigned, as the kernel does
// (kernel/trace/trace_events_filter.c): & is "in the list", == "the list
// is exactly this CPU" (a list of several CPUs never equals a number), !=
// the opposite of ==. A one-CPU list is a plain comparison with it, so
// common_cpu & CPUS{1} is common_cpu == 1.
func (g *filterGen) cpus(p *parse.BoundPred, t, f string) predResult {
	if p.Op != parse.CmpAnd {
		r := p.CPUs[0]
		for _, o := range p.CPUs[1:] {
			if o != r {
				r.Last = -1
			}
		}
		if r.First != r.Last {
			// A list of several CPUs never equals one CPU.
			return g.constTest(p.Op == parse.CmpNE)
		}
		g.loadNumber(p)
		return predResult{test: test{op: jumpOps[p.Op][0], dst: asm.R0, imm: int32(r.First)}}
	}
	g.loadNumber(p)
	last := len(p.CPUs) - 1
	for _, r := range p.CPUs[:last] {
		if r.First == r.Last {
			g.emit(asm.JEq.Imm(asm.R0, int32(r.First), t))
			continue
		}
		below := g.b.Label("filter_cpus")
		g.emit(
			asm.JLT.Imm(asm.R0, int32(r.First), below),
			asm.JLE.Imm(asm.R0, int32(r.Last), t),
		)
		g.place(below)
	}
	r := p.CPUs[last]
	if r.First == r.Last {
		// One CPU: the number is that CPU (JLE alone would take every
		// CPU below it too).
		return predResult{test: test{op: asm.JEq, dst: asm.R0, imm: int32(r.First)}}
	}
	g.emit(asm.JLT.Imm(asm.R0, int32(r.First), f))
	return predResult{test: test{op: asm.JLE, dst: asm.R0, imm: int32(r.Last)}}
}

// str matches a string. Exact and prefix patterns compare in place (a
// static array in the record) or after copying just enough of the
// string; suffix and substring patterns copy the whole string (into the
// buffer when the stack may not hold it) and measure it; full globs copy
// it and run an automaton over it (filter_glob.go).
func (g *filterGen) str(p *parse.BoundPred, t, f, fault string) predResult {
	pat := p.Glob.Text
	kind := p.Glob.Kind
	if kind == parse.GlobFull {
		return g.glob(p, t, f, fault)
	}
	whole := kind == parse.GlobSuffix || kind == parse.GlobSubstr
	a := g.area(p)
	switch {
	case p.Operand == parse.OperandComm:
		off := int(g.scratch.Off)
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, int32(off)),
			asm.Mov.Imm(asm.R2, CommLen),
			asm.FnGetCurrentComm.Call(),
		)
		if !whole {
			return g.fixed(asm.R10, off, CommLen-1, p.Glob, f)
		}
		// Measure the name: copy it onto itself.
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, int32(off)),
			asm.Mov.Imm(asm.R2, CommLen),
			asm.Mov.Reg(asm.R3, asm.R1),
			asm.FnProbeReadKernelStr.Call(),
		)
		return g.whole(p, a, t, f, fault)
	case !a.copy:
		return g.fixed(asm.R6, p.Field.Offset, p.Field.Size, p.Glob, f)
	case p.Field.Class == parse.ClassString:
		g.readArray(p, a, fault)
		return g.whole(p, a, t, f, fault)
	}
	g.readStr(p, a, fault)
	if whole {
		return g.whole(p, a, t, f, fault)
	}
	// The copy holds min(len, max) bytes and a NUL. A fault (R0 < 0)
	// fails the length test below, unless the predicate is negated.
	if fault != f {
		g.emit(asm.JSLT.Imm(asm.R0, 1, fault))
	}
	if len(pat) == 0 {
		return predResult{test: test{op: asm.JEq, dst: asm.R0, imm: 1}}
	}
	g.emit(asm.JNE.Imm(asm.R0, int32(len(pat)+1), f))
	base, off := g.base(a)
	return predResult{test: g.cmpBytes(base, off, pat, f)}
}

// fixed matches an exact or prefix pattern against a NUL-padded array of
// size bytes at base+off (the record, or the task name on the stack).
func (g *filterGen) fixed(base asm.Register, off, size int, glob parse.Glob, f string) predResult {
	want := glob.Text
	switch {
	case len(want) > size:
		return g.constTest(false)
	case glob.Kind == parse.GlobPrefix && want == "":
		return g.constTest(true)
	case glob.Kind == parse.GlobExact && len(want) < size:
		want += "\x00"
	}
	return predResult{test: g.cmpBytes(base, off, want, f)}
}

// readArray copies a char array of the record into a, with a NUL
// after it; R0 is then the bytes copied including the NUL. Jumps to
// fault when the buffer cannot be had. Clobbers R0-R5 (and R7 for the
// buffer).
func (g *filterGen) readArray(p *parse.BoundPred, a strArea, fault string) {
	g.lookupBuffer(a, fault)
	g.copyTo(a)
	g.emit(
		asm.Mov.Imm(asm.R2, int32(a.max+1)),
		asm.Mov.Reg(asm.R3, asm.R6),
		asm.Add.Imm(asm.R3, int32(p.Field.Offset)),
		asm.FnProbeReadKernelStr.Call(),
	)
	g.copied(a)
}

// readStr copies a dynamic or pointed-to string into a: at most a.max
// bytes and a NUL. R0 is then the bytes copied including the NUL, or
// negative on a fault. Jumps to fault when the buffer cannot be had.
// Clobbers R0-R5 (and R7 for the buffer).
func (g *filterGen) readStr(p *parse.BoundPred, a strArea, fault string) {
	g.lookupBuffer(a, fault)
	fld := p.Field
	fn := asm.FnProbeReadKernelStr
	if fld.Class == parse.ClassStringPtr {
		g.loadCtx(fld.Offset, fld.Size, false)
		g.emit(asm.Mov.Reg(asm.R3, asm.R0), asm.Mov.Imm(asm.R2, int32(a.max+1)))
		if p.Pred.Mod == "ustring" {
			fn = asm.FnProbeReadUserStr
		}
	} else {
		// loc = len << 16 | offset; __rel_loc offsets start after the u32.
		capped := g.b.Label("filter_len")
		g.loadCtx(fld.Offset, 4, false)
		g.emit(
			asm.Mov.Reg(asm.R2, asm.R0),
			asm.RSh.Imm(asm.R2, 16),
			asm.JLE.Imm(asm.R2, int32(a.max), capped),
			asm.Mov.Imm(asm.R2, int32(a.max)),
		)
		g.place(capped)
		g.emit(
			asm.Add.Imm(asm.R2, 1),
			asm.And.Imm(asm.R0, 0xffff),
		)
		if fld.Class == parse.ClassRelLoc {
			g.emit(asm.Add.Imm(asm.R0, int32(fld.Offset+4)))
		}
		g.emit(asm.Mov.Reg(asm.R3, asm.R6), asm.Add.Reg(asm.R3, asm.R0))
	}
	g.copyTo(a)
	g.emit(fn.Call())
	g.copied(a)
}

// whole matches a suffix or substring pattern against the string just
// copied to a, R0 being its length plus one (at most a.max+1) or
// negative. Uses R7 for the length and R8 as a cursor.
func (g *filterGen) whole(p *parse.BoundPred, a strArea, t, f, fault string) predResult {
	pat := p.Glob.Text
	base, off := g.base(a)
	g.emit(
		asm.JSLT.Imm(asm.R0, 1, fault),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.Sub.Imm(asm.R7, 1),
		// Never taken; it bounds R7 for the verifier.
		asm.JGT.Imm(asm.R7, int32(a.max), f),
	)
	if pat == "" {
		return g.constTest(true)
	}
	g.emit(asm.JLT.Imm(asm.R7, int32(len(pat)), f))
	if p.Glob.Kind == parse.GlobSuffix {
		g.emit(asm.Mov.Reg(asm.R8, base), asm.Add.Reg(asm.R8, asm.R7))
		return predResult{test: g.cmpEach(asm.R8, off-len(pat), pat, f)}
	}
	// for R8 = 0; R8 <= len-len(pat); R8++: if pat is at R8 goto t.
	// The verifier walks the loop once per byte the copy may hold and
	// stacks the branch that it does not follow first, until the path
	// ends: each branch's way out is the one followed (and soon pruned),
	// its way on the one stacked, so that the stack stays shallow
	// however long the loop. The bytes compare without branches.
	loop, next := g.b.Label("filter_scan"), g.b.Label("filter_scan_next")
	start := len(g.b.insns)
	g.emit(asm.Sub.Imm(asm.R7, int32(len(pat))), asm.Mov.Imm(asm.R8, 0))
	g.b.Mark(loop)
	g.emit(asm.Mov.Reg(asm.R1, base), asm.Add.Reg(asm.R1, asm.R8), asm.Mov.Imm(asm.R2, 0))
	for j := 0; j < len(pat); j++ {
		g.emit(
			asm.LoadMem(asm.R0, asm.R1, int16(off+j), asm.Byte),
			asm.Xor.Imm(asm.R0, int32(pat[j])),
			asm.Or.Reg(asm.R2, asm.R0),
		)
	}
	g.emit(
		asm.JNE.Imm(asm.R2, 0, next),
		asm.Ja.Label(t),
	)
	g.b.Mark(next)
	g.emit(
		asm.Add.Imm(asm.R8, 1),
		asm.JLE.Reg(asm.R8, asm.R7, loop),
	)
	g.loopCost(a, start)
	return predResult{loopFalse: true}
}

// loopCost adds what the verifier walks of the loop emitted since start,
// once per byte that the copy a may hold.
func (g *filterGen) loopCost(a strArea, start int) {
	g.walked += a.max * (len(g.b.insns) - start + loopExitCost)
}

// cmpEach compares want byte by byte with the bytes at base+off, where
// base has a variable offset (such loads must be single bytes); all but
// the last byte jump to f on a difference.
func (g *filterGen) cmpEach(base asm.Register, off int, want string, f string) test {
	last := len(want) - 1
	for j := 0; j < last; j++ {
		g.emit(
			asm.LoadMem(asm.R0, base, int16(off+j), asm.Byte),
			asm.JNE.Imm(asm.R0, int32(want[j]), f),
		)
	}
	g.emit(asm.LoadMem(asm.R0, base, int16(off+last), asm.Byte))
	return test{op: asm.JEq, dst: asm.R0, imm: int32(want[last])}
}

// cmpBytes compares want with the bytes at base+off in aligned chunks of
// up to 8 bytes; all but the last chunk jump to f on a difference.
func (g *filterGen) cmpBytes(base asm.Register, off int, want string, f string) test {
	for i := 0; ; {
		c := chunk(off+i, len(want)-i)
		var buf [8]byte
		copy(buf[:], want[i:i+c])
		v := binary.LittleEndian.Uint64(buf[:])
		g.emit(asm.LoadMem(asm.R0, base, int16(off+i), sizes[c]))
		var tst test
		if c < 8 {
			tst = test{op: asm.JEq, dst: asm.R0, imm: int32(uint32(v)), jmp32: true}
		} else {
			tst = g.compareTo(asm.JEq, v)
		}
		i += c
		if i == len(want) {
			return tst
		}
		g.emit(tst.jump(f, true))
	}
}
