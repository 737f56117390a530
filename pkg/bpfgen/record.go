package bpfgen

// The record generator: one tracepoint program per recorded event copies
// the event's raw record, stamped with the time, into a batch of the CPU
// it runs on, and hands full batches to that CPU's BPF ring buffer.
//
// Register contract of a record program:
//
//	R6      ctx, the raw record (kept for the whole program)
//	R7      the timestamp; then the sample being filled
//	R8      this CPU's batch
//	R9      bpf_get_current_pid_tgid(), as EmitFilter expects it; the
//	        record's length for events with dynamic fields
//	R0..R5  clobbered by helper calls
//
// Stack: the u32 map key at keySlot; the filter's scratch area below it.
//
// A sample (little endian, 8-byte aligned):
//
//	0   u64 timestamp, from the helper of the recording's clock
//	8   u32 length of the record that follows
//	12  u32 zero
//	16  the raw record: the event's fixed part, then its dynamic
//	    (__data_loc, __rel_loc) payloads; padded to 8 bytes
//
// The record's first 8 bytes, its common fields, are not the kernel's:
// when a BPF program runs on a classic tracepoint, the kernel has stored a
// pt_regs pointer there (perf_trace_run_bpf_submit), and only fills in the
// common fields afterwards, for perf. So the program writes them itself:
// common_type is the format's ID, common_pid the current task's pid,
// common_flags and common_preempt_count are 0 (BPF cannot see them).
//
// Batches: a BPF ring buffer takes a spin lock and an atomic exchange per
// record, about 35 ns, as much as the rest of the program. So each CPU
// fills a batch (a PERCPU_ARRAY value: a header and BatchData bytes of
// samples back to back) and writes it to its ring with one
// bpf_ringbuf_output, without waking the reader (BPF_RB_NO_WAKEUP): when
// the next sample might not fit, or when the batch's first sample is more
// than flushAge old, so that records reach the reader within about a
// millisecond while events keep coming. A ring-buffer record is thus a
// batch of samples. Batches on one CPU need no lock: the kernel runs no
// two tracepoint programs on a CPU at once (bpf_prog_active). What a
// batch holds when the programs are detached, user space reads from the
// map. A batch that finds its ring full is lost, and its samples are
// counted in lost[cpu]. A streaming recording (RecordSpec.Stream) writes
// the batch to the ring right after each sample: a batch of one, so that
// an event on a CPU that then goes idle reaches the reader at once.
//
// Batch header (BatchHeader bytes):
//
//	0   u32 bytes of samples in the batch (fill)
//	4   u32 samples in the batch (count)
//	8   u64 timestamp of the first sample
//	16  u64 busy: 1 while a program fills the batch
//
// The kernel runs no two classic tracepoint programs on a CPU at once
// (bpf_prog_active), but it keeps no such guard between a program on a
// raw tracepoint (see direct.go) and one on a classic tracepoint that an
// interrupt runs in its midst. The busy word is gtrace's own guard: a
// program that finds the batch busy has interrupted another on the same
// CPU, and counts its event lost rather than write over the other's
// sample. Nesting is the only concurrency on a CPU's batch, and the inner
// program ends before the outer one goes on, so plain loads and stores do.

import (
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/attach"
	"github.com/gtrace/gtrace/pkg/parse"
)

// Names of the objects in a record collection.
const (
	RingsMapName = "rings"       // ARRAY_OF_MAPS: CPU -> that CPU's RINGBUF
	LostMapName  = "lost"        // mmapable ARRAY: CPU -> u64 events lost
	BatchMapName = "batch"       // PERCPU_ARRAY: the batch being filled
	CommsMapName = "comms"       // LRU_HASH: pid -> comm, at every context switch
	CommProgName = "gtrace_comm" // the program that fills comms, on sched:sched_switch
	// CommExitProgName is the same program on sched:sched_process_exit.
	CommExitProgName = "gtrace_comm_exit"
	SwitchMapName    = "off" // mmapable ARRAY: non-zero switches every record program off
	// StampMapName is the PERCPU_ARRAY where a recording with
	// RecordSpec.Stamp leaves the time and ID of the event it stamped
	// last (stampMap).
	StampMapName = "stamp"
)

// A stamp (StampMapName's value, one per CPU) is the recording's own
// read of the clock for the event that a record program is recording,
// which an inter-event session's program attached after it on the same
// classic tracepoint takes for its common_timestamp, so that the two
// agree to the nanosecond:
//
//	0   u64 the sample's timestamp
//	8   u64 the event's format ID; 0 while the program has not read the
//	        clock for the event (a nested program records nothing)
//
// The record program zeroes the ID before it takes its batch and writes
// both once it has read the clock: a program that finds the batch busy
// leaves no stamp of an earlier event with the same ID behind.
const stampSize = 16

// stampMap is the spec of the stamp map.
func stampMap() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: StampMapName, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: stampSize, MaxEntries: 1}
}

// SampleHeader is the size of a sample's header: timestamp and length.
const SampleHeader = 16

