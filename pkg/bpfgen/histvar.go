package bpfgen

// Hist variables and references: the kernel's name=expr and $name of
// inter-event hists (grammar §4.4), on eBPF.
//
// A variable is a slot in the value of each entry of its hist, beside
// the hitcount and the sums, and a bit in the entry's word of set bits
// (HistLayout.SetOff). The hist's action computes the variable when it
// updates the entry (an Expr over the record, as a value is; a string
// field copied; the frames of a kernel stack) and stores it there, then
// sets its bit with an atomic or.
//
// A reference is a variable of a hist, read by an event of another hist
// (or the same one) in the entry of its own key: the binding lays both
// keys out alike, so the key bytes that the action builds are the key to
// look up in the referenced hist's map, which the collection shares by
// name. Before it counts, the action resolves every reference: one
// lookup per referenced map, then each variable's set bit; a number is
// copied into a slot of the action's frame, a string or a stack's frames
// into the scratch map (synth.go). Any miss skips the event: no hit, no
// drop, no handler. Once all resolved, each read-once reference clears
// its bit with an atomic and. Two CPUs that resolve the same variable at
// once may both read it before either clears it; the kernel's
// tracing_map has the same window.
//
// Stores are plain stores into the entry, not atomic with its update: a
// CPU that reads a variable while another stores it may see a string
// half copied. The kernel's variables are no more atomic than that.

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// VarKind is what a hist variable holds.
type VarKind int

// Kinds of hist variables.
const (
	VarNumber VarKind = iota // a u64: VarSlot.Expr
	VarString                // a string of at most Size-1 bytes and a NUL: VarSlot.Field copied
	// VarFrames: the frames of a kernel stack, innermost first, zero
	// after the last (at most StackDepth): the event's own (bpf_get_stack
	// of its context, Skip frames left out), or, with FromRef, those of
	// the frames variable that reference Ref reads. A stack-trace map's
	// frames cannot be read back by a program (its lookup is
	// -EOPNOTSUPP), so a stack that a reference passes on is its frames.
	VarFrames
)

// FramesSize is the bytes of a stack's frames: a frames variable's slot,
// a frames key.
const FramesSize = 8 * StackDepth

// VarSlot is a variable in each entry of a hist.
type VarSlot struct {
	Name  string
	Kind  VarKind
	Expr  *Expr        // VarNumber: the number stored
	Field *parse.Field // VarString: a string field of the record (char[N], __data_loc, __rel_loc, char *)
	User  bool         // VarString: a char * to user memory
	Skip  int          // VarFrames: the innermost frames left out (StackSkip)
	// FromRef: a VarFrames variable copies the frames of reference Ref
	// (an index in the layout's Refs), as name=$ref.
	FromRef bool
	Ref     int
	Off     int // offset in the entry's value
	Size    int // 8; a string's slot: a multiple of 8, at most 256; FramesSize
}

// RefSlot is a reference: a variable of a hist that this hist's events
// read in the entry of their own key.
type RefSlot struct {
	Map    string      // the referenced hist's map name
	Target *HistLayout // its layout: the same KeySize as the hist's
	Var    int         // the variable, an index in Target.Vars
	// ReadOnce: the variable is consumed (a reference in an
	// expression): its bit is cleared once all the event's references
	// resolved.
	ReadOnce bool
}

// maxVars is the most variables of a hist: the bits of the set word.
const maxVars = 64

// maxStringRefs is the most string references a hist resolves: their
// slots in the scratch map.
const maxStringRefs = 16

func (r *RefSlot) slot() *VarSlot { return &r.Target.Vars[r.Var] }

// histMap is the spec of the hash map of a hist laid out as l.
func histMap(name string, l *HistLayout) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: name, Type: ebpf.Hash, KeySize: uint32(l.KeySize), ValueSize: uint32(l.ValueSize), MaxEntries: uint32(l.MaxEntries)}
}

