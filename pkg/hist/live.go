package hist

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/gtrace/gtrace/pkg/attach"
	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/probe"
)

// LiveOptions are the parts of a live hist that are not in its spec.
type LiveOptions struct {
	Filter      *parse.BoundFilter // the hist's filter, bound to the event; nil for none
	ExcludeTGID uint32             // do not count this process (gtrace itself)
	OnlyTGIDs   []uint32           // count only these processes (-P)
	// Preempt, when not nil, counts ExcludeTGID's events raised in
	// interrupts (bpfgen.Gate's Preempt).
	Preempt *bpfgen.PreemptCount
	// Follow, when not nil, counts only the processes in the follow map
	// (--follow; bpfgen's follow.go), which Start fills. Not with
	// OnlyTGIDs.
	Follow *bpfgen.FollowSpec
	// Direct, when not nil, puts the program of a raw_syscalls event on
	// its raw tracepoint where gtrace can build the record
	// (bpfgen.HistSpec's Direct; probe.DirectOptions); Start falls back
	// to the classic tracepoint if the kernel refuses it.
	Direct *bpfgen.DirectOptions
	// Control, when not nil, is the hist's part of the session's
	// control map (triggers, --start-off; see sessionControl).
	Control *bpfgen.HistControl
}

// Compiled is a plan turned into a BPF program for one event.
type Compiled struct {
	Plan    *Plan
	Format  *parse.Format
	Layout  *bpfgen.HistSpec
	Program *bpfgen.Program
	// Fallback, when Program runs on a raw tracepoint, is the same hist
	// on the event's classic tracepoint, for kernels that refuse the
	// first.
	Fallback *bpfgen.Program
	share    *probe.Objects // a loaded hist whose control map this one uses
}

// Compile generates the program that fills the plan's layout.
func Compile(p *Plan, f *parse.Format, o LiveOptions) (*Compiled, error) {
	l := &bpfgen.HistSpec{
		HistLayout: *p.Layout,
		Filter:     o.Filter,
		Gate:       bpfgen.Gate{ExcludeTGID: o.ExcludeTGID, Preempt: o.Preempt, OnlyTGIDs: o.OnlyTGIDs},
		Follow:     o.Follow,
		Direct:     o.Direct,
		Event:      f,
		Control:    o.Control,
	}
	src, err := bpfgen.ProbeSource(f, ksym.KernelFuncRange, probe.FentryArgs)
	if err != nil {
		return nil, err
	}
	l.Source = src
	prog, err := bpfgen.Hist(l)
	if err != nil {
		return nil, fmt.Errorf("generate hist for %s: %w", p.Event, err)
	}
	c := &Compiled{Plan: p, Format: f, Layout: l, Program: prog}
	if bpfgen.HistTracepoint(l) != "" {
		classic := *l
		classic.Direct = nil
		if c.Fallback, err = bpfgen.Hist(&classic); err != nil {
			return nil, fmt.Errorf("generate hist for %s: %w", p.Event, err)
		}
	}
	return c, nil
}

// decode turns a map entry of the plan's layout into a table entry.
func (p *Plan) decode(key, val []byte) Entry {
	l := p.Layout
	e := Entry{Keys: make([]KeyValue, len(l.Keys)), Vals: make([]uint64, len(l.Vals))}
	for i, s := range l.Keys {
		e.Keys[i] = p.Keys[i].decode(key[s.Off : s.Off+s.Size])
	}
	e.Hitcount = binary.LittleEndian.Uint64(val)
	for i, s := range l.Vals {
		e.Vals[i] = binary.LittleEndian.Uint64(val[s.Off:])
	}
	if l.CommOff >= 0 {
		e.Comm = cString(val[l.CommOff : l.CommOff+bpfgen.CommLen])
	}
	return e
}

