package bpfgen

import (
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// KeySrc says where a key comes from.
type KeySrc int

// Sources of hist keys and values.
const (
	SrcField  KeySrc = iota // a field of the record
	SrcPID                  // the current task's pid (the kernel's common_pid)
	SrcCPU                  // the CPU the event ran on (common_cpu)
	SrcComm                 // the current task's name (comm), 16 bytes
	SrcStack                // the kernel stack's id in the stack map (hist_stack.go)
	SrcUStack               // the user stack's id in the stack map, the tgid in the high half
	SrcTime                 // the time, common_timestamp (HistLayout.Clock)
	SrcConst                // a constant (Expr.Const)
	SrcExpr                 // computed by KeySlot.Expr
	SrcRef                  // a resolved reference (Expr.Ref): in expressions only
	SrcVar                  // a variable of the entry (Expr.Var): in expressions only
)

// KeyOp transforms a numeric key before it is stored.
type KeyOp int

// Key transforms.
const (
	OpNone    KeyOp = iota
	OpLog2          // ilog2(roundup_pow_of_two(v)); 0 and 1 give 0
	OpBuckets       // (v / N) * N
)

// KeySlot is one key in the hist map's key.
type KeySlot struct {
	Src     KeySrc
	Field   *parse.Field // SrcField
	Op      KeyOp
	Buckets uint64 // OpBuckets: N > 0
	Off     int    // offset in the key
	Size    int    // 8 for numbers; the string slot's size (a multiple of 8) for strings; FramesSize for frames (Frames)
	Skip    int    // SrcStack: the innermost frames to leave out (StackSkip)
	Expr    *Expr  // SrcExpr
	// User: the field is a char * to user memory (a syscall's), read
	// with bpf_probe_read_user_str; other char * fields point to kernel
	// memory.
	User bool
}

// ValSlot is one summed value; the hit count is always the value's first
// u64 and is not a slot.
type ValSlot struct {
	Field *parse.Field // the field summed, when Expr is nil
	Expr  *Expr        // the number summed, when not nil
	Off   int          // offset in the map value (>= 8)
}

// HistLayout is how a hist lays out its entries in the BPF hash map: the
// bytes of the key, the value (hitcount, sums, saved comm) and the table's
// size. It is pure data: the file engine fills the same layout in user
// space.
type HistLayout struct {
	Keys       []KeySlot
	KeySize    int
	Vals       []ValSlot
	ValueSize  int   // hitcount + sums (+ comm)
	CommOff    int   // >= 0: save the task name here when an entry is created
	MaxEntries int   // the hist's size
	Clock      Clock // the clock of SrcTime operands
	// DropSums: an event that finds no entry (counted in the drop
	// counter) also adds each of its values to the dropped-sums map
	// (DropSumsMapName), a per-CPU array of one entry of one u64 per
	// value, in Vals order: the totals that .percent of a sum divides
	// by. Without it the program and its maps are as before.
	DropSums bool
	// Vars are the hist's variables (histvar.go): each entry holds
	// their values, set by the events that update it, and, at SetOff,
	// a u64 of set bits, bit i for Vars[i].
	Vars   []VarSlot
	SetOff int
	// Refs are the variables of other hists (or this one) that an event
	// reads, in the entry of its own key, before it counts: an event
	// whose references do not all resolve is skipped (histvar.go).
	Refs []RefSlot
	// Tracks are the onmax and onchange handlers' per-entry values
	// (histtrack.go).
	Tracks []TrackSlot
}

// HistSpec describes a hist program for one event.
type HistSpec struct {
	HistLayout
	Filter *parse.BoundFilter // nil: every event counts
	Gate   Gate
	// Follow, when not nil, counts only the processes in the follow map
	// and adds the programs that keep it (follow.go). Not with
	// Gate.OnlyTGIDs.
	Follow *FollowSpec
	// Direct, when not nil, puts the program on the raw tracepoint that
	// DirectTracepoint names for Event, if any, building the record on
	// the stack (see direct.go), when the key and value leave room for
	// it. Loading it needs the kernel's BTF.
	Direct *DirectOptions
	Event  *parse.Format
	// Source, when not nil, builds the event's records: a probe
	// event's (NewProbe). nil: the event's tracepoint, or Direct.
	Source Source
	// Control, when not nil, puts the hist in a session with a control
	// map (control.go): it counts only while tracing is on, its event is
	// enabled and it is not paused, and runs its event's triggers.
	Control *HistControl
}

// HistControl is a hist's part of a session's control map.
type HistControl struct {
	Map      *ebpf.MapSpec   // the session's control map (SessionControl)
	Layout   *Control        // its layout
	Event    int             // the hist's event in the session: its soft-disable word
	Hist     int             // the hist in the session: its paused word
	Triggers []RecordTrigger // the triggers this hist's program runs
	First    int             // the session's number of the first of Triggers
	// Recording: the hist is a hist trigger of a recording, which
	// counts whether tracing is on or off, as the kernel's hist
	// triggers do not look at tracing_on, and stops with the
	// recording's off switch (ControlOff). Its triggers are the
	// recording's: it has none of its own.
	Recording bool
}

// HistTracepoint returns the raw tracepoint that Hist puts the program of
// s on, or "" when it is on the event's classic tracepoint.
func HistTracepoint(s *HistSpec) string {
	if d := histDirect(s); d != nil {
		return d.b.tracepoint
	}
	return ""
}

func histDirect(s *HistSpec) *Direct {
	if s.Source != nil || s.Direct == nil || s.HasStack() || s.Event == nil || s.stackSize() > maxStack-directRecordMax {
		return nil
	}
	return NewDirect(s.Event, s.Direct)
}

// Names of the objects in a hist collection.
const (
	HistMapName     = "hist"
	DropsMapName    = "drops"
	DropSumsMapName = "dropsums"
	HistProgName    = "gtrace_hist"
	maxStack        = 512
	stringSlotSize  = 256 // the kernel's MAX_FILTER_STR_VAL
)

// CommLen is the size of a task name (TASK_COMM_LEN).
const CommLen = 16

// StringSlotSize returns the key slot size for a string field: the static
// array plus a NUL, or the kernel's 256 bytes for dynamic strings.
func StringSlotSize(f *parse.Field) int {
	if f.Class == parse.ClassString {
		return min((f.Size+1+7)&^7, stringSlotSize)
	}
	return stringSlotSize
}

// errEEXIST is -EEXIST as a map update returns it.
const errEEXIST = -17

// Program is a generated collection: programs and the maps they use.
type Program struct {
	Collection *ebpf.CollectionSpec
	// Recorders, from Record, says which program records each event.
	Recorders []Recorder
	// Control, from Record, is the layout of the control map, nil when
	// the recording has none (see control.go).
	Control *Control
}

// Hist builds the collection (program, hist hash map, drop counter) for a
// hist on an event.
func Hist(s *HistSpec) (*Program, error) {
	if s.Event == nil {
		return nil, fmt.Errorf("hist: no event")
	}
	var src Source = Tracepoint{}
	if d := histDirect(s); d != nil {
		src = d
	}
	if s.Source != nil {
		if s.HasStack() {
			return nil, fmt.Errorf("hist: a stacktrace key reads the stack of a tracepoint's context: gtrace does not take one on a probe event")
		}
		src = s.Source
	}
	c := NewCollection()
	gate := s.Gate
	if s.Follow != nil {
		if err := c.AddFollow(s.Follow); err != nil {
			return nil, err
		}
		gate.Follow = FollowMapName
	}
	p := &Prog{
		Name:    HistProgName,
		Source:  src,
		Gate:    gate,
		Filter:  s.Filter,
		ID:      EventID{Const: s.Event.ID},
		Actions: []Action{NewHistAction(&s.HistLayout, HistMapName, DropsMapName)},
	}
	if hc := s.Control; hc != nil {
		filter := s.Filter
		if len(hc.Triggers) == 0 {
			filter = nil // the skeleton's, as without triggers
		} else {
			p.Filter = nil
		}
		tracing := ControlTracingOff
		if hc.Recording {
			if len(hc.Triggers) > 0 {
				return nil, fmt.Errorf("hist: a hist of a recording runs no triggers: the recording's programs do")
			}
			tracing = ControlOff
		}
		p.Actions = hc.Layout.actions(hc.Map, tracing, hc.Event, []int{hc.Hist}, hc.Triggers, hc.First, filter, p.Actions[0])
	}
	if err := c.Add(p); err != nil {
		return nil, err
	}
	return &Program{Collection: c.Spec()}, nil
}

// HistAction counts an event in a hist's hash map: hitcount and sums of an
// existing entry are added to atomically; a new key gets an entry, built
// on the stack and inserted with BPF_NOEXIST, or, when the table is full,
// the drop counter goes up.
//
// With variables, references or handlers (histvar.go, histtrack.go), it
// first resolves the references (a miss skips the event), then, once the
// entry is updated, stores the variables in it and runs the handlers:
// OnMatch on every update, each OnTrack when its track fires. Handler
// actions run with R6 the record, R9 pid_tgid and R8 the entry, whose
// variables a synthetic event's parameters may read; R8 and R9 are
// reloaded before each.
type HistAction struct {
	Layout     *HistLayout
	Map, Drops string // the maps' names
	// OnMatch runs after every update of an entry (the kernel's
	// onmatch(), whose references the layout resolves): a
	// *SynthAction.
	OnMatch []Action
	// OnTrack[i] runs when Layout.Tracks[i] fires: a *SynthAction; for
	// snapshot(), a *TriggeringAction and a *SnapshotAction.
	OnTrack [][]Action
	// Stamp, if not 0, is the format ID of the action's event, whose
	// recording stamps it (RecordSpec.Stamp) in a program that runs
	// before the action's on the same classic tracepoint, for every
	// event the action sees: the event's time is the stamp's when it
	// is of this event, else the action reads the clock.
	Stamp       int
	hist, drops *ebpf.MapSpec
	stacks      *ebpf.MapSpec // nil without a stack key
	dropSums    *ebpf.MapSpec // nil without HistLayout.DropSums
}

// NewHistAction returns the action of a hist laid out as l, with its maps
// under the given names.
func NewHistAction(l *HistLayout, hist, drops string) *HistAction {
	return &HistAction{
		Layout: l, Map: hist, Drops: drops,
		hist:     histMap(hist, l),
		drops:    &ebpf.MapSpec{Name: drops, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		stacks:   stackMap(l),
		dropSums: dropSumsMap(l),
	}
}

// dropSumsMap is the dropped-sums map of a layout with DropSums, or nil.
func dropSumsMap(l *HistLayout) *ebpf.MapSpec {
	if !l.DropSums || len(l.Vals) == 0 {
		return nil
	}
	return &ebpf.MapSpec{Name: DropSumsMapName, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: uint32(8 * len(l.Vals)), MaxEntries: 1}
}

func (a *HistAction) stack() int {
	n := a.Layout.frameSize(a.inter())
	for _, h := range a.handlers() {
		n += h.stack()
	}
	return n
}

// inter reports whether the action has inter-event parts: variables,
// references, tracks or handlers.
func (a *HistAction) inter() bool {
	return a.Layout.interEvent() || len(a.OnMatch) > 0
}

// handlers returns the handlers' actions, in the order they run.
func (a *HistAction) handlers() []Action {
	hs := append([]Action(nil), a.OnMatch...)
	for _, t := range a.OnTrack {
		hs = append(hs, t...)
	}
	return hs
}

// interEvent reports whether a layout has variables, references or
// tracks.
func (l *HistLayout) interEvent() bool {
	return len(l.Vars)+len(l.Refs)+len(l.Tracks) > 0
}

// stackSize is the stack a hist's action needs, without its handlers'
// actions.
func (l *HistLayout) stackSize() int { return l.frameSize(l.interEvent()) }

// frameSize is the stack of a hist's action: the key, the value, the
// temporaries of its expressions and, with inter-event parts, the
// resolved references, the referenced entries and the saved entry and
// pid_tgid.
func (l *HistLayout) frameSize(inter bool) int {
	n := l.KeySize + l.ValueSize
	if l.usesExpr() || inter {
		n += exprTime + 8
	}
	if inter {
		_, g := l.refGroups()
		n += 8*len(l.Refs) + 8*g + 16
	}
	return n
}

// emitTime stores the event's time at R10+slot: the recording's stamp
// of the event, when the action has one and it is there, else a read of
// the clock. Clobbers R0-R5.
func (a *HistAction) emitTime(b *Builder, slot int16) {
	clock := a.Layout.Clock
	if a.Stamp == 0 {
		b.Comment("the event's time, common_timestamp (%s)", clock)
		b.Emit(clock.helper().Call(), asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
		return
	}
	own := b.Label("own_clock")
	have := b.Label("have_time")
	b.Comment("the event's time, common_timestamp (%s): the recording's stamp of event %d, else the clock", clock, a.Stamp)
	b.Emit(asm.StoreImm(asm.R10, slot, 0, asm.Word))
	emitLookup(b, StampMapName, slot)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, own),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
		asm.JNE.Imm(asm.R1, int32(a.Stamp), own),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.StoreMem(asm.R10, slot, asm.R1, asm.DWord),
		asm.Ja.Label(have),
	)
	b.Mark(own)
	b.Emit(clock.helper().Call(), asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	b.Mark(have)
}

func (a *HistAction) maps() []*ebpf.MapSpec {
	ms := []*ebpf.MapSpec{a.hist, a.drops}
	if a.stacks != nil {
		ms = append(ms, a.stacks)
	}
	if a.dropSums != nil {
		ms = append(ms, a.dropSums)
	}
	if a.Stamp != 0 {
		ms = append(ms, stampMap())
	}
	ms = append(ms, a.Layout.refMaps()...)
	if slices.ContainsFunc(a.Layout.stringRefs(), func(s int) bool { return s >= 0 }) {
		ms = append(ms, scratchMap())
	}
	for _, h := range a.handlers() {
		ms = append(ms, h.maps()...)
	}
	return ms
}

// usesTime reports whether the action reads the time: its layout, or its
// handlers' synthetic events' parameters, which read the hist's.
func (a *HistAction) usesTime() bool {
	if a.Layout.usesTime() {
		return true
	}
	for _, h := range a.handlers() {
		if sa, ok := h.(*SynthAction); ok && sa.usesTime() {
			return true
		}
	}
	return false
}

// emit: R7 = &key, R8 = the entry's value. The value is built at the
// bottom of the area, the key above it, then the expressions'
// temporaries and, with inter-event parts, the resolved references, the
// referenced entries, the saved entry and pid_tgid, and the handlers'
// areas.
func (a *HistAction) emit(b *Builder, f *Frame) error {
	s := a.Layout
	if s.KeySize%8 != 0 || s.ValueSize%8 != 0 || s.KeySize == 0 || s.ValueSize < 8 {
		return fmt.Errorf("hist layout: key size %d and value size %d must be non-zero multiples of 8", s.KeySize, s.ValueSize)
	}
	if a.stack() > maxStack {
		return fmt.Errorf("hist keys too large: %d bytes of key and %d of value, the BPF stack holds %d", s.KeySize, s.ValueSize, maxStack)
	}
	inter := a.inter()
	if inter {
		if err := s.checkVars(); err != nil {
			return err
		}
		if len(a.OnTrack) > len(s.Tracks) {
			return fmt.Errorf("hist: actions for %d tracks, the layout has %d", len(a.OnTrack), len(s.Tracks))
		}
	}
	valOff := f.Area.Off
	keyOff := valOff + int16(s.ValueSize)
	tmpOff := keyOff + int16(s.KeySize) // expression temporaries
	env := exprEnv{tmp: tmpOff, clock: tmpOff + exprTime, refs: tmpOff, strRefs: s.stringRefs(), refKinds: s.refKinds()}
	if s.usesExpr() || inter {
		env.refs += exprTime + 8
	}
	env.nrefs = len(s.Refs)
	_, groups := s.refGroups()
	ptrsOff := env.refs + int16(8*len(s.Refs))
	entrySlot := ptrsOff + int16(8*groups)
	out := f.Next

	if a.usesTime() {
		a.emitTime(b, env.clock)
	}
	// Build the key at R7 = fp + keyOff.
	b.Comment("R7 = &key")
	b.Emit(asm.Mov.Reg(asm.R7, asm.R10), asm.Add.Imm(asm.R7, int32(keyOff)))
	dropped := b.Label("dropped")
	for i := range s.Keys {
		if s.Keys[i].Frames() {
			emitFramesKey(b, &s.Keys[i], dropped)
			continue
		}
		if src := s.Keys[i].Src; src == SrcStack || src == SrcUStack {
			emitStackKey(b, &s.Keys[i], dropped)
			continue
		}
		if err := emitKey(b, &s.Keys[i], env); err != nil {
			return err
		}
	}
	if len(s.Refs) > 0 {
		emitResolve(b, s, ptrsOff, env.refs, entrySlot, f.depth, out)
	}

	// Existing entry: atomic adds.
	hit := b.Label("hit")
	miss := b.Label("miss")
	updated := out
	if inter {
		updated = b.Label("updated")
	}
	b.Comment("lookup")
	b.Emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(a.Map),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, miss),
	)
	b.Mark(hit)
	b.Comment("hitcount += 1")
	b.Emit(
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R8, asm.R1, asm.DWord, 0),
	)
	for _, v := range s.Vals {
		if err := emitVal(b, v, env); err != nil {
			return err
		}
		b.Emit(asm.AddAtomic.Mem(asm.R8, asm.R1, asm.DWord, int16(v.Off)))
	}
	if inter {
		b.Mark(updated)
		if err := a.emitUpdated(b, f, env, entrySlot); err != nil {
			return err
		}
	}
	b.Emit(asm.Ja.Label(out))

	// New entry: build the value and insert it if there is room.
	b.Mark(miss)
	b.Comment("new entry")
	b.Emit(storeImm64(asm.R10, valOff, 1))
	for _, v := range s.Vals {
		if err := emitVal(b, v, env); err != nil {
			return err
		}
		b.Emit(asm.StoreMem(asm.R10, valOff+int16(v.Off), asm.R1, asm.DWord))
	}
	if inter {
		// The variables' and tracks' slots start zero, no bit set.
		for off := 8; off < s.ValueSize; off += 8 {
			if !s.valueSlot(off) {
				b.Emit(storeImm64(asm.R10, valOff+int16(off), 0))
			}
		}
	}
	if s.CommOff >= 0 {
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, int32(valOff)+int32(s.CommOff)),
			asm.Mov.Imm(asm.R2, CommLen),
			asm.FnGetCurrentComm.Call(),
		)
	}
	inserted := out
	if inter {
		inserted = b.Label("inserted")
	}
	b.Emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(a.Map),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, int32(valOff)),
		asm.Mov.Imm(asm.R4, int32(ebpf.UpdateNoExist)),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, inserted),
		asm.JNE.Imm(asm.R0, errEEXIST, dropped),
	)
	b.Comment("another CPU inserted the key first")
	b.Emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(a.Map),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, hit),
		asm.Ja.Label(out),
	)
	if inter {
		b.Mark(inserted)
		b.Comment("R8 = the new entry")
		b.Emit(
			asm.LoadMapPtr(asm.R1, 0).WithReference(a.Map),
			asm.Mov.Reg(asm.R2, asm.R7),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, out),
			asm.Mov.Reg(asm.R8, asm.R0),
			asm.Ja.Label(updated),
		)
	}
	b.Mark(dropped)
	b.Comment("table full, or no room for the stack: dropped += 1")
	counted := out
	if a.dropSums != nil {
		counted = b.Label("drop_sums")
	}
	b.Emit(
		asm.StoreImm(asm.R10, keyOff, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(a.Drops),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(keyOff)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, counted),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
	)
	if a.dropSums != nil {
		return a.emitDropSums(b, counted, keyOff, env, out)
	}
	return nil
}