// checkVars checks the variables, references and tracks of a layout.
func (l *HistLayout) checkVars() error {
	if len(l.Vars) > maxVars {
		return fmt.Errorf("hist layout: %d variables, at most %d", len(l.Vars), maxVars)
	}
	inValue := func(what string, off, size int) error {
		if off < 8 || off%8 != 0 || off+size > l.ValueSize {
			return fmt.Errorf("hist layout: %s at %d (%d bytes) is not an aligned slot of the %d-byte value past the hitcount", what, off, size, l.ValueSize)
		}
		return nil
	}
	if len(l.Vars) > 0 {
		if err := inValue("the set word", l.SetOff, 8); err != nil {
			return err
		}
	}
	for i, v := range l.Vars {
		switch {
		case v.Kind == VarNumber && (v.Expr == nil || v.Size != 8),
			v.Kind == VarString && (v.Field == nil || !v.Field.Class.IsString() && v.Field.Class != parse.ClassStringPtr || v.Size < 8 || v.Size > stringSlotSize || v.Size%8 != 0),
			v.Kind == VarFrames && (v.Size != FramesSize || v.FromRef && (v.Ref < 0 || v.Ref >= len(l.Refs) || l.Refs[v.Ref].Target == nil ||
				l.Refs[v.Ref].Var < 0 || l.Refs[v.Ref].Var >= len(l.Refs[v.Ref].Target.Vars) || l.Refs[v.Ref].slot().Kind != VarFrames)),
			v.Kind < VarNumber || v.Kind > VarFrames:
			return fmt.Errorf("hist layout: variable %s (%d) is not a number, a string or a stack as its kind says", v.Name, i)
		}
		if err := inValue("variable "+v.Name, v.Off, v.Size); err != nil {
			return err
		}
	}
	strs := 0
	for i, r := range l.Refs {
		if r.Target == nil || r.Var < 0 || r.Var >= len(r.Target.Vars) || r.Map == "" {
			return fmt.Errorf("hist layout: reference %d names no variable of a hist", i)
		}
		if r.Target.KeySize != l.KeySize {
			return fmt.Errorf("hist layout: reference %d to %s: its hist's key takes %d bytes, this one's %d", i, r.slot().Name, r.Target.KeySize, l.KeySize)
		}
		if r.slot().inScratch() {
			strs++
		}
	}
	if strs > maxStringRefs {
		return fmt.Errorf("hist layout: %d string and stack references, at most %d", strs, maxStringRefs)
	}
	return l.checkTracks(inValue)
}

// refGroups returns, for each reference, the index of its map among the
// distinct maps the references name, and their number.
func (l *HistLayout) refGroups() (group []int, n int) {
	seen := map[string]int{}
	for _, r := range l.Refs {
		g, ok := seen[r.Map]
		if !ok {
			g = len(seen)
			seen[r.Map] = g
		}
		group = append(group, g)
	}
	return group, len(seen)
}

// inScratch reports whether a reference to v resolves into the scratch
// map: a string, a stack's frames.
func (v *VarSlot) inScratch() bool { return v.Kind == VarString || v.Kind == VarFrames }

// stringRefs returns the slot of each string or frames reference in the
// scratch map's strings, -1 for the others.
func (l *HistLayout) stringRefs() []int {
	slots := make([]int, len(l.Refs))
	n := 0
	for i := range l.Refs {
		slots[i] = -1
		if l.Refs[i].slot().inScratch() {
			slots[i] = n
			n++
		}
	}
	return slots
}

// refKinds returns the kind of variable each reference reads.
func (l *HistLayout) refKinds() []VarKind {
	kinds := make([]VarKind, len(l.Refs))
	for i := range l.Refs {
		kinds[i] = l.Refs[i].slot().Kind
	}
	return kinds
}

// refMaps are the specs of the maps the references name.
func (l *HistLayout) refMaps() []*ebpf.MapSpec {
	var ms []*ebpf.MapSpec
	seen := map[string]bool{}
	for _, r := range l.Refs {
		if !seen[r.Map] {
			seen[r.Map] = true
			ms = append(ms, histMap(r.Map, r.Target))
		}
	}
	return ms
}

