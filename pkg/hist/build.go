package hist

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/probe"
	"github.com/gtrace/gtrace/pkg/tracefs"

	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/syscalls"
	"github.com/gtrace/gtrace/pkg/tracedat"
	"github.com/gtrace/gtrace/pkg/usym"
)

// Build resolves spec against an event's format, binds its filter and
// generates the BPF program: everything short of loading it.
func Build(spec *parse.HistSpec, f *parse.Format, o LiveOptions) (*Compiled, error) {
	p, err := NewPlan(spec, f)
	if err != nil {
		return nil, err
	}
	return build(p, f, o)
}

// build binds the filter of plan p and generates its program.
func build(p *Plan, f *parse.Format, o LiveOptions) (*Compiled, error) {
	spec := p.Spec
	if spec.Timestamp() {
		c, err := bpfgen.ParseClock(spec.EffectiveClock())
		if err != nil {
			return nil, spec.Errorf(spec.ClockOff, spec.ClockEnd, "clock %q cannot be read from BPF", spec.Clock).
				WithHint("a live hist's common_timestamp is in mono, boot or tai")
		}
		p.Layout.Clock = c
	}
	if spec.Filter != nil {
		bf, err := parse.BindFilter(spec.SrcName(), spec.Src, spec.Filter, f)
		if err != nil {
			return nil, spec.Locate(err)
		}
		if err := bf.ResolveFunctions(ksym.KernelFuncRange); err != nil {
			return nil, spec.Locate(err)
		}
		o.Filter = bf
	}
	return Compile(p, f, o)
}

// Write prints tables in one of the output formats: text (the kernel's hist
// file), json, ndjson (a JSON object a line), csv or table.
func Write(w io.Writer, format string, tables []*Table, triggerInfo []string, r Resolver) error {
	switch format {
	case "text", "":
		return WriteText(w, tables, triggerInfo, r)
	case "json":
		return WriteJSON(w, tables, triggerInfo, r)
	case "ndjson":
		return WriteNDJSON(w, tables, triggerInfo, r)
	case "csv":
		return WriteCSV(w, tables, triggerInfo, r)
	case "table":
		return WriteTable(w, tables, triggerInfo, r)
	}
	return fmt.Errorf("unknown output format %q", format)
}

// FileResolver names syscalls for the architecture a trace.dat file was
// recorded on (from its uname) and resolves addresses with its kallsyms.
func FileResolver(f *tracedat.File) Resolver {
	arch := runtime.GOARCH
	if fields := strings.Fields(f.Uname); len(fields) > 0 {
		if a := syscalls.ArchFromMachine(fields[len(fields)-1]); a != "" {
			arch = a
		}
	}
	syms, _ := ksym.Parse(strings.NewReader(f.Kallsyms))
	return Resolver{
		Syscall:   func(nr uint64) (string, bool) { return syscalls.Name(arch, nr) },
		Sym:       syms.Sym,
		SymOffset: syms.SymOffset,
	}
}

// LocalResolver names syscalls for this machine's architecture and
// resolves kernel addresses with /proc/kallsyms, read once on first use.
func LocalResolver() Resolver {
	syms := sync.OnceValue(func() *ksym.Table {
		t, err := ksym.Load()
		if err != nil {
			return nil
		}
		return t
	})
	return Resolver{
		Syscall: func(nr uint64) (string, bool) { return syscalls.Name(runtime.GOARCH, nr) },
		Sym: func(addr uint64) string {
			if t := syms(); t != nil {
				return t.Sym(addr)
			}
			return fmt.Sprintf("0x%x", addr)
		},
		SymOffset: func(addr uint64) string {
			if t := syms(); t != nil {
				return t.SymOffset(addr)
			}
			return fmt.Sprintf("0x%x", addr)
		},
	}
}

// EventHist is a hist and the event it runs on.
type EventHist struct {
	Event string // SYS:EVENT or a unique EVENT
	Spec  *parse.HistSpec
	// Triggers are the -R of the hist's -e, in order (sessionControl).
	Triggers []string
}

// LiveConfig is a live hist command: the hists, each on its event, and
// how it prints.
type LiveConfig struct {
	Hists  []EventHist // one table each, printed in this order
	PIDs   []int       // count only these processes (-P)
	Format string      // text, json, csv or table
	Clear  bool        // Tick prints and empties the tables (--interval --clear)
	Out    io.Writer
	// Follow counts the processes of PIDs, and those that LiveJob.Follow
	// names (the command), and every process they fork from the start
	// on.
	Follow bool
	// StartOff starts with tracing off: nothing counts until a traceon
	// trigger fires.
	StartOff bool
	// Synths are the synthetic events of --synth, which the actions of
	// an inter-event session's hists emit (and -e synthetic:NAME names).
	Synths []SynthEvent
	// Probes are the formats of the probe events that Hists may name
	// besides tracefs's (catalog.WithProbes: their Probes set).
	Probes []*parse.Format
}

