package bpfgen

import (
	"encoding/binary"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

// controlSpec is a recording of raw_syscalls:sys_enter with triggers
// that enable sched:sched_switch (soft disabled) on id 1 while count is
// left, and turn tracing off, unlimited.
func controlSpec(t *testing.T) *RecordSpec {
	enter := testutil.Format(t, "raw_syscalls:sys_enter")
	sw := testutil.Format(t, "sched:sched_switch")
	src := "id == 1"
	expr, err := parse.ParseFilter("-R", src)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := parse.BindFilter("-R", src, expr, enter)
	if err != nil {
		t.Fatal(err)
	}
	s := recordSpec(
		RecordEvent{Format: enter, Triggers: []RecordTrigger{
			{Cmd: parse.TrigEnableEvent, Filter: bf, Count: 3, Target: 1},
			{Cmd: parse.TrigTraceOff, Count: -1},
		}},
		RecordEvent{Format: sw, SoftDisabled: true},
	)
	s.Control, s.StartOff = true, true
	return s
}

// TestControlMap checks the control map's layout and the words it
// starts with: tracing off (--start-off), the soft-disabled event, the
// count of the counted trigger.
func TestControlMap(t *testing.T) {
	p, err := Record(controlSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Control
	if c == nil || c.Events != 2 || c.Triggers != 2 || c.Words() != 8 {
		t.Fatalf("Control = %+v, want 2 events, 2 triggers, 8 words", c)
	}
	if c.SoftWord(1) != 3 || c.CountWord(0) != 4 || c.FiresWord(0) != 5 || c.CountWord(1) != 6 || c.FiresWord(1) != 7 {
		t.Errorf("words: soft 1 %d, count/fires 0 %d/%d, 1 %d/%d; want 3, 4/5, 6/7",
			c.SoftWord(1), c.CountWord(0), c.FiresWord(0), c.CountWord(1), c.FiresWord(1))
	}
	m := p.Collection.Maps[SwitchMapName]
	if m.ValueSize != 64 || m.MaxEntries != 1 || m.Flags != mapMmapable || len(m.Contents) != 1 {
		t.Fatalf("control map %+v, want one mmapable 64-byte value", m)
	}
	v := m.Contents[0].Value.([]byte)
	var words []uint64
	for i := 0; i < len(v); i += 8 {
		words = append(words, binary.LittleEndian.Uint64(v[i:]))
	}
	if got, want := words, []uint64{0, 1, 0, 1, 3, 0, 0, 0}; !equalWords(got, want) {
		t.Errorf("initial words %v, want %v", got, want)
	}
	for _, name := range []string{RecordProgName(0), RecordProgName(1)} {
		if p.Collection.Programs[name] == nil {
			t.Errorf("no program %s: every event has its own in a recording with a control map", name)
		}
	}
}

// noLabels drops the jump targets from a listing's lines.
func noLabels(s string) string { return regexp.MustCompile(` <[^>]*>`).ReplaceAllString(s, "") }

func equalWords(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestControlActions checks the generated code of the triggers and the
// gate: the enable_event runs before the record (its filter, the count
// read signed, the cmpxchg from 1 to 0 of the target's soft word with
// its immediate set, the count decremented and the firing counted), the
// record is gated on the tracing-off word and the event's soft word, and
// the traceoff, unlimited, runs after it.
func TestControlActions(t *testing.T) {
	p, err := Record(controlSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	insns := p.Collection.Programs[RecordProgName(0)].Instructions
	got := noLabels(lines(insns))
	want := []string{
		// enable_event:raw_syscalls... if id == 1, count 3
		"LdXMemDW dst: r0 src: r6 off: 8 imm: 0\nJNEImm dst: r0 off: -1 imm: 1",
		"MovReg dst: r7 src: r0\nLdXMemDW dst: r1 src: r7 off: 32 imm: 0\nJSLEImm dst: r1 off: -1 imm: 0",
		"MovImm dst: r0 imm: 1\nMovImm dst: r1 imm: 0\nStXAtomicCmpXchgDW dst: r7 src: r1 off: 24\nJNEImm dst: r0 off: -1 imm: 1",
		"MovImm dst: r1 imm: -1\nStXAtomicAddDW dst: r7 src: r1 off: 32\nMovImm dst: r1 imm: 1\nStXAtomicAddDW dst: r7 src: r1 off: 40",
		// the gate of the record
		"LdXMemDW dst: r1 src: r0 off: 8 imm: 0\nJNEImm dst: r1 off: -1 imm: 0\nLdXMemDW dst: r1 src: r0 off: 16 imm: 0\nJNEImm dst: r1 off: -1 imm: 0",
		// traceoff, unlimited: no count word read
		"MovReg dst: r7 src: r0\nMovImm dst: r0 imm: 0\nMovImm dst: r1 imm: 1\nStXAtomicCmpXchgDW dst: r7 src: r1 off: 8\nJNEImm dst: r0 off: -1 imm: 0\nMovImm dst: r1 imm: 1\nStXAtomicAddDW dst: r7 src: r1 off: 56",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("program lacks, in order:\n%s\ngot:\n%s", w, got)
		}
		at += i + len(w)
	}
	for _, ins := range insns {
		if strings.Contains(ins.OpCode.String(), "CmpXchg") && ins.Constant != bpfCmpxchg {
			t.Errorf("%v: immediate %#x, want BPF_CMPXCHG|BPF_FETCH %#x", ins, ins.Constant, bpfCmpxchg)
		}
	}
	// The event's program without triggers is gated on its own soft word.
	if sw := noLabels(lines(p.Collection.Programs[RecordProgName(1)].Instructions)); !strings.Contains(sw, "LdXMemDW dst: r1 src: r0 off: 8 imm: 0\nJNEImm dst: r1 off: -1 imm: 0\nLdXMemDW dst: r1 src: r0 off: 24 imm: 0\nJNEImm dst: r1 off: -1 imm: 0") {
		t.Errorf("sched_switch's program is not gated on words 1 and 3:\n%s", sw)
	}
}

// TestControlNone checks that a recording without a control map keeps
// its one-word switch.
func TestControlNone(t *testing.T) {
	p, err := Record(recordSpec(RecordEvent{Format: testutil.Format(t, "raw_syscalls:sys_enter")}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Control != nil || p.Collection.Maps[SwitchMapName].ValueSize != 8 {
		t.Errorf("a recording without triggers has control %+v, switch of %d bytes", p.Control, p.Collection.Maps[SwitchMapName].ValueSize)
	}
}

// TestControlHist checks a hist in a session with a control map: the
// count runs gated on tracing and the event's soft word (here event 1),
// with the hist's filter inside the gate, and its traceoff after it.
func TestControlHist(t *testing.T) {
	f := testutil.Format(t, "raw_syscalls:sys_enter")
	ctl, m, err := SessionControl([][]RecordTrigger{nil, {{Cmd: parse.TrigTraceOff, Count: 2}}}, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Hist(&HistSpec{
		HistLayout: HistLayout{Keys: []KeySlot{{Src: SrcPID, Size: 8}}, KeySize: 8, ValueSize: 8, CommOff: -1, MaxEntries: 2048},
		Event:      f,
		Control:    &HistControl{Map: m, Layout: ctl, Event: 1, Triggers: []RecordTrigger{{Cmd: parse.TrigTraceOff, Count: 2}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Collection.Maps[SwitchMapName] != m {
		t.Errorf("the hist's collection does not have the session's control map")
	}
	got := noLabels(lines(p.Collection.Programs[HistProgName].Instructions))
	gate := "LdXMemDW dst: r1 src: r0 off: 8 imm: 0\nJNEImm dst: r1 off: -1 imm: 0\nLdXMemDW dst: r1 src: r0 off: 24 imm: 0\nJNEImm dst: r1 off: -1 imm: 0"
	off := "MovImm dst: r0 imm: 0\nMovImm dst: r1 imm: 1\nStXAtomicCmpXchgDW dst: r7 src: r1 off: 8"
	g, o, h := strings.Index(got, gate), strings.Index(got, off), strings.Index(got, "FnMapLookupElem\nJEqImm dst: r0 off: -1 imm: 0\nMovReg dst: r8 src: r0")
	if g < 0 || o < 0 || h < 0 || !(g < h && h < o) {
		t.Errorf("want the gate, the count, then the traceoff (at %d, %d, %d):\n%s", g, h, o, got)
	}
}

// TestControlFilterFirst checks that an event without triggers keeps its
// filter first, before the switch, in a session with a control map; one
// with triggers runs it inside the gate, after its on-triggers.
func TestControlFilterFirst(t *testing.T) {
	enter := testutil.Format(t, "raw_syscalls:sys_enter")
	bind := func(src string) *parse.BoundFilter {
		expr, err := parse.ParseFilter("-f", src)
		if err != nil {
			t.Fatal(err)
		}
		bf, err := parse.BindFilter("-f", src, expr, enter)
		if err != nil {
			t.Fatal(err)
		}
		return bf
	}
	s := recordSpec(
		RecordEvent{Format: enter, Filter: bind("id == 7"), Triggers: []RecordTrigger{{Cmd: parse.TrigTraceOn, Count: -1}}},
		RecordEvent{Format: testutil.Format(t, "raw_syscalls:sys_exit"), Filter: bind("id == 9")},
	)
	s.Control = true
	p, err := Record(s)
	if err != nil {
		t.Fatal(err)
	}
	first := func(name string) (filter, sw int) {
		got := noLabels(lines(p.Collection.Programs[name].Instructions))
		return strings.Index(got, "JNEImm dst: r0 off: -1 imm: "), strings.Index(got, "LoadMapPtr dst: r1 fd: 0")
	}
	if f, sw := first(RecordProgName(1)); f < 0 || f > sw {
		t.Errorf("sys_exit's filter (at %d) does not come before the switch (at %d)", f, sw)
	}
	if f, sw := first(RecordProgName(0)); f < sw {
		t.Errorf("sys_enter's filter (at %d) comes before the switch (at %d): its trigger would miss events", f, sw)
	}
}

// TestControlHistSwitch checks the paused words of a session's hists:
// after the soft-disable words, before the triggers' words, set at the
// start for a paused hist; the hist's gate reads its own paused word;
// enable_hist runs before the count and disable_hist after it, each
// spending its count with a fetch-and-add before it sets the target's
// paused words.
func TestControlHistSwitch(t *testing.T) {
	f := testutil.Format(t, "raw_syscalls:sys_enter")
	trs := []RecordTrigger{
		{Cmd: parse.TrigEnableHist, Count: 3, Target: 1, Hists: []int{1, 2}},
		{Cmd: parse.TrigDisableHist, Count: -1, Target: 1, Hists: []int{1, 2}},
	}
	ctl, m, err := SessionControl([][]RecordTrigger{trs, nil}, nil, []bool{false, true, true}, false)
	if err != nil {
		t.Fatal(err)
	}
	// 0 off, 1 tracing off, 2-3 soft, 4-6 paused, 7-8 and 9-10 triggers.
	if ctl.Hists != 3 || ctl.Words() != 11 || ctl.PausedWord(0) != 4 || ctl.PausedWord(2) != 6 || ctl.CountWord(0) != 7 || ctl.FiresWord(1) != 10 {
		t.Fatalf("layout %+v: paused 0 %d, paused 2 %d, count 0 %d, fires 1 %d; want 4, 6, 7, 10",
			ctl, ctl.PausedWord(0), ctl.PausedWord(2), ctl.CountWord(0), ctl.FiresWord(1))
	}
	v := m.Contents[0].Value.([]byte)
	var words []uint64
	for i := 0; i < len(v); i += 8 {
		words = append(words, binary.LittleEndian.Uint64(v[i:]))
	}
	if want := []uint64{0, 0, 0, 0, 0, 1, 1, 3, 0, 0, 0}; !slices.Equal(words, want) {
		t.Errorf("initial words %v, want %v", words, want)
	}
	if _, _, err := SessionControl([][]RecordTrigger{{{Cmd: parse.TrigEnableHist, Count: -1, Target: 0, Hists: []int{1}}}}, nil, []bool{false}, false); err == nil {
		t.Errorf("an enable_hist of hist 1 in a session of one hist was taken")
	}
	p, err := Hist(&HistSpec{
		HistLayout: HistLayout{Keys: []KeySlot{{Src: SrcPID, Size: 8}}, KeySize: 8, ValueSize: 8, CommOff: -1, MaxEntries: 2048},
		Event:      f,
		Control:    &HistControl{Map: m, Layout: ctl, Event: 0, Hist: 0, Triggers: trs},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ins := range p.Collection.Programs[HistProgName].Instructions {
		if ins.OpCode == asm.FetchAdd.OpCode(asm.DWord) && ins.Constant != int64(asm.FetchAdd>>8) {
			t.Errorf("%v: imm %#x, want BPF_ADD|BPF_FETCH", ins, ins.Constant)
		}
	}
	got := noLabels(lines(p.Collection.Programs[HistProgName].Instructions))
	spend := "LdXMemDW dst: r1 src: r7 off: 56 imm: 0\nJSLEImm dst: r1 off: -1 imm: 0\nMovImm dst: r1 imm: -1\nMovReg dst: r2 src: r7\nAddImm dst: r2 imm: 56\nStXAtomicFetchAddDW dst: r2 src: r1 off: 0\nJSLEImm dst: r1 off: -1 imm: 0\n"
	enable := spend + "MovImm dst: r1 imm: 0\nStXMemDW dst: r7 src: r1 off: 40 imm: 0\nStXMemDW dst: r7 src: r1 off: 48 imm: 0\nMovImm dst: r1 imm: 1\nStXAtomicAddDW dst: r7 src: r1 off: 64"
	gate := "LdXMemDW dst: r1 src: r0 off: 8 imm: 0\nJNEImm dst: r1 off: -1 imm: 0\nLdXMemDW dst: r1 src: r0 off: 16 imm: 0\nJNEImm dst: r1 off: -1 imm: 0\nLdXMemDW dst: r1 src: r0 off: 32 imm: 0\nJNEImm dst: r1 off: -1 imm: 0\n"
	disable := "MovImm dst: r1 imm: 1\nStXMemDW dst: r7 src: r1 off: 40 imm: 0\nStXMemDW dst: r7 src: r1 off: 48 imm: 0\nMovImm dst: r1 imm: 1\nStXAtomicAddDW dst: r7 src: r1 off: 80"
	e, g, d := strings.Index(got, enable), strings.Index(got, gate), strings.Index(got, disable)
	if e < 0 || g < 0 || d < 0 || !(e < g && g < d) {
		t.Errorf("want enable_hist, the gate with paused word 4, then disable_hist (at %d, %d, %d):\n%s", e, g, d, got)
	}
}

// TestControlRecordingHist checks the gate of a recording's hist: the
// off switch (word 0), not tracing (word 1), then its event's
// soft-disable word and its paused word; a recording's hist runs no
// triggers. The recording's control map has its hists' paused words.
func TestControlRecordingHist(t *testing.T) {
	f := testutil.Format(t, "raw_syscalls:sys_enter")
	rec, err := Record(&RecordSpec{Events: []RecordEvent{{Format: f}}, CPUs: 2, RingSize: 1 << 20, MaxRecord: 4064, Hists: []bool{false, true}})
	if err != nil {
		t.Fatal(err)
	}
	ctl, m := rec.Control, rec.Collection.Maps[SwitchMapName]
	if ctl == nil || ctl.Hists != 2 || ctl.Words() != 5 {
		t.Fatalf("control %+v, want 2 hists and 5 words", ctl)
	}
	if v := m.Contents[0].Value.([]byte); binary.LittleEndian.Uint64(v[8*ctl.PausedWord(1):]) != 1 {
		t.Errorf("hist 1 does not start paused: %v", v)
	}
	spec := &HistSpec{
		HistLayout: HistLayout{Keys: []KeySlot{{Src: SrcPID, Size: 8}}, KeySize: 8, ValueSize: 8, CommOff: -1, MaxEntries: 2048},
		Event:      f,
		Control:    &HistControl{Map: m, Layout: ctl, Event: 0, Hist: 1, Recording: true},
	}
	p, err := Hist(spec)
	if err != nil {
		t.Fatal(err)
	}
	got := noLabels(lines(p.Collection.Programs[HistProgName].Instructions))
	gate := "LdXMemDW dst: r1 src: r0 off: 0 imm: 0\nJNEImm dst: r1 off: -1 imm: 0\nLdXMemDW dst: r1 src: r0 off: 16 imm: 0\nJNEImm dst: r1 off: -1 imm: 0\nLdXMemDW dst: r1 src: r0 off: 32 imm: 0\nJNEImm dst: r1 off: -1 imm: 0\n"
	if !strings.Contains(got, gate) || strings.Contains(got, "src: r0 off: 8 imm: 0") {
		t.Errorf("want the gate on words 0, 2 and 4, not on tracing (word 1):\n%s", got)
	}
	spec.Control.Triggers = []RecordTrigger{{Cmd: parse.TrigTraceOff, Count: -1}}
	if _, err := Hist(spec); err == nil {
		t.Errorf("a recording's hist with a trigger of its own was taken")
	}
}
