package bpfgen

// Programs from parts. Every program gtrace generates for an event has the
// same skeleton, and differs only in where its record comes from (the
// Source) and what it does with it (the Actions):
//
//	[filter, on a classic tracepoint when it reads only numbers of the
//	 record: a miss returns]
//	[switch: if the collection's switch is off, return]
//	[cookie: the event's ID = bpf_get_attach_cookie(ctx), kept on the stack]
//	R6 = ctx; R9 = bpf_get_current_pid_tgid()
//	[gate: gtrace's own pid returns; with -P, pids not listed return;
//	       with --follow, tgids not in the follow map return (follow.go)]
//	source: R6 = the event's record (the classic tracepoint's ctx, or a
//	        record built on the stack from a raw tracepoint's arguments)
//	[filter, unless it ran first: a miss returns]
//	action 1; action 2; ...   (each falls through to the next)
//	return 0
//
// The contract between the parts:
//
//	R6      the record, from the source on: the event's format describes it
//	R9      bpf_get_current_pid_tgid(): common_pid is its low half
//	R7, R8  free for each action (and for the filter's string compares)
//	R0..R5  clobbered by helper calls
//
// Stack, from the frame pointer down: the skeleton's 8-byte ID slot (with
// a cookie), each action's area in order, the source's record, and the
// rest, down to the 512th byte, is the filter's scratch.
//
// A Collection assembles the programs of one command and their maps. Maps
// are named per feature ("hist", "rings", ...) and added once: programs
// that name the same map share it.

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/attach"
	"github.com/gtrace/gtrace/pkg/parse"
)

// Prog is one program made of parts.
type Prog struct {
	Name   string
	Source Source
	Gate   Gate
	Filter *parse.BoundFilter // nil: every event passes
	// ID is the event's format ID (common_type), for the sources and
	// actions that write a record's common fields.
	ID EventID
	// Actions run in order on every event that passes the filter.
	Actions []Action
}

// EventID says where a program finds the common_type of its events.
type EventID struct {
	// Const is the format ID of the program's only event.
	Const int
	// Cookie: the program is attached at several points, the ID of
	// each in its attach cookie.
	Cookie bool
}

// idSlot is the skeleton's stack slot for the ID read from the cookie.
const idSlot = -8

// load emits dst = the event's ID.
func (id EventID) load(b *Builder, dst asm.Register) {
	if id.Cookie {
		b.Emit(asm.LoadMem(dst, asm.R10, idSlot, asm.DWord))
		return
	}
	b.Emit(asm.Mov.Imm(dst, int32(id.Const)))
}

// Gate is who a program ignores.
type Gate struct {
	ExcludeTGID uint32   // events of this process are ignored (gtrace itself); 0: none
	OnlyTGIDs   []uint32 // if not empty, only events of these processes count
	// Follow names the hash map of followed tgids (FollowMapName, which
	// Collection.AddFollow adds with the programs that keep it): only
	// events of the processes in it count. Not with OnlyTGIDs.
	Follow string
	// Switch names a one-entry array map whose u64 user space sets to
	// non-zero to switch the program off at once (SwitchMap makes it).
	Switch string
	// CPUs, if not empty, are the only CPUs whose events count (sorted).
	CPUs []int
	// Preempt, when not nil, is where the programs read the preempt
	// count: ExcludeTGID's events raised in interrupts (a timer's
	// wakeup while a gtrace thread is current) then count, only its
	// events in task context are ignored. Nil: all of them are.
	Preempt *PreemptCount
}

// SwitchMap returns the spec of a switch map: one mmapable u64, zero
// while the programs run.
func SwitchMap(name string) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: mapMmapable}
}

// Source puts an event's record in R6.
type Source interface {
	// Point returns where the program runs, for an event of format f.
	Point(f *parse.Format) attach.Point
	// stack is the bytes of stack the source's record takes.
	stack() int
	// emit leaves the record in R6; ctx is in R6 on entry, R9 holds
	// pid_tgid. It may use the stack at R10+rec, R7 and R8, and jump to
	// out when it has no record.
	emit(b *Builder, rec int16, id EventID, out string)
	// maps are the maps the source uses, by name.
	maps() []*ebpf.MapSpec
	// program sets the program's type and attach target.
	program(ps *ebpf.ProgramSpec)
}

// Tracepoint is the source of a program on an event's classic
// tracepoint: its context is the event's record.
type Tracepoint struct{}