// LiveJob is a live hist: compiled, then attached and printed by
// package live's runner.
type LiveJob struct {
	cfg      LiveConfig
	infos    []string // the trigger info of each compiled hist
	owner    []int    // the hist whose table each counts into (share)
	compiled []*Compiled
	lives    []*Live
	follow   []uint32 // with cfg.Follow, the processes followed from the start
	// users names the addresses of user stacks (ustacktrace keys); a
	// goroutine reads the mappings of each process at first sight in the
	// tables (seeEvery), until stopSee is closed.
	users    usym.Cache
	stopSee  chan struct{}
	seeDone  chan struct{}
	triggers [][]string // each hist's -R triggers, as the trigger file lists them
	// control, for the hists of a recording, is the loaded recording
	// whose control map they share (AttachTo).
	control *probe.Objects
	// sess, for an inter-event session (hists with variables or
	// actions, or on synthetic events), is the session compiled in one
	// collection (session_live.go); compiled is then empty.
	sess *liveSession
}

// seeEvery is how often the tables of user stack keys are scanned for
// processes not seen yet, whose mappings are read then: a process that
// exits sooner after its first event is named by bare addresses.
const seeEvery = 20 * time.Millisecond

// NewLive resolves the hist against each event's format in fs, binds its
// filter and generates the programs: everything short of loading them.
func NewLive(fs *tracefs.FS, cfg LiveConfig) (*LiveJob, error) {
	if IsSession(cfg.Hists, cfg.Synths) {
		return newLiveSession(fs, cfg, nil)
	}
	ctls, listings, err := sessionControl(fs, cfg)
	if err != nil {
		return nil, err
	}
	return newLive(fs, cfg, ctls, listings)
}

// NewRecordingHists returns the hists of a recording's hist triggers: each
// of cfg.Hists on its event, ctls[i] hist i's part of the recording's
// control map (bpfgen.HistControl.Recording). They have no -R of their
// own (the recording's programs run its triggers) and no --start-off
// (they do not look at tracing). AttachTo loads them into the loaded
// recording's control map; Stop prints them to cfg.Out.
func NewRecordingHists(fs *tracefs.FS, cfg LiveConfig, ctls []*bpfgen.HistControl) (*LiveJob, error) {
	if len(ctls) != len(cfg.Hists) || cfg.StartOff {
		return nil, fmt.Errorf("hists of a recording: %d hists, %d parts of the control map, start off %v", len(cfg.Hists), len(ctls), cfg.StartOff)
	}
	for i, h := range cfg.Hists {
		if len(h.Triggers) > 0 || ctls[i] == nil || !ctls[i].Recording {
			return nil, fmt.Errorf("hist %d of a recording: its triggers are the recording's", i+1)
		}
	}
	return newLive(fs, cfg, ctls, nil)
}

// newLive is NewLive with the hists' parts of the session's control map
// (nil: none) and the trigger files' listings of each hist's -R.
func newLive(fs *tracefs.FS, cfg LiveConfig, ctls []*bpfgen.HistControl, listings [][]string) (*LiveJob, error) {
	pids := make([]uint32, len(cfg.PIDs))
	for i, p := range cfg.PIDs {
		pids[i] = uint32(p)
	}
	j := &LiveJob{cfg: cfg}
	var follow *bpfgen.FollowSpec
	if cfg.Follow {
		var err error
		if follow, err = probe.FollowSpec(fs); err != nil {
			return nil, err
		}
		j.follow, pids = pids, nil
	}
	var err error
	var plans []*Plan
	var formats []*parse.Format
	for _, h := range cfg.Hists {
		f, err := eventFormat(fs, h.Event, cfg.Probes)
		if err != nil {
			return nil, err
		}
		p, err := NewPlan(h.Spec, f)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
		formats = append(formats, f)
	}
	if j.owner, err = share(plans); err != nil {
		return nil, err
	}
	for i, p := range plans {
		f := formats[i]
		info := p.Spec.String() + " [active]"
		if o := plans[j.owner[i]]; o != p {
			shareLayout(p, o)
			info = sharedInfo(o.Spec, p.Spec)
		}
		info = withState(info, p.Spec.Pause)
		o := LiveOptions{ExcludeTGID: uint32(os.Getpid()), Preempt: probe.PreemptCount(), OnlyTGIDs: pids, Follow: follow}
		if ctls != nil {
			o.Control = ctls[i]
		}
		if bpfgen.DirectTracepoint(f) != "" {
			o.Direct = probe.DirectOptions()
		}
		c, err := build(p, f, o)
		if err != nil {
			return nil, err
		}
		j.compiled = append(j.compiled, c)
		if listings != nil {
			j.triggers = append(j.triggers, listings[i])
		}
		j.infos = append(j.infos, info)
	}
	return j, nil
}

