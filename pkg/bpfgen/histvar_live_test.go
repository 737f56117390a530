package bpfgen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

// captureAction, a test's action, counts the events that reach it and
// copies the first size bytes of their record (R6) after the count, in
// a one-entry array.
type captureAction struct {
	m    *ebpf.MapSpec
	size int
}

func newCapture(name string, size int) *captureAction {
	return &captureAction{m: &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: uint32(8 + size), MaxEntries: 1}, size: size}
}

func (c *captureAction) stack() int            { return 8 }
func (c *captureAction) maps() []*ebpf.MapSpec { return []*ebpf.MapSpec{c.m} }

func (c *captureAction) emit(b *Builder, f *Frame) error {
	b.Comment("capture")
	b.Emit(asm.StoreImm(asm.R10, f.Area.Off, 0, asm.Word))
	emitLookup(b, c.m.Name, f.Area.Off)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, f.Next),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Add.Imm(asm.R1, 8),
		asm.Mov.Imm(asm.R2, int32(c.size)),
		asm.Mov.Reg(asm.R3, asm.R6),
		asm.FnProbeReadKernel.Call(),
	)
	return nil
}

// read returns the count and the bytes captured.
func (c *captureAction) read(t *testing.T, coll *ebpf.Collection) (uint64, []byte) {
	t.Helper()
	v := make([]byte, 8+c.size)
	if err := coll.Maps[c.m.Name].Lookup(uint32(0), &v); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint64(v), v[8:]
}

// loadRunnable loads a collection whose programs have a Tracepoint
// source as sleepable syscall programs, which prog.Run runs on a record
// given as the context, as the classic tracepoint's programs read
// theirs.
func loadRunnable(t *testing.T, c *Collection) *ebpf.Collection {
	t.Helper()
	spec := c.Spec().Copy()
	for _, ps := range spec.Programs {
		ps.Type = ebpf.Syscall
		ps.Flags = unix.BPF_F_SLEEPABLE
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelBranch}})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("load: %-40v", ve)
		}
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(coll.Close)
	return coll
}

// pinThread locks the test's goroutine to its thread on one CPU and
// returns the thread's id, the common_pid BPF sees.
func pinThread(t testing.TB) uint32 {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	return uint32(unix.Gettid())
}

func run(t *testing.T, p *ebpf.Program, rec []byte) {
	t.Helper()
	if _, err := p.Run(&ebpf.RunOptions{Context: rec}); err != nil {
		t.Fatalf("run: %v", err)
	}
}

func putString(t *testing.T, f *parse.Format, rec []byte, name, s string) {
	t.Helper()
	fld := f.Field(name)
	clear(rec[fld.Offset : fld.Offset+fld.Size])
	copy(rec[fld.Offset:fld.Offset+fld.Size], s)
}