// Point returns the event's classic tracepoint.
func (Tracepoint) Point(f *parse.Format) attach.Point {
	return attach.TracepointAt(f.System, f.Name)
}

func (Tracepoint) stack() int                            { return 0 }
func (Tracepoint) emit(*Builder, int16, EventID, string) {}
func (Tracepoint) maps() []*ebpf.MapSpec                 { return nil }
func (Direct) maps() []*ebpf.MapSpec                     { return nil }
func (Tracepoint) program(ps *ebpf.ProgramSpec)          { ps.Type = ebpf.TracePoint }
func (t Tracepoint) String() string                      { return "tracepoint" }
func (Direct) stack() int                                { return directRecordMax }
func (d Direct) emit(b *Builder, rec int16, id EventID, _ string) {
	emitDirect(b, d.b, d.Options, id, rec)
}
func (d Direct) program(ps *ebpf.ProgramSpec) { directSpec(ps, d.b.tracepoint) }

// Direct is the source of a program on a BTF-enabled raw tracepoint that
// builds the event's record from the tracepoint's arguments (direct.go).
type Direct struct {
	Options *DirectOptions
	b       *directBuilder
}

// NewDirect returns the direct source of an event's records, or nil when
// gtrace cannot build them (see DirectTracepoint) or o is nil.
func NewDirect(f *parse.Format, o *DirectOptions) *Direct {
	if o == nil {
		return nil
	}
	d := direct(f)
	if d == nil {
		return nil
	}
	return &Direct{Options: o, b: d}
}

// Point returns the raw tracepoint.
func (d Direct) Point(*parse.Format) attach.Point {
	return attach.Point{Kind: attach.TpBTF, Target: d.b.tracepoint}
}

// Action does something with an event's record.
type Action interface {
	// stack is the bytes of stack (a multiple of 8) the action uses.
	stack() int
	// emit appends the action's code. It must end by jumping to, or
	// falling through to, f.Next.
	emit(b *Builder, f *Frame) error
	// maps are the maps the action uses, by name.
	maps() []*ebpf.MapSpec
}

// Frame is what an action is given.
type Frame struct {
	Area StackArea // the action's own stack
	Next string    // where the action ends: the next action, or the return
	Out  string    // the program's return, for giving up early
	ID   EventID
	// Scratch is the filter's scratch area, for an action that runs a
	// filter of its own (EmitFilter).
	Scratch StackArea
	// depth is how many synthetic events the action runs inside
	// (synth.go): its entry of the scratch map.
	depth int
	// env, in a hist's handler, is the hist's expression operands: its
	// temporaries, time, resolved references and entry (R8).
	env *exprEnv
	// key, in a hist's handler, is the hist's key; watched, in an onmax
	// or onchange handler, the offset of the watched variable in the
	// entry (0 elsewhere).
	key     StackArea
	watched int16
}

