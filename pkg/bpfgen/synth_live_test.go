package bpfgen

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

// childSleeps is how many times the sleeping child sleeps.
const childSleeps = 25

// childSleep runs on one thread: it reports its tid on stdout, waits for
// a byte on stdin, then sleeps childSleeps times 2 ms: childSleeps+1
// wakeups of its thread. Its system calls are raw: the Go scheduler
// does not hand its P over while it sleeps, so that it never waits for
// one (a wakeup more) when the call returns.
func childSleep() int {
	runtime.LockOSThread()
	line := []byte(fmt.Sprintf("%d\n", unix.Gettid()))
	if _, _, e := unix.RawSyscall(unix.SYS_WRITE, 1, uintptr(unsafe.Pointer(&line[0])), uintptr(len(line))); e != 0 {
		return 6
	}
	var b [1]byte
	if n, _, _ := unix.RawSyscall(unix.SYS_READ, 0, uintptr(unsafe.Pointer(&b[0])), 1); n != 1 {
		return 7
	}
	for range childSleeps {
		ts := unix.NsecToTimespec(int64(2 * time.Millisecond))
		for {
			if _, _, e := unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), uintptr(unsafe.Pointer(&ts)), 0); e != unix.EINTR {
				break
			}
		}
	}
	return 0
}

// wakeupSpec is the wakeup-latency example of issue 19 in parts:
//
//	sched_waking: hist:keys=pid:ts0=common_timestamp.usecs
//	sched_switch: hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:
//	              onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio)
//	              [:onmax($wakeup_lat).save(next_comm,prev_pid)] [.snapshot()]
//	wakeup_latency: hist:keys=lat.log2 [and its record into a recording]
type wakeupSpec struct {
	waking, sw   *parse.Format
	wakingFilter *parse.BoundFilter
	switchFilter *parse.BoundFilter
	rec          *RecordSpec // not nil: the synthetic event is recorded, onmax snapshots
	la, lb, ll   *HistLayout
	synth        *parse.Format
}

func newWakeupSpec(t testing.TB, waking, sw *parse.Format) *wakeupSpec {
	t.Helper()
	def, err := parse.ParseSynth("synth", "wakeup_latency u64 lat; pid_t pid; int prio")
	if err != nil {
		t.Fatal(err)
	}
	w := &wakeupSpec{waking: waking, sw: sw, synth: def.Format(2000)}
	w.la = &HistLayout{
		Keys: []KeySlot{{Src: SrcField, Field: waking.Field("pid"), Size: 8}}, KeySize: 8,
		ValueSize: 24, CommOff: -1, MaxEntries: 1024, SetOff: 8,
		Vars: []VarSlot{{Name: "ts0", Kind: VarNumber, Expr: &Expr{Src: SrcTime, Usecs: true}, Off: 16, Size: 8}},
	}
	w.lb = &HistLayout{
		Keys: []KeySlot{{Src: SrcField, Field: sw.Field("next_pid"), Size: 8}}, KeySize: 8,
		ValueSize: 24, CommOff: -1, MaxEntries: 1024, SetOff: 8,
		Vars: []VarSlot{{Name: "wakeup_lat", Kind: VarNumber, Off: 16, Size: 8,
			Expr: &Expr{Op: '-', L: &Expr{Src: SrcTime, Usecs: true}, R: &Expr{Src: SrcRef, Ref: 0}}}},
		Refs: []RefSlot{{Map: "h_waking", Target: w.la, Var: 0, ReadOnce: true}},
	}
	w.ll = &HistLayout{
		Keys: []KeySlot{{Src: SrcField, Field: w.synth.Field("lat"), Op: OpLog2, Size: 8}}, KeySize: 8,
		ValueSize: 8, CommOff: -1, MaxEntries: 64,
	}
	return w
}

