package bpfgen

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

// TestAtomicOp checks the immediates of the atomic operations that
// cilium/ebpf leaves 0: the kernel would run each as an add.
func TestAtomicOp(t *testing.T) {
	for _, tt := range []struct {
		op   asm.AtomicOp
		want int64
	}{
		{asm.AddAtomic, 0x00},
		{asm.OrAtomic, 0x40},
		{asm.AndAtomic, 0x50},
		{asm.Xchg, 0xe1},
		{asm.FetchAdd, 0x01},
	} {
		if got := atomicOp(tt.op, asm.R1, asm.R2, 8).Constant; got != tt.want {
			t.Errorf("atomicOp(%v).Constant = %#x, want %#x", tt.op, got, tt.want)
		}
	}
}

// wakeupListing returns the switch hist's program of the wakeup example
// and the listing of its instructions.
func wakeupListing(t *testing.T, synth bool) string {
	t.Helper()
	w := newWakeupSpec(t, testutil.Format(t, "sched:sched_waking"), testutil.Format(t, "sched:sched_switch"))
	h := NewHistAction(w.lb, "h_switch", "d_switch")
	if synth {
		h.OnMatch = []Action{&SynthAction{Format: w.synth, Params: []SynthParam{
			{Src: ParamNumber, Expr: &Expr{Src: SrcVar, Var: 0}},
			{Src: ParamNumber, Expr: &Expr{Src: SrcField, Field: w.sw.Field("next_pid")}},
			{Src: ParamNumber, Expr: &Expr{Src: SrcField, Field: w.sw.Field("next_prio")}},
		}, Actions: []Action{NewHistAction(w.ll, "h_lat", "d_lat")}}}
	}
	c := NewCollection()
	if err := c.Add(&Prog{Name: "p", Source: Tracepoint{}, ID: EventID{Const: w.sw.ID}, Actions: []Action{h}}); err != nil {
		t.Fatal(err)
	}
	if c.Spec().Maps["h_waking"] == nil {
		t.Errorf("the referenced hist's map is not in the collection: %v", c.Spec().Maps)
	}
	ins := c.Spec().Programs["p"].Instructions
	checkReturnsZero(t, ins)
	return lines(ins)
}

// TestHistResolve checks the order of a hist with a reference: the key,
// the referenced entry's lookup and set bit, a miss going to the
// program's end (no hit, no drop), the read-once bit cleared with an
// atomic and, then the entry's update, the variable's store and its bit
// set with an atomic or.
func TestHistResolve(t *testing.T) {
	text := wakeupListing(t, false)
	at := func(s string) int {
		i := strings.Index(text, s)
		if i < 0 {
			t.Fatalf("no %q in\n%s", s, text)
		}
		return i
	}
	key := at("LdXMemW dst: r0 src: r6 off: 56")
	ref := at("LoadMapPtr dst: r1 fd: 0 <h_waking>")
	clear := at("StXAtomicAndDW dst: r1 src: r2 off: 8")
	own := at("LoadMapPtr dst: r1 fd: 0 <h_switch>")
	set := at("StXAtomicOrDW dst: r8 src: r1 off: 8")
	if !(key < ref && ref < clear && clear < own && own < set) {
		t.Errorf("key %d, reference %d, read-once %d, update %d, set bit %d: want them in this order:\n%s", key, ref, clear, own, set, text)
	}
	// Every miss of the resolution jumps to the program's return.
	resolve := text[ref:clear]
	if n := strings.Count(resolve, "<out_1>"); n != 2 {
		t.Errorf("%d jumps to the return while resolving, want 2 (no entry, bit not set):\n%s", n, resolve)
	}
	if strings.Contains(resolve, "<dropped") {
		t.Errorf("a reference's miss counts a drop:\n%s", resolve)
	}
}

// TestHistSynthListing checks that a hist with an onmatch emits the
// synthetic record after its update, restores R6 and R9 after the
// synthetic event's own hist, and that the plain hist's program does not
// change when a layout has no inter-event parts.
func TestHistSynthListing(t *testing.T) {
	text := wakeupListing(t, true)
	rec := strings.Index(text, "LoadMapPtr dst: r1 fd: 0 <scratch>")
	lat := strings.Index(text, "<h_lat>")
	if rec < 0 || lat < rec {
		t.Fatalf("the synthetic event's record (%d) and its hist (%d):\n%s", rec, lat, text)
	}
	if !strings.Contains(text[lat:], "LdXMemDW dst: r6 src: rfp") || !strings.Contains(text[lat:], "LdXMemDW dst: r9 src: rfp") {
		t.Errorf("R6 and R9 are not restored after the synthetic event's actions:\n%s", text[lat:])
	}
	sw := testutil.Format(t, "sched:sched_switch")
	l := &HistLayout{Keys: []KeySlot{{Src: SrcField, Field: sw.Field("next_pid"), Size: 8}}, KeySize: 8, ValueSize: 8, CommOff: -1, MaxEntries: 8}
	p, err := Hist(&HistSpec{HistLayout: *l, Event: sw})
	if err != nil {
		t.Fatal(err)
	}
	plain := lines(p.Collection.Programs[HistProgName].Instructions)
	for _, s := range []string{"Atomic Or", "AtomicOr", "scratch", "updated", "inserted"} {
		if strings.Contains(plain, s) {
			t.Errorf("a plain hist's program has %q:\n%s", s, plain)
		}
	}
}