// emitResolve resolves the references of l with the key at R7: the
// referenced entries' pointers go to fp+ptrs (8 bytes per map), numbers
// to fp+refs (8 bytes per reference), strings to this depth's scratch
// entry; a miss jumps to skip. Then it clears the read-once references'
// bits. fp+key is a free u32. Clobbers R0-R5.
func emitResolve(b *Builder, l *HistLayout, ptrs, refs, key int16, depth int, skip string) {
	group, n := l.refGroups()
	done := make([]bool, n)
	for i, r := range l.Refs {
		g := group[i]
		if done[g] {
			continue
		}
		done[g] = true
		b.Comment("the entry of this key in %s", r.Map)
		b.Emit(
			asm.LoadMapPtr(asm.R1, 0).WithReference(r.Map),
			asm.Mov.Reg(asm.R2, asm.R7),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, skip),
			asm.StoreMem(asm.R10, ptrs+int16(8*g), asm.R0, asm.DWord),
		)
	}
	strs := l.stringRefs()
	for i, r := range l.Refs {
		v := r.slot()
		b.Comment("reference %s.$%s: set?", r.Map, v.Name)
		b.Emit(
			asm.LoadMem(asm.R1, asm.R10, ptrs+int16(8*group[i]), asm.DWord),
			asm.LoadMem(asm.R2, asm.R1, int16(r.Target.SetOff), asm.DWord),
			asm.RSh.Imm(asm.R2, int32(r.Var)),
			asm.And.Imm(asm.R2, 1),
			asm.JEq.Imm(asm.R2, 0, skip),
		)
		if !v.inScratch() {
			b.Emit(
				asm.LoadMem(asm.R2, asm.R1, int16(v.Off), asm.DWord),
				asm.StoreMem(asm.R10, refs+int16(8*i), asm.R2, asm.DWord),
			)
			continue
		}
		b.Comment("copy the string or frames to the scratch map's slot %d", strs[i])
		emitScratch(b, depth, key, skip)
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Add.Imm(asm.R1, int32(stringSlotSize*strs[i])),
			asm.Mov.Imm(asm.R2, int32(v.Size)),
			asm.LoadMem(asm.R3, asm.R10, ptrs+int16(8*group[i]), asm.DWord),
			asm.Add.Imm(asm.R3, int32(v.Off)),
			asm.FnProbeReadKernel.Call(),
			asm.JNE.Imm(asm.R0, 0, skip),
		)
	}
	for i, r := range l.Refs {
		if !r.ReadOnce {
			continue
		}
		b.Comment("read once: clear %s.$%s", r.Map, r.slot().Name)
		b.Emit(
			asm.LoadMem(asm.R1, asm.R10, ptrs+int16(8*group[i]), asm.DWord),
			asm.LoadImm(asm.R2, int64(^(uint64(1)<<r.Var)), asm.DWord),
			atomicOp(asm.AndAtomic, asm.R1, asm.R2, int16(r.Target.SetOff)),
		)
	}
}

// emitVarStores stores the variables of l into the entry at R8 and sets
// their bits. R6 is the record (the context, for the event's stack),
// depth the synthetic events deep the hist is (a frames variable's
// reference is in the scratch entry of that depth); the u32 at fp+env.tmp
// is free. Clobbers R0-R5.
func emitVarStores(b *Builder, l *HistLayout, env exprEnv, depth int) error {
	var always uint64
	for i, v := range l.Vars {
		off := int16(v.Off)
		switch v.Kind {
		case VarNumber:
			b.Comment("variable %s", v.Name)
			if err := emitExpr(b, v.Expr, env); err != nil {
				return err
			}
			b.Emit(asm.StoreMem(asm.R8, off, asm.R0, asm.DWord))
		case VarString:
			b.Comment("variable %s (string)", v.Name)
			if err := emitCopyString(b, asm.R8, off, v.Size, v.Field, v.User); err != nil {
				return err
			}
		case VarFrames:
			if err := emitFramesVar(b, &v, env, depth); err != nil {
				return err
			}
		}
		always |= 1 << i
	}
	if always != 0 {
		b.Comment("set the variables' bits")
		b.Emit(
			asm.LoadImm(asm.R1, int64(always), asm.DWord),
			atomicOp(asm.OrAtomic, asm.R8, asm.R1, int16(l.SetOff)),
		)
	}
	return nil
}

