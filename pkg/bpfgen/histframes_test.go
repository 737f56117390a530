package bpfgen

import (
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

// framesSession builds the kernel's block_lat example (histogram.rst)
// on sched_switch: a hist whose frames variable st takes the event's
// stack, and a hist whose variable s copies st through a reference and
// passes it to the synthetic event's stack field, whose own hist is
// keyed on it.
func framesSession(t *testing.T) (*HistAction, *HistAction, *SynthAction) {
	t.Helper()
	sw := testutil.Format(t, "sched:sched_switch")
	def, err := parse.ParseSynth("synth", "block_lat pid_t pid; u64 delta; unsigned long[] stack")
	if err != nil {
		t.Fatal(err)
	}
	bl := def.Format(4000)
	la := &HistLayout{
		Keys:    []KeySlot{{Src: SrcField, Field: sw.Field("next_pid"), Size: 8}},
		KeySize: 8, ValueSize: 16 + FramesSize, CommOff: -1, MaxEntries: 64, SetOff: 8,
		Vars: []VarSlot{{Name: "st", Kind: VarFrames, Skip: 1, Off: 16, Size: FramesSize}},
	}
	lb := &HistLayout{
		Keys:    []KeySlot{{Src: SrcField, Field: sw.Field("prev_pid"), Size: 8}},
		KeySize: 8, ValueSize: 16 + FramesSize, CommOff: -1, MaxEntries: 64, SetOff: 8,
		Vars: []VarSlot{{Name: "s", Kind: VarFrames, FromRef: true, Ref: 0, Off: 16, Size: FramesSize}},
		Refs: []RefSlot{{Map: "ha", Target: la, Var: 0}},
	}
	ls := &HistLayout{
		Keys:    []KeySlot{{Src: SrcField, Field: bl.Field("pid"), Size: 8}, {Src: SrcField, Field: bl.Field("stack"), Off: 8, Size: FramesSize}},
		KeySize: 8 + FramesSize, ValueSize: 8, CommOff: -1, MaxEntries: 64,
	}
	a := NewHistAction(la, "ha", "da")
	b := NewHistAction(lb, "hb", "db")
	synth := &SynthAction{Format: bl, Params: []SynthParam{
		{Src: ParamNumber, Expr: &Expr{Src: SrcPID, Signed: true}},
		{Src: ParamNumber, Expr: &Expr{Src: SrcConst, Const: 1}},
		{Src: ParamVar, Index: 0},
	}, Actions: []Action{NewHistAction(ls, "hs", "ds")}}
	b.OnMatch = []Action{synth}
	return a, b, synth
}

// framesCollection is framesSession's program p on sched_switch, and a
// program k whose hist is keyed on the frames of common_stacktrace.
func framesCollection(t *testing.T) *Collection {
	t.Helper()
	a, b, _ := framesSession(t)
	c := NewCollection()
	sw := testutil.Format(t, "sched:sched_switch")
	if err := c.Add(&Prog{Name: "p", Source: Tracepoint{}, ID: EventID{Const: sw.ID}, Actions: []Action{a, b}}); err != nil {
		t.Fatal(err)
	}
	lk := &HistLayout{Keys: []KeySlot{{Src: SrcStack, Skip: 1, Size: FramesSize}}, KeySize: FramesSize, ValueSize: 8, CommOff: -1, MaxEntries: 64}
	if err := c.Add(&Prog{Name: "k", Source: Tracepoint{}, ID: EventID{Const: sw.ID}, Actions: []Action{NewHistAction(lk, "hk", "dk")}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFramesParts checks the program of a frames variable, its
// reference and a frames key: bpf_get_stack into the entry's slot and
// into the key, the reference's frames copied through the scratch map
// into the entry and the synthetic record, the synthetic stack field's
// frames copied into the key; no stack map.
func TestFramesParts(t *testing.T) {
	spec := framesCollection(t).Spec()
	if spec.Maps[StacksMapName] != nil {
		t.Error("a stack map for frames")
	}
	text := spec.Programs["p"].Instructions.String() + spec.Programs["k"].Instructions.String()
	for _, want := range []string{
		"key common_stacktrace (frames): bpf_get_stack(ctx, key, 128, skip 1)",
		"variable st (frames): bpf_get_stack(ctx, entry, 128, skip 1)",
		"copy the string or frames to the scratch map's slot 0",
		"variable s (frames) = reference 0's, from the scratch map",
		"stack = the count, then the frames of a variable or reference (120 bytes copied",
		"key stack.stacktrace (the frames after the count of the record's __data_loc)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the program has no %q", want)
		}
	}
	if n := strings.Count(text, "FnGetStack"); n != 2 {
		t.Errorf("%d calls of bpf_get_stack, want 2: the key and st", n)
	}
}

// TestPrivilegedFramesVerifier loads the programs of TestFramesParts on
// this kernel.
func TestPrivilegedFramesVerifier(t *testing.T) {
	testutil.RequirePrivileged(t)
	loadTracepoints(t, framesCollection(t))
}

// TestFramesErrors checks the frames parts the generator refuses.
func TestFramesErrors(t *testing.T) {
	sw := testutil.Format(t, "sched:sched_switch")
	for _, tt := range []struct {
		name string
		edit func(a, b *HistAction, s *SynthAction)
		want string
	}{
		{"frames of 8 bytes", func(a, b *HistAction, s *SynthAction) { a.Layout.Vars[0].Size = 8 }, "is not a number, a string or a stack"},
		{"reference to no frames", func(a, b *HistAction, s *SynthAction) {
			a.Layout.Vars[0].Kind, a.Layout.Vars[0].Expr, a.Layout.Vars[0].Size = VarNumber, &Expr{Src: SrcConst}, 8
		}, "is not a number, a string or a stack"},
		{"string variable into a stack", func(a, b *HistAction, s *SynthAction) {
			b.Layout.Vars[0] = VarSlot{Name: "s", Kind: VarString, Field: sw.Field("next_comm"), Off: 16, Size: 24}
		}, "variable 0 is not a stack of the hist's entry at hand"},
		{"the stack of a synthetic event", func(a, b *HistAction, s *SynthAction) {
			l := s.Actions[0].(*HistAction).Layout
			l.Vars, l.SetOff, l.ValueSize = []VarSlot{{Name: "x", Kind: VarFrames, Off: 16, Size: FramesSize}}, 8, 16+FramesSize
			l.Keys, l.KeySize = l.Keys[:1], 8
		}, "variable x: a stack is taken from an event's context, not from a synthetic event's record"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b, s := framesSession(t)
			tt.edit(a, b, s)
			err := NewCollection().Add(&Prog{Name: "p", Source: Tracepoint{}, ID: EventID{Const: sw.ID}, Actions: []Action{a, b}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Add() = %v, want an error with %q", err, tt.want)
			}
		})
	}
}