// Generate builds the program's instructions and its spec.
func (p *Prog) Generate() (*ebpf.ProgramSpec, error) {
	if p.Source == nil {
		return nil, fmt.Errorf("program %s: no source", p.Name)
	}
	b := &Builder{}
	out := b.Label("out")
	top := 0
	if p.ID.Cookie {
		top = -idSlot
	}
	// The actions run one after the other and keep nothing on the stack
	// for the next: they share one area, as big as the biggest needs.
	areas := make([]StackArea, len(p.Actions))
	most := 0
	for i, a := range p.Actions {
		n := a.stack()
		if n%8 != 0 {
			return nil, fmt.Errorf("program %s: action %d takes %d bytes of stack, not a multiple of 8", p.Name, i, n)
		}
		most = max(most, n)
	}
	for i, a := range p.Actions {
		areas[i] = StackArea{Off: int16(-top - most), Size: int16(a.stack())}
	}
	top += most
	rec := top
	top += p.Source.stack()
	if top > maxStack {
		return nil, fmt.Errorf("program %s: its parts take %d bytes of stack, the BPF stack holds %d", p.Name, top, maxStack)
	}
	scratch := StackArea{Off: -maxStack, Size: int16(maxStack - top)}
	early := p.Filter != nil && !p.ID.Cookie && p.Source.stack() == 0 && recordOnly(p.Filter)
	if early {
		// A filter that only reads the classic tracepoint's record
		// runs first: an event it rejects costs its loads and compares,
		// not the switch's lookup and the pid_tgid call too.
		b.Comment("R6 = ctx")
		b.Emit(asm.Mov.Reg(asm.R6, asm.R1))
		if err := EmitFilter(b, p.Filter, out, scratch); err != nil {
			return nil, err
		}
		b.Emit(asm.Mov.Reg(asm.R1, asm.R6))
	}
	if p.Gate.Switch != "" {
		emitSwitch(b, p.Gate.Switch, out)
	}
	if p.ID.Cookie {
		b.Comment("the event's ID: the attach cookie")
		b.Emit(
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.FnGetAttachCookie.Call(),
			asm.StoreMem(asm.R10, idSlot, asm.R0, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R6),
		)
	}
	b.Comment("R6 = ctx; R9 = pid_tgid")
	b.Emit(
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
	)
	if p.Gate.Follow != "" && len(p.Gate.OnlyTGIDs) > 0 {
		return nil, fmt.Errorf("program %s: a gate follows processes or lists them, not both", p.Name)
	}
	emitGate(b, p.Gate, idSlot-8, out)
	if top > rec {
		p.Source.emit(b, int16(-top), p.ID, out)
	}
	if p.Filter != nil && !early {
		if err := EmitFilter(b, p.Filter, out, scratch); err != nil {
			return nil, err
		}
	}
	for i, a := range p.Actions {
		next := out
		if i < len(p.Actions)-1 {
			next = b.Label("action")
		}
		if err := a.emit(b, &Frame{Area: areas[i], Next: next, Out: out, ID: p.ID, Scratch: scratch}); err != nil {
			return nil, err
		}
		if next != out {
			b.Mark(next)
		}
	}
	b.Mark(out)
	b.Emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	ps := &ebpf.ProgramSpec{Name: p.Name, License: "GPL", Instructions: b.Instructions()}
	p.Source.program(ps)
	return ps, nil
}

// recordOnly reports whether a filter reads nothing but the record's
// fields, and those as numbers: no pid_tgid (common_pid), no helper
// calls (cpu, comm, strings).
func recordOnly(bf *parse.BoundFilter) bool {
	only := true
	parse.WalkPreds(bf.Root, func(p *parse.BoundPred) {
		only = only && p.Operand == parse.OperandField && p.Compare != parse.CompareString && p.Compare != parse.CompareCPUMask
	})
	return only
}

// emitSwitch returns when the switch map's word is not zero. It keeps
// ctx in R1 (through R6). Clobbers R0, R2-R6 and the stack's top word.
func emitSwitch(b *Builder, name, out string) {
	b.Comment("switched off: return")
	b.Emit(
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMapPtr(asm.R1, 0).WithReference(name),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, out),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord),
		asm.JNE.Imm(asm.R0, 0, out),
		asm.Mov.Reg(asm.R1, asm.R6),
	)
}

// emitGate returns for gtrace's own process (given Preempt, only in its
// task context, not in an interrupt) and, given a list, for processes
// not in it, or, following, for those not in the follow map, which it
// looks up with the u32 at R10+key (where it also reads the preempt
// count), and for CPUs not in its list. R9 holds pid_tgid. Clobbers R0,
// and R1-R5 when following, given CPUs or reading the preempt count.
func emitGate(b *Builder, g Gate, key int16, out string) {
	emitCPUGate(b, g.CPUs, out)
	if g.ExcludeTGID == 0 && len(g.OnlyTGIDs) == 0 && g.Follow == "" {
		return
	}
	b.Comment("process filter")
	b.Emit(asm.Mov.Reg(asm.R0, asm.R9), asm.RSh.Imm(asm.R0, 32))
	switch {
	case g.ExcludeTGID != 0 && g.Preempt == nil:
		b.Emit(asm.JEq.Imm(asm.R0, int32(g.ExcludeTGID), out))
	case g.ExcludeTGID != 0:
		other := b.Label("other_tgid")
		b.Emit(asm.JNE.Imm(asm.R0, int32(g.ExcludeTGID), other))
		g.Preempt.emitTaskContext(b, key, out)
		b.Emit(asm.Mov.Reg(asm.R0, asm.R9), asm.RSh.Imm(asm.R0, 32))
		b.Mark(other)
	}
	if len(g.OnlyTGIDs) > 0 {
		ok := b.Label("pid_ok")
		for _, p := range g.OnlyTGIDs {
			b.Emit(asm.JEq.Imm(asm.R0, int32(p), ok))
		}
		b.Emit(asm.Ja.Label(out))
		b.Mark(ok)
	}
	if g.Follow != "" {
		emitFollowGate(b, g.Follow, key, out)
	}
}