// Sizes of a batch: its header and its samples. A batch fits a 16 KiB map
// value.
const (
	BatchHeader = 24
	BatchData   = 16<<10 - BatchHeader
)

// flushAge is how old, in ns, a batch's first sample may get before the
// next event on the CPU writes the batch to the ring.
const flushAge = 1000000

// maxDirectCopy is the longest fixed part copied with loads from ctx
// rather than with bpf_probe_read_kernel.
const maxDirectCopy = 256

// rbNoWakeup is BPF_RB_NO_WAKEUP.
const rbNoWakeup = 1

// keySlot is the stack slot of u32 map keys.
const keySlot = -4

// recSlot is where a program on a raw tracepoint builds its record on the
// stack; the filter's scratch area lies below it.
const recSlot = keySlot - 4 - directRecordMax

// busyOff is the offset of the busy word in a batch header.
const busyOff = 16

// Clock is the clock a record program stamps samples with, named after the
// kernel's trace clock that reads the same time.
type Clock int

// Clocks that BPF programs can read.
const (
	ClockMono Clock = iota // mono: bpf_ktime_get_ns, CLOCK_MONOTONIC
	ClockBoot              // boot: bpf_ktime_get_boot_ns, CLOCK_BOOTTIME
	ClockTAI               // tai: bpf_ktime_get_tai_ns, CLOCK_TAI (Linux >= 6.1)
)

var clockNames = [...]string{"mono", "boot", "tai"}

// String returns the kernel's trace clock name: mono, boot or tai.
func (c Clock) String() string {
	if c >= 0 && int(c) < len(clockNames) {
		return clockNames[c]
	}
	return fmt.Sprintf("Clock(%d)", int(c))
}

// ParseClock returns the clock of a trace clock name.
func ParseClock(name string) (Clock, error) {
	for i, n := range clockNames {
		if n == name {
			return Clock(i), nil
		}
	}
	return 0, fmt.Errorf("trace clock %q cannot be read from BPF: use mono, boot or tai", name)
}

func (c Clock) helper() asm.BuiltinFunc {
	switch c {
	case ClockBoot:
		return asm.FnKtimeGetBootNs
	case ClockTAI:
		return asm.FnKtimeGetTaiNs
	}
	return asm.FnKtimeGetNs
}

// RecordEvent is one event to record.
type RecordEvent struct {
	Format *parse.Format
	Filter *parse.BoundFilter // nil: every event is recorded
	// Syscall, for a syscalls:sys_enter_NAME or sys_exit_NAME event, is
	// the number of system call NAME, which lets a Direct recording
	// record it in a syscall group (see syscalls.go); nil otherwise.
	Syscall *uint32
	// Stack, when not nil, follows each firing of the event's
	// stacktrace trigger with a record of its kernel stack (stack.go).
	// The event then has a program of its own on its classic
	// tracepoint, and the recording a control map.
	Stack *StackTrigger
	// Snapshot, when not nil, marks each firing of the event's snapshot
	// trigger in the CPU's batch, after the event's record
	// (snapshot.go). The recording then has a control map.
	Snapshot *SnapshotTrigger
	// Triggers are the event's triggers, run after its record action
	// (RecordSpec.Control).
	Triggers []RecordTrigger
	// SoftDisabled: the event starts soft disabled, recorded only once
	// an enable_event trigger enables it.
	SoftDisabled bool
	// Source, when not nil, builds the event's records: a probe event's
	// (NewProbe). nil: the event's tracepoint, or Direct.
	Source Source
}

// StackTrigger is what the stacktrace trigger of an event asks for.
type StackTrigger struct {
	ID      int      // the format ID of ftrace:kernel_stack
	Skip    int      // innermost frames left out
	Counter *Counter // the firings left; nil: every event
	// Filter is the trigger's own: an event that passes it fires the
	// trigger, whether the event's filter records it or not; nil: every
	// event.
	Filter *parse.BoundFilter
	// UserID, if not 0, is the format ID of ftrace:user_stack: a
	// record of the user stack follows each kernel stack.
	UserID int
}

// posts reports whether an event of the recording has a stack or a
// snapshot trigger.
func (s *RecordSpec) posts() bool {
	for _, ev := range s.Events {
		if ev.Stack != nil || ev.Snapshot != nil {
			return true
		}
	}
	return false
}