func randName(r *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789-_/"
	n := 1 + r.IntN(15)
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

// wakeupLayouts are the layouts of the test's two hists: on
// sched_waking, keys=pid:v=prio:c=comm; on sched_switch,
// keys=next_pid:vals=$v,next_prio/$v:d=next_prio-$v:bc=prev_comm, which
// reads $v once and $c; a division by a $v of 0 gives -1.
func wakeupLayouts(waking, sw *parse.Format) (a, b *HistLayout) {
	a = &HistLayout{
		Keys: []KeySlot{{Src: SrcField, Field: waking.Field("pid"), Size: 8}}, KeySize: 8,
		ValueSize: 48, CommOff: -1, MaxEntries: 64, SetOff: 8,
		Vars: []VarSlot{
			{Name: "v", Kind: VarNumber, Expr: &Expr{Src: SrcField, Field: waking.Field("prio")}, Off: 16, Size: 8},
			{Name: "c", Kind: VarString, Field: waking.Field("comm"), Off: 24, Size: 24},
		},
	}
	b = &HistLayout{
		Keys: []KeySlot{{Src: SrcField, Field: sw.Field("next_pid"), Size: 8}}, KeySize: 8,
		Vals: []ValSlot{
			{Expr: &Expr{Src: SrcRef, Ref: 0}, Off: 8},
			{Expr: &Expr{Op: '/', L: &Expr{Src: SrcField, Field: sw.Field("next_prio")}, R: &Expr{Src: SrcRef, Ref: 0}}, Off: 56},
		},
		ValueSize: 64, CommOff: -1, MaxEntries: 64, SetOff: 16,
		Vars: []VarSlot{
			{Name: "d", Kind: VarNumber, Off: 24, Size: 8, Expr: &Expr{Op: '-',
				L: &Expr{Src: SrcField, Field: sw.Field("next_prio"), Signed: true},
				R: &Expr{Src: SrcRef, Ref: 0}}},
			{Name: "bc", Kind: VarString, Field: sw.Field("prev_comm"), Off: 32, Size: 24},
		},
		Refs: []RefSlot{
			{Map: "ha", Target: a, Var: 0, ReadOnce: true},
			{Map: "ha", Target: a, Var: 1},
		},
	}
	return a, b
}

// TestPrivilegedHistVarsRefsSynth runs a hist that sets variables and one
// that references them and emits a synthetic event on each match, on
// random records of both events (prog.Run), and checks every entry, the
// drops and every synthetic record against a model of the kernel's
// rules: a reference resolves only in an entry of the same key whose
// variable is set; a miss skips the event (no hit, no drop, no
// synthetic event); $v is read once, $c is not; the synthetic record
// is laid out as its derived format says, and recorded into a
// recording's batch as it was built.
func TestPrivilegedHistVarsRefsSynth(t *testing.T) {
	testutil.RequirePrivileged(t)
	waking := testutil.Format(t, "sched:sched_waking")
	sw := testutil.Format(t, "sched:sched_switch")
	def, err := parse.ParseSynth("synth", "lat_ev u64 d; int pid; char c[16]; char dc[]; char sc[16]; char vc[]")
	if err != nil {
		t.Fatal(err)
	}
	synth := def.Format(1999)
	la, lb := wakeupLayouts(waking, sw)
	const fixed = 552
	const capSize = fixed + 64
	capture := newCapture("cap", capSize)
	hb := NewHistAction(lb, "hb", "db")
	hb.OnMatch = []Action{&SynthAction{
		Format: synth,
		Params: []SynthParam{
			{Src: ParamNumber, Expr: &Expr{Src: SrcVar, Var: 0}},
			{Src: ParamNumber, Expr: &Expr{Src: SrcField, Field: sw.Field("next_pid")}},
			{Src: ParamRef, Index: 1},
			{Src: ParamString, Field: sw.Field("next_comm")},
			{Src: ParamString, Field: sw.Field("prev_comm")},
			{Src: ParamVar, Index: 1},
		},
		Actions: []Action{capture, NewRecordAction(&RecordSpec{CPUs: runtime.NumCPU(), RingSize: 1 << 16, MaxRecord: 4064}, synth)},
	}}
	c := NewCollection()
	for _, p := range []*Prog{
		{Name: "a", Source: Tracepoint{}, ID: EventID{Const: waking.ID}, Actions: []Action{NewHistAction(la, "ha", "da")}},
		{Name: "b", Source: Tracepoint{}, ID: EventID{Const: sw.ID}, Actions: []Action{hb}},
	} {
		if err := c.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	coll := loadRunnable(t, c)
	tid := pinThread(t)

	// The model.
	type entryA struct {
		hits, set, v uint64
		c            string
	}
	type entryB struct {
		hits, sum, set, d, quo uint64
		bc                     string
	}
	ma := map[int32]*entryA{}
	mb := map[int32]*entryB{}
	fired := uint64(0)
	r := rand.New(rand.NewPCG(19, 6))
	ra := make([]byte, recordSize(waking))
	rb := make([]byte, recordSize(sw))
	for i := range 2000 {
		pid := int32(1 + r.IntN(5))
		if r.IntN(2) == 0 {
			prio, comm := uint64(r.IntN(140)), randName(r)
			if i%40 == 0 {
				prio = 0 // a division by a $v of 0
			}
			putField(t, waking, ra, "pid", uint64(pid))
			putField(t, waking, ra, "prio", prio)
			putString(t, waking, ra, "comm", comm)
			run(t, coll.Programs["a"], ra)
			e := ma[pid]
			if e == nil {
				e = &entryA{}
				ma[pid] = e
			}
			e.hits++
			e.set, e.v, e.c = 3, prio, comm
			continue
		}
		nprio, ncomm, pcomm := int64(r.IntN(140)), randName(r), randName(r)
		putField(t, sw, rb, "next_pid", uint64(pid))
		putField(t, sw, rb, "next_prio", uint64(nprio))
		putString(t, sw, rb, "next_comm", ncomm)
		putString(t, sw, rb, "prev_comm", pcomm)
		run(t, coll.Programs["b"], rb)
		a := ma[pid]
		if a == nil || a.set != 3 {
			if n, _ := capture.read(t, coll); n != fired {
				t.Fatalf("event %d: a switch to %d whose $v is not set emitted a synthetic event", i, pid)
			}
			continue // skipped
		}
		v := a.v
		a.set &^= 1 // read once
		e := mb[pid]
		if e == nil {
			e = &entryB{}
			mb[pid] = e
		}
		e.hits++
		e.sum += v
		if v == 0 {
			e.quo += ^uint64(0)
		} else {
			e.quo += uint64(nprio) / v
		}
		e.set = 3
		e.d, e.bc = uint64(nprio)-v, pcomm
		fired++
		n, got := capture.read(t, coll)
		if n != fired {
			t.Fatalf("event %d: %d synthetic events, want %d", i, n, fired)
		}
		want := make([]byte, fixed)
		binary.LittleEndian.PutUint16(want, uint16(synth.ID))
		binary.LittleEndian.PutUint32(want[4:], tid)
		binary.LittleEndian.PutUint64(want[8:], e.d)
		binary.LittleEndian.PutUint32(want[16:], uint32(pid))
		copy(want[24:], a.c)
		binary.LittleEndian.PutUint32(want[280:], fixed|uint32(len(ncomm)+1)<<16)
		copy(want[288:], pcomm)
		binary.LittleEndian.PutUint32(want[544:], uint32(fixed+len(ncomm)+1)|uint32(len(pcomm)+1)<<16)
		want = append(append(want, ncomm...), 0)
		want = append(append(want, pcomm...), 0)
		if !bytes.Equal(got[:len(want)], want) {
			t.Fatalf("event %d: synthetic record\n%x\nwant\n%x", i, got[:len(want)], want)
		}
		if rec := lastSample(t, coll); !bytes.Equal(rec, want) {
			t.Fatalf("event %d: recorded synthetic record\n%x\nwant\n%x", i, rec, want)
		}
	}
	checkEntries(t, coll.Maps["ha"], len(ma), func(k uint64, v []byte) string {
		e := ma[int32(k)]
		if e == nil {
			return "not in the model"
		}
		c := make([]byte, 24)
		copy(c, e.c)
		want := binary.LittleEndian.AppendUint64(nil, e.hits)
		want = binary.LittleEndian.AppendUint64(want, e.set)
		want = binary.LittleEndian.AppendUint64(want, e.v)
		want = append(want, c...)
		if !bytes.Equal(v, want) {
			return fmt.Sprintf("%x, want %x", v, want)
		}
		return ""
	})
	checkEntries(t, coll.Maps["hb"], len(mb), func(k uint64, v []byte) string {
		e := mb[int32(k)]
		if e == nil {
			return "not in the model"
		}
		want := binary.LittleEndian.AppendUint64(nil, e.hits)
		for _, w := range []uint64{e.sum, e.set, e.d} {
			want = binary.LittleEndian.AppendUint64(want, w)
		}
		bc := make([]byte, 24)
		copy(bc, e.bc)
		want = append(want, bc...)
		want = binary.LittleEndian.AppendUint64(want, e.quo)
		if !bytes.Equal(v, want) {
			return fmt.Sprintf("%x, want %x", v, want)
		}
		return ""
	})
	for _, d := range []string{"da", "db"} {
		var n uint64
		if err := coll.Maps[d].Lookup(uint32(0), &n); err != nil || n != 0 {
			t.Errorf("%s = %d, %v; want no drop", d, n, err)
		}
	}
	t.Logf("%d synthetic events, %d and %d entries", fired, len(ma), len(mb))
	if fired < 200 {
		t.Errorf("only %d matches: the test does not exercise references", fired)
	}
}

// lastSample returns the record of the last sample in CPU 0's batch.
func lastSample(t *testing.T, coll *ebpf.Collection) []byte {
	t.Helper()
	var batches [][]byte
	if err := coll.Maps[BatchMapName].Lookup(uint32(0), &batches); err != nil {
		t.Fatal(err)
	}
	bt := batches[0]
	fill := int(binary.LittleEndian.Uint32(bt))
	var rec []byte
	for off := BatchHeader; off < BatchHeader+fill; {
		n := int(binary.LittleEndian.Uint32(bt[off+8:]))
		rec = bt[off+SampleHeader : off+SampleHeader+n]
		off += SampleHeader + (n+7)&^7
	}
	return rec
}

// snapshotMarks counts the snapshot marks of a collection's batches:
// those still in a batch, and those lost with the batches that found no
// ring (the test has none) when they were written.
func snapshotMarks(t *testing.T, coll *ebpf.Collection) uint64 {
	t.Helper()
	var batches [][]byte
	if err := coll.Maps[BatchMapName].Lookup(uint32(0), &batches); err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, bt := range batches {
		fill := int(binary.LittleEndian.Uint32(bt))
		for off := BatchHeader; off < BatchHeader+fill; {
			length := binary.LittleEndian.Uint32(bt[off+8:])
			if length != SnapshotMark {
				t.Fatalf("a sample of %d bytes in the batch: only marks expected", length)
			}
			n++
			off += SampleHeader
		}
	}
	for cpu := range runtime.NumCPU() {
		var lost uint64
		if err := coll.Maps[LostMapName].Lookup(uint32(cpu), &lost); err != nil {
			t.Fatal(err)
		}
		n += lost
	}
	return n
}

// checkEntries checks each entry of a hist map with u64 keys and that
// it has n of them; check returns what is wrong with an entry, or "".
func checkEntries(t *testing.T, m *ebpf.Map, n int, check func(k uint64, v []byte) string) {
	t.Helper()
	var k uint64
	var v []byte
	got := 0
	it := m.Iterate()
	for it.Next(&k, &v) {
		got++
		if msg := check(k, v); msg != "" {
			t.Errorf("%s[%d]: %s", m.String(), k, msg)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Errorf("%d entries, want %d", got, n)
	}
}

// TestPrivilegedHistTracks runs a hist with onmax($v).save(comm,
// target_cpu) and onchange($v) on random records and checks that each
// handler fires exactly when the model says (a value greater than the
// entry's max, a value other than its last), with the event's record,
// and each entry's max, saved fields and last value, and the value and
// key of onmax's last firing, which snapshot() keeps.
func TestPrivilegedHistTracks(t *testing.T) {
	testutil.RequirePrivileged(t)
	waking := testutil.Format(t, "sched:sched_waking")
	l := &HistLayout{
		Keys: []KeySlot{{Src: SrcField, Field: waking.Field("pid"), Size: 8}}, KeySize: 8,
		ValueSize: 72, CommOff: -1, MaxEntries: 64, SetOff: 8,
		Vars: []VarSlot{{Name: "v", Kind: VarNumber, Expr: &Expr{Src: SrcField, Field: waking.Field("prio")}, Off: 16, Size: 8}},
		Tracks: []TrackSlot{
			{Kind: TrackMax, Var: 0, Off: 24, Saves: []SaveSlot{
				{Field: waking.Field("comm"), Off: 32, Size: 24},
				{Field: waking.Field("target_cpu"), Off: 56, Size: 8},
			}},
			{Kind: TrackChange, Var: 0, Off: 64},
		},
	}
	size := recordSize(waking)
	onMax, onChange := newCapture("cmax", size), newCapture("cchange", size)
	h := NewHistAction(l, "hw", "dw")
	trig := NewTriggeringAction("trig", 8)
	h.OnTrack = [][]Action{{trig, onMax, NewSnapshotAction(&RecordSpec{CPUs: runtime.NumCPU(), RingSize: 1 << 16})}, {onChange}}
	c := NewCollection()
	if err := c.Add(&Prog{Name: "w", Source: Tracepoint{}, ID: EventID{Const: waking.ID}, Actions: []Action{h}}); err != nil {
		t.Fatal(err)
	}
	coll := loadRunnable(t, c)
	pinThread(t)
	type entry struct {
		hits, max, last, cpu uint64
		comm                 string
	}
	model := map[int32]*entry{}
	var maxes, changes, trigVal, trigKey uint64
	r := rand.New(rand.NewPCG(19, 4))
	rec := make([]byte, size)
	for i := range 3000 {
		pid := int32(1 + r.IntN(4))
		prio, cpu, comm := uint64(r.IntN(20)), uint64(r.IntN(64)), randName(r)
		if i%7 == 0 {
			prio = uint64(i) // rising maxima
		}
		putField(t, waking, rec, "pid", uint64(pid))
		putField(t, waking, rec, "prio", prio)
		putField(t, waking, rec, "target_cpu", cpu)
		putString(t, waking, rec, "comm", comm)
		run(t, coll.Programs["w"], rec)
		e := model[pid]
		if e == nil {
			e = &entry{}
			model[pid] = e
		}
		e.hits++
		newMax, changed := prio > e.max, prio != e.last
		if newMax {
			e.max, e.comm, e.cpu = prio, comm, cpu
			maxes++
			trigVal, trigKey = prio, uint64(pid)
		}
		if changed {
			e.last = prio
			changes++
		}
		for _, w := range []struct {
			c     *captureAction
			want  uint64
			fired bool
		}{{onMax, maxes, newMax}, {onChange, changes, changed}} {
			n, got := w.c.read(t, coll)
			if n != w.want {
				t.Fatalf("event %d (pid %d, prio %d): %s fired %d times, want %d", i, pid, prio, w.c.m.Name, n, w.want)
			}
			if w.fired && !bytes.Equal(got, rec) {
				t.Fatalf("event %d: %s ran on record %x, want %x", i, w.c.m.Name, got, rec)
			}
		}
	}
	checkEntries(t, coll.Maps["hw"], len(model), func(k uint64, v []byte) string {
		e := model[int32(k)]
		if e == nil {
			return "not in the model"
		}
		comm := make([]byte, 24)
		copy(comm, e.comm)
		want := binary.LittleEndian.AppendUint64(nil, e.hits)
		want = binary.LittleEndian.AppendUint64(want, 1)
		want = binary.LittleEndian.AppendUint64(want, e.last) // $v: this event's
		want = binary.LittleEndian.AppendUint64(want, e.max)
		want = append(want, comm...)
		want = binary.LittleEndian.AppendUint64(want, e.cpu)
		want = binary.LittleEndian.AppendUint64(want, e.last)
		if !bytes.Equal(v, want) {
			return fmt.Sprintf("%x, want %x", v, want)
		}
		return ""
	})
	var tv [2]uint64
	if err := coll.Maps["trig"].Lookup(uint32(0), &tv); err != nil {
		t.Fatal(err)
	}
	if tv != [2]uint64{trigVal, trigKey} {
		t.Errorf("triggering value and key %v, want %v", tv, [2]uint64{trigVal, trigKey})
	}
	if marks := snapshotMarks(t, coll); marks != maxes {
		t.Errorf("%d snapshot marks, want one per maximum: %d", marks, maxes)
	}
	t.Logf("%d maxima, %d changes", maxes, changes)
}
