package bpfgen

// The control map and the trigger actions. A session with triggers (or
// one that starts with tracing off) has one control map: the switch map,
// SwitchMapName, grown from one word to an array of u64 words in one
// mmapable value, so that word 0 keeps the switch's meaning:
//
//	word 0          the off switch: non-zero, every program returns first thing
//	word 1          tracing off: non-zero, no event is recorded (tracing_on = 0)
//	word 2+e          event e's soft-disable word: non-zero, event e is not recorded
//	word 2+E+h        hist h's paused word: non-zero, hist h counts nothing
//	word 2+E+H+2t     trigger t's count left (signed; <= 0: spent), when it has a count
//	word 2+E+H+2t+1   how many times trigger t has fired (changed a state)
//
// E is the number of events of the session, H the number of its hists
// (a recording's: its hist triggers), triggers are numbered in the order of the events and,
// within an event, in the order of its triggers.
// Every record program of such a session runs its record action only when
// words 1 and 2+e are zero and its event's filter passes (GatedAction),
// and then its triggers, whatever happened to the record (TriggerAction):
// a trigger sees every event of the gate, recorded or not, as the
// kernel's triggers see an event whose filter rejects it, that is soft
// disabled, or that comes while tracing is off.

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// Words of the control map.
const (
	ControlOff        = 0 // the off switch
	ControlTracingOff = 1 // tracing off
	controlFirst      = 2
)

// Control is the layout of a session's control map.
type Control struct {
	Events   int // events, each with a soft-disable word
	Hists    int // hists, each with a paused word
	Triggers int // triggers, each with a count word and a fires word
}

// SoftWord returns the soft-disable word of event e.
func (c Control) SoftWord(e int) int { return controlFirst + e }

// PausedWord returns the paused word of hist h.
func (c Control) PausedWord(h int) int { return controlFirst + c.Events + h }

// CountWord returns the count word of trigger t.
func (c Control) CountWord(t int) int { return controlFirst + c.Events + c.Hists + 2*t }

// FiresWord returns the word that counts the firings of trigger t.
func (c Control) FiresWord(t int) int { return c.CountWord(t) + 1 }

// Words returns the number of words of the map.
func (c Control) Words() int { return controlFirst + c.Events + c.Hists + 2*c.Triggers }

// ControlMap returns the spec of a control map named name, its words
// initialised to init (missing words are zero).
func ControlMap(name string, c Control, init []uint64) *ebpf.MapSpec {
	v := make([]byte, 8*c.Words())
	for i, w := range init {
		binary.LittleEndian.PutUint64(v[8*i:], w)
	}
	return &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: uint32(len(v)), MaxEntries: 1, Flags: mapMmapable,
		Contents: []ebpf.MapKV{{Key: uint32(0), Value: v}}}
}

// RecordTrigger is a trigger of an event that changes a state of the
// session: tracing, an event's soft-disable word, or hists' paused words.
type RecordTrigger struct {
	Cmd    parse.TriggerCmd   // traceon, traceoff, enable_event, disable_event, enable_hist or disable_hist
	Filter *parse.BoundFilter // nil: every event
	Count  int64              // the count; -1: unlimited
	Target int                // enable_event, disable_event, enable_hist, disable_hist: the target's event index in the session
	Hists  []int              // enable_hist, disable_hist: the session's hists of the target
}

