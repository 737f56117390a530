package record

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"

	"github.com/gtrace/gtrace/pkg/attach"
	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/hist"
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/probe"
	"github.com/gtrace/gtrace/pkg/syscalls"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// DefaultBufferKB is the default size of each CPU's ring buffer, in KiB:
// with the reader polling every millisecond or so, it holds a syscall
// storm on every CPU without losing events.
const DefaultBufferKB = 8192

// MaxBufferKB is the largest ring buffer per CPU, in KiB (4 GiB).
const MaxBufferKB = 1 << 22

// minRing is the smallest ring buffer: four batches.
const minRing = 4 * (bpfgen.BatchHeader + bpfgen.BatchData)

// commEntries is how many pid -> comm entries the comm map keeps.
const commEntries = 1 << 16

// EventSpec is one -e EVENT and the -f FILTER that followed it.
type EventSpec struct {
	Pattern string // SYS:EVENT, SYS:*, *:*, EVENT or SYS, as tracefs.Match takes it
	Filter  string // "" for none
	// Triggers are the -R that followed the -e, in order: each is
	// applied to every event the -e names (TriggerSets).
	Triggers []string
}

// Options say what to record.
type Options struct {
	Events   []EventSpec
	BufferKB int    // ring buffer per CPU in KiB, rounded up to a power of two, at least 64; 0: DefaultBufferKB
	PIDs     []int  // record only these processes; empty: all but gtrace
	Clock    string // trace clock: mono (default), boot or tai
	// Classic puts every program on its event's classic tracepoint; by
	// default the records of raw_syscalls are built on raw tracepoints
	// where the kernel has BTF (see bpfgen.DirectTracepoint).
	Classic bool
	// CPUs, if not empty, are the only CPUs recorded (sorted, as
	// parse.CPUList returns them): the file has every online CPU, the
	// others empty, as trace-cmd record -M writes it. CPUList is the
	// list as given, for errors.
	CPUs    []int
	CPUList string
	// Follow records the processes of PIDs, and those that Job.Follow
	// names (the command), and every process they fork from the start
	// on, as the follow programs of bpfgen's follow.go track them.
	Follow bool
	// Stream has the programs hand every record to the ring at once,
	// for a live output (see bpfgen.RecordSpec.Stream); by default they
	// batch them.
	Stream bool
	// StartOff starts the recording with tracing off: nothing is
	// recorded until a traceon trigger fires.
	StartOff bool
	// UserStack follows each kernel stack of a stacktrace trigger with
	// the user stack (Stacktrace.User).
	UserStack bool
	// Snapshots lets the events' snapshot triggers run, for an output
	// that keeps the last records of each CPU (Flight); without it a
	// snapshot trigger is refused. With it, an inter-event session's
	// snapshot() actions take snapshots too.
	Snapshots bool
	// HistOut is where the hists of the hist triggers print when the
	// session stops, in HistFormat (hist.Write's formats; "": text).
	// A plan with hist triggers needs it.
	HistOut    io.Writer
	HistFormat string
	// Synths are the synthetic events of --synth: -e synthetic:NAME
	// records one, written where the action of a hist trigger emits it
	// (an inter-event session, hist.NewRecordingSession).
	Synths []hist.SynthEvent
	// Probes are the formats of the probe events the patterns may name
	// besides tracefs's (catalog.WithProbes: their Probes set), each
	// recorded by a program on its probe that builds its records.
	Probes []*parse.Format
}

// Event is one event that a plan records.
type Event struct {
	Format  *parse.Format
	Text    string             // the format file's text, verbatim
	Filter  *parse.BoundFilter // nil: every record
	Fixed   int                // bytes of the record's fixed part
	Dynamic bool               // has __data_loc or __rel_loc fields: records vary in length
	// Optional events were matched by a pattern: one that cannot be
	// attached is left out with a warning rather than failing the
	// recording (some tracepoints refuse BPF, e.g. irq_vectors:irq_work_exit).
	Optional bool
	// Stacktrace is the event's stacktrace trigger; nil: none.
	Stacktrace *Stacktrace
	// Snapshot is the event's snapshot trigger; nil: none.
	Snapshot *Snapshot
	// Triggers are the event's -R triggers, in the trigger file's order.
	Triggers []*parse.BoundTrigger
	// SoftDisabled: no -e names the event, the target of an
	// enable_event: it is recorded only once the trigger enables it.
	SoftDisabled bool
}

