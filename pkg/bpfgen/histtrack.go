package bpfgen

// onmax and onchange: the kernel's per-entry tracked values (grammar
// §4.5). Each entry of the hist holds, for each handler, the value it
// tracks: the largest the watched variable has had (onmax) or its last
// one (onchange), and the fields save() keeps with it. After the entry's
// update and its variables' stores, the hist's action reads the watched
// variable from the entry and:
//
//	onmax:    fires when the value is greater (as u64) than the entry's
//	          max, which a compare-and-exchange replaces: of two CPUs
//	          with new maxima at once, each fires only if its exchange
//	          found the max it compared with, so the max only grows and
//	          every firing is a new maximum. A CPU that loses the
//	          exchange compares again, trackTries times in all, then
//	          gives up (others keep raising the max meanwhile).
//	onchange: exchanges the entry's last value with the new one
//	          atomically and fires when they differ: every change is
//	          seen by exactly one event.
//
// A firing then saves the fields of save() into the entry and runs the
// handler's actions (HistAction.OnTrack): a synthetic event, the
// snapshot mark. The saves are plain stores: two CPUs firing at once on
// one entry may leave one's max with the other's fields, which the
// kernel's tracing_map allows too (it updates the max and the saved
// fields without a lock). A new entry tracks 0: a first value of 0
// neither exceeds it nor changes it, as in the kernel, whose tracked
// values start at 0.

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// TrackKind says when a tracked value fires.
type TrackKind int

// Kinds of tracked values.
const (
	TrackMax    TrackKind = iota // onmax: a value greater than the entry's max
	TrackChange                  // onchange: a value other than the entry's last
)

// TrackSlot is an onmax or onchange handler's part of each entry.
type TrackSlot struct {
	Kind  TrackKind
	Var   int        // the watched variable: a number, an index in the layout's Vars
	Off   int        // offset in the value of the max (onmax) or the last value (onchange)
	Saves []SaveSlot // the fields saved when it fires (save())
}

// SaveSlot is a field of the event that save() keeps in the entry.
type SaveSlot struct {
	Field *parse.Field
	User  bool // a char * to user memory
	Off   int  // offset in the value
	Size  int  // 8 for a number; a string's slot, a multiple of 8, at most 256
}

// trackTries is how many times an onmax compares and exchanges before
// it gives up to the other CPUs.
const trackTries = 4

// checkTracks checks the tracked values of a layout; inValue checks a
// slot of the value.
func (l *HistLayout) checkTracks(inValue func(what string, off, size int) error) error {
	for i, t := range l.Tracks {
		if t.Kind != TrackMax && t.Kind != TrackChange || t.Var < 0 || t.Var >= len(l.Vars) || l.Vars[t.Var].Kind != VarNumber {
			return fmt.Errorf("hist layout: track %d watches no number variable", i)
		}
		if err := inValue(fmt.Sprintf("track %d", i), t.Off, 8); err != nil {
			return err
		}
		for _, s := range t.Saves {
			if s.Field == nil {
				return fmt.Errorf("hist layout: track %d saves no field", i)
			}
			str := s.Field.Class.IsString() || s.Field.Class == parse.ClassStringPtr && s.Size > 8
			if !str && s.Size != 8 || str && (s.Size < 8 || s.Size > stringSlotSize || s.Size%8 != 0) {
				return fmt.Errorf("hist layout: save of %s in %d bytes", s.Field.Name, s.Size)
			}
			if err := inValue("save of "+s.Field.Name, s.Off, s.Size); err != nil {
				return err
			}
		}
	}
	return nil
}

