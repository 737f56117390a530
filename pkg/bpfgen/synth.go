package bpfgen

// Synthetic events: the kernel's synthetic events (grammar §7), which a
// hist's handler emits (onmatch(...).trace(...)), on eBPF. The synthetic
// event's record is built, as its derived format lays it out
// (parse.SynthDef.Format), in this CPU's entry of the scratch map, and
// is then an event like any other: the action runs its own actions with
// R6 = the record and the synthetic event's ID, as a program's skeleton
// runs an event's (the synthetic event's hist, its record into a
// recording's batch, a filter of its own in a GatedAction).
//
//	0    common fields: common_type = the synthetic event's ID, common_pid
//	8    each field in its slot: a number in 8 bytes (its size's bytes,
//	     the rest zero), a char[N] in 256 (at most 255 bytes and a NUL,
//	     zero after), a __data_loc word in 8 (offset | length << 16)
//	...  the dynamic fields' data, in field order: a string with its
//	     NUL, a stack's return addresses (at most StackDepth)
//
// The scratch map is a per-CPU array with an entry per depth: a
// synthetic event's own hist may emit another synthetic event, whose
// record is built one entry further, up to MaxSynthDepth. An entry holds
// the string references that a hist at that depth resolves
// (histvar.go), then the record of the synthetic event it emits. Nothing
// but a program on the same CPU uses the entry, and programs on a CPU
// nest only when a classic tracepoint's program runs inside a raw
// tracepoint's (record.go): such a nested event can overwrite the outer
// one's scratch, as it can its batch's busy word; a hist's scratch is
// used between its references' resolution and its handlers' end only.
//
// Register contract: on entry R6 is the event's record, R9 pid_tgid
// and, in a hist's handler, R8 the hist's entry (whose variables the
// parameters may read); R7 holds the record being built. R6 and R9 are
// restored at the end, and before each inner action.

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// ScratchMapName is the name of the scratch map.
const ScratchMapName = "scratch"

// Sizes of a scratch entry: the string references, then the record.
const (
	scratchRefs    = maxStringRefs * stringSlotSize
	SynthRecordMax = 4096 // the longest synthetic record, its dynamic data included
)

// MaxSynthDepth is how deep synthetic events nest: a synthetic event
// emitted by the hist of a synthetic event emitted by ... of an event.
const MaxSynthDepth = 3

// scratchMap is the spec of the scratch map.
func scratchMap() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: ScratchMapName, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: scratchRefs + SynthRecordMax, MaxEntries: MaxSynthDepth + 1}
}

// emitScratch leaves this CPU's scratch entry of depth d in R0, with
// the u32 at fp+key; jumps to miss if there is none. Clobbers R1-R5.
func emitScratch(b *Builder, d int, key int16, miss string) {
	b.Emit(asm.StoreImm(asm.R10, key, int64(d), asm.Word))
	emitLookup(b, ScratchMapName, key)
	b.Emit(asm.JEq.Imm(asm.R0, 0, miss))
}

// ParamSrc says where a synthetic event's field gets its value.
type ParamSrc int

// Sources of synthetic event fields.
const (
	ParamNumber ParamSrc = iota // SynthParam.Expr: fields, the pid, the time, constants, references, variables
	ParamString                 // SynthParam.Field: a string field of the event
	ParamVar                    // SynthParam.Index: a string or frames variable of the hist's entry
	ParamRef                    // SynthParam.Index: a string or frames reference the hist resolved
	ParamStack                  // the event's kernel stack, SynthParam.Skip frames left out
)

// SynthParam is the value of one field of a synthetic event.
type SynthParam struct {
	Src   ParamSrc
	Expr  *Expr        // ParamNumber
	Field *parse.Field // ParamString
	User  bool         // ParamString: a char * to user memory
	Index int          // ParamVar: in the layout's Vars; ParamRef: in its Refs
	Skip  int          // ParamStack
}

// SynthAction builds the record of a synthetic event and runs Actions on
// it (see the top of this file).
type SynthAction struct {
	Format  *parse.Format // the synthetic event's: parse.SynthDef.Format
	Params  []SynthParam  // one per field past the common ones, in order
	Actions []Action      // run on the record, with the synthetic event's ID
}