// Plan is a recording resolved against the kernel's event formats and
// compiled: everything short of loading it.
type Plan struct {
	Events   []*Event
	Clock    bpfgen.Clock
	CPUs     []int // the CPUs whose rings are read: those online, or those of Options.CPUs
	FileCPUs int   // the CPUs of the file: the highest online CPU + 1
	RingSize int   // bytes of each CPU's ring
	PageSize int   // bytes of a ring-buffer page in the file
	Program  *bpfgen.Program
	// Fallback, when Program has programs on raw tracepoints or shared
	// by several events, puts every event on a program of its own on its
	// classic tracepoint: for kernels that refuse the first.
	Fallback *bpfgen.Program
	// NoBTF says that some events would be recorded on raw tracepoints
	// but the kernel has no BTF, so that every event is on its classic
	// tracepoint.
	NoBTF bool
	// Warnings are legal filter constructs that are probably mistakes.
	Warnings []*parse.Error
	// Follow: the programs record the processes in the follow map, which
	// Start fills with FollowPIDs before it attaches them.
	Follow     bool
	FollowPIDs []uint32
	// Synth are the synthetic events recorded (-e synthetic:NAME): no
	// program of their own records them, the inter-event session's do
	// where a hist's action emits them.
	Synth []*Event
	// Stacks are the formats of ftrace:kernel_stack, and user_stack,
	// when some event has a stacktrace trigger: the file needs them.
	Stacks []*Event
	// Snapshots says that some event has a snapshot trigger, or a hist
	// of the session a snapshot() action: the
	// recording streams (every record reaches its ring at once, and the
	// marks of the firings with them) into a Flight.
	Snapshots bool
	startOff  bool // tracing starts off (Options.StartOff)
	// hists are the hist triggers, counted by the programs of
	// histJob in the recording's control map.
	hists   []planHist
	histJob *hist.LiveJob
	// session, when the hist triggers are an inter-event session (they
	// have variables or actions, or --synth defines synthetic events),
	// are its hists, each on its event, in the order of the events; the
	// session's programs (histJob) count them, and hists is empty.
	session []hist.EventHist
}

func startOff(off bool) string {
	if off {
		return "; tracing starts off"
	}
	return ""
}