// build returns the collection of the example's programs.
func (w *wakeupSpec) build(t *testing.T) *Collection {
	t.Helper()
	inner := []Action{NewHistAction(w.ll, "h_lat", "d_lat")}
	if w.rec != nil {
		inner = append(inner, NewRecordAction(w.rec, w.synth))
	}
	if w.rec != nil {
		w.lb.ValueSize = 24 + 8 + 24 + 8
		w.lb.Tracks = []TrackSlot{{Kind: TrackMax, Var: 0, Off: 24, Saves: []SaveSlot{
			{Field: w.sw.Field("next_comm"), Off: 32, Size: 24},
			{Field: w.sw.Field("prev_pid"), Off: 56, Size: 8},
		}}}
	}
	swHist := NewHistAction(w.lb, "h_switch", "d_switch")
	swHist.OnMatch = []Action{&SynthAction{
		Format: w.synth,
		Params: []SynthParam{
			{Src: ParamNumber, Expr: &Expr{Src: SrcVar, Var: 0}},
			{Src: ParamNumber, Expr: &Expr{Src: SrcField, Field: w.sw.Field("next_pid")}},
			{Src: ParamNumber, Expr: &Expr{Src: SrcField, Field: w.sw.Field("next_prio")}},
		},
		Actions: inner,
	}}
	if w.rec != nil {
		swHist.OnTrack = [][]Action{{NewTriggeringAction("trig", 8), NewSnapshotAction(w.rec)}}
	}
	wakingP := &Prog{Name: "g_waking", Source: Tracepoint{}, Filter: w.wakingFilter, ID: EventID{Const: w.waking.ID},
		Actions: []Action{NewHistAction(w.la, "h_waking", "d_waking")}}
	swP := &Prog{Name: "g_switch", Source: Tracepoint{}, Filter: w.switchFilter, ID: EventID{Const: w.sw.ID},
		Actions: []Action{swHist}}
	c := NewCollection()
	for _, p := range []*Prog{wakingP, swP} {
		if err := c.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func loadTracepoints(t *testing.T, c *Collection) *ebpf.Collection {
	t.Helper()
	coll, err := ebpf.NewCollection(c.Spec())
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

// TestPrivilegedWakeupLatencyVerifier loads the wakeup-latency example on
// this kernel as classic tracepoint programs, with the synthetic event
// recorded into a recording's batches and an onmax that saves two
// fields and snapshots: the verifier accepts the parts together.
func TestPrivilegedWakeupLatencyVerifier(t *testing.T) {
	testutil.RequirePrivileged(t)
	w := newWakeupSpec(t, testutil.Format(t, "sched:sched_waking"), testutil.Format(t, "sched:sched_switch"))
	w.rec = &RecordSpec{CPUs: runtime.NumCPU(), RingSize: 1 << 20, MaxRecord: 4064}
	c := w.build(t)
	coll := loadTracepoints(t, c)
	for name, p := range coll.Programs {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		insns, _ := info.Instructions()
		t.Logf("%s: %d instructions", name, len(insns))
	}
	for _, m := range []string{ScratchMapName, BatchMapName, "h_lat", "h_waking", "h_switch"} {
		if coll.Maps[m] == nil {
			t.Errorf("no map %s in the collection", m)
		}
	}
}

// sleeper is a started child in the sleep mode (childSleep).
type sleeper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tid   int
}

func startSleeper(t *testing.T) *sleeper {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childModeEnv+"=sleep", "GODEBUG=asyncpreemptoff=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("read child's tid: %v", err)
	}
	tid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	return &sleeper{cmd: cmd, stdin: stdin, tid: tid}
}

// run lets the child sleep and waits for it to exit.
func (s *sleeper) run(t *testing.T) {
	t.Helper()
	if _, err := s.stdin.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// eventLog, a test's action, appends its event's type to a log of
// logSize u64 (an array), at the index it takes from a counter with an
// atomic add: the order in which the events of one task happened.
type eventLog struct {
	typ      int32
	idx, log *ebpf.MapSpec
}

const logSize = 4096

func newEventLogs(types ...int32) []*eventLog {
	idx := &ebpf.MapSpec{Name: "log_idx", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}
	log := &ebpf.MapSpec{Name: "log", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: logSize}
	var ls []*eventLog
	for _, typ := range types {
		ls = append(ls, &eventLog{typ: typ, idx: idx, log: log})
	}
	return ls
}

func (l *eventLog) stack() int            { return 8 }
func (l *eventLog) maps() []*ebpf.MapSpec { return []*ebpf.MapSpec{l.idx, l.log} }

func (l *eventLog) emit(b *Builder, f *Frame) error {
	key := f.Area.Off
	b.Comment("log[idx++] = %d", l.typ)
	b.Emit(asm.StoreImm(asm.R10, key, 0, asm.Word))
	emitLookup(b, l.idx.Name, key)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, f.Next),
		asm.Mov.Imm(asm.R1, 1),
		fetchAdd(asm.R0, asm.R1),
		asm.JGE.Imm(asm.R1, logSize, f.Next),
		asm.StoreMem(asm.R10, key, asm.R1, asm.Word),
	)
	emitLookup(b, l.log.Name, key)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, f.Next),
		storeImm64(asm.R0, 0, l.typ),
	)
	return nil
}