// RecordSpec describes the programs and maps of a recording.
type RecordSpec struct {
	Events      []RecordEvent
	CPUs        int    // entries of the per-CPU maps: CPU ids run 0..CPUs-1
	RingSize    int    // bytes of each CPU's ring buffer: a power of two, a multiple of the page size
	MaxRecord   int    // longest record copied, in bytes; longer ones are cut
	Clock       Clock  // what timestamps samples
	CommEntries int    // pid -> comm entries kept; 0: no comm program
	ExcludeTGID uint32 // events of this process are not recorded (gtrace itself); 0: none
	OnlyTGIDs   []uint32
	OnlyCPUs    []int // if not empty, only events on these CPUs (sorted) are recorded
	// Preempt, when not nil, keeps ExcludeTGID's events raised in
	// interrupts (Gate's Preempt).
	Preempt *PreemptCount
	// Follow, when not nil, records only the processes in the follow
	// map and adds the programs that keep it (follow.go). Not with
	// OnlyTGIDs.
	Follow *FollowSpec
	// Direct, when not nil, builds the records of the events that
	// DirectTracepoint names a raw tracepoint for in programs on that
	// raw tracepoint (BTF-enabled, tp_btf), which the kernel runs at a
	// fraction of a classic tracepoint program's cost. Loading them
	// needs the kernel's BTF.
	Direct *DirectOptions
	// Shared makes the events without a filter whose records have the
	// same layout share one program, attached at each event's
	// tracepoint with the event's ID as the attach cookie (Linux >=
	// 5.15): one load for many events.
	Shared bool
	// Stream hands every sample to the ring as soon as it is written,
	// instead of when the batch is full or, at the CPU's next event,
	// older than flushAge: a live stream cannot leave a rare event in
	// the batch of a CPU that has gone idle. It costs a ring-buffer
	// write per sample.
	Stream bool
	// Control gives the recording a control map (control.go): tracing
	// on and off, soft-disabled events and the events' triggers. It
	// records every event on a program of its own.
	Control bool
	// StartOff starts a recording with a control map with tracing off.
	StartOff bool
	// Hists are the hists of the recording's hist triggers, each with a
	// paused word in the control map, true where the hist starts paused
	// (:pause): programs of their own (Hist, HistControl.Recording)
	// count them, sharing the control map, which they give the
	// recording.
	Hists []bool
	// Stamp makes the programs of the events recorded on their classic
	// tracepoint, unfiltered and without a control map, leave their
	// clock read in the stamp map (Recorder.Stamped): for an
	// inter-event session that runs on the same events.
	Stamp bool
}

// gate returns the gate of the spec's programs, without the switch.
func (s *RecordSpec) gate() Gate {
	g := Gate{ExcludeTGID: s.ExcludeTGID, Preempt: s.Preempt, OnlyTGIDs: s.OnlyTGIDs, CPUs: s.OnlyCPUs}
	if s.Follow != nil {
		g.Follow = FollowMapName
	}
	return g
}

// RecordProgName returns the name of the i-th record program.
func RecordProgName(i int) string { return fmt.Sprintf("gtrace_rec%d", i) }

// RecordLayout returns the bytes of an event's fixed part (the end of its
// last field) and its dynamic fields, whose payloads follow.
func RecordLayout(f *parse.Format) (fixed int, dynamic []*parse.Field) {
	for i := range f.Fields {
		fld := &f.Fields[i]
		fixed = max(fixed, fld.Offset+fld.Size)
		if fld.Class == parse.ClassDataLoc || fld.Class == parse.ClassRelLoc {
			dynamic = append(dynamic, fld)
		}
	}
	return fixed, dynamic
}

// recordMaps are the maps a recording's samples go through: the rings,
// the lost counters and the batches.
func recordMaps(s *RecordSpec) []*ebpf.MapSpec {
	return []*ebpf.MapSpec{
		{
			Name:       RingsMapName,
			Type:       ebpf.ArrayOfMaps,
			KeySize:    4,
			ValueSize:  4,
			MaxEntries: uint32(s.CPUs),
			InnerMap:   &ebpf.MapSpec{Name: "ring", Type: ebpf.RingBuf, MaxEntries: uint32(s.RingSize)},
		},
		{
			Name:       LostMapName,
			Type:       ebpf.Array,
			KeySize:    4,
			ValueSize:  8,
			MaxEntries: uint32(s.CPUs),
			Flags:      mapMmapable,
		},
		{
			Name:       BatchMapName,
			Type:       ebpf.PerCPUArray,
			KeySize:    4,
			ValueSize:  BatchHeader + BatchData,
			MaxEntries: 1,
		},
	}
}

// NewRecordAction returns the action that records events of format f
// into the batches of the recording s (its CPUs, ring size, longest
// record, clock and streaming): a synthetic event's record, by a
// SynthAction, into a recording that the hist's collection then shares
// (by the maps' names) with the recording's.
func NewRecordAction(s *RecordSpec, f *parse.Format) *RecordAction {
	return &RecordAction{Format: f, Clock: s.Clock, MaxRecord: s.MaxRecord, Stream: s.Stream, shared: recordMaps(s)}
}