// NewPlan resolves the events and filters of o against tracefs and
// generates the programs. Events named twice are recorded once, with the
// filter of the last -e that names them.
func NewPlan(fs *tracefs.FS, o *Options) (*Plan, error) {
	if len(o.Events) == 0 {
		return nil, fmt.Errorf("nothing to record: give an event with -e SYS:EVENT (gtrace list shows them)")
	}
	clock := bpfgen.ClockMono
	if o.Clock != "" {
		c, err := bpfgen.ParseClock(o.Clock)
		if err != nil {
			return nil, err
		}
		clock = c
	}
	kb := o.BufferKB
	if kb == 0 {
		kb = DefaultBufferKB
	}
	if kb < 0 || kb > MaxBufferKB {
		return nil, fmt.Errorf("buffer size %d KiB: want 1 to %d KiB per CPU", kb, MaxBufferKB)
	}
	page := os.Getpagesize()
	ring := minRing
	for ring < kb<<10 {
		ring <<= 1
	}
	online, err := probe.OnlineCPUs()
	if err != nil {
		return nil, err
	}
	cpus := online
	if len(o.CPUs) > 0 {
		if err := checkOnline(o.CPUList, o.CPUs, online); err != nil {
			return nil, err
		}
		cpus = o.CPUs
	}
	p := &Plan{Clock: clock, CPUs: cpus, FileCPUs: online[len(online)-1] + 1, RingSize: ring, PageSize: page, startOff: o.StartOff}

	index := map[tracefs.Event]int{}
	synthIndex := map[string]int{}
	for _, es := range o.Events {
		if synths, ok, err := matchSynth(es.Pattern, o.Synths); ok {
			if err != nil {
				return nil, err
			}
			if err := p.addSynth(es, synths, synthIndex); err != nil {
				return nil, err
			}
			continue
		}
		evs, err := matchEvents(fs, es.Pattern, o.Probes)
		if err != nil {
			return nil, err
		}
		var expr parse.Expr
		if es.Filter != "" {
			if expr, err = parse.ParseFilter("-f", es.Filter); err != nil {
				return nil, err
			}
		}
		var unfit []unfitEvent
		for _, e := range evs {
			if e.System == "ftrace" {
				// ftrace's own events (function, print, ...) have a
				// format but are no tracepoints that BPF can attach to.
				if len(evs) == 1 {
					return nil, fmt.Errorf("event %s is not a tracepoint (the kernel writes it for ftrace itself): gtrace cannot record it", e)
				}
				continue
			}
			ev, err := planEvent(fs, e, o.Probes)
			if err != nil {
				return nil, err
			}
			// A probe is gtrace's own: one that does not attach fails
			// the recording.
			ev.Optional = (len(evs) > 1 || strings.ContainsAny(es.Pattern, "*?[")) && ev.Format.Probes == nil
			if expr != nil {
				var pe *parse.Error
				switch ev.Filter, err = parse.BindFilter("-f", es.Filter, expr, ev.Format); {
				case err != nil && ev.Optional && errors.As(err, &pe):
					// As the kernel's subsystem filter: the filter
					// applies to the events it fits, the others are
					// recorded without it, and the warning says so.
					unfit = append(unfit, unfitEvent{e.String(), pe})
				case err != nil:
					return nil, err
				default:
					if err = ev.Filter.ResolveFunctions(ksym.KernelFuncRange); err != nil {
						return nil, err
					}
					p.Warnings = append(p.Warnings, ev.Filter.Warnings...)
				}
			}
			if i, ok := index[e]; ok {
				p.Events[i] = ev
				continue
			}
			index[e] = len(p.Events)
			p.Events = append(p.Events, ev)
		}
		if len(unfit) > 0 {
			if len(unfit) == countTracepoints(evs) {
				return nil, unfit[0].err
			}
			p.Warnings = append(p.Warnings, unfitWarning(es.Pattern, unfit))
		}
	}

	if err := p.bindTriggers(fs, o, index); err != nil {
		return nil, err
	}
	spec := &bpfgen.RecordSpec{
		CPUs:        p.FileCPUs,
		OnlyCPUs:    o.CPUs,
		RingSize:    ring,
		MaxRecord:   maxRecord(page),
		Clock:       clock,
		CommEntries: commEntries,
		ExcludeTGID: uint32(os.Getpid()),
		Preempt:     probe.PreemptCount(),
		Stream:      o.Stream,
		StartOff:    o.StartOff,
		Control:     o.StartOff,
	}
	if p.session != nil {
		if err := p.checkSession(o); err != nil {
			return nil, err
		}
		// The session's common_timestamp is the recording's read of
		// the clock where it can be (hist.NewRecordingSession).
		spec.Stamp = true
	}
	for _, h := range p.hists {
		spec.Hists = append(spec.Hists, h.spec.Pause)
	}
	// A snapshot() of the session marks its firing from the session's
	// program, on the event's classic tracepoint: the event's record
	// comes first, and is in the snapshot, only when the recording's
	// program is on that tracepoint too, attached before the session's.
	sessionSnaps := o.Snapshots && hist.HasSnapshot(p.session)
	if !o.Classic {
		spec.Shared = true
		if needDirect(p.Events) && !sessionSnaps {
			spec.Direct = probe.DirectOptions()
			p.NoBTF = spec.Direct == nil
		}
	}
	var pids []uint32
	for _, pid := range o.PIDs {
		if pid <= 0 {
			return nil, fmt.Errorf("process id %d: want a positive pid", pid)
		}
		pids = append(pids, uint32(pid))
	}
	if o.Follow {
		if spec.Follow, err = probe.FollowSpec(fs); err != nil {
			return nil, err
		}
		p.Follow, p.FollowPIDs = true, pids
	} else {
		spec.OnlyTGIDs = pids
	}
	stacks, err := p.stackTriggers(fs)
	if err != nil {
		return nil, err
	}
	if o.UserStack && len(p.Stacks) == 0 {
		return nil, fmt.Errorf("--user-stack adds the user stack to the kernel stacks of a stacktrace trigger, and there is none: give one, -R stacktrace")
	}
	snaps, has := p.snapshotTriggers()
	if has || sessionSnaps {
		spec.Stream, p.Snapshots = true, true
	}
	for i, ev := range p.Events {
		re := bpfgen.RecordEvent{Format: ev.Format, Filter: ev.Filter, Stack: stacks[i], Snapshot: snaps[i], SoftDisabled: ev.SoftDisabled}
		if re.Triggers, err = recordTriggers(ev, p.Events, p.hists); err != nil {
			return nil, err
		}
		spec.Control = spec.Control || len(re.Triggers) > 0
		if re.Source, err = bpfgen.ProbeSource(ev.Format, ksym.KernelFuncRange, probe.FentryArgs); err != nil {
			return nil, err
		}
		if nr, ok := syscalls.EventNumber(runtime.GOARCH, ev.Format.System, ev.Format.Name); ok {
			re.Syscall = &nr
		}
		spec.Events = append(spec.Events, re)
	}
	if p.Program, err = bpfgen.Record(spec); err != nil {
		return nil, err
	}
	if spec.Direct != nil || spec.Shared {
		classic := *spec
		classic.Direct, classic.Shared = nil, false
		if p.Fallback, err = bpfgen.Record(&classic); err != nil {
			return nil, err
		}
	}
	if len(p.hists) > 0 {
		if p.histJob, err = p.histTriggers(fs, o); err != nil {
			return nil, err
		}
	}
	if p.session != nil {
		if p.histJob, err = p.sessionHists(fs, o, spec); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// histTriggers returns the hists of the plan's hist triggers, each in its
// part of the recording's control map: counted by programs of their own,
// loaded with the recording's and sharing its control map, of the same
// processes as the recording (-P, --follow) but on every CPU (the
// kernel's hist triggers count where its ring buffer records nothing).
func (p *Plan) histTriggers(fs *tracefs.FS, o *Options) (*hist.LiveJob, error) {
	if o.HistOut == nil {
		return nil, fmt.Errorf("a recording with hist triggers needs somewhere to print them")
	}
	cfg := hist.LiveConfig{Format: o.HistFormat, Out: o.HistOut, Follow: o.Follow}
	if !o.Follow {
		// With --follow, Start gives the hists the processes followed.
		cfg.PIDs = o.PIDs
	}
	m := p.Program.Collection.Maps[bpfgen.SwitchMapName]
	var ctls []*bpfgen.HistControl
	for h, ph := range p.hists {
		cfg.Hists = append(cfg.Hists, hist.EventHist{Event: p.Events[ph.event].Format.FullName(), Spec: ph.spec})
		ctls = append(ctls, &bpfgen.HistControl{Map: m, Layout: p.Program.Control, Event: ph.event, Hist: h, Recording: true})
	}
	return hist.NewRecordingHists(fs, cfg, ctls)
}

// checkOnline returns a *parse.Error, its caret on the item of list that
// names it, for the first CPU of cpus that is not online.
func checkOnline(list string, cpus, online []int) error {
	on := map[int]bool{}
	for _, c := range online {
		on[c] = true
	}
	for _, c := range cpus {
		if on[c] {
			continue
		}
		off, end := 0, len(list)
		pos := 0
		for _, item := range strings.Split(list, ",") {
			lo, hi, isRange := strings.Cut(item, "-")
			a, errA := strconv.Atoi(strings.TrimSpace(lo))
			b := a
			var errB error
			if isRange {
				b, errB = strconv.Atoi(strings.TrimSpace(hi))
			}
			if errA == nil && errB == nil && a <= c && c <= b {
				off, end = pos, pos+len(item)
				break
			}
			pos += len(item) + 1
		}
		return parse.Errorf("--cpu", list, off, end, "CPU %d is not online", c).
			WithHint("the online CPUs are %s", cpuList(online))
	}
	return nil
}

// needDirect reports whether some event could be recorded on a raw
// tracepoint, which needs the kernel's BTF read.
func needDirect(evs []*Event) bool {
	for _, ev := range evs {
		f := ev.Format
		if bpfgen.DirectTracepoint(f) != "" || (f.System == "syscalls" && runtime.GOARCH == "amd64") {
			return true
		}
	}
	return false
}

// direct reports whether some event's program is on a raw tracepoint.
func (p *Plan) direct() bool {
	for _, r := range p.Program.Recorders {
		if r.Point.Kind != attach.Tracepoint {
			return true
		}
	}
	return false
}

// maxRecord is the longest record that fits a page of the given size:
// the page header (16 bytes), a record header with its length word (8)
// and a time extend (8) come off, rounded down to 8 bytes.
func maxRecord(page int) int { return (page - 32) &^ 7 }

// matchEvents returns the events of tracefs and the probe events that
// pattern names (tracefs.Match's patterns).
func matchEvents(fs *tracefs.FS, pattern string, probes []*parse.Format) ([]tracefs.Event, error) {
	var own []tracefs.Event
	sysPat, evPat, qualified := strings.Cut(pattern, ":")
	for _, f := range probes {
		ok := globMatch(sysPat, f.System) && globMatch(evPat, f.Name)
		if !qualified {
			ok = globMatch(pattern, f.Name) || globMatch(pattern, f.System)
		}
		if ok {
			own = append(own, tracefs.Event{System: f.System, Name: f.Name})
		}
	}
	evs, err := fs.Match(pattern)
	if err != nil && (len(own) == 0 || !errors.Is(err, tracefs.ErrNoEvent)) {
		return nil, err
	}
	return append(evs, own...), nil
}

// globMatch matches a shell glob; a bad pattern matches nothing.
func globMatch(pattern, s string) bool {
	ok, err := path.Match(pattern, s)
	return ok && err == nil
}

// planEvent is loadEvent for an event that may be a probe event, whose
// format and text come from its definition.
func planEvent(fs *tracefs.FS, e tracefs.Event, probes []*parse.Format) (*Event, error) {
	for _, f := range probes {
		if f.System == e.System && f.Name == e.Name {
			fixed, dynamic := bpfgen.RecordLayout(f)
			return &Event{Format: f, Text: f.DerivedFile(), Fixed: fixed, Dynamic: len(dynamic) > 0}, nil
		}
	}
	return loadEvent(fs, e)
}

// loadEvent reads and parses an event's format, keeping its text.
func loadEvent(fs *tracefs.FS, e tracefs.Event) (*Event, error) {
	b, err := fs.ReadFile("events", e.System, e.Name, "format")
	if err != nil {
		return nil, fmt.Errorf("read format of %s: %w", e, err)
	}
	f, err := parse.ParseFormat(path.Join("events", e.System, e.Name, "format"), string(b))
	if err != nil {
		return nil, err
	}
	f.System = e.System
	fixed, dynamic := bpfgen.RecordLayout(f)
	return &Event{Format: f, Text: string(b), Fixed: fixed, Dynamic: len(dynamic) > 0}, nil
}

// Describe prints the plan and the generated programs, for --dry-run.
func (p *Plan) Describe(w io.Writer) error {
	var b strings.Builder
	if p.NoBTF {
		b.WriteString("# on classic tracepoints: no kernel BTF (/sys/kernel/btf/vmlinux) for raw tracepoints\n")
	}
	for i, ev := range p.Events {
		fmt.Fprintf(&b, "# %s: %s (ID %d), ", p.Program.Recorders[i].Prog, ev.Format.FullName(), ev.Format.ID)
		if ev.Dynamic {
			fmt.Fprintf(&b, "%d-byte fixed part and dynamic fields, up to %d bytes", ev.Fixed, maxRecord(p.PageSize))
		} else {
			fmt.Fprintf(&b, "%d-byte records", ev.Fixed)
		}
		if ev.Filter != nil {
			fmt.Fprintf(&b, ", filter %s", ev.Filter.Expr)
		}
		if st := ev.Stacktrace; st != nil {
			b.WriteString(st.describe())
		}
		if s := ev.Snapshot; s != nil {
			b.WriteString(s.describe())
		}
		if ev.SoftDisabled {
			b.WriteString(", [soft disabled]")
		}
		switch r := p.Program.Recorders[i]; {
		case r.Group:
			fmt.Fprintf(&b, ", with the other syscall events on raw tracepoint %s", r.Point.Target)
		case ev.Format.Probes != nil:
			fmt.Fprintf(&b, ", built at %s", r.Point)
			if r.Why != "" {
				fmt.Fprintf(&b, " (%s)", r.Why)
			}
			for _, m := range r.More {
				fmt.Fprintf(&b, ", by %s at %s", m.Prog, m.Point)
				if m.Why != "" {
					fmt.Fprintf(&b, " (%s)", m.Why)
				}
			}
		case r.Point.Kind != attach.Tracepoint:
			fmt.Fprintf(&b, ", built on raw tracepoint %s", r.Point.Target)
		case r.Shared():
			fmt.Fprintf(&b, ", sharing its program (cookie %d)", r.Point.Cookie)
		}
		b.WriteString("\n")
		for _, t := range ev.Triggers {
			fmt.Fprintf(&b, "#   trigger %s\n", t.Trigger.Listing())
		}
	}
	for _, ev := range p.Synth {
		fmt.Fprintf(&b, "# %s (ID %d), recorded by the inter-event session where a hist's action emits it", ev.Format.FullName(), ev.Format.ID)
		if ev.Filter != nil {
			fmt.Fprintf(&b, ", filter %s", ev.Filter.Expr)
		}
		b.WriteString("\n")
	}
	if p.Program.Control != nil {
		fmt.Fprintf(&b, "# control map %s: %d words (off, tracing off, a soft-disable word per event, a paused word per hist, a count and a fires word per trigger)%s\n",
			bpfgen.SwitchMapName, p.Program.Control.Words(), startOff(p.startOff))
	}
	fmt.Fprintf(&b, "# rings: %d KiB on each of CPUs %s; clock %s; pages of %d bytes\n",
		p.RingSize>>10, cpuList(p.CPUs), p.Clock, p.PageSize)
	if p.Follow {
		b.WriteString(followLine(p.FollowPIDs))
	}
	var names []string
	for i := 0; p.Program.Collection.Programs[bpfgen.RecordProgName(i)] != nil; i++ {
		names = append(names, bpfgen.RecordProgName(i))
	}
	names = append(names, bpfgen.SysEnterProgName, bpfgen.SysExitProgName, bpfgen.CommProgName,
		bpfgen.FollowForkProgName, bpfgen.FollowFreeProgName)
	for _, name := range names {
		if ps := p.Program.Collection.Programs[name]; ps != nil {
			fmt.Fprintf(&b, "%s (%s, %d instructions):\n%v", name, ps.Type, len(ps.Instructions), ps.Instructions)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil || p.histJob == nil {
		return err
	}
	if p.session != nil {
		fmt.Fprintf(w, "# an inter-event session of %s, one collection sharing the recording's switch and rings, printed at the end:\n", plural(len(p.session), "hist trigger"))
		if p.Snapshots && hist.HasSnapshot(p.session) {
			fmt.Fprintf(w, "# its snapshot() actions write FILE.snapshot-N.dat, each ending with the event that fired it: every event recorded from its classic tracepoint, before the session's programs\n")
		}
		return p.histJob.Describe(w)
	}
	fmt.Fprintf(w, "# %s, counted whether tracing is on or off, printed at the end:\n", plural(len(p.hists), "hist trigger"))
	return p.histJob.Describe(w)
}

// followLine is --dry-run's line about --follow.
func followLine(pids []uint32) string {
	who := "the command"
	if len(pids) > 0 {
		who = fmt.Sprintf("processes %d", pids[0])
		for _, pid := range pids[1:] {
			who += fmt.Sprintf(",%d", pid)
		}
	}
	return fmt.Sprintf("# follow: %s, and every process that a followed one forks from then on (%s, %s)\n",
		who, bpfgen.FollowForkProgName, bpfgen.FollowFreeProgName)
}

// cpuList formats CPU ids as the kernel does: "0-3,6".
func cpuList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, fmt.Sprint(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// unfitEvent is an event that a pattern's filter does not fit, and why.
type unfitEvent struct {
	name string
	err  *parse.Error
}

// unfitWarning is the one warning for the events of pattern that its
// filter does not fit: the first one's error, with a hint that names them
// all (the first few) and says what happens to them.
func unfitWarning(pattern string, unfit []unfitEvent) *parse.Error {
	w := *unfit[0].err
	names := make([]string, 0, 4)
	for i, u := range unfit {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(unfit)-i))
			break
		}
		names = append(names, u.name)
	}
	w.Msg = fmt.Sprintf("%s (the filter does not fit %d of the events of %q)", w.Msg, len(unfit), pattern)
	w.Hint = fmt.Sprintf("recorded without the filter, as the kernel does with a subsystem filter: %s", strings.Join(names, ", "))
	return &w
}

// countTracepoints counts the events of evs that record can attach to.
func countTracepoints(evs []tracefs.Event) int {
	n := 0
	for _, e := range evs {
		if e.System != "ftrace" {
			n++
		}
	}
	return n
}