// Stack of a synthetic action, from its area's start: the saved R6, R9
// and record, the dynamic data's offset, a u32 key, then (outside a hist)
// its expressions' temporaries and time, then the inner actions' areas.
const (
	synthR6     = 0
	synthR9     = 8
	synthRecord = 16
	synthDyn    = 24
	synthKey    = 32
	synthFixed  = 40
)

func (a *SynthAction) stack() int {
	n := synthFixed + exprTime + 8
	for _, in := range a.Actions {
		n += in.stack()
	}
	return n
}

func (a *SynthAction) maps() []*ebpf.MapSpec {
	ms := []*ebpf.MapSpec{scratchMap()}
	for _, in := range a.Actions {
		ms = append(ms, in.maps()...)
	}
	return ms
}

// usesTime reports whether a parameter reads the time.
func (a *SynthAction) usesTime() bool {
	for _, p := range a.Params {
		if p.Src == ParamNumber && p.Expr.usesTime() {
			return true
		}
	}
	return false
}

// fields returns the synthetic event's fields past the common ones.
func (a *SynthAction) fields() []*parse.Field {
	var fs []*parse.Field
	for i := range a.Format.Fields {
		if !a.Format.Fields[i].Common {
			fs = append(fs, &a.Format.Fields[i])
		}
	}
	return fs
}

// check checks the parameters against the format's fields and returns
// the end of the fixed part and the most bytes of dynamic data.
func (a *SynthAction) check(f *Frame) (fixed, dynamic int, err error) {
	if a.Format == nil || a.Format.System != parse.SynthSystem {
		return 0, 0, fmt.Errorf("synthetic action: no synthetic event's format")
	}
	if a.Format.ID <= 0 || a.Format.ID > 0xffff {
		return 0, 0, fmt.Errorf("synthetic event %s: format ID %d does not fit common_type", a.Format.Name, a.Format.ID)
	}
	if f.depth >= MaxSynthDepth {
		return 0, 0, fmt.Errorf("synthetic event %s: synthetic events nest %d deep, at most %d", a.Format.Name, f.depth+1, MaxSynthDepth)
	}
	fs := a.fields()
	if len(fs) != len(a.Params) {
		return 0, 0, fmt.Errorf("synthetic event %s: %d fields, %d parameters", a.Format.Name, len(fs), len(a.Params))
	}
	fixed = parse.CommonSize
	for i, fld := range fs {
		p := a.Params[i]
		stack := true // the field is a stack (a variable's or reference's frames)
		bad := func(what string) error {
			return fmt.Errorf("synthetic event %s: field %s (%s) cannot take %s", a.Format.Name, fld.Name, fld.Class, what)
		}
		switch {
		case fld.Class == parse.ClassNumeric:
			if p.Src != ParamNumber || p.Expr == nil {
				return 0, 0, bad("a string or a stack")
			}
			fixed = max(fixed, fld.Offset+8)
		case fld.Class == parse.ClassString:
			if p.Src == ParamNumber || p.Src == ParamStack {
				return 0, 0, bad("a number or a stack")
			}
			fixed = max(fixed, fld.Offset+stringSlotSize)
			stack = false
		case fld.Class == parse.ClassDataLoc && isStackField(fld):
			if p.Src == ParamNumber || p.Src == ParamString {
				return 0, 0, bad("a number or a string")
			}
			if p.Src == ParamStack && f.depth > 0 {
				return 0, 0, fmt.Errorf("synthetic event %s: field %s: a stack is taken from an event's context, not from a synthetic event's record", a.Format.Name, fld.Name)
			}
			dynamic += 8 * StackDepth
			fixed = max(fixed, fld.Offset+8)
		case fld.Class == parse.ClassDataLoc:
			if p.Src == ParamNumber || p.Src == ParamStack {
				return 0, 0, bad("a number or a stack")
			}
			dynamic += stringSlotSize
			fixed = max(fixed, fld.Offset+8)
			stack = false
		default:
			return 0, 0, bad("a value")
		}
		if err := a.checkSource(f, p, stack); err != nil {
			return 0, 0, fmt.Errorf("synthetic event %s: field %s: %w", a.Format.Name, fld.Name, err)
		}
	}
	if fixed+dynamic > SynthRecordMax {
		return 0, 0, fmt.Errorf("synthetic event %s: its record takes up to %d bytes, at most %d", a.Format.Name, fixed+dynamic, SynthRecordMax)
	}
	return fixed, dynamic, nil
}

