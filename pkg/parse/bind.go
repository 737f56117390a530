package parse

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// BoundFilter is a filter expression resolved against one event's format:
// every field looked up, every constant converted. It is the single input
// of both filter backends, the BPF code generator and the interpreter.
type BoundFilter struct {
	Name   string  // what the source is, for errors (e.g. "--filter")
	Src    string  // the filter text
	Expr   Expr    // the parsed expression
	Format *Format // the event the filter was bound to
	Root   BoundExpr
	// Warnings are legal constructs that are probably mistakes: octal
	// constants, constants truncated to the field's type, strings that
	// cannot fit the field.
	Warnings []*Error
}

// BoundExpr is a node of a bound filter: *BoundLogical, *BoundNot or
// *BoundPred.
type BoundExpr interface{ boundExpr() }

// BoundLogical is a flattened && or || chain of two or more operands,
// evaluated left to right with short circuit.
type BoundLogical struct {
	Op LogicalOp
	X  []BoundExpr
}

// BoundNot negates X.
type BoundNot struct{ X BoundExpr }

// Operand says what a predicate's left-hand side reads.
type Operand int

// Operands.
const (
	OperandField Operand = iota // a field of the record (Field)
	OperandPID                  // common_pid: the record's, or the current task's pid
	OperandCPU                  // common_cpu, cpu, CPU: the CPU the event ran on
	OperandComm                 // comm, COMM: the current task's name
)

// Compare says how a predicate compares.
type Compare int

// Comparisons.
const (
	CompareNumber   Compare = iota // a number: Op against Val, Size bytes, Signed or not
	CompareString                  // a string matched by Glob, inverted by Negate
	CompareCPUs                    // a number against a CPU list: & (in the list), == and != (the list is exactly that CPU)
	CompareCPUMask                 // a cpumask field against a CPU list: & (intersects), == and != (same set)
	CompareFunction                // Field.function: the address lies in a kernel function, inverted by Negate
)

// GlobKind is the form of a string pattern; the simple forms are what
// backends can match quickly.
type GlobKind int

// Pattern forms, as the kernel tells them apart.
const (
	GlobExact  GlobKind = iota // the string equals Text
	GlobPrefix                 // Text*
	GlobSuffix                 // *Text: the end of the actual string, not of the array
	GlobSubstr                 // *Text*
	GlobFull                   // a shell pattern with ?, [...], \ or an inner *: Text is the pattern
)

// Glob is a string pattern of a predicate.
type Glob struct {
	Kind GlobKind
	Text string
}

// BoundPred is one predicate resolved against the format.
type BoundPred struct {
	Pred    *Pred   // the predicate as written
	Operand Operand // what the left-hand side reads
	// Field is the event field read; nil for the pseudo-fields cpu and
	// comm, and for common_pid when the format has no such field.
	Field   *Field
	Compare Compare
	Op      CmpOp // CompareNumber, CompareCPUs, CompareCPUMask
	// Offset, Size and Signed say how to read a number from the record:
	// Size is the field's size, or its C type's when that is smaller (the
	// 8-byte slots of syscall arguments declared int).
	Offset int
	Size   int
	Signed bool
	Val    uint64     // CompareNumber: the constant cast to Size bytes, extended to 64 bits as Signed says
	Glob   Glob       // CompareString
	Negate bool       // CompareString (!=, or a glob that starts with '!'), CompareFunction (!=)
	CPUs   []CPURange // CompareCPUs, CompareCPUMask
	Func   string     // CompareFunction: the function's name, "" when an address was given
	Addr   uint64     // CompareFunction: the address given
	// FuncLo and FuncHi bound the function of a CompareFunction, [lo,
	// hi), once BoundFilter.ResolveFunctions has found it; both 0 before.
	FuncLo, FuncHi uint64
}

// FuncResolver returns the address range [lo, hi) of the kernel function
// called name or, when name is "", of the function that holds addr.
type FuncResolver func(name string, addr uint64) (lo, hi uint64, err error)