// emitTrack jumps to skip unless the track t of l fires for the entry at
// R8; when it fires, it saves the fields and falls through. R6 is the
// record. Clobbers R0-R5.
func emitTrack(b *Builder, l *HistLayout, t *TrackSlot, skip string) error {
	v := l.Vars[t.Var]
	off := int16(t.Off)
	fired := b.Label("fired")
	b.Emit(asm.LoadMem(asm.R1, asm.R8, int16(v.Off), asm.DWord))
	switch t.Kind {
	case TrackMax:
		b.Comment("onmax($%s): a new maximum?", v.Name)
		b.Emit(asm.LoadMem(asm.R0, asm.R8, off, asm.DWord))
		for range trackTries {
			b.Emit(
				asm.JLE.Reg(asm.R1, asm.R0, skip),
				asm.Mov.Reg(asm.R3, asm.R0),
				asm.Mov.Reg(asm.R2, asm.R1),
				cmpxchg(asm.R8, asm.R2, off),
				asm.JEq.Reg(asm.R0, asm.R3, fired),
			)
		}
		b.Emit(asm.Ja.Label(skip))
	case TrackChange:
		b.Comment("onchange($%s): a new value?", v.Name)
		b.Emit(
			asm.Mov.Reg(asm.R2, asm.R1),
			atomicOp(asm.Xchg, asm.R8, asm.R2, off),
			asm.JEq.Reg(asm.R2, asm.R1, skip),
		)
	}
	b.Mark(fired)
	for _, s := range t.Saves {
		b.Comment("save %s", s.Field.Name)
		if s.Size == 8 && !s.Field.Class.IsString() {
			loadField(b, asm.R1, s.Field)
			b.Emit(asm.StoreMem(asm.R8, int16(s.Off), asm.R1, asm.DWord))
			continue
		}
		if err := emitCopyString(b, asm.R8, int16(s.Off), s.Size, s.Field, s.User); err != nil {
			return err
		}
	}
	return nil
}

// TriggeringAction, in an onmax or onchange handler, keeps the value and
// the key of the firing that runs it in a one-entry array: the
// triggering value (a u64) then the key's bytes, which the kernel prints
// after a snapshot() (grammar §6.6). It runs before the handler's
// SnapshotAction, whose mark tells user space that a snapshot was taken.
//
// With Compare, as the kernel's hist keeps the snapshot's value across
// its entries, a firing replaces the kept value and key only when its
// value is greater than the kept one (Track TrackMax) or other than it
// (TrackChange); the kept value starts at 0.
type TriggeringAction struct {
	Map     *ebpf.MapSpec
	Compare bool
	Track   TrackKind
}

// NewTriggeringAction returns the action keeping the triggering value
// and key of a hist whose keys take keySize bytes in the named map.
func NewTriggeringAction(name string, keySize int) *TriggeringAction {
	return &TriggeringAction{Map: &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: uint32(8 + keySize), MaxEntries: 1}}
}

func (a *TriggeringAction) stack() int            { return 8 }
func (a *TriggeringAction) maps() []*ebpf.MapSpec { return []*ebpf.MapSpec{a.Map} }

// emit: the map's entry, then the watched value from the entry (R8) and
// the key from the hist's frame.
func (a *TriggeringAction) emit(b *Builder, f *Frame) error {
	if f.watched == 0 || int(a.Map.ValueSize) != 8+int(f.key.Size) {
		return fmt.Errorf("triggering action: not in an onmax or onchange handler of a hist with a %d-byte key", a.Map.ValueSize-8)
	}
	b.Comment("the triggering value and key")
	b.Emit(asm.StoreImm(asm.R10, f.Area.Off, 0, asm.Word))
	emitLookup(b, a.Map.Name, f.Area.Off)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, f.Next),
		asm.LoadMem(asm.R1, asm.R8, f.watched, asm.DWord),
	)
	if a.Compare {
		b.Comment("a value the kept one does not stop")
		b.Emit(asm.LoadMem(asm.R2, asm.R0, 0, asm.DWord))
		if a.Track == TrackMax {
			b.Emit(asm.JLE.Reg(asm.R1, asm.R2, f.Next))
		} else {
			b.Emit(asm.JEq.Reg(asm.R1, asm.R2, f.Next))
		}
	}
	b.Emit(asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord))
	for i := int16(0); i < f.key.Size; i += 8 {
		b.Emit(
			asm.LoadMem(asm.R1, asm.R10, f.key.Off+i, asm.DWord),
			asm.StoreMem(asm.R0, 8+i, asm.R1, asm.DWord),
		)
	}
	return nil
}