// isStackField reports whether a synthetic event's __data_loc field is a
// stack (long[] or unsigned long[]) rather than a string (char[]).
func isStackField(f *parse.Field) bool {
	return strings.HasSuffix(f.Type, "long[]")
}

// checkSource checks that a string parameter's source, or a stack
// field's variable or reference, is at hand; stack says which the field
// takes.
func (a *SynthAction) checkSource(f *Frame, p SynthParam, stack bool) error {
	what, kind := "a string", VarString
	if stack {
		what, kind = "a stack", VarFrames
	}
	switch p.Src {
	case ParamString:
		if p.Field == nil || !p.Field.Class.IsString() && p.Field.Class != parse.ClassStringPtr {
			return fmt.Errorf("no string field")
		}
	case ParamVar:
		if f.env == nil || p.Index < 0 || p.Index >= len(f.env.vars) || f.env.vars[p.Index].Kind != kind {
			return fmt.Errorf("variable %d is not %s of the hist's entry at hand", p.Index, what)
		}
	case ParamRef:
		if f.env == nil || p.Index < 0 || p.Index >= len(f.env.strRefs) || f.env.strRefs[p.Index] < 0 || f.env.refKinds[p.Index] != kind {
			return fmt.Errorf("reference %d is not %s the hist resolved", p.Index, what)
		}
	}
	return nil
}

// emit: R7 = the record in the scratch map; each field; the common
// fields; then the inner actions with R6 = the record.
func (a *SynthAction) emit(b *Builder, f *Frame) error {
	fixed, dynamic, err := a.check(f)
	if err != nil {
		return err
	}
	base := f.Area.Off
	key := base + synthKey
	env := exprEnv{tmp: base + synthFixed, clock: base + synthFixed + exprTime}
	if f.env != nil {
		env = *f.env
	} else if a.usesTime() {
		b.Comment("the event's time, common_timestamp")
		b.Emit(asm.FnKtimeGetNs.Call(), asm.StoreMem(asm.R10, env.clock, asm.R0, asm.DWord))
	}
	end := b.Label("synth_end")
	b.Comment("synthetic event %s: R7 = its record in the scratch map", a.Format.Name)
	emitScratch(b, f.depth, key, f.Next)
	b.Emit(
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.Add.Imm(asm.R7, scratchRefs),
		storeImm64(asm.R10, base+synthDyn, int32(fixed)),
	)
	for i, fld := range a.fields() {
		if err := a.emitField(b, f, env, fld, a.Params[i], end); err != nil {
			return err
		}
	}
	emitCommon(b, asm.R7, 0, EventID{Const: a.Format.ID})
	b.Emit(
		asm.StoreMem(asm.R10, base+synthR6, asm.R6, asm.DWord),
		asm.StoreMem(asm.R10, base+synthR9, asm.R9, asm.DWord),
		asm.StoreMem(asm.R10, base+synthRecord, asm.R7, asm.DWord),
	)
	off := base + synthFixed + exprTime + 8
	for _, in := range a.Actions {
		next := b.Label("synth_next")
		b.Comment("R6 = the record of %s", a.Format.Name)
		b.Emit(
			asm.LoadMem(asm.R6, asm.R10, base+synthRecord, asm.DWord),
			asm.LoadMem(asm.R9, asm.R10, base+synthR9, asm.DWord),
		)
		n := int16(in.stack())
		fr := &Frame{Area: StackArea{Off: off, Size: n}, Next: next, Out: next, ID: EventID{Const: a.Format.ID}, Scratch: f.Scratch, depth: f.depth + 1}
		if err := in.emit(b, fr); err != nil {
			return err
		}
		b.Mark(next)
		off += n
	}
	b.Emit(
		asm.LoadMem(asm.R6, asm.R10, base+synthR6, asm.DWord),
		asm.LoadMem(asm.R9, asm.R10, base+synthR9, asm.DWord),
	)
	if dynamic > 0 {
		b.Emit(asm.Ja.Label(f.Next))
		b.Mark(end)
		b.Comment("no room for the dynamic data (never: bounds it for the verifier)")
	}
	if f.Next != f.Out || dynamic > 0 {
		b.Emit(asm.Ja.Label(f.Next))
	}
	return nil
}