// Record builds the collection of a recording: a program per event (or per
// syscall group, see syscalls.go), the
// per-CPU batches and ring buffers (the rings' template: probe creates one
// per CPU), the lost counters and, with CommEntries, the comm program and
// its map.
func Record(s *RecordSpec) (*Program, error) {
	if s.CPUs <= 0 || s.RingSize <= 0 || s.RingSize&(s.RingSize-1) != 0 {
		return nil, fmt.Errorf("record layout: %d CPUs and a ring of %d bytes (want a power of two)", s.CPUs, s.RingSize)
	}
	if s.MaxRecord < 8 || s.MaxRecord%8 != 0 {
		return nil, fmt.Errorf("record layout: longest record %d bytes, want a multiple of 8", s.MaxRecord)
	}
	if len(s.Events) == 0 {
		return nil, fmt.Errorf("record: no events")
	}
	if s.Follow != nil && len(s.OnlyTGIDs) > 0 {
		return nil, fmt.Errorf("record: follow processes or list them, not both")
	}
	c := NewCollection()
	shared := append(recordMaps(s), SwitchMap(SwitchMapName))
	var ctl *Control
	if s.Control || s.posts() || len(s.Hists) > 0 {
		var err error
		triggers := make([][]RecordTrigger, len(s.Events))
		soft := make([]bool, len(s.Events))
		for i, ev := range s.Events {
			triggers[i], soft[i] = ev.Triggers, ev.SoftDisabled
		}
		if ctl, shared[len(shared)-1], err = SessionControl(triggers, soft, s.Hists, s.StartOff); err != nil {
			return nil, err
		}
	}
	if s.MaxRecord+SampleHeader > BatchData {
		return nil, fmt.Errorf("record layout: longest record %d bytes, a batch holds %d", s.MaxRecord, BatchData-SampleHeader)
	}
	if s.RingSize < 2*(BatchHeader+BatchData) {
		return nil, fmt.Errorf("record layout: a ring of %d bytes holds less than two batches of %d", s.RingSize, BatchHeader+BatchData)
	}
	for _, m := range shared {
		if err := c.AddMap(m); err != nil {
			return nil, err
		}
	}
	if s.Follow != nil {
		if err := c.AddFollow(s.Follow); err != nil {
			return nil, err
		}
	}
	in, filters := groups(s)
	if ctl != nil {
		in = make([]*syscallGroup, len(s.Events))
	}
	if err := addSyscallGroups(s, in, filters, c); err != nil {
		return nil, err
	}
	gate := s.gate()
	gate.Switch = SwitchMapName
	recorders := make([]Recorder, len(s.Events))
	byShape := map[string]*Prog{} // shareable programs by the layout of their records
	byName := map[string]*Prog{}
	var order []*Prog
	for i, ev := range s.Events {
		f := ev.Format
		if g := in[i]; g != nil {
			recorders[i] = Recorder{Prog: g.prog, Point: attach.Point{Kind: attach.TpBTF, Target: g.tracepoint}, Group: true}
			continue
		}
		if err := checkRecord(s, f); err != nil {
			return nil, err
		}
		var src Source = Tracepoint{}
		if d := NewDirect(f, s.Direct); d != nil && ev.Stack == nil {
			src = d
		}
		if ev.Source != nil {
			if ev.Stack != nil {
				return nil, fmt.Errorf("event %s: a stacktrace trigger reads the stack of a tracepoint's context: gtrace does not take one on a probe event", f.FullName())
			}
			src = ev.Source
		}
		shape := ""
		_, classic := src.(Tracepoint)
		if classic && s.Shared && ev.Filter == nil && ev.Stack == nil && ctl == nil {
			shape = recordShape(f)
		}
		recorders[i] = Recorder{Point: src.Point(f)}
		var stamp *ebpf.MapSpec
		if s.Stamp && classic && ev.Filter == nil && ctl == nil {
			stamp, recorders[i].Stamped = stampMap(), true
		}
		if p, ok := src.(*Probe); ok {
			recorders[i].Why = p.Why()
		}
		recorders[i].Point.Cookie = uint64(f.ID)
		if p := byShape[shape]; shape != "" && p != nil {
			// Another event of this layout has a program (stamping
			// as this one would): share it.
			p.ID = EventID{Cookie: true}
			recorders[i].Prog = p.Name
			continue
		}
		p := &Prog{
			Name:    RecordProgName(len(order)),
			Source:  src,
			Gate:    gate,
			Filter:  ev.Filter,
			ID:      EventID{Const: f.ID},
			Actions: []Action{&RecordAction{Format: f, Clock: s.Clock, MaxRecord: s.MaxRecord, Stream: s.Stream, shared: shared, stamp: stamp}},
		}
		var stack *StackAction
		if st := ev.Stack; st != nil {
			stack = &StackAction{ID: st.ID, UserID: st.UserID, Clock: s.Clock, Skip: st.Skip, Stream: s.Stream, Counter: st.Counter, shared: shared}
		}
		if ctl != nil {
			first := 0
			for _, prev := range s.Events[:i] {
				first += len(prev.Triggers)
			}
			filter := ev.Filter
			if len(ev.Triggers) == 0 && stack == nil && ev.Snapshot == nil {
				// No trigger needs the events the filter rejects:
				// it stays the skeleton's, first where it can be.
				filter = nil
			} else {
				p.Filter = nil
			}
			m := shared[len(shared)-1]
			p.Actions = ctl.actions(m, ControlTracingOff, i, nil, ev.Triggers, first, filter, p.Actions[0])
			if stack != nil {
				// The stacktrace trigger fires on the events that pass
				// its own filter, recorded or not, but not while its
				// event is soft disabled (as the kernel's post-trigger,
				// which a soft disabled event never reaches); it writes
				// its stack right after the record, only while tracing
				// is on (StackAction.Control).
				stack.Control = m
				gs := &GatedAction{Control: m, Words: []int{ctl.SoftWord(i)}, Filter: ev.Stack.Filter, Inner: stack}
				p.Actions = insertAfterRecord(p.Actions, gs)
			}
			if st := ev.Snapshot; st != nil {
				// The snapshot trigger fires as the stacktrace trigger
				// does, tracing on or off (the kernel swaps its buffers
				// either way); its mark follows the record and the stack.
				snap := &SnapshotAction{Clock: s.Clock, Stream: s.Stream, Counter: st.Counter, shared: shared}
				gs := &GatedAction{Control: m, Words: []int{ctl.SoftWord(i)}, Filter: st.Filter, Inner: snap}
				p.Actions = insertAfterRecord(p.Actions, gs)
			}
		}
		if shape != "" {
			byShape[shape] = p
		}
		byName[p.Name] = p
		order = append(order, p)
		recorders[i].Prog = p.Name
		recorders[i].More = MoreProbes(p.Name, src)
	}
	for _, p := range order {
		if err := c.Add(p); err != nil {
			return nil, err
		}
	}
	for i := range recorders {
		if p := byName[recorders[i].Prog]; p != nil && !p.ID.Cookie {
			recorders[i].Point.Cookie = 0 // the program's own event
		}
	}
	if s.CommEntries > 0 {
		if err := c.AddMap(&ebpf.MapSpec{
			Name:       CommsMapName,
			Type:       ebpf.LRUHash,
			KeySize:    4,
			ValueSize:  CommLen,
			MaxEntries: uint32(s.CommEntries),
		}); err != nil {
			return nil, err
		}
		for name, at := range map[string]string{CommProgName: "sched_switch", CommExitProgName: "sched_process_exit"} {
			ps := &ebpf.ProgramSpec{Name: name, Type: ebpf.TracePoint, License: "GPL", Instructions: commProgram()}
			if s.Direct != nil {
				// It reads no argument: a raw tracepoint program does,
				// and needs no perf event of its own.
				directSpec(ps, at)
			}
			if err := c.AddSpec(ps); err != nil {
				return nil, err
			}
		}
	}
	return &Program{Collection: c.Spec(), Recorders: recorders, Control: ctl}, nil
}