// SessionControl returns the layout and the spec of a session's control
// map, for events with triggers[e] each (triggers numbered in that
// order), the events of soft starting soft disabled, a hist per element
// of paused (starting paused where true), and tracing off with startOff;
// each count word holds its trigger's count.
func SessionControl(triggers [][]RecordTrigger, soft, paused []bool, startOff bool) (*Control, *ebpf.MapSpec, error) {
	ctl := &Control{Events: len(triggers), Hists: len(paused)}
	for _, trs := range triggers {
		ctl.Triggers += len(trs)
	}
	if ctl.Words() > 1<<12 {
		return nil, nil, fmt.Errorf("%d events and %d triggers take more control words than a program can address", ctl.Events, ctl.Triggers)
	}
	init := make([]uint64, ctl.Words())
	if startOff {
		init[ControlTracingOff] = 1
	}
	for h, p := range paused {
		if p {
			init[ctl.PausedWord(h)] = 1
		}
	}
	t := 0
	for e, trs := range triggers {
		if e < len(soft) && soft[e] {
			init[ctl.SoftWord(e)] = 1
		}
		for _, tr := range trs {
			if tr.Cmd.HasTarget() && (tr.Target < 0 || tr.Target >= ctl.Events) {
				return nil, nil, fmt.Errorf("trigger %s: target %d is no event of the session", tr.Cmd, tr.Target)
			}
			for _, h := range tr.Hists {
				if h < 0 || h >= ctl.Hists {
					return nil, nil, fmt.Errorf("trigger %s: hist %d is no hist of the session", tr.Cmd, h)
				}
			}
			if tr.Count >= 0 {
				init[ctl.CountWord(t)] = uint64(tr.Count)
			}
			t++
		}
	}
	return ctl, ControlMap(SwitchMapName, *ctl, init), nil
}

// actions returns the actions of event e's program in a session with a
// control map m: the event's triggers trs (numbered from first) that turn
// something on (traceon, enable_event, enable_hist), then inner, gated on
// the word tracing (ControlTracingOff; ControlOff for a hist of a
// recording, which counts whether tracing is on or off), the event's
// soft-disable word, the paused words of hists and filter, then the
// triggers that turn something off (traceoff,
// disable_event, disable_hist). So the event that fires a trigger is in
// the window it opens or closes, recorded either way, as the kernel
// records it when the event has a filter (its buffered event is written
// after the triggers ran).
func (c *Control) actions(m *ebpf.MapSpec, tracing, e int, hists []int, trs []RecordTrigger, first int, filter *parse.BoundFilter, inner Action) []Action {
	var on, off []Action
	for i, tr := range trs {
		t := first + i
		if tr.Cmd == parse.TrigEnableHist || tr.Cmd == parse.TrigDisableHist {
			a := &HistSwitchAction{Control: m, Filter: tr.Filter, Count: -1, Fires: c.FiresWord(t)}
			if tr.Count >= 0 {
				a.Count = c.CountWord(t)
			}
			for _, h := range tr.Hists {
				a.Words = append(a.Words, c.PausedWord(h))
			}
			if tr.Cmd == parse.TrigDisableHist {
				a.To = 1
				off = append(off, a)
			} else {
				on = append(on, a)
			}
			continue
		}
		a := &TriggerAction{Control: m, Filter: tr.Filter, Count: -1, Fires: c.FiresWord(t)}
		if tr.Count >= 0 {
			a.Count = c.CountWord(t)
		}
		switch tr.Cmd {
		case parse.TrigTraceOn, parse.TrigTraceOff:
			a.State = ControlTracingOff
		default:
			a.State = c.SoftWord(tr.Target)
		}
		if tr.Cmd == parse.TrigTraceOff || tr.Cmd == parse.TrigDisableEvent {
			a.To = 1
			off = append(off, a)
		} else {
			on = append(on, a)
		}
	}
	words := []int{tracing, c.SoftWord(e)}
	for _, h := range hists {
		words = append(words, c.PausedWord(h))
	}
	gated := &GatedAction{Control: m, Words: words, Filter: filter, Inner: inner}
	return append(append(on, gated), off...)
}

// emitControl looks the control map up with the u32 key at R10+key and
// leaves the pointer to its words in R0; it jumps to miss if the lookup
// fails. Clobbers R1-R5.
func emitControl(b *Builder, name string, key int16, miss string) {
	b.Emit(asm.StoreImm(asm.R10, key, 0, asm.Word))
	emitLookup(b, name, key)
	b.Emit(asm.JEq.Imm(asm.R0, 0, miss))
}