// emitCPUGate returns for events on CPUs not in cpus (sorted; empty:
// none returns): a compare or two per run of consecutive CPUs. Clobbers
// R0-R5.
func emitCPUGate(b *Builder, cpus []int, out string) {
	if len(cpus) == 0 {
		return
	}
	b.Comment("CPU filter")
	ok := b.Label("cpu_ok")
	b.Emit(asm.FnGetSmpProcessorId.Call())
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if i == j {
			b.Emit(asm.JEq.Imm(asm.R0, int32(cpus[i]), ok))
		} else {
			next := b.Label("cpu_next")
			b.Emit(
				asm.JLT.Imm(asm.R0, int32(cpus[i]), next),
				asm.JLE.Imm(asm.R0, int32(cpus[j]), ok),
			)
			b.Mark(next)
		}
		i = j + 1
	}
	b.Emit(asm.Ja.Label(out))
	b.Mark(ok)
}

// Collection assembles programs and the maps they share.
type Collection struct {
	spec *ebpf.CollectionSpec
}

// NewCollection returns an empty collection.
func NewCollection() *Collection {
	return &Collection{spec: &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{}}}
}

// Add generates a program and adds it with the maps of its actions; a
// program of an event of several probes comes with the same program on
// each other probe (MoreProbes names them).
func (c *Collection) Add(p *Prog) error {
	if src, ok := p.Source.(*Probe); ok {
		for i, q := range src.more {
			other := *p
			other.Name, other.Source = probeProgName(p.Name, i+1), q
			if err := c.Add(&other); err != nil {
				return err
			}
		}
	}
	ps, err := p.Generate()
	if err != nil {
		return err
	}
	if p.Gate.Switch != "" && c.spec.Maps[p.Gate.Switch] == nil {
		return fmt.Errorf("program %s: no switch map %q in the collection", p.Name, p.Gate.Switch)
	}
	if p.Gate.Follow != "" && c.spec.Maps[p.Gate.Follow] == nil {
		return fmt.Errorf("program %s: no follow map %q in the collection (AddFollow adds it)", p.Name, p.Gate.Follow)
	}
	for _, m := range p.Source.maps() {
		if err := c.AddMap(m); err != nil {
			return err
		}
	}
	for _, a := range p.Actions {
		for _, m := range a.maps() {
			if err := c.AddMap(m); err != nil {
				return err
			}
		}
	}
	return c.AddSpec(ps)
}

// AddSpec adds a program built by hand, and the filter's buffer if the
// program's filter uses it.
func (c *Collection) AddSpec(ps *ebpf.ProgramSpec) error {
	if c.spec.Programs[ps.Name] != nil {
		return fmt.Errorf("two programs named %s", ps.Name)
	}
	for _, ins := range ps.Instructions {
		if ins.Reference() == FilterBufferName {
			if err := c.AddMap(FilterBufferSpec()); err != nil {
				return err
			}
			break
		}
	}
	c.spec.Programs[ps.Name] = ps
	return nil
}

// AddMap adds a map; a map of the same name must be the same map.
func (c *Collection) AddMap(m *ebpf.MapSpec) error {
	if old := c.spec.Maps[m.Name]; old != nil {
		if old != m && !reflect.DeepEqual(old, m) {
			return fmt.Errorf("two different maps named %s", m.Name)
		}
		return nil
	}
	c.spec.Maps[m.Name] = m
	return nil
}

// Spec returns the assembled collection.
func (c *Collection) Spec() *ebpf.CollectionSpec { return c.spec }

// Listing returns the assembly of every program, in name order, for
// --dry-run and for verifier errors.
func (p *Program) Listing() string {
	names := make([]string, 0, len(p.Collection.Programs))
	for name := range p.Collection.Programs {
		names = append(names, name)
	}
	sort.Strings(names)
	var out string
	for _, name := range names {
		ps := p.Collection.Programs[name]
		out += fmt.Sprintf("%s (%s, %d instructions):\n%v", name, ps.Type, len(ps.Instructions), ps.Instructions)
	}
	return out
}