// valueSlot reports whether the u64 at off in the value is a hitcount, a
// sum or the comm, which a new entry's value gets from the event.
func (l *HistLayout) valueSlot(off int) bool {
	if off == 0 || l.CommOff >= 0 && off >= l.CommOff && off < l.CommOff+CommLen {
		return true
	}
	for _, v := range l.Vals {
		if v.Off == off {
			return true
		}
	}
	return false
}

// emitUpdated, with R8 the entry just updated, stores the variables and
// runs the handlers. Each handler action gets R8 and R9 back from
// fp+entrySlot and the word above it. Clobbers R0-R5, R7, R8.
func (a *HistAction) emitUpdated(b *Builder, f *Frame, env exprEnv, entrySlot int16) error {
	s := a.Layout
	env.vars = s.Vars
	if err := emitVarStores(b, s, env, f.depth); err != nil {
		return err
	}
	b.Emit(
		asm.StoreMem(asm.R10, entrySlot, asm.R8, asm.DWord),
		asm.StoreMem(asm.R10, entrySlot+8, asm.R9, asm.DWord),
	)
	area := entrySlot + 16
	key := StackArea{Off: env.tmp - int16(s.KeySize), Size: int16(s.KeySize)}
	var watched int16
	run := func(actions []Action) error {
		for _, h := range actions {
			next := b.Label("handler_next")
			b.Emit(
				asm.LoadMem(asm.R8, asm.R10, entrySlot, asm.DWord),
				asm.LoadMem(asm.R9, asm.R10, entrySlot+8, asm.DWord),
			)
			n := int16(h.stack())
			fr := &Frame{Area: StackArea{Off: area, Size: n}, Next: next, Out: next, ID: f.ID, Scratch: f.Scratch, depth: f.depth, env: &env, key: key, watched: watched}
			if err := h.emit(b, fr); err != nil {
				return err
			}
			b.Mark(next)
			area += n
		}
		return nil
	}
	if len(a.OnMatch) > 0 {
		b.Comment("onmatch")
	}
	if err := run(a.OnMatch); err != nil {
		return err
	}
	for i := range s.Tracks {
		end := b.Label("track_end")
		b.Emit(asm.LoadMem(asm.R8, asm.R10, entrySlot, asm.DWord))
		if err := emitTrack(b, s, &s.Tracks[i], end); err != nil {
			return err
		}
		if i < len(a.OnTrack) {
			watched = int16(s.Vars[s.Tracks[i].Var].Off)
			if err := run(a.OnTrack[i]); err != nil {
				return err
			}
		}
		b.Mark(end)
	}
	b.Emit(asm.LoadMem(asm.R9, asm.R10, entrySlot+8, asm.DWord))
	return nil
}