// Describe prints the plans and the programs, for --dry-run.
func (j *LiveJob) Describe(w io.Writer) error {
	if j.sess != nil {
		return j.sess.describe(w)
	}
	for i, c := range j.compiled {
		fmt.Fprintf(w, "# trigger info: %s\n%s", j.infos[i], c.Plan)
		if o := j.owner[i]; o != i {
			fmt.Fprintf(w, "# counts into the table of hist %d (%s), named %s: one map\n", o+1, j.compiled[o].Format.FullName(), c.Plan.Spec.Name)
		}
		if i < len(j.triggers) {
			for _, l := range j.triggers[i] {
				fmt.Fprintf(w, "# trigger %s\n", l)
			}
		}
		if i == 0 && j.cfg.StartOff {
			fmt.Fprintln(w, "# tracing starts off: nothing counts until a traceon fires")
		}
		switch tp := bpfgen.HistTracepoint(c.Layout); {
		case c.Layout.Source != nil:
			fmt.Fprintf(w, "# on %s: the record is built from the probe's fetch arguments\n", c.Layout.Source.Point(c.Format))
			if p, ok := c.Layout.Source.(*bpfgen.Probe); ok && p.Why() != "" {
				fmt.Fprintf(w, "# %s\n", p.Why())
			}
			for _, m := range bpfgen.MoreProbes(bpfgen.HistProgName, c.Layout.Source) {
				fmt.Fprintf(w, "# and by %s on %s, from its own\n", m.Prog, m.Point)
				if m.Why != "" {
					fmt.Fprintf(w, "# %s\n", m.Why)
				}
			}
		case tp != "":
			fmt.Fprintf(w, "# on raw tracepoint %s: the record is built from its arguments\n", tp)
		case c.Layout.Direct == nil && bpfgen.DirectTracepoint(c.Format) != "":
			fmt.Fprintf(w, "# on classic tracepoint %s: no kernel BTF (/sys/kernel/btf/vmlinux) for raw tracepoint %s\n",
				c.Format.FullName(), bpfgen.DirectTracepoint(c.Format))
		default:
			fmt.Fprintf(w, "# on classic tracepoint %s\n", c.Format.FullName())
		}
		if c.Layout.Follow != nil {
			fmt.Fprintf(w, "# follow: %s, and every process that a followed one forks from then on (%s, %s)\n",
				followed(j.follow), bpfgen.FollowForkProgName, bpfgen.FollowFreeProgName)
		}
		if _, err := fmt.Fprintf(w, "%s\n", c.Program.Listing()); err != nil {
			return err
		}
	}
	return nil
}

// Follow adds a process to those a job made with LiveConfig.Follow
// counts from the start, with every process it forks: the command of
// live.Options.Follow, held at its exec. Call it before Attach.
func (j *LiveJob) Follow(pid int) { j.follow = append(j.follow, uint32(pid)) }

// followed names the processes a job follows from the start, for
// --dry-run.
func followed(pids []uint32) string {
	if len(pids) == 0 {
		return "the command"
	}
	s := fmt.Sprintf("processes %d", pids[0])
	for _, pid := range pids[1:] {
		s += fmt.Sprintf(",%d", pid)
	}
	return s
}

// Attach loads and attaches every event's program.
func (j *LiveJob) Attach() error {
	if j.sess != nil {
		return j.sess.attach(j.follow, j.control)
	}
	for i, c := range j.compiled {
		var owner *Live
		if o := j.owner[i]; o != i {
			owner = j.lives[o]
		}
		switch {
		case c.Layout.Control == nil:
		case j.control != nil:
			c.share = j.control // the recording's control map
		case len(j.lives) > 0:
			c.share = j.lives[0].objs // one control map for the session
		}
		l, err := start(c, j.follow, owner)
		if err != nil {
			j.close()
			return err
		}
		j.lives = append(j.lives, l)
	}
	var users []*Live
	for _, l := range j.lives {
		if l.c.hasUserStack() {
			users = append(users, l)
		}
	}
	if len(users) > 0 {
		j.stopSee, j.seeDone = make(chan struct{}), make(chan struct{})
		go j.seeUsers(users)
	}
	return nil
}