// insertAfterRecord inserts a after the gated record action of actions
// and the gated actions that follow it (a stack's).
func insertAfterRecord(actions []Action, a Action) []Action {
	j := slices.IndexFunc(actions, func(a Action) bool { _, ok := a.(*GatedAction); return ok })
	if j < 0 {
		return append(actions, a)
	}
	for j+1 < len(actions) {
		if _, ok := actions[j+1].(*GatedAction); !ok {
			break
		}
		j++
	}
	return slices.Insert(actions, j+1, a)
}

// recordShape is what the record programs of two events must have alike
// to be one program: the fixed part's length and the dynamic fields.
func recordShape(f *parse.Format) string {
	fixed, dynamic := RecordLayout(f)
	shape := fmt.Sprint(fixed)
	for _, d := range dynamic {
		shape += fmt.Sprintf(",%d:%d", d.Offset, d.Class)
	}
	return shape
}

// checkRecord checks that gtrace can record an event of format f.
func checkRecord(s *RecordSpec, f *parse.Format) error {
	fixed, _ := RecordLayout(f)
	if fixed < 8 {
		return fmt.Errorf("event %s: format has no fields past the common ones' 8 bytes", f.FullName())
	}
	if fixed > s.MaxRecord {
		return fmt.Errorf("event %s: its fields take %d bytes, more than a record may (%d)", f.FullName(), fixed, s.MaxRecord)
	}
	if f.ID <= 0 || f.ID > 0xffff {
		return fmt.Errorf("event %s: format ID %d does not fit common_type", f.FullName(), f.ID)
	}
	return nil
}

// Recorder is the program that records an event, and where it is
// attached for it.
type Recorder struct {
	Prog  string       // the program's name in the collection
	Point attach.Point // where it runs for the event; a shared program's cookie is the event's ID
	Group bool         // it records other syscalls events too (see syscalls.go)
	// More, for an event of several probes, are the programs of its
	// other probes and their points (MoreProbes).
	More []Recorder
	// Why says why a kernel probe's program runs on its fentry, fexit or
	// kprobe (Probe.Why).
	Why string
	// Stamped: the program leaves its clock read of every event it
	// records in the stamp map (RecordSpec.Stamp): it is on the event's
	// classic tracepoint, with no filter and no control map.
	Stamped bool
}

// Shared reports whether the recorder's program records other events of
// the same layout too, told apart by the attach cookie.
func (r Recorder) Shared() bool { return r.Point.Cookie != 0 }

// mapMmapable is BPF_F_MMAPABLE: user space reads the lost counters from
// memory, without a system call.
const mapMmapable = 1 << 10