// TestHistVarErrors checks the layouts and synthetic actions that the
// generator refuses, with their messages.
func TestHistVarErrors(t *testing.T) {
	waking, sw := testutil.Format(t, "sched:sched_waking"), testutil.Format(t, "sched:sched_switch")
	def, err := parse.ParseSynth("synth", "ev u64 a; char s[]; unsigned long[] st")
	if err != nil {
		t.Fatal(err)
	}
	synth := def.Format(77)
	number := &Expr{Src: SrcField, Field: sw.Field("next_pid")}
	good := func() (*HistLayout, *SynthAction) {
		w := newWakeupSpec(t, waking, sw)
		return w.lb, &SynthAction{Format: synth, Params: []SynthParam{
			{Src: ParamNumber, Expr: number},
			{Src: ParamString, Field: sw.Field("next_comm")},
			{Src: ParamStack},
		}}
	}
	for _, tt := range []struct {
		name string
		edit func(l *HistLayout, a *SynthAction)
		want string
	}{
		{"set word", func(l *HistLayout, a *SynthAction) { l.SetOff = 0 }, "the set word at 0"},
		{"variable past the value", func(l *HistLayout, a *SynthAction) { l.Vars[0].Off = 24 }, "variable wakeup_lat at 24"},
		{"string variable of a number", func(l *HistLayout, a *SynthAction) {
			l.Vars[0].Kind, l.Vars[0].Field = VarString, sw.Field("next_pid")
		}, "is not a number, a string or a stack"},
		{"reference to no variable", func(l *HistLayout, a *SynthAction) { l.Refs[0].Var = 3 }, "names no variable"},
		{"keys differ", func(l *HistLayout, a *SynthAction) {
			t2 := *l.Refs[0].Target
			t2.KeySize = 16
			l.Refs[0].Target = &t2
		}, "its hist's key takes 16 bytes"},
		{"track of no number", func(l *HistLayout, a *SynthAction) {
			l.Tracks = []TrackSlot{{Kind: TrackMax, Var: 1, Off: 16}}
		}, "watches no number variable"},
		{"parameters", func(l *HistLayout, a *SynthAction) { a.Params = a.Params[:2] }, "3 fields, 2 parameters"},
		{"string into a number", func(l *HistLayout, a *SynthAction) { a.Params[0] = a.Params[1] }, "field a (numeric) cannot take a string or a stack"},
		{"number into a string", func(l *HistLayout, a *SynthAction) { a.Params[1] = a.Params[0] }, "field s (__data_loc string) cannot take a number or a stack"},
		{"string into a stack", func(l *HistLayout, a *SynthAction) { a.Params[2] = a.Params[1] }, "field st (__data_loc string) cannot take a number or a string"},
		{"variable of no entry", func(l *HistLayout, a *SynthAction) { a.Params[1] = SynthParam{Src: ParamVar, Index: 0} }, "variable 0 is not a string of the hist's entry at hand"},
		{"not synthetic", func(l *HistLayout, a *SynthAction) { a.Format = sw }, "no synthetic event's format"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, a := good()
			tt.edit(l, a)
			h := NewHistAction(l, "h", "d")
			h.OnMatch = []Action{a}
			err := NewCollection().Add(&Prog{Name: "p", Source: Tracepoint{}, ID: EventID{Const: sw.ID}, Actions: []Action{h}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Add() = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestSynthDepth checks that synthetic events nest at most MaxSynthDepth
// deep, and a stack is taken only from an event's own context.
func TestSynthDepth(t *testing.T) {
	def, err := parse.ParseSynth("synth", "ev u64 a")
	if err != nil {
		t.Fatal(err)
	}
	f := def.Format(5)
	l := &HistLayout{Keys: []KeySlot{{Src: SrcField, Field: f.Field("a"), Size: 8}}, KeySize: 8, ValueSize: 8, CommOff: -1, MaxEntries: 8}
	nest := func(depth int) Action {
		var a Action = NewHistAction(l, "h", "d")
		for range depth {
			h := NewHistAction(l, "h", "d")
			h.OnMatch = []Action{a}
			a = &SynthAction{Format: f, Params: []SynthParam{{Src: ParamNumber, Expr: &Expr{Src: SrcField, Field: f.Field("a")}}}, Actions: []Action{h}}
		}
		return a
	}
	add := func(depth int) error {
		return NewCollection().Add(&Prog{Name: "p", Source: Tracepoint{}, ID: EventID{Const: f.ID}, Actions: []Action{nest(depth)}})
	}
	if err := add(MaxSynthDepth); err != nil {
		t.Errorf("%d synthetic events deep: %v", MaxSynthDepth, err)
	}
	deep := nest(1).(*SynthAction)
	if _, _, err := deep.check(&Frame{depth: MaxSynthDepth}); err == nil || !strings.Contains(err.Error(), "nest 4 deep, at most 3") {
		t.Errorf("%d synthetic events deep: %v, want an error", MaxSynthDepth+1, err)
	}
	stack := &SynthAction{Format: f, Params: []SynthParam{{Src: ParamStack}}}
	if st, err := parse.ParseSynth("synth", "st unsigned long[] s"); err != nil {
		t.Fatal(err)
	} else {
		stack.Format = st.Format(6)
	}
	if _, _, err := stack.check(&Frame{depth: 1}); err == nil || !strings.Contains(err.Error(), "not from a synthetic event's record") {
		t.Errorf("a stack in a nested synthetic event: %v, want an error", err)
	}
}