// emitField fills one field of the record at R7. Clobbers R0-R5.
func (a *SynthAction) emitField(b *Builder, f *Frame, env exprEnv, fld *parse.Field, p SynthParam, end string) error {
	off := int16(fld.Offset)
	switch fld.Class {
	case parse.ClassNumeric:
		b.Comment("%s = number", fld.Name)
		if err := emitExpr(b, p.Expr, env); err != nil {
			return err
		}
		b.Emit(storeImm64(asm.R7, off, 0))
		size := map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}[fld.Size]
		if size == asm.InvalidSize {
			return fmt.Errorf("synthetic event %s: field %s of %d bytes", a.Format.Name, fld.Name, fld.Size)
		}
		b.Emit(asm.StoreMem(asm.R7, off, asm.R0, size))
		return nil
	case parse.ClassString:
		b.Comment("%s = string", fld.Name)
		if p.Src == ParamString {
			return emitCopyString(b, asm.R7, off, stringSlotSize, p.Field, p.User)
		}
		zero(b, asm.R7, off, stringSlotSize)
		b.Emit(asm.Mov.Reg(asm.R1, asm.R7), asm.Add.Imm(asm.R1, int32(off)))
		a.emitStringSource(b, f, p)
		b.Emit(asm.Mov.Imm(asm.R2, stringSlotSize), asm.FnProbeReadKernelStr.Call())
		return nil
	}
	// __data_loc: the data at the dynamic offset, R4 = its length.
	dyn := f.Area.Off + synthDyn
	b.Emit(
		asm.LoadMem(asm.R1, asm.R10, dyn, asm.DWord),
		asm.JGT.Imm(asm.R1, int32(SynthRecordMax-stringSlotSize), end),
		asm.Add.Reg(asm.R1, asm.R7),
	)
	got := b.Label("loc")
	switch {
	case isStackField(fld):
		if err := a.emitStack(b, f, fld, p, got); err != nil {
			return err
		}
	default:
		b.Comment("%s = string (__data_loc)", fld.Name)
		switch p.Src {
		case ParamString:
			if err := emitStringPtr(b, p.Field); err != nil {
				return err
			}
		default:
			a.emitStringSource(b, f, p)
		}
		// R1 is the data, R3 the string; the helper is in R0's place.
		b.Emit(
			asm.StoreMem(asm.R10, f.Area.Off+synthKey, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R2, stringSlotSize),
		)
		if p.Src == ParamString && p.Field.Class == parse.ClassStringPtr && p.User {
			b.Emit(asm.FnProbeReadUserStr.Call())
		} else {
			b.Emit(asm.FnProbeReadKernelStr.Call())
		}
		b.Emit(
			asm.Mov.Reg(asm.R4, asm.R0),
			asm.JSGT.Imm(asm.R4, 0, got),
		)
		b.Comment("unreadable: the empty string")
		b.Emit(
			asm.LoadMem(asm.R1, asm.R10, f.Area.Off+synthKey, asm.DWord),
			asm.StoreImm(asm.R1, 0, 0, asm.Byte),
			asm.Mov.Imm(asm.R4, 1),
		)
	}
	b.Mark(got)
	b.Comment("%s's __data_loc: offset | length << 16", fld.Name)
	b.Emit(
		asm.LoadMem(asm.R1, asm.R10, dyn, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R4),
		asm.LSh.Imm(asm.R2, 16),
		asm.Or.Reg(asm.R2, asm.R1),
		storeImm64(asm.R7, off, 0),
		asm.StoreMem(asm.R7, off, asm.R2, asm.Word),
		asm.Add.Reg(asm.R1, asm.R4),
		asm.StoreMem(asm.R10, dyn, asm.R1, asm.DWord),
	)
	return nil
}

// synthFrames is the most frames of a synthetic stack field: the
// kernel's HIST_STACKTRACE_DEPTH longs, the first the count.
const synthFrames = StackDepth - 1