// HasFunctions reports whether the filter has .function predicates.
func (bf *BoundFilter) HasFunctions() bool {
	found := false
	WalkPreds(bf.Root, func(p *BoundPred) { found = found || p.Compare == CompareFunction })
	return found
}

// ResolveFunctions finds, with r, the function of every .function
// predicate, as the kernel does when the filter is set. r is not called
// for a filter without any. An unknown function is an *Error pointing at
// it.
func (bf *BoundFilter) ResolveFunctions(r FuncResolver) error {
	var err error
	WalkPreds(bf.Root, func(p *BoundPred) {
		if p.Compare != CompareFunction || err != nil {
			return
		}
		lo, hi, rerr := uint64(0), uint64(0), errors.New("no kernel symbols to resolve .function with")
		if r != nil {
			lo, hi, rerr = r(p.Func, p.Addr)
		}
		if rerr != nil {
			v := p.Pred.Value
			err = filterErrorf(bf.Name, bf.Src, v.Off, v.End, kFunctionNotFound, "%v", rerr).
				WithHint("the value of .function is a kernel function's name or an address in one")
			return
		}
		p.FuncLo, p.FuncHi = lo, hi
	})
	return err
}

// WalkPreds calls fn for every predicate under e, in order.
func WalkPreds(e BoundExpr, fn func(*BoundPred)) {
	switch e := e.(type) {
	case *BoundLogical:
		for _, x := range e.X {
			WalkPreds(x, fn)
		}
	case *BoundNot:
		WalkPreds(e.X, fn)
	case *BoundPred:
		fn(e)
	}
}

func (*BoundLogical) boundExpr() {}
func (*BoundNot) boundExpr()     {}
func (*BoundPred) boundExpr()    {}

// Pseudo-fields, looked up after the event's own fields.
var pseudoFields = []struct {
	name    string
	operand Operand
}{
	{"common_pid", OperandPID},
	{"common_cpu", OperandCPU},
	{"cpu", OperandCPU},
	{"CPU", OperandCPU},
	{"comm", OperandComm},
	{"COMM", OperandComm},
}

// commMax is the longest task name (TASK_COMM_LEN less the NUL).
const commMax = 15

// BindFilter resolves e, parsed from src, against the event format f.
// Errors are *Error pointing into src.
func BindFilter(name, src string, e Expr, f *Format) (*BoundFilter, error) {
	b := &binder{bf: &BoundFilter{Name: name, Src: src, Expr: e, Format: f}}
	root, err := b.bind(e)
	if err != nil {
		return nil, err
	}
	b.bf.Root = root
	return b.bf, nil
}

type binder struct {
	bf *BoundFilter
}

func (b *binder) errorf(off, end int, words, format string, args ...any) *Error {
	return filterErrorf(b.bf.Name, b.bf.Src, off, end, words, format, args...)
}

func (b *binder) warnf(off, end int, format string, args ...any) *Error {
	w := Errorf(b.bf.Name, b.bf.Src, off, end, format, args...)
	b.bf.Warnings = append(b.bf.Warnings, w)
	return w
}

func (b *binder) bind(e Expr) (BoundExpr, error) {
	switch e := e.(type) {
	case *Logical:
		var ops []Expr
		flatten(e, e.Op, &ops)
		l := &BoundLogical{Op: e.Op, X: make([]BoundExpr, len(ops))}
		for i, x := range ops {
			bx, err := b.bind(x)
			if err != nil {
				return nil, err
			}
			l.X[i] = bx
		}
		return l, nil
	case *Not:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		return &BoundNot{X: x}, nil
	case *Pred:
		return b.bindPred(e)
	}
	return nil, fmt.Errorf("bind filter: unknown node %T", e)
}