// RecordAction copies the event's record, stamped with the time, into the
// batch of the CPU it runs on (see the top of this file).
type RecordAction struct {
	Format    *parse.Format // the layout of the records: their fixed part and dynamic fields
	Clock     Clock
	MaxRecord int
	// Stream writes each sample to the ring as soon as it is in the
	// batch (see RecordSpec.Stream).
	Stream bool
	shared []*ebpf.MapSpec
	stamp  *ebpf.MapSpec // the stamp map the action stamps the event in; nil: none
}

func (a *RecordAction) stack() int { return 8 }
func (a *RecordAction) maps() []*ebpf.MapSpec {
	if a.stamp != nil {
		return append(slices.Clip(a.shared), a.stamp)
	}
	return a.shared
}

// emit: R7 = the timestamp, then the sample; R8 = the batch. The area
// holds the u32 key of map lookups.
func (a *RecordAction) emit(b *Builder, fr *Frame) error {
	f := a.Format
	fixed, dynamic := RecordLayout(f)
	key := fr.Area.Off + 4
	done := b.Label("done")
	// The most a sample of this event takes.
	most := SampleHeader + (fixed+7)&^7
	if len(dynamic) > 0 {
		most = SampleHeader + a.MaxRecord
	}
	if a.stamp != nil {
		b.Comment("no stamp until the clock is read for this event")
		b.Emit(asm.StoreImm(asm.R10, key, 0, asm.Word))
		emitLookup(b, StampMapName, key)
		stamped := b.Label("unstamped")
		b.Emit(asm.JEq.Imm(asm.R0, 0, stamped), storeImm64(asm.R0, 8, 0))
		b.Mark(stamped)
	}
	emitBatch(b, a.Clock, BatchData-most, key, fr.Out, done)
	if a.stamp != nil {
		b.Comment("stamp: the sample's timestamp and the event's ID, for a session's common_timestamp")
		b.Emit(asm.StoreImm(asm.R10, key, 0, asm.Word))
		emitLookup(b, StampMapName, key)
		stamped := b.Label("stamped")
		b.Emit(
			asm.JEq.Imm(asm.R0, 0, stamped),
			asm.LoadMem(asm.R1, asm.R7, 0, asm.DWord),
			asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		)
		fr.ID.load(b, asm.R1)
		b.Emit(asm.StoreMem(asm.R0, 8, asm.R1, asm.DWord))
		b.Mark(stamped)
	}
	if len(dynamic) == 0 {
		emitFixed(b, fr.ID, fixed)
	} else {
		emitDynamic(b, a.MaxRecord, fr.ID, fixed, dynamic)
	}
	emitStreamWrite(b, a.Stream, key)
	b.Mark(done)
	b.Comment("the batch is free again")
	b.Emit(storeImm64(asm.R8, busyOff, 0))
	if fr.Next != fr.Out {
		b.Emit(asm.Ja.Label(fr.Next))
	}
	return nil
}

// emitEnd ends a record program: done frees the batch, out returns 0.
func emitEnd(b *Builder, done, out string) {
	b.Mark(done)
	b.Comment("the batch is free again")
	b.Emit(storeImm64(asm.R8, busyOff, 0))
	b.Mark(out)
	b.Emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
}

// emitCPUKey stores bpf_get_smp_processor_id() in the key slot at
// R10+key. Clobbers R0-R5.
func emitCPUKey(b *Builder, key int16) {
	b.Emit(
		asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(asm.R10, key, asm.R0, asm.Word),
	)
}

// emitLookup calls bpf_map_lookup_elem on the named map with the u32 key
// at R10+key. Clobbers R0-R5.
func emitLookup(b *Builder, name string, key int16) {
	b.Emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(name),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.FnMapLookupElem.Call(),
	)
}