// emitDropSums, at label at, adds each value of a dropped event to this
// CPU's dropped sums; the word at fp+keyOff is the index 0. Clobbers
// R0-R5 and R8.
func (a *HistAction) emitDropSums(b *Builder, at string, keyOff int16, env exprEnv, out string) error {
	b.Mark(at)
	b.Comment("dropped sums += values")
	b.Emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(a.dropSums.Name),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(keyOff)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, out),
		asm.Mov.Reg(asm.R8, asm.R0),
	)
	for i, v := range a.Layout.Vals {
		if err := emitVal(b, v, env); err != nil {
			return err
		}
		b.Emit(asm.AddAtomic.Mem(asm.R8, asm.R1, asm.DWord, int16(8*i)))
	}
	return nil
}

// emitVal leaves the number a value slot sums in R1. Clobbers R0-R5.
func emitVal(b *Builder, v ValSlot, env exprEnv) error {
	if v.Expr == nil {
		b.Comment("sum += %s", v.Field.Name)
		loadField(b, asm.R1, v.Field)
		return nil
	}
	b.Comment("sum += expression")
	if err := emitExpr(b, v.Expr, env); err != nil {
		return err
	}
	b.Emit(asm.Mov.Reg(asm.R1, asm.R0))
	return nil
}

// emitKey stores one key at R7+slot.Off, an expression's computed with
// the operands of env. Clobbers R0-R5.
func emitKey(b *Builder, k *KeySlot, env exprEnv) error {
	off := int16(k.Off)
	switch k.Src {
	case SrcExpr:
		b.Comment("key expression")
		if err := emitExpr(b, k.Expr, env); err != nil {
			return err
		}
	case SrcPID:
		b.Comment("key common_pid")
		// The kernel's common_pid is an int: sign extend the tid.
		b.Emit(asm.Mov.Reg(asm.R0, asm.R9), asm.LSh.Imm(asm.R0, 32), asm.ArSh.Imm(asm.R0, 32))
	case SrcCPU:
		b.Comment("key common_cpu")
		b.Emit(asm.FnGetSmpProcessorId.Call())
	case SrcComm:
		b.Comment("key comm")
		zero(b, asm.R7, off, k.Size)
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Imm(asm.R1, int32(off)),
			asm.Mov.Imm(asm.R2, CommLen),
			asm.FnGetCurrentComm.Call(),
		)
		return nil
	case SrcField:
		f := k.Field
		switch {
		case f.Class == parse.ClassStringPtr && k.Size > 8 || f.Class.IsString():
			// The string, as string keys are: at most Size-1 bytes and a
			// NUL (a char[N]: N), the rest of the slot zero, as the
			// kernel's strncpy leaves it.
			b.Comment("key %s (string)", f.Name)
			return emitCopyString(b, asm.R7, off, k.Size, f, k.User)
		case f.Class == parse.ClassNumeric || f.Class == parse.ClassStringPtr:
			b.Comment("key %s", f.Name)
			loadField(b, asm.R0, f)
		default:
			return fmt.Errorf("field %s (%s) cannot be a hist key", f.Name, f.Class)
		}
	}
	switch k.Op {
	case OpLog2:
		emitLog2(b)
	case OpBuckets:
		if k.Buckets == 0 {
			return fmt.Errorf("buckets=0")
		}
		if k.Buckets <= 1<<31-1 {
			b.Emit(asm.Div.Imm(asm.R0, int32(k.Buckets)), asm.Mul.Imm(asm.R0, int32(k.Buckets)))
		} else {
			b.Emit(
				asm.LoadImm(asm.R1, int64(k.Buckets), asm.DWord),
				asm.Div.Reg(asm.R0, asm.R1),
				asm.Mul.Reg(asm.R0, asm.R1),
			)
		}
	}
	b.Emit(asm.StoreMem(asm.R7, off, asm.R0, asm.DWord))
	return nil
}