// flatten appends the operands of the op chain rooted at e, in order.
func flatten(e Expr, op LogicalOp, out *[]Expr) {
	if l, ok := e.(*Logical); ok && l.Op == op {
		flatten(l.L, op, out)
		flatten(l.R, op, out)
		return
	}
	*out = append(*out, e)
}

// fieldKind is how the binder treats a left-hand side.
type fieldKind int

const (
	kindNumber fieldKind = iota
	kindString
	kindCPUMask
)

func (b *binder) bindPred(p *Pred) (*BoundPred, error) {
	f := b.bf.Format
	bp := &BoundPred{Pred: p, Op: p.Op}
	nameEnd := p.FieldOff + len(p.Field)
	kind := kindNumber
	what := "" // the field as messages describe it
	if fld := f.Field(p.Field); fld != nil {
		bp.Field = fld
		bp.Offset, bp.Size, bp.Signed = fld.Offset, fld.Size, fld.Signed
		what = fmt.Sprintf("field %q (%s)", fld.Name, fld.Type)
		switch {
		case fld.Name == "common_pid" && fld.Common:
			bp.Operand = OperandPID
		case fld.Class == ClassNumeric:
			if t, ok := cIntType(fld.Type); ok && t.size < fld.Size {
				bp.Size, bp.Signed = t.size, t.signed
			}
		case fld.Class == ClassString && fld.Size > 0, fld.Class == ClassStringPtr:
			kind = kindString
		case fld.Class == ClassDataLoc || fld.Class == ClassRelLoc:
			switch {
			case strings.Contains(fld.Type, "char"):
				kind = kindString
			case strings.Contains(fld.Type, "cpumask"):
				kind = kindCPUMask
			default:
				return nil, b.errorf(p.FieldOff, nameEnd, kIllegalOperation, "field %q is a dynamic array (%s) and cannot be filtered", fld.Name, fld.Type)
			}
		default:
			return nil, b.errorf(p.FieldOff, nameEnd, kIllegalOperation, "field %q is an array (%s) and cannot be filtered", fld.Name, fld.Type)
		}
	} else {
		op, ok := pseudoOperand(p.Field)
		if !ok {
			return nil, b.unknownField(p)
		}
		bp.Operand = op
		what = fmt.Sprintf("field %q", p.Field)
		switch op {
		case OperandPID:
			bp.Offset, bp.Size, bp.Signed = 4, 4, true
		case OperandCPU:
			bp.Size, bp.Signed = 4, true
		case OperandComm:
			kind = kindString
		}
	}
	if p.Mod != "" {
		if err := b.checkMod(p, bp); err != nil {
			return nil, err
		}
		if p.Mod == "function" {
			return b.bindFunction(p, bp)
		}
	}
	switch kind {
	case kindString:
		return b.bindString(p, bp, what)
	case kindCPUMask:
		if p.Value.Kind != ValCPUs {
			return nil, b.errorf(p.Value.Off, p.Value.End, kIllegalOperation, "expected CPUS{list} for cpumask %s", what).
				WithHint("write CPUs as CPUS{0-3,7}")
		}
		bp.Compare = CompareCPUMask
		return b.bindCPUs(p, bp, what)
	}
	return b.bindNumber(p, bp, what)
}

func pseudoOperand(name string) (Operand, bool) {
	for _, ps := range pseudoFields {
		if ps.name == name {
			return ps.operand, true
		}
	}
	return 0, false
}

// checkMod checks that .ustring or .function fits the field.
func (b *binder) checkMod(p *Pred, bp *BoundPred) error {
	modOff := p.FieldOff + len(p.Field)
	fld := bp.Field
	switch {
	case fld == nil:
		return b.errorf(modOff, p.FieldEnd, kIllegalOperation, ".%s does not apply to the pseudo-field %q", p.Mod, p.Field)
	case p.Mod == "ustring" && fld.Class != ClassStringPtr:
		return b.errorf(modOff, p.FieldEnd, kIllegalOperation, ".ustring needs a string pointer field, and %q is %s", fld.Name, fld.Type).
			WithHint(".ustring reads the string a char * field points to in user memory")
	case p.Mod == "function" && (fld.Class != ClassNumeric || fld.Size != 8):
		return b.errorf(modOff, p.FieldEnd, kIllegalOperation, ".function needs a long-sized field, and %q is %s", fld.Name, fld.Type).
			WithHint(".function matches a kernel address against a function's name")
	}
	return nil
}