// emitBatch leaves this CPU's batch in R8, marked busy, the timestamp in
// R7 and the sample to fill in R7 at the end: first, if the batch has no
// room left for a sample (fill > limit) or its first sample is older than
// flushAge, it writes the batch to the ring, or counts its samples lost
// when the ring is full, and empties it. Jumps to out if the batch cannot
// be had or is busy (the event is then counted lost), and to done, which
// frees the batch, if it gives up later.
func emitBatch(b *Builder, clock Clock, limit int, key int16, out, done string) {
	flush := b.Label("flush")
	dropped := b.Label("dropped")
	reset := b.Label("reset")
	first := b.Label("first")
	appendTo := b.Label("append")
	nested := b.Label("nested")
	b.Comment("R8 = this CPU's batch")
	b.Emit(asm.StoreImm(asm.R10, key, 0, asm.Word))
	emitLookup(b, BatchMapName, key)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, out),
		asm.Mov.Reg(asm.R8, asm.R0),
	)
	b.Comment("busy: this program interrupted another one on this CPU")
	b.Emit(
		asm.LoadMem(asm.R1, asm.R8, busyOff, asm.DWord),
		asm.JNE.Imm(asm.R1, 0, nested),
		storeImm64(asm.R8, busyOff, 1),
	)
	b.Comment("R7 = timestamp (%s clock)", clock)
	b.Emit(
		clock.helper().Call(),
		asm.Mov.Reg(asm.R7, asm.R0),
	)
	b.Comment("flush when full or older than %d ns", flushAge)
	b.Emit(
		asm.LoadMem(asm.R1, asm.R8, 0, asm.Word),
		asm.JGT.Imm(asm.R1, int32(limit), flush),
		asm.JEq.Imm(asm.R1, 0, first),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.LoadMem(asm.R3, asm.R8, 8, asm.DWord),
		asm.Sub.Reg(asm.R2, asm.R3),
		asm.JLE.Imm(asm.R2, flushAge, appendTo),
	)
	b.Mark(flush)
	emitWrite(b, key, dropped, reset)
	b.Mark(first)
	b.Emit(asm.StoreMem(asm.R8, 8, asm.R7, asm.DWord))
	b.Mark(appendTo)
	b.Comment("R7 = the sample at batch + fill")
	b.Emit(
		asm.LoadMem(asm.R1, asm.R8, 0, asm.Word),
		asm.JGT.Imm(asm.R1, int32(limit), done), // never taken: bounds fill for the verifier
		asm.Mov.Reg(asm.R2, asm.R8),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.R2, BatchHeader, asm.R7, asm.DWord),
		asm.Mov.Reg(asm.R7, asm.R2),
		asm.Add.Imm(asm.R7, BatchHeader),
	)
	after := b.Label("filled")
	b.Emit(asm.Ja.Label(after))
	b.Mark(nested)
	b.Comment("lost[cpu] += 1")
	emitCPUKey(b, key)
	emitLookup(b, LostMapName, key)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, out),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
		asm.Ja.Label(out),
	)
	b.Mark(after)
}

// emitWrite writes the batch at R8 to this CPU's ring, or counts its
// samples lost when the ring is full, and empties it; dropped and reset
// are fresh labels it marks. Clobbers R0-R5.
func emitWrite(b *Builder, key int16, dropped, reset string) {
	b.Comment("write the batch to this CPU's ring")
	emitCPUKey(b, key)
	emitLookup(b, RingsMapName, key)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, dropped),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Mov.Reg(asm.R2, asm.R8),
		asm.Add.Imm(asm.R2, BatchHeader),
		asm.LoadMem(asm.R3, asm.R8, 0, asm.Word),
		asm.JGT.Imm(asm.R3, BatchData, reset),
		asm.Mov.Imm(asm.R4, rbNoWakeup),
		asm.FnRingbufOutput.Call(),
		asm.JEq.Imm(asm.R0, 0, reset),
	)
	b.Mark(dropped)
	b.Comment("the ring is full: lost[cpu] += count")
	emitLookup(b, LostMapName, key)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, reset),
		asm.LoadMem(asm.R1, asm.R8, 4, asm.Word),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
	)
	b.Mark(reset)
	b.Emit(storeImm64(asm.R8, 0, 0))
}

// emitStreamWrite, in a Stream recording, writes the batch at R8, which
// holds the sample just added, to the ring at once. Clobbers R0-R5.
func emitStreamWrite(b *Builder, stream bool, key int16) {
	if !stream {
		return
	}
	b.Comment("stream: every sample goes to the ring at once")
	emitWrite(b, key, b.Label("dropped"), b.Label("reset"))
}

// emitCount adds a sample of size bytes (in R1) to the batch's fill and
// one to its count, which share a u64. Clobbers R1-R3.
func emitCount(b *Builder) {
	b.Emit(
		asm.LoadImm(asm.R2, 1<<32, asm.DWord),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.LoadMem(asm.R3, asm.R8, 0, asm.DWord),
		asm.Add.Reg(asm.R3, asm.R1),
		asm.StoreMem(asm.R8, 0, asm.R3, asm.DWord),
	)
}

// emitCommon overwrites the record's first 8 bytes at base+off with
// common_type = the event's ID, flags and preempt_count 0, common_pid =
// the current pid (R9's low half). Clobbers R1, R2.
func emitCommon(b *Builder, base asm.Register, off int16, id EventID) {
	if id.Cookie {
		b.Comment("common_type = the cookie's ID, common_pid = pid")
	} else {
		b.Comment("common_type = %d, common_pid = pid", id.Const)
	}
	b.Emit(
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.LSh.Imm(asm.R1, 32),
	)
	if id.Cookie {
		id.load(b, asm.R2)
		b.Emit(asm.And.Imm(asm.R2, 0xffff), asm.Or.Reg(asm.R1, asm.R2))
	} else {
		b.Emit(asm.Or.Imm(asm.R1, int32(id.Const)))
	}
	b.Emit(asm.StoreMem(base, off, asm.R1, asm.DWord))
}