// emitFramesVar stores the frames of variable v into the entry at R8:
// the event's kernel stack, which bpf_get_stack writes zero-padded to
// FramesSize (all zero when it has none), or the frames of v's reference
// in the scratch entry of depth. Clobbers R0-R5.
func emitFramesVar(b *Builder, v *VarSlot, env exprEnv, depth int) error {
	if !v.FromRef {
		if depth > 0 {
			return fmt.Errorf("variable %s: a stack is taken from an event's context, not from a synthetic event's record", v.Name)
		}
		b.Comment("variable %s (frames): bpf_get_stack(ctx, entry, %d, skip %d)", v.Name, FramesSize, v.Skip)
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Reg(asm.R2, asm.R8),
			asm.Add.Imm(asm.R2, int32(v.Off)),
			asm.Mov.Imm(asm.R3, FramesSize),
			asm.Mov.Imm(asm.R4, int32(v.Skip&bpfFSkipMask)),
			asm.FnGetStack.Call(),
		)
		return nil
	}
	if v.Ref < 0 || v.Ref >= len(env.strRefs) || env.strRefs[v.Ref] < 0 {
		return fmt.Errorf("variable %s: reference %d is not a stack the hist resolved", v.Name, v.Ref)
	}
	next := b.Label("frames_next")
	b.Comment("variable %s (frames) = reference %d's, from the scratch map", v.Name, v.Ref)
	emitScratch(b, depth, env.tmp, next)
	b.Emit(
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Add.Imm(asm.R3, int32(stringSlotSize*env.strRefs[v.Ref])),
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Add.Imm(asm.R1, int32(v.Off)),
		asm.Mov.Imm(asm.R2, FramesSize),
		asm.FnProbeReadKernel.Call(),
	)
	b.Mark(next)
	return nil
}

// emitCopyString copies a string field of the record (R6) into the size
// bytes at dst+off, zeroed first: at most size-1 bytes (a char[N]: N)
// and a NUL, as the kernel's strncpy into its slot. Clobbers R0-R5.
func emitCopyString(b *Builder, dst asm.Register, off int16, size int, f *parse.Field, user bool) error {
	zero(b, dst, off, size)
	n := size - 1
	if f.Class == parse.ClassString {
		n = min(n, f.Size)
	}
	if err := emitStringPtr(b, f); err != nil {
		return err
	}
	fn := asm.FnProbeReadKernelStr
	if f.Class == parse.ClassStringPtr && user {
		fn = asm.FnProbeReadUserStr
	}
	b.Emit(
		asm.Mov.Reg(asm.R1, dst),
		asm.Add.Imm(asm.R1, int32(off)),
		asm.Mov.Imm(asm.R2, int32(n+1)),
		fn.Call(),
	)
	return nil
}

// emitStackID leaves in R0 the id of the event's kernel stack (SrcStack)
// or user stack, the tgid in its high half (SrcUStack), in the stack map;
// jumps to fail when the helper has none. R6 is the context, R9
// pid_tgid. Clobbers R0-R5.
func emitStackID(b *Builder, src KeySrc, skip int, fail string) {
	flags := int32(skip)
	if src == SrcUStack {
		flags = userStackFlag
	}
	b.Emit(
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMapPtr(asm.R2, 0).WithReference(StacksMapName),
		asm.Mov.Imm(asm.R3, flags),
		asm.FnGetStackid.Call(),
		asm.JSLT.Imm(asm.R0, 0, fail),
	)
	if src == SrcUStack {
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.R9),
			asm.RSh.Imm(asm.R1, 32),
			asm.LSh.Imm(asm.R1, 32),
			asm.Or.Reg(asm.R0, asm.R1),
		)
	}
}

// atomicOp is an atomic operation on the u64 at dst+off. cilium/ebpf
// (v0.22) marshals an atomic instruction's immediate from its Constant,
// which it leaves 0 (an add): the operation is set here.
func atomicOp(op asm.AtomicOp, dst, src asm.Register, off int16) asm.Instruction {
	ins := op.Mem(dst, src, asm.DWord, off)
	ins.Constant = int64(op >> 8)
	return ins
}