// GatedAction runs Inner only while the control words Words are all zero
// and the event passes Filter: the record action of a session with a
// control map. Without a control map (Control nil, no Words) it is the
// filter alone: a hist of an inter-event session among others on its
// event, each with a filter of its own. It keeps R9 (pid_tgid) for the actions after it, which
// Inner may clobber, and gives Inner's early returns to those actions too.
type GatedAction struct {
	Control *ebpf.MapSpec      // the control map; nil: none, and no Words
	Words   []int              // words that, non-zero, skip Inner
	Filter  *parse.BoundFilter // the event's filter; nil: none
	Inner   Action
}

func (a *GatedAction) stack() int { return 8 + a.Inner.stack() }

func (a *GatedAction) maps() []*ebpf.MapSpec {
	if a.Control == nil {
		return a.Inner.maps()
	}
	return append([]*ebpf.MapSpec{a.Control}, a.Inner.maps()...)
}

func (a *GatedAction) emit(b *Builder, f *Frame) error {
	slot := f.Area.Off
	if a.Control == nil && len(a.Words) > 0 {
		return fmt.Errorf("gated action: control words without a control map")
	}
	if a.Control != nil {
		b.Comment("gated: tracing on, the event enabled, its filter")
		emitControl(b, a.Control.Name, slot, f.Next)
	}
	for _, w := range a.Words {
		b.Emit(
			asm.LoadMem(asm.R1, asm.R0, int16(8*w), asm.DWord),
			asm.JNE.Imm(asm.R1, 0, f.Next),
		)
	}
	if a.Filter != nil {
		if err := EmitFilter(b, a.Filter, f.Next, f.Scratch); err != nil {
			return err
		}
	}
	restore := b.Label("gated_end")
	b.Emit(asm.StoreMem(asm.R10, slot, asm.R9, asm.DWord))
	inner := &Frame{Area: StackArea{Off: slot + 8, Size: f.Area.Size - 8}, Next: restore, Out: restore, ID: f.ID, Scratch: f.Scratch, depth: f.depth, env: f.env}
	if err := a.Inner.emit(b, inner); err != nil {
		return err
	}
	b.Mark(restore)
	b.Emit(asm.LoadMem(asm.R9, asm.R10, slot, asm.DWord))
	return nil
}

// TriggerAction is a trigger that changes a state word of the control
// map: traceon and traceoff (word ControlTracingOff), enable_event and
// disable_event (the target's soft-disable word). When the event passes
// Filter and the count is not spent, it moves the word from !To to To
// with a compare-and-exchange; only a firing that changes the word
// spends one of the count (the kernel's rule for these commands,
// parse.TriggerCmd.CountsStateChanges) and counts as fired.
type TriggerAction struct {
	Control *ebpf.MapSpec
	Filter  *parse.BoundFilter // nil: every event
	State   int                // the word the trigger sets
	To      uint64             // 0 or 1: what it sets the word to
	Count   int                // the count word; -1: unlimited
	Fires   int                // the word counting firings
}

func (a *TriggerAction) stack() int            { return 8 }
func (a *TriggerAction) maps() []*ebpf.MapSpec { return []*ebpf.MapSpec{a.Control} }

func (a *TriggerAction) emit(b *Builder, f *Frame) error {
	if a.To > 1 {
		return fmt.Errorf("trigger: a state word is 0 or 1, not %d", a.To)
	}
	b.Comment("trigger: word %d from %d to %d", a.State, 1-a.To, a.To)
	if err := emitTriggerHead(b, f, a.Filter, a.Control); err != nil {
		return err
	}
	if a.Count >= 0 {
		b.Emit(
			asm.LoadMem(asm.R1, asm.R7, int16(8*a.Count), asm.DWord),
			asm.JSLE.Imm(asm.R1, 0, f.Next),
		)
	}
	b.Emit(
		asm.Mov.Imm(asm.R0, int32(1-a.To)),
		asm.Mov.Imm(asm.R1, int32(a.To)),
		cmpxchg(asm.R7, asm.R1, int16(8*a.State)),
		asm.JNE.Imm(asm.R0, int32(1-a.To), f.Next),
	)
	if a.Count >= 0 {
		b.Emit(
			asm.Mov.Imm(asm.R1, -1),
			asm.AddAtomic.Mem(asm.R7, asm.R1, asm.DWord, int16(8*a.Count)),
		)
	}
	b.Emit(
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R7, asm.R1, asm.DWord, int16(8*a.Fires)),
	)
	return nil
}

