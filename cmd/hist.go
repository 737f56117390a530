package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/hist"
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/live"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

type histOptions struct {
	Input    string        // a trace.dat file: aggregate its records instead of live events
	Hists    []histEvent   // each -e with its hists, in command-line order
	Synth    synthDefs     // --synth: synthetic events the hists' actions emit
	Probes   probeDefs     // --probe, --probes: probe events -e may name (live)
	Funcs    funcEventDefs // --funcevent: function events -e may name
	Name     string
	PIDs     []int
	Follow   bool
	Duration time.Duration
	Interval time.Duration
	Clear    bool
	Format   string
	DryRun   bool
	StartOff bool
	Quiet    bool
	Command  []string
}

// histEvent is one -e and its hist: a kernel 'hist:...' string, or the
// flags (their Size as typed: the hist string's size= rule judges it).
type histEvent struct {
	Pattern string
	Raw     string
	Flags   parse.HistFlags
	// Spec is a hist given with -R 'hist:...', parsed; nil for the
	// others.
	Spec *parse.HistSpec
	// Triggers are the -R after the -e, in order.
	Triggers []string
}

var histFormats = []string{"text", "json", "csv", "table"}

func newHistCmd(d *Deps, runF func(*histOptions) error) *cobra.Command {
	o := &histOptions{}
	ev := &eventFlags{}
	var notRunning error // a -P that names no running process: an error unless -i
	c := &cobra.Command{
		Use:   "hist [-k KEYS]... -e SYS:EVENT [-k KEYS] [--vals VALS] [-s SORT] [--size N] [-f FILTER] ['hist:...'] [-e ...]... [-i FILE] [-- CMD ARGS...]",
		Short: "Aggregate events into a histogram, like the kernel's hist triggers, in BPF",
		Long: `Count events by keys and sum their fields, as the kernel's hist triggers do
(Documentation/trace/histogram.rst), but in a BPF hash map, so it works on
kernels built without CONFIG_HIST_TRIGGERS. The default output is byte for
byte what the kernel's events/SYS/EVENT/hist file prints.

The hist is given either with flags (-k, --vals, -s, --size, -f) or as
the kernel's own trigger string 'hist:keys=...:vals=...:sort=...:size=N if FILTER'.
Each -e is a hist of its own, printed in -e order: the flags and the string
bind to the -e before them, as -f does on record. An event may have several
hists, but not the same one twice (the kernel's "hist trigger already
exists"). Hists of one name (name=NAME, or --name for the hists given with
flags) share one table, that of the first: each event's hits add into it,
and each event prints it under its own header, as the kernel prints a
named hist; their keys, values and sort must match the first's. Flags given before the
first -e apply to every event, each unless the event gives its own; a string
there is the hist of every event that gives no flags.

Key modifiers: .execname (common_pid only) .syscall .hex .sym .sym-offset
.log2 .buckets=N. Value modifiers: .hex .percent .graph; .percent is a
share of every event, those Dropped from a full table too (the kernel's
leaves them out), .graph a bar against the largest entry. Keys may be event
fields, common_pid, common_cpu, comm, common_stacktrace (stacktrace), the
event's kernel stack, printed as the kernel prints it, and ustacktrace, the
user stack of the process (gtrace's own). The filter supports == != < <= > >= &
on numbers, == != on strings, && || ! and parentheses.

It runs until Ctrl-C (SIGINT) or SIGTERM, for --duration, or, given
-- CMD ARGS, while CMD runs: CMD is started held, released once the probes are
attached, and gtrace exits with CMD's exit status. Stopped by signal N, it
prints and exits 128+N (CMD gets the signal, then SIGTERM, then SIGKILL).
Events of all processes count unless -P names some. Over a file (-i), -P
matches the records' common_pid, a task id: trace.dat keeps no thread group
ids, so for a process with threads that is its main thread. While -i reads
a large file, a progress line on stderr, only when it is a terminal, says
how far (reading trace.dat: 312 MB of 1.20 GB (26%)); it is erased before
the hist is printed, and -q leaves it out.

--follow, with -- CMD or -P, counts only CMD or the processes of -P and
every process they fork from then on, children and grandchildren, from the
child's first event (trace-cmd's -c and -F): BPF programs on the fork and
free events keep the set in a map of 65536 entries. Without --follow,
-- CMD does not limit what is counted.

Inter-event hists (docs/hist.md): -R 'hist:...' after an -e is a hist of
it, as the same string given as its own; hists with variables (NAME=EXPR,
$NAME, SYS.EVENT.$NAME) and actions (onmatch(SYS.EVENT).SYNTH(...),
.trace(SYNTH,...), onmax($V)/onchange($V) with .save(...), .snapshot() or
.trace(...)) are bound together as the kernel binds them, and the
synthetic events of --synth DEF (gtrace synth) are events -e
synthetic:NAME. They run live (one BPF collection for the whole session)
and over a recording (-i): every hist of the session is printed at the
end, one block per hist.`,
		Example: `  # syscalls by process and syscall, until Ctrl-C
  gtrace hist -e raw_syscalls:sys_enter -k common_pid.execname,id.syscall

  # the sizes of the writes of ./app up to the one of 5 bytes (a trigger, -R)
  gtrace hist -e syscalls:sys_enter_write -k count -R 'traceoff if count == 5' -- ./app

  # the getppid calls of ./app between its writes of 3 and of 6 bytes (a paused hist)
  gtrace hist -e syscalls:sys_enter_write -k count -R 'enable_hist:syscalls:sys_enter_getppid if count == 3' \
    -R 'disable_hist:syscalls:sys_enter_getppid if count == 6' -e syscalls:sys_enter_getppid 'hist:keys=common_pid:pause' -- ./app

  # bytes written per process, biggest first, for 10 seconds
  gtrace hist -e syscalls:sys_enter_write -k common_pid.execname --vals count -s count.descending --duration 10s

  # the sizes a program hands to libc's write, from a uprobe
  gtrace hist --probe 'p:myw /lib/x86_64-linux-gnu/libc.so.6:write len=$arg3:u64' -e uprobes:myw -k len -- ./app
  gtrace hist --funcevent '/lib/x86_64-linux-gnu/libc.so.6:write(int fd, string buf, size_t len)' -e functions:write -k len -- ./app

  # the same as a kernel trigger string
  gtrace hist -e syscalls:sys_enter_write 'hist:keys=common_pid.execname:vals=count:sort=count.descending'

  # two hists in one run, each with its own keys
  gtrace hist -e sched:sched_switch -k prev_comm -e raw_syscalls:sys_enter -k id.syscall

  # two hists on one event: each switch counted by the task leaving and by the one arriving
  gtrace hist -e sched:sched_switch -k prev_comm -e sched:sched_switch -k next_comm

  # one table for two events (a named hist): getppid and getuid calls per process
  gtrace hist --name ids -k common_pid.execname -e syscalls:sys_enter_getppid -e syscalls:sys_enter_getuid

  # the same keys for every event, a filter for one of them
  gtrace hist -k common_pid.execname -e sched:sched_wakeup -e raw_syscalls:sys_enter -f 'id == 0'

  # expressions and common_timestamp: writes per second, and bytes in KiB
  gtrace hist -e syscalls:sys_enter_write -k common_timestamp/1000000000 --vals count/1024

  # each write size's share of the writes and of the bytes of ./app, in a table of 128
  # (the writes of sizes that find it full count as Dropped, and in the shares' totals)
  gtrace hist --follow -e syscalls:sys_enter_write --size 128 -k count --vals hitcount.percent,count.percent -- ./app

  # a log2 histogram of write sizes of one command, as JSON
  gtrace hist -e syscalls:sys_enter_write -k count.log2 -f 'fd == 1' --format json -- dd if=/dev/zero of=/dev/null bs=1k count=100

  # system calls of each process of a build: make and all it starts
  gtrace hist -e raw_syscalls:sys_enter -k common_pid.execname --follow -- make

  # print every second, starting afresh each time
  gtrace hist -e sched:sched_switch -k prev_comm --interval 1s --clear

  # kernel stacks that reach the scheduler, for 5 seconds
  gtrace hist -e sched:sched_switch -k common_stacktrace --duration 5s

  # the same hist over a recording, offline (gtrace record or trace-cmd)
  gtrace hist -i trace.dat -e raw_syscalls:sys_enter -k common_pid.execname,id.syscall

  # wakeup latency, as the kernel's hist triggers and synthetic events compute it, live while ./app runs
  gtrace hist --synth 'wakeup_latency u64 lat; pid_t pid; int prio' \
    -e sched:sched_waking -R 'hist:keys=pid:ts0=common_timestamp.usecs' \
    -e sched:sched_switch -R 'hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio)' \
    -e synthetic:wakeup_latency -R 'hist:keys=lat.log2:sort=lat' -- ./app

  # the same over a recording
  gtrace record -o wake.dat -e sched:sched_waking -e sched:sched_switch -- ./app
  gtrace hist -i wake.dat --synth 'wakeup_latency u64 lat; pid_t pid; int prio' \
    -e sched:sched_waking -R 'hist:keys=pid:ts0=common_timestamp.usecs' \
    -e sched:sched_switch -R 'hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio)' \
    -e synthetic:wakeup_latency -R 'hist:keys=lat.log2:sort=lat'

  # the kernel's block_lat example: the stack of each switch out in D state, passed to a synthetic event, live
  gtrace hist --synth 'block_lat pid_t pid; u64 delta; unsigned long[] stack;' \
    -e sched:sched_switch -R 'hist:keys=next_pid:ts=common_timestamp.usecs,st=common_stacktrace if prev_state == 2' \
    -R 'hist:keys=prev_pid:delta=common_timestamp.usecs-$ts,s=$st:onmax($delta).trace(block_lat,prev_pid,$delta,$s)' \
    -e synthetic:block_lat -R 'hist:keys=delta.buckets=100,stack.stacktrace:sort=delta' -- ./app

  # the worst wakeup latency of each task, with the task switched out for it
  gtrace hist -i wake.dat -e sched:sched_waking -R 'hist:keys=pid:ts0=common_timestamp.usecs' \
    -e sched:sched_switch -R 'hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmax($lat).save(next_comm,prev_pid,prev_comm)'

  # system call latency per task, in ns (the slowest saved with its id)
  gtrace hist -i sys.dat -e raw_syscalls:sys_enter -R 'hist:keys=common_pid:t0=common_timestamp' \
    -e raw_syscalls:sys_exit -R 'hist:keys=common_pid:lat=common_timestamp-$t0:onmax($lat).save(id,ret)'

  # the system calls of task 1234 in a recording (its records' common_pid)
  gtrace hist -i trace.dat -P 1234 -e raw_syscalls:sys_enter -k id.syscall

  # a large recording with no progress line, the hist as CSV to a file
  gtrace hist -q -i big.dat -e sched:sched_switch -k next_comm --format csv > switches.csv

  # at most 10 seconds of a command (stopped then, as by Ctrl-C), no attach line
  gtrace hist -q -e raw_syscalls:sys_enter -k id.syscall --duration 10s -- make

  # show the plan and the generated BPF, load nothing
  gtrace hist -e raw_syscalls:sys_enter -k id.syscall --dry-run`,
		RunE: func(c *cobra.Command, args []string) error {
			if at := c.ArgsLenAtDash(); at >= 0 {
				o.Command = args[at:]
				args = args[:at]
			}
			if err := ev.bindArgs("hist", args, "a 'hist:...' string"); err != nil {
				return err
			}
			if len(ev.Events) == 0 {
				return usagef("hist needs an event: -e SYS:EVENT (gtrace list shows them)")
			}
			o.Hists = nil
			for _, e := range ev.Events {
				hists, others, err := histTriggers(e.Opts["trigger"])
				if err != nil {
					return err
				}
				if len(hists) == 0 || ownHist(e, ev.Common) {
					h, err := bindHist(e, ev.Common, o.Name)
					if err != nil {
						return err
					}
					hists = append([]histEvent{h}, hists...)
				}
				for i := range hists {
					hists[i].Pattern = e.Pattern
				}
				hists[0].Triggers = others
				o.Hists = append(o.Hists, hists...)
				if o.Input != "" && len(others) > 0 {
					return usagef("-R runs triggers in BPF, on live events: not with -i (but for -R 'hist:...', a hist of the -e)")
				}
			}
			if o.Input != "" && len(o.Probes.defs) > 0 {
				d := o.Probes.defs[0]
				return parse.Errorf(o.Probes.what(), d.Src, 0, len(d.Src), "a probe runs on live events: not with -i").
					WithHint("a recording's probe events are in its file: gtrace hist -i FILE -e uprobes:EV")
			}
			if o.Input != "" && len(o.Funcs.evs) > 0 {
				e := o.Funcs.evs[0]
				return parse.Errorf(o.Funcs.what(), e.Src, 0, len(e.Src), "a function event runs on live events: not with -i").
					WithHint("a recording's function events are in its file: gtrace hist -i FILE -e functions:FUNC")
			}
			if o.Input != "" && o.StartOff {
				return usagef("--start-off starts live tracing off: not with -i")
			}
			if o.Input != "" && (len(o.Command) > 0 || o.Duration != 0 || o.Interval != 0 || o.Follow || o.DryRun) {
				return usagef("-i reads a recorded file: --duration, --interval, --follow, --dry-run and -- CMD apply to live hists only")
			}
			if o.Input == "" && notRunning != nil {
				return notRunning
			}
			if err := checkFollow(o.Follow, o.Command, o.PIDs); err != nil {
				return err
			}
			if o.Clear && o.Interval == 0 {
				return usagef("--clear needs --interval")
			}
			if runF != nil {
				return runF(o)
			}
			if o.Input != "" {
				return runHistFile(c.Context(), d, o)
			}
			return runHist(c.Context(), d, o)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.Input, "input", "i", "", "aggregate the events of this trace.dat file (gtrace record or trace-cmd) instead of live events")
	ev.event(f, "event to aggregate, SYS:EVENT, or a glob such as 'sched:*' (repeatable: one hist per event)")
	ev.option(f, eventOption{name: "keys", short: "k", typ: "strings"}, "keys: FIELD[.MODIFIER][,...] (at most 3)")
	ev.option(f, eventOption{name: "vals", typ: "strings"}, "values to sum: FIELD[.hex|.percent|.graph][,...] (hitcount is always counted)")
	ev.option(f, eventOption{name: "sort", short: "s", typ: "strings"}, "sort by up to two keys or values: NAME[.ascending|.descending]")
	ev.option(f, eventOption{name: "size", typ: "string", once: "a size", onceHint: "give --size once per -e"},
		"table size in entries, rounded up to a power of two (128..131072, default 2048)")
	ev.option(f, eventOption{name: "filter", short: "f", typ: "string", once: "a filter", onceHint: "join the two with && in one -f"},
		"only count events that match this filter")
	ev.option(f, eventOption{name: "trigger", short: "R", typ: "TRIGGER", needsEvent: "a trigger must follow the -e EVENT it is on"},
		"trigger on the events of the -e just before: traceon, traceoff, enable_event, disable_event, or 'hist:...', a hist of the event (repeatable; see docs/triggers.md)")
	o.Synth.register(f)
	o.Probes.register(f)
	o.Funcs.register(f)
	f.BoolVar(&o.StartOff, "start-off", false, "start with tracing off: nothing counts until a traceon trigger (-R) fires")
	f.StringVar(&o.Name, "name", "", "name the hists: the hists of one name, of several events, share one table (the kernel's name=)")
	pidsFlag(f, &o.PIDs, "pid", "P", "only count events of these processes (ids of running processes, or with -i of the file's, comma-separated)").notRunning = &notRunning
	f.BoolVar(&o.Follow, "follow", false, "with -- CMD or -P: count only those processes and every process they fork")
	durationFlag(f, &o.Duration, "duration", time.Nanosecond, "leave --duration out to run until Ctrl-C", "stop after this long (e.g. 10s)")
	durationFlag(f, &o.Interval, "interval", time.Millisecond, "print every 1ms or more; leave --interval out to print once, at the end", "print the hist every interval (at least 1ms)")
	f.BoolVar(&o.Clear, "clear", false, "with --interval: empty the hist after each print")
	enumFlag(f, &o.Format, "format", "", "text", histFormats, "format", "", "output format: "+strings.Join(histFormats, ", "))
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan and the BPF program, load nothing")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "leave out the attach line and the status line; with -i, the progress line (warnings stay)")
	return c
}

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

// histEvents returns the events of the hists: each -e that is a glob
// (SYS:*, *:EVENT, ...) stands for the events of c it matches, one hist
// each, and a plain name for itself, looked up later. ftrace's own events,
// which no program can attach to, are left out of a live hist's globs.
func histEvents(c catalog.Catalog, names []string, offline bool) ([]string, error) {
	var out []string
	for _, name := range names {
		if !strings.ContainsAny(name, "*?[") {
			out = append(out, name)
			continue
		}
		evs, err := catalog.Match(c, name)
		if err != nil {
			return nil, err
		}
		n := len(out)
		for _, e := range evs {
			if offline || e.System != "ftrace" {
				out = append(out, e.String())
			}
		}
		if len(out) == n {
			return nil, usagef("-e %s names only ftrace's own events, which are no tracepoints (hist -i reads them from a recording)", name)
		}
	}
	return out, nil
}

// histFlagNames are the options of an event's hist, as flags.
var histFlagNames = []string{"keys", "vals", "sort", "size", "filter"}

// bindHist gives event e its hist: its own 'hist:...' string, or its own
// flags, each flag it does not give taken from common, the options before
// the first -e. A hist given both as a string and with flags is refused,
// as is an event with flags of its own when common is a string.
func bindHist(e boundEvent, common eventOpts, name string) (histEvent, error) {
	h := histEvent{Pattern: e.Pattern}
	own := false
	for _, n := range histFlagNames {
		_, ok := e.Opts[n]
		own = own || ok
	}
	notBoth := usagef("give the hist of -e %s either as a 'hist:...' string or with -k/--vals/-s/--size/-f/--name, not both", e.Pattern)
	if raw, ok := e.Opts["hist"]; ok {
		if own || name != "" {
			return h, notBoth
		}
		h.Raw = raw[0]
		return h, nil
	}
	if raw, ok := common["hist"]; ok && !own {
		for _, n := range histFlagNames {
			if _, ok := common[n]; ok {
				return h, notBoth
			}
		}
		if name != "" {
			return h, notBoth
		}
		h.Raw = raw[0]
		return h, nil
	} else if ok {
		return h, usagef("-e %s has flags of its own, but the 'hist:...' string before the first -e is the hist of every event: give -e %s its own string, or give the hists with flags", e.Pattern, e.Pattern)
	}
	opt := func(n string) ([]string, bool) {
		if v, ok := e.Opts[n]; ok {
			return v, true
		}
		v, ok := common[n]
		return v, ok
	}
	h.Flags.Keys, _ = opt("keys")
	h.Flags.Vals, _ = opt("vals")
	h.Flags.Sort, _ = opt("sort")
	h.Flags.Name = name
	if f, ok := opt("filter"); ok {
		h.Flags.Filter = f[0]
	}
	if size, ok := opt("size"); ok {
		if size[0] == "" {
			return h, parse.Errorf("--size", "", 0, 0, "missing size").WithHint("leave --size out for the default, 2048 entries")
		}
		h.Flags.Size = size[0]
	}
	if len(h.Flags.Keys) == 0 {
		return h, usagef("hist needs keys for -e %s: -k FIELD[,FIELD...] after it (or before the first -e, for every event) or a 'hist:keys=...' string", e.Pattern)
	}
	return h, nil
}

// ownHist reports whether event e has a hist other than those of -R: a
// string or flags of its own, or of the options before the first -e.
func ownHist(e boundEvent, common eventOpts) bool {
	for _, n := range append([]string{"hist"}, histFlagNames...) {
		if _, ok := e.Opts[n]; ok {
			return true
		}
		if _, ok := common[n]; ok {
			return true
		}
	}
	return false
}

// histTriggers splits the -R of an event into its hists, -R 'hist:...',
// which mean what the same string as the -e's own hist means, and the
// other triggers, as given.
func histTriggers(triggers []string) (hists []histEvent, others []string, err error) {
	for _, src := range triggers {
		t, err := parse.ParseTrigger("-R", src)
		if err != nil {
			return nil, nil, err
		}
		if t.Cmd == parse.TrigHist && !t.Remove {
			hists = append(hists, histEvent{Spec: t.Hist})
			continue
		}
		others = append(others, src)
	}
	return hists, others, nil
}

// histSpec parses the hist of an event from its string or its flags.
func histSpec(h histEvent) (*parse.HistSpec, error) {
	if h.Spec != nil {
		return h.Spec, nil
	}
	if h.Raw != "" {
		return parse.ParseHist("hist", h.Raw)
	}
	return parse.HistFromFlags(h.Flags)
}

// histSpecs parses the hist of each -e and gives it to each event the -e
// names (a glob names several), in command-line order, from c.
func histSpecs(c catalog.Catalog, hists []histEvent, offline bool) ([]hist.EventHist, error) {
	var out []hist.EventHist
	for _, h := range hists {
		spec, err := histSpec(h)
		if err != nil {
			return nil, err
		}
		events, err := histEvents(c, []string{h.Pattern}, offline)
		if err != nil {
			return nil, err
		}
		for _, ev := range events {
			out = append(out, hist.EventHist{Event: ev, Spec: spec, Triggers: h.Triggers})
		}
	}
	return out, nil
}

func runHist(ctx context.Context, d *Deps, o *histOptions) error {
	fs, err := d.TraceFS()
	if err != nil {
		return err
	}
	probes, err := probeFormats(fs, &o.Probes, &o.Funcs)
	if err != nil {
		return err
	}
	cat, err := o.Probes.catalog(catalog.Live(fs))
	if err != nil {
		return err
	}
	if cat, err = o.Funcs.catalog(cat); err != nil {
		return err
	}
	cat, err = o.Synth.catalog(cat)
	if err != nil {
		return err
	}
	hists, err := histSpecs(cat, o.Hists, false)
	if err != nil {
		return err
	}
	synths, err := o.Synth.events(cat)
	if err != nil {
		return err
	}
	if hist.IsSession(hists, synths) {
		if err := checkSession(o); err != nil {
			return err
		}
	}
	job, err := hist.NewLive(fs, hist.LiveConfig{
		Probes: probes, Hists: hists, PIDs: o.PIDs, Follow: o.Follow, Format: o.Format, Clear: o.Clear, Out: d.Out, StartOff: o.StartOff,
		Synths: synths,
	})
	if err != nil {
		return err
	}
	if o.DryRun {
		return job.Describe(d.Out)
	}
	lo := live.Options{
		Command: o.Command, Stdin: d.In, Stdout: d.Out, Stderr: d.Err,
		Duration: o.Duration, Interval: o.Interval, Quiet: o.Quiet,
	}
	if o.Follow {
		lo.Follow = job.Follow
	}
	return live.Run(ctx, job, lo)
}

// runHistFile runs the hist over the records of a trace.dat file.
func runHistFile(ctx context.Context, d *Deps, o *histOptions) error {
	f, cat, err := openFile(d, o.Input)
	if err != nil {
		return err
	}
	defer f.Close()
	defer func() {
		warnDamage(d, o.Input, f)
		warnSkipped(d, o.Input, "the hist", f)
	}()
	if cat, err = o.Synth.recorded(cat); err != nil {
		return err
	}
	hists, err := histSpecs(cat, o.Hists, true)
	if err != nil {
		return err
	}
	for _, h := range hists {
		if h.Spec.Pause {
			return h.Spec.Errorf(h.Spec.PauseOff, h.Spec.PauseEnd, "a paused hist over a file would count nothing").
				WithHint("pause waits for an enable_hist trigger (-R), which runs on live events: drop pause")
		}
	}
	if len(o.Synth.defs) > 0 || hist.IsSession(hists, nil) {
		return runHistSession(ctx, d, o, f, cat, hists)
	}
	owner, infos, err := hist.FileShares(f, hists)
	if err != nil {
		return err
	}
	var tables []*hist.Table
	var damage error
	for i, h := range hists {
		if owner[i] != i {
			tables = append(tables, tables[owner[i]]) // a named hist: the first's table
			continue
		}
		var what string
		if len(hists) > 1 {
			what = fmt.Sprintf("hist %d of %d: ", i+1, len(hists))
		}
		var group []hist.EventHist
		for j := range hists {
			if owner[j] == i {
				group = append(group, hists[j])
			}
		}
		stop := showProgress(d, o.Quiet, what, o.Input, f)
		var t *hist.Table
		if len(group) > 1 {
			t, err = hist.RunFileShared(ctx, group, f, hist.FileOptions{PIDs: o.PIDs})
		} else {
			t, err = hist.RunFile(ctx, h.Spec, f, h.Event, hist.FileOptions{PIDs: o.PIDs})
		}
		stop()
		if t == nil {
			return h.Spec.Locate(err)
		}
		if err != nil && ctx.Err() == nil {
			// A damaged or cut file: print what could be read, then fail.
			damage = fmt.Errorf("%s: %w (the hist above counts the records before the damage)", o.Input, err)
		}
		t.Sort()
		tables = append(tables, t)
		if ctx.Err() != nil {
			break // interrupted: print the counts so far
		}
	}
	if err := hist.Write(d.Out, o.Format, tables, infos[:len(tables)], hist.FileResolver(f)); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return damage
}

// checkSession refuses the flags a live inter-event session does not
// take: its hists run no other triggers, start counting and keep their
// tables.
func checkSession(o *histOptions) error {
	for _, h := range o.Hists {
		if len(h.Triggers) > 0 {
			return usagef("-R %s: the hists of an inter-event session run no other triggers (only -R 'hist:...')", h.Triggers[0])
		}
	}
	switch {
	case o.StartOff:
		return usagef("--start-off waits for a traceon trigger, which an inter-event session does not run")
	case o.Clear:
		return usagef("--clear: an inter-event session keeps its tables (its variables live in their entries)")
	}
	return nil
}

// runHistSession runs the hists of an inter-event session over the
// records of f, the synthetic events of --synth from cat.
func runHistSession(ctx context.Context, d *Deps, o *histOptions, f *tracedat.File, cat catalog.Catalog, hists []hist.EventHist) error {
	var sh []hist.SessionHist
	for _, h := range hists {
		fm, err := sessionFormat(f, cat, h.Event)
		if err != nil {
			return err
		}
		sh = append(sh, hist.SessionHist{Format: fm, Spec: h.Spec})
	}
	synths, err := o.Synth.events(cat)
	if err != nil {
		return err
	}
	s, err := hist.NewSession(sh, synths, ksym.TextFuncRange(f.Kallsyms))
	if err != nil {
		return err
	}
	if err := s.CheckFile(f); err != nil {
		return err
	}
	stop := showProgress(d, o.Quiet, "", o.Input, f)
	err = s.RunFile(ctx, f, hist.FileOptions{PIDs: o.PIDs})
	stop()
	var damage error
	if err != nil && ctx.Err() == nil {
		// A damaged or cut file: print what could be read, then fail.
		damage = fmt.Errorf("%s: %w (the hists above count the records before the damage)", o.Input, err)
	}
	tables, infos := s.Tables()
	if err := hist.Write(d.Out, o.Format, tables, infos, hist.FileResolver(f)); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return damage
}

// sessionFormat is the format of event name in cat: a synthetic event
// of --synth, or an event of the file f.
func sessionFormat(f *tracedat.File, cat catalog.Catalog, name string) (*parse.Format, error) {
	if sys, ev, ok := strings.Cut(name, ":"); ok && sys == parse.SynthSystem {
		fm, _, err := cat.Format(catalog.Event{System: sys, Name: ev})
		return fm, err
	}
	return hist.FileFormat(f, name)
}