// AttachTo loads and attaches the hists of a recording
// (NewRecordingHists), sharing the control map of its loaded objects.
func (j *LiveJob) AttachTo(recording *probe.Objects) error {
	if recording == nil {
		return fmt.Errorf("hists of a recording: the recording is not loaded")
	}
	j.control = recording
	return j.Attach()
}

// seeUsers reads the mappings of the processes of user stacks as they
// appear in the tables of users, until stopSee is closed.
func (j *LiveJob) seeUsers(users []*Live) {
	defer close(j.seeDone)
	tick := time.NewTicker(seeEvery)
	defer tick.Stop()
	for {
		for _, l := range users {
			// A failed scan leaves those processes to the next.
			_ = l.userPIDs(j.users.See)
		}
		select {
		case <-j.stopSee:
			return
		case <-tick.C:
		}
	}
}

// Attached says what the job counts, for the run's attach line:
// "counting a hist of sched:sched_switch (1 program)",
// "counting 2 hists of sched:sched_switch (2 programs)" or
// "counting 2 hists of 2 events (2 programs)".
func (j *LiveJob) Attached() string {
	if j.sess != nil {
		return j.sess.attached()
	}
	progs := 0
	for _, c := range j.compiled {
		progs += len(c.Program.Collection.Programs)
	}
	what := fmt.Sprintf("%d programs", progs)
	if progs == 1 {
		what = "1 program"
	}
	if len(j.compiled) == 1 {
		return fmt.Sprintf("counting a hist of %s (%s)", j.compiled[0].Format.FullName(), what)
	}
	events := map[string]bool{}
	for _, c := range j.compiled {
		events[c.Format.FullName()] = true
	}
	if len(events) == 1 {
		return fmt.Sprintf("counting %d hists of %s (%s)", len(j.compiled), j.compiled[0].Format.FullName(), what)
	}
	return fmt.Sprintf("counting %d hists of %d events (%s)", len(j.compiled), len(events), what)
}

// Tick prints the tables, emptying them with Clear.
func (j *LiveJob) Tick() error { return j.print(j.cfg.Clear) }

// Failed is nil: a live hist does not fail on its own.
func (j *LiveJob) Failed() <-chan struct{} { return nil }

// Stop prints the tables and detaches the programs.
func (j *LiveJob) Stop() error {
	defer j.close()
	return j.print(false)
}

// RecordingMisses returns how many times the kernel skipped one of the
// programs of a recording's inter-event session (NewRecordingSession)
// because a BPF program was already running on that CPU: each may be a
// synthetic event the recording never got. 0 for other hists, whose
// programs record nothing, and before Attach.
func (j *LiveJob) RecordingMisses() uint64 {
	if j.sess == nil || j.sess.rec == nil || j.sess.objs == nil {
		return 0
	}
	return j.sess.objs.RecursionMisses()
}

// Close detaches and unloads the programs without printing: a session
// that failed to start.
func (j *LiveJob) Close() { j.close() }

func (j *LiveJob) close() {
	if j.stopSee != nil {
		close(j.stopSee)
		<-j.seeDone
		j.stopSee = nil
	}
	for _, l := range j.lives {
		l.Close()
	}
	j.lives = nil
	if j.sess != nil {
		j.sess.close()
	}
}

func (j *LiveJob) print(clear bool) error {
	if j.sess != nil {
		tables, infos, err := j.sess.tables()
		if err != nil {
			return err
		}
		return Write(j.cfg.Out, j.cfg.Format, tables, infos, LocalResolver())
	}
	tables := make([]*Table, len(j.lives))
	infos := make([]string, len(j.lives))
	for i, l := range j.lives {
		if o := j.owner[i]; o != i {
			tables[i] = tables[o] // a named hist: the table of the first of its name
			infos[i] = j.infos[i]
			continue
		}
		if l.c.hasUserStack() {
			// The processes still running that the scans missed.
			if err := l.userPIDs(j.users.See); err != nil {
				return err
			}
		}
		t, err := l.Snapshot(clear)
		if err != nil {
			return err
		}
		t.Sort()
		tables[i] = t
		paused, err := l.paused()
		if err != nil {
			return err
		}
		infos[i] = withState(j.infos[i], paused)
	}
	r := LocalResolver()
	r.User = j.users.SymOffset
	return Write(j.cfg.Out, j.cfg.Format, tables, infos, r)
}

// eventFormat returns the format of the event name: a probe event's, or
// tracefs's.
func eventFormat(fs *tracefs.FS, name string, probes []*parse.Format) (*parse.Format, error) {
	for _, f := range probes {
		if name == f.FullName() || name == f.Name && !strings.Contains(name, ":") {
			return f, nil
		}
	}
	ev, err := fs.Lookup(name)
	if err != nil {
		return nil, err
	}
	return fs.Format(ev)
}