// emitTriggerHead starts a trigger's code: the trigger's filter (a miss
// goes to f.Next), then the control map's words in R7.
func emitTriggerHead(b *Builder, f *Frame, filter *parse.BoundFilter, control *ebpf.MapSpec) error {
	if filter != nil {
		if err := EmitFilter(b, filter, f.Next, f.Scratch); err != nil {
			return err
		}
	}
	emitControl(b, control.Name, f.Area.Off, f.Next)
	b.Emit(asm.Mov.Reg(asm.R7, asm.R0))
	return nil
}

// HistSwitchAction is enable_hist (To 0) or disable_hist (To 1): when
// the event passes Filter and the count is not spent, it sets the paused
// words Words, those of every hist of the target event, to To. Every
// firing spends one of the count, whatever the hists' state was, as the
// kernel's enable_hist and disable_hist do
// (parse.TriggerCmd.CountsStateChanges): the count word is decremented
// with a fetch-and-add, and only a firing that found it positive sets the
// words and counts as fired.
type HistSwitchAction struct {
	Control *ebpf.MapSpec
	Filter  *parse.BoundFilter // nil: every event
	Words   []int              // the paused words it sets
	To      uint64             // 0 (continue) or 1 (pause)
	Count   int                // the count word; -1: unlimited
	Fires   int                // the word counting firings
}

func (a *HistSwitchAction) stack() int            { return 8 }
func (a *HistSwitchAction) maps() []*ebpf.MapSpec { return []*ebpf.MapSpec{a.Control} }

func (a *HistSwitchAction) emit(b *Builder, f *Frame) error {
	if a.To > 1 {
		return fmt.Errorf("hist trigger: a paused word is 0 or 1, not %d", a.To)
	}
	b.Comment("hist trigger: words %v to %d", a.Words, a.To)
	if err := emitTriggerHead(b, f, a.Filter, a.Control); err != nil {
		return err
	}
	if a.Count >= 0 {
		b.Emit(
			asm.LoadMem(asm.R1, asm.R7, int16(8*a.Count), asm.DWord),
			asm.JSLE.Imm(asm.R1, 0, f.Next),
			asm.Mov.Imm(asm.R1, -1),
			asm.Mov.Reg(asm.R2, asm.R7),
			asm.Add.Imm(asm.R2, int32(8*a.Count)),
			fetchAdd(asm.R2, asm.R1),
			asm.JSLE.Imm(asm.R1, 0, f.Next),
		)
	}
	b.Emit(asm.Mov.Imm(asm.R1, int32(a.To)))
	for _, w := range a.Words {
		b.Emit(asm.StoreMem(asm.R7, int16(8*w), asm.R1, asm.DWord))
	}
	b.Emit(
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R7, asm.R1, asm.DWord, int16(8*a.Fires)),
	)
	return nil
}

// bpfCmpxchg is the immediate of BPF_CMPXCHG: BPF_CMPXCHG | BPF_FETCH.
const bpfCmpxchg = 0xf1

// cmpxchg is "R0 = atomic cmpxchg(*(u64 *)(dst + off), R0, src)". The
// immediate is set here: cilium/ebpf's asm.CmpXchg.Mem leaves it 0,
// which the kernel runs as an atomic add.
func cmpxchg(dst, src asm.Register, off int16) asm.Instruction {
	ins := asm.CmpXchg.Mem(dst, src, asm.DWord, off)
	ins.Constant = bpfCmpxchg
	return ins
}