// TestPrivilegedWakeupLatencyLive attaches the wakeup-latency example to
// sched_waking and sched_switch, filtered to a child's thread that is
// woken about childSleeps+1 times (a byte on stdin, then each sleep),
// with a log of the same events beside it, in the order they happened.
// A model of the kernel's rules on the log says how many wakeups set
// $ts0 and how many switches to the child found it set (and consumed
// it): exactly the sched_waking hist's hits, the sched_switch hist's
// matches, and the synthetic events in the log2 hist of their latencies.
func TestPrivilegedWakeupLatencyLive(t *testing.T) {
	testutil.RequirePrivileged(t)
	sl := startSleeper(t)
	tid := sl.tid
	waking, sw := liveFormat(t, "sched", "sched_waking"), liveFormat(t, "sched", "sched_switch")
	w := newWakeupSpec(t, waking, sw)
	w.wakingFilter = bindLive(t, waking, fmt.Sprintf("pid == %d", tid))
	w.switchFilter = bindLive(t, sw, fmt.Sprintf("next_pid == %d", tid))
	c := w.build(t)
	logs := newEventLogs(1, 2)
	for _, p := range []*Prog{
		{Name: "l_waking", Source: Tracepoint{}, Filter: w.wakingFilter, ID: EventID{Const: waking.ID}, Actions: []Action{logs[0]}},
		{Name: "l_switch", Source: Tracepoint{}, Filter: w.switchFilter, ID: EventID{Const: sw.ID}, Actions: []Action{logs[1]}},
	} {
		if err := c.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	coll := loadTracepoints(t, c)
	for _, at := range []struct{ prog, event string }{
		{"g_waking", "sched_waking"}, {"l_waking", "sched_waking"},
		{"g_switch", "sched_switch"}, {"l_switch", "sched_switch"},
	} {
		l, err := link.Tracepoint("sched", at.event, coll.Programs[at.prog], nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	sl.run(t)
	var n uint64
	if err := coll.Maps["log_idx"].Lookup(uint32(0), &n); err != nil || n > logSize {
		t.Fatalf("log of %d events (%v), at most %d", n, err, logSize)
	}
	var wakings, matches uint64
	set := false
	for i := range uint32(n) {
		var typ uint64
		if err := coll.Maps["log"].Lookup(i, &typ); err != nil {
			t.Fatal(err)
		}
		switch typ {
		case 1:
			wakings++
			set = true
		case 2:
			if set {
				matches++
			}
			set = false
		default:
			t.Fatalf("log[%d] = %d", i, typ)
		}
	}
	hits := func(m string) (n uint64, entries int) {
		var k uint64
		var v []byte
		it := coll.Maps[m].Iterate()
		for it.Next(&k, &v) {
			n += binary.LittleEndian.Uint64(v)
			entries++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return n, entries
	}
	if got, e := hits("h_waking"); got != wakings || e != 1 {
		t.Errorf("sched_waking hist: %d hits in %d entries, want %d in 1", got, e, wakings)
	}
	if got, _ := hits("h_switch"); got != matches {
		t.Errorf("sched_switch hist: %d matches, want %d", got, matches)
	}
	got, buckets := hits("h_lat")
	if got != matches {
		t.Errorf("wakeup_latency hist: %d events, want %d", got, matches)
	}
	if matches < childSleeps/2 {
		t.Errorf("%d matches of %d events: the child was not woken as it should", matches, n)
	}
	t.Logf("%d events of %d: %d wakeups, %d synthetic events, their latencies in %d log2 buckets", n, tid, wakings, got, buckets)
}

// TestPrivilegedSynthStack attaches to sched_switch, filtered to a
// sleeping child's switches in, a hist with a frames variable
// (st=common_stacktrace) whose onmatch emits a synthetic event with two
// stack fields, one taken from the event's context, one the variable's
// frames, and a string of the entry: each record holds the child's tid,
// two __data_locs of the same stack, one after the other right after the
// fixed part, each as the kernel's trace_stack writes it (the count of
// frames, then the frames, kernel addresses), then the child's name with
// its NUL; the entry holds the frames too.
func TestPrivilegedSynthStack(t *testing.T) {
	testutil.RequirePrivileged(t)
	sl := startSleeper(t)
	sw := liveFormat(t, "sched", "sched_switch")
	def, err := parse.ParseSynth("synth", "st_ev u64 a; unsigned long[] stack; unsigned long[] vst; char[] c")
	if err != nil {
		t.Fatal(err)
	}
	synth := def.Format(3000)
	l := &HistLayout{
		Keys: []KeySlot{{Src: SrcField, Field: sw.Field("next_pid"), Size: 8}}, KeySize: 8,
		ValueSize: 16 + FramesSize + 24, CommOff: -1, MaxEntries: 64, SetOff: 8,
		Vars: []VarSlot{
			{Name: "st", Kind: VarFrames, Skip: 1, Off: 16, Size: FramesSize},
			{Name: "c", Kind: VarString, Field: sw.Field("next_comm"), Off: 16 + FramesSize, Size: 24},
		},
	}
	h := NewHistAction(l, "h_st", "d_st")
	h.OnMatch = []Action{&SynthAction{Format: synth, Params: []SynthParam{
		{Src: ParamNumber, Expr: &Expr{Src: SrcField, Field: sw.Field("next_pid")}},
		{Src: ParamStack, Skip: 1},
		{Src: ParamVar, Index: 0},
		{Src: ParamVar, Index: 1},
	}, Actions: []Action{newCapture("cap", 512)}}}
	c := NewCollection()
	filter := bindLive(t, sw, fmt.Sprintf("next_pid == %d", sl.tid))
	if err := c.Add(&Prog{Name: "st", Source: Tracepoint{}, Filter: filter, ID: EventID{Const: sw.ID}, Actions: []Action{h}}); err != nil {
		t.Fatal(err)
	}
	if c.Spec().Maps[StacksMapName] != nil {
		t.Fatal("a stack map for a frames variable")
	}
	coll := loadTracepoints(t, c)
	lk, err := link.Tracepoint("sched", "sched_switch", coll.Programs["st"], nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Close() })
	sl.run(t)
	capture := h.OnMatch[0].(*SynthAction).Actions[0].(*captureAction)
	n, rec := capture.read(t, coll)
	if n < childSleeps {
		t.Fatalf("%d synthetic events, want at least %d", n, childSleeps)
	}
	fixed := 8 + 8 + 8 + 8 + 8
	if got := binary.LittleEndian.Uint64(rec[8:]); got != uint64(sl.tid) {
		t.Errorf("a = %d, want the child's tid %d", got, sl.tid)
	}
	loc := binary.LittleEndian.Uint32(rec[16:])
	off, size := int(loc&0xffff), int(loc>>16)
	if off != fixed || size < 16 || size%8 != 0 || size > FramesSize {
		t.Fatalf("stack's __data_loc: %d bytes at %d, want a count and whole frames at %d", size, off, fixed)
	}
	if n := binary.LittleEndian.Uint64(rec[off:]); int(n) != size/8-1 {
		t.Errorf("stack's count %d, want its %d frames", n, size/8-1)
	}
	for i := off + 8; i < off+size; i += 8 {
		if pc := binary.LittleEndian.Uint64(rec[i:]); pc>>48 != 0xffff {
			t.Errorf("frame %d: %#x is no kernel address", (i-off)/8, pc)
		}
	}
	vloc := binary.LittleEndian.Uint32(rec[24:])
	voff, vsize := int(vloc&0xffff), int(vloc>>16)
	if voff != off+size || !bytes.Equal(rec[voff:voff+vsize], rec[off:off+size]) {
		t.Errorf("vst: %d bytes at %d (%x), want the stack's %d at %d (%x)", vsize, voff, rec[voff:voff+vsize], size, off+size, rec[off:off+size])
	}
	cloc := binary.LittleEndian.Uint32(rec[32:])
	coff, clen := int(cloc&0xffff), int(cloc>>16)
	name := string(rec[coff : coff+clen])
	if coff != voff+vsize || clen < 2 || name[clen-1] != 0 {
		t.Errorf("c: %q at %d, want a string with its NUL at %d", name, coff, voff+vsize)
	}
	entry := make([]byte, l.ValueSize)
	if err := coll.Maps["h_st"].Lookup(uint64(sl.tid), &entry); err != nil {
		t.Fatal(err)
	}
	if set := binary.LittleEndian.Uint64(entry[8:]); set != 3 {
		t.Errorf("the entry's set bits %b, want st and c set", set)
	} else if pc := binary.LittleEndian.Uint64(entry[16:]); pc>>48 != 0xffff {
		t.Errorf("st's first frame %#x: want a kernel address", pc)
	}
	t.Logf("%d synthetic events, the last with %d frames, c=%q", n, size/8-1, name)
}