// emitStack fills the data of stack field fld at R1 as the kernel's
// trace_stack does: the number of frames N in a long, then the N frames
// (at most synthFrames), R4 = 8*(N+1), or 0 when there is none; then
// jumps to got. The frames are the event's stack (ParamStack) or those
// of a frames variable or reference, counted up to the first zero.
// Clobbers R0-R5.
func (a *SynthAction) emitStack(b *Builder, f *Frame, fld *parse.Field, p SynthParam, got string) error {
	data := f.Area.Off + synthKey
	b.Emit(asm.StoreMem(asm.R10, data, asm.R1, asm.DWord))
	none := b.Label("no_frames")
	if p.Src == ParamStack {
		b.Comment("%s = the count, then the stack: bpf_get_stack(ctx, data+8, %d, skip %d)", fld.Name, 8*synthFrames, p.Skip)
		b.Emit(
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.Add.Imm(asm.R2, 8),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R3, 8*synthFrames),
			asm.Mov.Imm(asm.R4, int32(p.Skip&bpfFSkipMask)),
			asm.FnGetStack.Call(),
			asm.Mov.Reg(asm.R4, asm.R0),
			asm.JSLE.Imm(asm.R4, 0, none),
		)
	} else {
		b.Comment("%s = the count, then the frames of a variable or reference (%d bytes copied, counted up to the first zero)", fld.Name, 8*synthFrames)
		b.Emit(asm.Add.Imm(asm.R1, 8))
		a.emitStringSource(b, f, p)
		b.Emit(
			asm.Mov.Imm(asm.R2, 8*synthFrames),
			asm.FnProbeReadKernel.Call(),
			asm.LoadMem(asm.R1, asm.R10, data, asm.DWord),
			asm.Mov.Imm(asm.R4, 0),
		)
		counted := b.Label("counted")
		for range synthFrames {
			b.Emit(
				asm.LoadMem(asm.R2, asm.R1, 8, asm.DWord),
				asm.JEq.Imm(asm.R2, 0, counted),
				asm.Add.Imm(asm.R4, 8),
				asm.Add.Imm(asm.R1, 8),
			)
		}
		b.Mark(counted)
		b.Emit(asm.JEq.Imm(asm.R4, 0, none))
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.R10, data, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R4),
		asm.RSh.Imm(asm.R2, 3),
		asm.StoreMem(asm.R1, 0, asm.R2, asm.DWord),
		asm.Add.Imm(asm.R4, 8),
		asm.Ja.Label(got),
	)
	b.Mark(none)
	b.Emit(asm.Mov.Imm(asm.R4, 0), asm.Ja.Label(got))
	return nil
}

// emitStringSource leaves in R3 the string of a ParamVar (in the entry
// at R8) or a ParamRef (in the scratch map; R1 is kept on the stack
// meanwhile). Clobbers R0-R5 but R1.
func (a *SynthAction) emitStringSource(b *Builder, f *Frame, p SynthParam) {
	if p.Src == ParamVar {
		b.Emit(asm.Mov.Reg(asm.R3, asm.R8), asm.Add.Imm(asm.R3, int32(f.env.vars[p.Index].Off)))
		return
	}
	// The scratch entry: R7 is its record, scratchRefs past its start.
	b.Emit(asm.Mov.Reg(asm.R3, asm.R7), asm.Add.Imm(asm.R3, int32(stringSlotSize*f.env.strRefs[p.Index]-scratchRefs)))
}

// emitStringPtr leaves in R3 the address of a string field of the record
// (R6): the pointer of a char *, the array of a char[N], the data of a
// __data_loc or __rel_loc. Clobbers R2, R3, R5.
func emitStringPtr(b *Builder, f *parse.Field) error {
	switch f.Class {
	case parse.ClassStringPtr:
		loadField(b, asm.R3, f)
	case parse.ClassString:
		b.Emit(asm.Mov.Reg(asm.R3, asm.R6), asm.Add.Imm(asm.R3, int32(f.Offset)))
	case parse.ClassDataLoc, parse.ClassRelLoc:
		b.Emit(
			asm.LoadMem(asm.R2, asm.R6, int16(f.Offset), asm.Word),
			asm.And.Imm(asm.R2, 0xffff),
		)
		if f.Class == parse.ClassRelLoc {
			b.Emit(asm.Add.Imm(asm.R2, int32(f.Offset+4)))
		}
		b.Emit(asm.Mov.Reg(asm.R3, asm.R6), asm.Add.Reg(asm.R3, asm.R2))
	default:
		return fmt.Errorf("field %s (%s) is not a string", f.Name, f.Class)
	}
	return nil
}