func (b *binder) bindFunction(p *Pred, bp *BoundPred) (*BoundPred, error) {
	if p.Op != CmpEQ && p.Op != CmpNE {
		return nil, b.errorf(p.OpOff, p.OpOff+len(p.Op.String()), kInvalidOperator, "%q does not apply to .function", p.Op.String()).
			WithHint(".function allows == and !=")
	}
	bp.Compare = CompareFunction
	bp.Negate = p.Op == CmpNE
	switch v := p.Value; v.Kind {
	case ValWord, ValString:
		bp.Func = v.Str
	case ValNumber:
		if v.Neg {
			return nil, b.errorf(v.Off, v.End, kIllegalInteger, "negative address %s", v.Text)
		}
		bp.Addr = v.Num
	default:
		return nil, b.errorf(v.Off, v.End, kIllegalOperation, "expected a function name or an address for .function")
	}
	return bp, nil
}

func (b *binder) bindString(p *Pred, bp *BoundPred, what string) (*BoundPred, error) {
	bp.Compare = CompareString
	v := p.Value
	if p.Op != CmpEQ && p.Op != CmpNE && p.Op != CmpGlob {
		return nil, b.errorf(p.OpOff, p.OpOff+len(p.Op.String()), kIllegalOperation, "%q does not apply to string %s", p.Op.String(), what).
			WithHint("strings allow ==, != and ~ (glob)")
	}
	if v.Kind != ValString && v.Kind != ValWord {
		words := kExpectString
		if v.Kind == ValCPUs {
			words = kIllegalOperation
		}
		e := b.errorf(v.Off, v.End, words, "expected a string for %s", what)
		if v.Kind == ValNumber {
			e.Hint = fmt.Sprintf("quote it: \"%s\"", v.Text)
		}
		return nil, e
	}
	if fld := bp.Field; fld != nil && fld.Class == ClassStringPtr && p.Mod == "" && b.bf.Format.System == "syscalls" {
		b.warnf(p.FieldOff, p.FieldEnd, "%q of a syscall points to user memory: read as kernel memory it faults, and the predicate is false", fld.Name).
			WithHint("write %s.ustring", fld.Name)
	}
	if p.Op == CmpGlob {
		bp.Glob, bp.Negate = parseGlob(v.Str)
	} else {
		bp.Glob = Glob{Kind: GlobExact, Text: v.Str}
		bp.Negate = p.Op == CmpNE
	}
	maxLen := -1
	switch {
	case bp.Operand == OperandComm:
		maxLen = commMax
	case bp.Field.Class == ClassString:
		maxLen = bp.Field.Size
	}
	if maxLen >= 0 && bp.Glob.Kind != GlobFull && len(bp.Glob.Text) > maxLen {
		always := "false"
		if bp.Negate {
			always = "true"
		}
		b.warnf(v.Off, v.End, "string longer than %s can hold (%d bytes): the predicate is always %s", what, maxLen, always)
	}
	return bp, nil
}