// emitFixed fills the sample at R7 with a record of constant length.
func emitFixed(b *Builder, id EventID, fixed int) {
	b.Emit(storeImm64(asm.R7, 8, int32(fixed)))
	if fixed <= maxDirectCopy {
		// Loads from ctx cost a cycle or two where bpf_probe_read_kernel
		// costs tens of ns. They must be aligned and must not pass the
		// event's fixed part, or attaching fails with EACCES. The first
		// 8 bytes are written below.
		b.Comment("copy %d bytes of record from ctx", fixed)
		for off := 8; off < fixed; {
			n := 8
			for off+n > fixed {
				n /= 2
			}
			size := map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}[n]
			b.Emit(
				asm.LoadMem(asm.R1, asm.R6, int16(off), size),
				asm.StoreMem(asm.R7, int16(SampleHeader+off), asm.R1, size),
			)
			off += n
		}
	} else {
		b.Comment("copy %d bytes of record", fixed)
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Imm(asm.R1, SampleHeader),
			asm.Mov.Imm(asm.R2, int32(fixed)),
			asm.Mov.Reg(asm.R3, asm.R6),
			asm.FnProbeReadKernel.Call(),
		)
	}
	emitCommon(b, asm.R7, SampleHeader, id)
	b.Emit(asm.Mov.Imm(asm.R1, int32(SampleHeader+(fixed+7)&^7)))
	emitCount(b)
}

// emitDynamic fills the sample at R7 with a record that has dynamic
// fields: it measures the record from their __data_loc/__rel_loc words,
// caps it at the longest record, and copies it.
func emitDynamic(b *Builder, maxRecord int, id EventID, fixed int, dynamic []*parse.Field) {
	emitCommon(b, asm.R7, SampleHeader, id)
	b.Comment("R9 = record length: %d, or the end of the furthest dynamic field", fixed)
	b.Emit(asm.Mov.Imm(asm.R9, int32(fixed)))
	for _, d := range dynamic {
		// An array of strings (a probe's __data_loc char[][N]) has a
		// word per string.
		for at := 0; at < max(d.Size, 4); at += 4 {
			b.Comment("end of %s", d.Name)
			emitLocEnd(b, d, at)
			keep := b.Label("shorter")
			b.Emit(
				asm.JLE.Reg(asm.R1, asm.R9, keep),
				asm.Mov.Reg(asm.R9, asm.R1),
			)
			b.Mark(keep)
		}
	}
	short := b.Label("fits")
	long := b.Label("long_enough")
	b.Comment("at least %d and at most %d bytes", fixed, maxRecord)
	b.Emit(
		asm.JLE.Imm(asm.R9, int32(maxRecord), short),
		asm.Mov.Imm(asm.R9, int32(maxRecord)),
	)
	b.Mark(short)
	b.Emit(
		asm.JGE.Imm(asm.R9, int32(fixed), long),
		asm.Mov.Imm(asm.R9, int32(fixed)),
	)
	b.Mark(long)
	b.Comment("copy all but the common fields")
	b.Emit(
		asm.StoreMem(asm.R7, 8, asm.R9, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, SampleHeader+8),
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.Sub.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, asm.R6),
		asm.Add.Imm(asm.R3, 8),
		asm.FnProbeReadKernel.Call(),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, SampleHeader+7),
		asm.And.Imm(asm.R1, ^7),
	)
	emitCount(b)
}

// emitLocEnd leaves in R1 the end of a dynamic field's payload, from the
// start of the record: offset + length of its __data_loc word (the one at
// the field's offset + at), counted from just past the word for
// __rel_loc. Clobbers R1, R2.
func emitLocEnd(b *Builder, d *parse.Field, at int) {
	b.Emit(
		asm.LoadMem(asm.R1, asm.R6, int16(d.Offset+at), asm.Word),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.RSh.Imm(asm.R2, 16),
		asm.And.Imm(asm.R1, 0xffff),
		asm.Add.Reg(asm.R1, asm.R2),
	)
	if d.Class == parse.ClassRelLoc {
		b.Emit(asm.Add.Imm(asm.R1, int32(d.Offset+4)))
	}
}

// commProgram remembers the name of every task that leaves a CPU: at
// sched_switch the current task is the one switched out, so every task
// that ran, short-lived ones included, gets its comm stored under its pid.
// It also runs at sched_process_exit, where the current task is the one
// exiting, not yet reaped.
func commProgram() asm.Instructions {
	const commSlot = -CommLen - 8
	b := &Builder{}
	out := b.Label("out")
	b.Comment("comm of the current task, and its pid as the key")
	b.Emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.R10, keySlot, asm.R0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, commSlot),
		asm.Mov.Imm(asm.R2, CommLen),
		asm.FnGetCurrentComm.Call(),
	)
	update := b.Label("update")
	b.Comment("already known under this name: done")
	b.Emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(CommsMapName),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, keySlot),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, update),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.LoadMem(asm.R2, asm.R10, commSlot, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, update),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
		asm.LoadMem(asm.R2, asm.R10, commSlot+8, asm.DWord),
		asm.JEq.Reg(asm.R1, asm.R2, out),
	)
	b.Mark(update)
	b.Comment("comms[pid] = comm")
	b.Emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(CommsMapName),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, keySlot),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, commSlot),
		asm.Mov.Imm(asm.R4, int32(ebpf.UpdateAny)),
		asm.FnMapUpdateElem.Call(),
	)
	b.Mark(out)
	b.Emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	return b.Instructions()
}