// decode is the value of key k from its bytes b: a number, a string, a
// stack's frames (a stack's id: its frames come from the stack map).
func (k *Key) decode(b []byte) KeyValue {
	switch {
	case k.Kind == KeyString:
		return KeyValue{Str: cString(b)}
	case k.Frames:
		pcs := make([]uint64, len(b)/8)
		for i := range pcs {
			pcs[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
		return KeyValue{Stack: NewStack(pcs)}
	}
	return KeyValue{Num: binary.LittleEndian.Uint64(b)}
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// Live is a compiled hist loaded into the kernel and attached.
type Live struct {
	c    *Compiled
	objs *probe.Objects
	// dropBase are the dropped sums at the last clear, which Snapshot
	// subtracts: the per-CPU sums are never reset, so no dropped event
	// is lost between a read and a reset.
	dropBase []uint64
}

// Start loads the program, or its fallback if the kernel refuses it, and
// attaches it to the event. A hist that follows processes
// (LiveOptions.Follow) starts with those of follow in its follow map.
func Start(c *Compiled, follow []uint32) (*Live, error) { return start(c, follow, nil) }

// start is Start; with owner not nil, the program counts into owner's
// table (a named hist: the layouts match, share checked it). The hists
// of a session with triggers share the control map of the first.
func start(c *Compiled, follow []uint32, owner *Live) (*Live, error) {
	shared := probe.Shared{}
	if owner != nil {
		if err := shared.Take(owner.objs, sharedMaps...); err != nil {
			return nil, err
		}
	}
	if owner != nil && c.Layout.DropSums {
		if err := shared.Take(owner.objs, bpfgen.DropSumsMapName); err != nil {
			return nil, err
		}
	}
	if err := shared.Take(c.share, bpfgen.SwitchMapName); err != nil {
		return nil, err
	}
	objs, prog, err := probe.LoadBestSharing(c.Program, c.Fallback, shared)
	if err != nil {
		return nil, err
	}
	if prog != c.Program {
		c.Program, c.Layout.Direct = prog, nil
	}
	if c.Layout.Follow != nil {
		if err := objs.Follow(follow); err != nil {
			objs.Close()
			return nil, err
		}
	}
	point := bpfgen.Tracepoint{}.Point(c.Format)
	if c.Layout.Source != nil {
		point = c.Layout.Source.Point(c.Format)
	}
	if tp := bpfgen.HistTracepoint(c.Layout); tp != "" {
		point = attach.Point{Kind: attach.TpBTF, Target: tp}
	}
	if err := objs.Attach(bpfgen.HistProgName, point); err != nil {
		objs.Close()
		return nil, err
	}
	for _, m := range bpfgen.MoreProbes(bpfgen.HistProgName, c.Layout.Source) {
		if err := objs.Attach(m.Prog, m.Point); err != nil {
			objs.Close()
			return nil, err
		}
	}
	return &Live{c: c, objs: objs}, nil
}

// Snapshot reads the table; with clear it also empties it and resets the
// drop count (for --interval --clear).
func (l *Live) Snapshot(clear bool) (*Table, error) {
	t := &Table{Plan: l.c.Plan}
	read := probe.ForEach
	if clear {
		read = probe.Drain
	}
	err := read(l.objs.Map(bpfgen.HistMapName), func(k, v []byte) {
		t.Entries = append(t.Entries, l.c.Plan.decode(k, v))
	})
	if err != nil {
		return nil, err
	}
	if err := l.readStacks(t); err != nil {
		return nil, err
	}
	if t.Dropped, err = probe.ReadU64(l.objs.Map(bpfgen.DropsMapName), clear); err != nil {
		return nil, err
	}
	if l.c.Layout.DropSums {
		if t.DroppedVals, err = l.droppedSums(clear); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// droppedSums reads the dropped-sums map, the sum over the CPUs of each
// value, since the last clear; with clear it starts over.
func (l *Live) droppedSums(clear bool) ([]uint64, error) {
	cpus, err := l.objs.PerCPUValue(bpfgen.DropSumsMapName)
	if err != nil {
		return nil, err
	}
	sums := make([]uint64, len(l.c.Layout.Vals))
	for _, b := range cpus {
		for i := range sums {
			sums[i] += binary.LittleEndian.Uint64(b[8*i:])
		}
	}
	if l.dropBase == nil {
		l.dropBase = make([]uint64, len(sums))
	}
	vals := make([]uint64, len(sums))
	for i := range sums {
		vals[i] = sums[i] - l.dropBase[i]
	}
	if clear {
		l.dropBase = sums
	}
	return vals, nil
}

// readStacks gives the stack keys of t's entries their frames, reading
// each stack id once. The stack map is not cleared with the table (an
// event may be giving an id to a new entry meanwhile): its stacks stay
// until the hist ends.
func (l *Live) readStacks(t *Table) error {
	if !l.c.Layout.HasStack() {
		return nil
	}
	m := l.objs.Map(bpfgen.StacksMapName)
	stacks := map[uint64]*Stack{}
	for i := range t.Entries {
		for j, k := range t.Plan.Keys {
			if k.Kind != KeyStack {
				continue
			}
			v := &t.Entries[i].Keys[j]
			if s, ok := stacks[v.Num]; ok {
				v.Stack = s
				continue
			}
			pcs := make([]uint64, bpfgen.StackDepth)
			if err := m.Lookup(uint32(v.Num), pcs); err != nil {
				return fmt.Errorf("read stack %d: %w", uint32(v.Num), err)
			}
			v.Stack = NewStack(pcs)
			if k.User {
				v.Stack.User, v.Stack.PID = true, uint32(v.Num>>32)
			}
			stacks[v.Num] = v.Stack
		}
	}
	return nil
}

// hasUserStack reports whether a key of the hist is a user stack.
func (c *Compiled) hasUserStack() bool {
	for _, k := range c.Plan.Keys {
		if k.User {
			return true
		}
	}
	return false
}

// userPIDs calls fn with the process of each user stack key in the table.
func (l *Live) userPIDs(fn func(pid uint32)) error {
	return probe.ForEach(l.objs.Map(bpfgen.HistMapName), func(k, _ []byte) {
		for i, s := range l.c.Layout.Keys {
			if l.c.Plan.Keys[i].User {
				fn(uint32(binary.LittleEndian.Uint64(k[s.Off:]) >> 32))
			}
		}
	})
}

// Close detaches and unloads the program.
func (l *Live) Close() error { return l.objs.Close() }