// emitLog2 replaces R0 by ilog2(roundup_pow_of_two(R0)) = bit length of
// R0-1, with 0 and 1 giving 0. Clobbers R1, R2.
func emitLog2(b *Builder) {
	done := b.Label("log2_done")
	zeroLbl := b.Label("log2_zero")
	b.Emit(
		asm.JLE.Imm(asm.R0, 1, zeroLbl),
		asm.Sub.Imm(asm.R0, 1),
		asm.Mov.Imm(asm.R2, 0),
	)
	for _, sh := range []int32{32, 16, 8, 4, 2, 1} {
		skip := b.Label("log2_skip")
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.RSh.Imm(asm.R1, sh),
			asm.JEq.Imm(asm.R1, 0, skip),
			asm.Mov.Reg(asm.R0, asm.R1),
			asm.Add.Imm(asm.R2, sh),
		)
		b.Mark(skip)
	}
	// R0 is now 1 (the top bit): add it.
	b.Emit(
		asm.Add.Reg(asm.R2, asm.R0),
		asm.Mov.Reg(asm.R0, asm.R2),
		asm.Ja.Label(done),
	)
	b.Mark(zeroLbl)
	b.Emit(asm.Mov.Imm(asm.R0, 0))
	b.Mark(done)
}

// zero clears size bytes (a multiple of 8) at dst+off.
func zero(b *Builder, dst asm.Register, off int16, size int) {
	for i := 0; i < size; i += 8 {
		b.Emit(storeImm64(dst, off+int16(i), 0))
	}
}

// loadField loads a numeric field of the record (R6) into dst, widened to
// 64 bits as the kernel does: sign extended when signed. Tracepoint context
// loads must be aligned to their size; misaligned fields are assembled
// from byte loads. Clobbers dst only (and R5 for misaligned fields).
func loadField(b *Builder, dst asm.Register, f *parse.Field) {
	size := map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}[f.Size]
	if f.Offset%f.Size == 0 {
		b.Emit(asm.LoadMem(dst, asm.R6, int16(f.Offset), size))
	} else {
		b.Emit(asm.LoadMem(dst, asm.R6, int16(f.Offset+f.Size-1), asm.Byte))
		for i := f.Size - 2; i >= 0; i-- {
			b.Emit(
				asm.LSh.Imm(dst, 8),
				asm.LoadMem(asm.R5, asm.R6, int16(f.Offset+i), asm.Byte),
				asm.Or.Reg(dst, asm.R5),
			)
		}
	}
	if f.Signed && f.Size < 8 {
		sh := int32(64 - 8*f.Size)
		b.Emit(asm.LSh.Imm(dst, sh), asm.ArSh.Imm(dst, sh))
	}
}