// parseGlob analyses a ~ pattern as the kernel does: a leading '!'
// negates; *x, x* and *x* are the fast forms; ?, [, \ or an inner *
// make it a full shell glob.
func parseGlob(pat string) (Glob, bool) {
	neg := strings.HasPrefix(pat, "!")
	if neg {
		pat = pat[1:]
	}
	if strings.ContainsAny(pat, `?[\`) {
		return Glob{Kind: GlobFull, Text: pat}, neg
	}
	lead := strings.HasPrefix(pat, "*")
	body := strings.TrimPrefix(pat, "*")
	trail := strings.HasSuffix(body, "*")
	body = strings.TrimSuffix(body, "*")
	switch {
	case strings.Contains(body, "*"):
		return Glob{Kind: GlobFull, Text: pat}, neg
	case lead && trail:
		return Glob{Kind: GlobSubstr, Text: body}, neg
	case lead:
		return Glob{Kind: GlobSuffix, Text: body}, neg
	case trail:
		return Glob{Kind: GlobPrefix, Text: body}, neg
	}
	return Glob{Kind: GlobExact, Text: body}, neg
}

func (b *binder) bindCPUs(p *Pred, bp *BoundPred, what string) (*BoundPred, error) {
	if p.Op != CmpAnd && p.Op != CmpEQ && p.Op != CmpNE {
		return nil, b.errorf(p.OpOff, p.OpOff+len(p.Op.String()), kIllegalOperation, "%q does not apply to CPUS{} and %s", p.Op.String(), what).
			WithHint("CPU lists allow & (in the list), == and !=")
	}
	// The list was checked by the parser.
	bp.CPUs, _ = cpuRanges(p.Value.Str, MaxCPU)
	return bp, nil
}

func (b *binder) bindNumber(p *Pred, bp *BoundPred, what string) (*BoundPred, error) {
	v := p.Value
	if p.Op == CmpGlob {
		return nil, b.errorf(p.OpOff, p.OpOff+1, kExpectNumber, "\"~\" needs a string field, and %s is numeric", what).
			WithHint("numbers allow ==, !=, <, <=, >, >= and &")
	}
	switch v.Kind {
	case ValCPUs:
		bp.Compare = CompareCPUs
		return b.bindCPUs(p, bp, what)
	case ValString, ValWord:
		found := v.Text
		if v.Kind == ValWord {
			found = strconv.Quote(v.Text)
		}
		return nil, b.errorf(v.Off, v.End, kExpectNumber, "expected a number for %s, found %s", what, found)
	}
	bp.Compare = CompareNumber
	var raw uint64
	switch {
	case v.Neg && !bp.Signed:
		return nil, b.errorf(v.Off, v.End, kIllegalInteger, "negative value %s for unsigned %s", v.Text, what)
	case bp.Signed && !v.Neg && v.Num > math.MaxInt64, bp.Signed && v.Neg && v.Num > 1<<63:
		return nil, b.errorf(v.Off, v.End, kIllegalInteger, "%s out of range for signed %s", v.Text, what)
	case v.Neg:
		raw = -v.Num
	default:
		raw = v.Num
	}
	if bits := uint(8 * bp.Size); bits < 64 && (!v.Neg && v.Num>>bits != 0 || v.Neg && v.Num > 1<<(bits-1)) {
		return nil, b.errorf(v.Off, v.End, kIllegalInteger, "%s out of range for the %d-byte %s", v.Text, bp.Size, what).
			WithHint("the kernel would compare it cut to %d bits; give a value the field can hold", bits)
	}
	bp.Val = castInt(raw, bp.Size, bp.Signed)
	if bp.Val != raw {
		shown := strconv.FormatUint(bp.Val, 10)
		if bp.Signed {
			shown = strconv.FormatInt(int64(bp.Val), 10)
		}
		b.warnf(v.Off, v.End, "%s reads as %s in the %d-byte signed %s: it is compared as %s", v.Text, shown, bp.Size, what, shown)
	}
	digits := strings.TrimPrefix(v.Text, "-")
	if len(digits) > 1 && digits[0] == '0' && isDigit(digits[1]) {
		if dec, err := strconv.ParseUint(digits, 10, 64); err != nil || dec != v.Num {
			b.warnf(v.Off, v.End, "%s is octal (decimal %d)", v.Text, v.Num).
				WithHint("a leading 0 makes a number octal, as in the kernel; drop it for decimal")
		}
	}
	return bp, nil
}

// castInt truncates v to size bytes and extends it back to 64 bits, with
// the sign when signed: what a C cast to the field's type does.
func castInt(v uint64, size int, signed bool) uint64 {
	if size >= 8 {
		return v
	}
	sh := uint(64 - 8*size)
	if signed {
		return uint64(int64(v<<sh) >> sh)
	}
	return v << sh >> sh
}

// cInt is the width and signedness of a C integer type.
type cInt struct {
	size   int
	signed bool
}

// cIntTypes are the integer types whose width the binder knows. Syscall
// events store every argument in 8 bytes; the declared type says which
// of them count.
var cIntTypes = map[string]cInt{
	"char": {1, true}, "signed char": {1, true}, "unsigned char": {1, false},
	"bool": {1, false}, "_Bool": {1, false},
	"short": {2, true}, "short int": {2, true}, "signed short": {2, true},
	"unsigned short": {2, false}, "unsigned short int": {2, false},
	"int": {4, true}, "signed": {4, true}, "signed int": {4, true},
	"unsigned": {4, false}, "unsigned int": {4, false},
	"u8": {1, false}, "__u8": {1, false}, "uint8_t": {1, false},
	"s8": {1, true}, "__s8": {1, true}, "int8_t": {1, true},
	"u16": {2, false}, "__u16": {2, false}, "uint16_t": {2, false},
	"s16": {2, true}, "__s16": {2, true}, "int16_t": {2, true},
	"u32": {4, false}, "__u32": {4, false}, "uint32_t": {4, false},
	"s32": {4, true}, "__s32": {4, true}, "int32_t": {4, true},
	"pid_t": {4, true}, "uid_t": {4, false}, "gid_t": {4, false},
	"umode_t": {2, false}, "key_t": {4, true}, "clockid_t": {4, true},
	"mqd_t": {4, true}, "rwf_t": {4, true}, "qid_t": {4, false},
	"key_serial_t": {4, true},
}

func cIntType(t string) (cInt, bool) {
	for {
		s := strings.TrimPrefix(strings.TrimPrefix(t, "const "), "volatile ")
		if s == t {
			break
		}
		t = s
	}
	c, ok := cIntTypes[t]
	return c, ok
}

// unknownField reports a name that is neither a field of the event nor a
// pseudo-field, suggesting the closest name.
func (b *binder) unknownField(p *Pred) *Error {
	f := b.bf.Format
	e := b.errorf(p.FieldOff, p.FieldOff+len(p.Field), kFieldNotFound, "%q in %s", p.Field, f.FullName())
	var names []string
	for _, fld := range f.Fields {
		names = append(names, fld.Name)
	}
	for _, ps := range pseudoFields {
		names = append(names, ps.name)
	}
	if s := closestField(p.Field, names); s != "" {
		return e.WithHint("did you mean %q?", s)
	}
	var own []string
	for _, fld := range f.Fields {
		if !fld.Common {
			own = append(own, fld.Name)
		}
	}
	if len(own) == 0 {
		return e.WithHint("%s has only the common fields", f.FullName())
	}
	return e.WithHint("the fields of %s are %s", f.FullName(), strings.Join(own, ", "))
}

// closestField returns the name nearest to s by edit distance, comparing
// s also with each '_'-separated tail of a name (so "pdi" finds
// "prev_pid" through "pid"), or "" when nothing is close enough to be a
// likely typo. Ties go to the earlier name.
func closestField(s string, names []string) string {
	best, bestD, bestFull := "", len(s)/3+2, 0
	for _, n := range names {
		full := Distance(s, n)
		d := full
		for i := 0; i < len(n); i++ {
			if n[i] == '_' && i+1 < len(n) {
				d = min(d, Distance(s, n[i+1:]))
			}
		}
		if d < bestD || d == bestD && best != "" && full < bestFull {
			best, bestD, bestFull = n, d, full
		}
	}
	return best
}
