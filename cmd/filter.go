package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/live"
	"github.com/gtrace/gtrace/pkg/record"
	"github.com/gtrace/gtrace/pkg/stream"
)

type filterOptions struct {
	Events      []record.EventSpec // each -e with the -f that follows it
	Output      string             // also write a trace.dat file; "" for none
	Format      string
	BufferKB    int
	PIDs        []int
	Follow      bool
	Clock       string
	Duration    time.Duration
	Compression string
	FileVersion int
	Check       bool
	Quiet       bool
	DryRun      bool
	StartOff    bool
	UserStack   bool
	// Fired prints a line on stderr when a trigger fires (gtrace
	// trigger).
	Fired   bool
	Synth   synthDefs     // --synth: synthetic events that the hist triggers' actions emit
	Probes  probeDefs     // --probe, --probes: probe events -e may name
	Funcs   funcEventDefs // --funcevent: function events -e may name
	Command []string
}

var filterFormats = []string{"text", "ndjson"}

func newFilterCmd(d *Deps, runF func(*filterOptions) error) *cobra.Command {
	o := &filterOptions{}
	ev := &eventFlags{}
	c := &cobra.Command{
		Use:   "filter -e EVENT [-f FILTER | FILTER] [-e EVENT [-f FILTER]]... [-o FILE] [--format text|ndjson] [--check] [-- CMD ARGS...]",
		Short: "Print matching events as they happen, in trace-cmd report's layout",
		Long: `Print every event that matches its filter as it happens, one line each, in
trace-cmd report's layout (task-pid, [cpu], timestamp, event name, the
fields through the event's print format): what gtrace record and
gtrace report -i would print, without the file in between. The events are
recorded by the same BPF programs as gtrace record's, which hand each event
to user space at once; filters run in BPF.

-e and -f work as for gtrace record: -f FILTER applies to the -e right
before it, and to every event that -e names; a filter that does not fit
some of a pattern's events (they lack a field) applies to those it fits,
and a warning names the others. With a single -e, the filter may be given
as the argument instead of -f.

Ordering: each CPU's events come in order; the CPUs are merged by
timestamp, holding an event back until every CPU has reported a newer one,
or for at most 100 ms. Events lost because the ring buffers were full are
printed in place, as trace-cmd report prints them: CPU:N [N EVENTS
DROPPED].

--format ndjson prints one JSON object a line (gtrace report's NDJSON),
flushed as events come. The hists of -R 'hist:...' triggers print after
the events end: as gtrace hist prints them, or with ndjson one line each,
gtrace hist's JSON object. -o FILE also writes the events into a trace.dat
file, as gtrace record does. --check only reads the events' formats: it
prints each selected event with its filter in normal form, and exits 0, or
2 with the error; it loads nothing.

It runs until Ctrl-C (SIGINT) or SIGTERM, for --duration, or, given
-- CMD ARGS, while CMD runs: CMD is started held, released once the probes
are attached, and gtrace exits with CMD's exit status. Events of all
processes are printed unless -P names some. --follow, with -- CMD or -P,
prints only the events of CMD or of the processes of -P and of every
process they fork from then on (see gtrace record --help). Exit status: 0, CMD's, 1 when
tracing failed, 2 for bad usage or a bad filter.`,
		Example: `  # every file opened, with its name, until Ctrl-C
  gtrace filter -e syscalls:sys_enter_openat 'filename.ustring ~ "/etc/*"'

  # the files a build opens, make and every process it starts
  gtrace filter --follow -e syscalls:sys_enter_openat -- make

  # writes of 7 bytes to stdout by one command, also saved in out.dat
  gtrace filter -e syscalls:sys_enter_write -f 'fd == 1 && count == 7' -o out.dat -- ./app

  # readline's return in bash: each line typed, from a uretprobe
  gtrace filter --probe 'r:rl /bin/bash:readline line=+0($retval):string' -e uprobes:rl
  gtrace filter --funcevent '/bin/bash:readline(string prompt)' -e functions:readline

  # scheduler events of the idle task, as NDJSON for jq
  gtrace filter -e 'sched:*' -f 'prev_pid == 0' --format ndjson | jq -c .

  # each openat of /etc/passwd with the kernel stack it came through
  gtrace filter -e syscalls:sys_enter_openat -R 'stacktrace if filename.ustring == "/etc/passwd"'

  # the writes of ./app, then a hist of their sizes (a hist trigger, printed at the end)
  gtrace filter -e syscalls:sys_enter_write -R 'hist:keys=count.log2' -- ./app

  # each wakeup of ./app that waited more than 1 ms, as a synthetic event
  gtrace filter --synth 'wakeup_latency u64 lat; pid_t pid; int prio' --follow \
    -e sched:sched_waking -R 'hist:keys=pid:ts0=common_timestamp.usecs' \
    -e sched:sched_switch -R 'hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio)' \
    -e synthetic:wakeup_latency -f 'lat > 1000' -- ./app

  # check a filter against the event's format, load nothing
  gtrace filter -e sched:sched_switch 'prev_comm ~ "kworker/*" && prev_state & 2' --check`,
		RunE: func(c *cobra.Command, args []string) error {
			if at := c.ArgsLenAtDash(); at >= 0 {
				o.Command = args[at:]
				args = args[:at]
			}
			o.Events = eventSpecs(ev)
			if len(o.Events) == 0 {
				return usagef("filter needs an event: -e SYS:EVENT (gtrace list shows them)")
			}
			if err := positionalFilter(o, args); err != nil {
				return err
			}
			if err := checkFollow(o.Follow, o.Command, o.PIDs); err != nil {
				return err
			}
			if o.Output == "" && (c.Flags().Changed("compression") || c.Flags().Changed("file-version")) {
				return usagef("--compression and --file-version are those of the -o file: give -o FILE")
			}
			if o.FileVersion == 6 && o.Compression != "none" {
				return usagef("--compression %s needs --file-version 7", o.Compression)
			}
			if o.Check && (o.DryRun || len(o.Command) > 0) {
				return usagef("--check only checks the filters: it takes no --dry-run and no command")
			}
			if runF != nil {
				return runF(o)
			}
			return runFilter(c.Context(), d, o)
		},
	}
	f := c.Flags()
	eventFilterFlags(f, ev, "print")
	o.Probes.register(f)
	o.Funcs.register(f)
	f.StringVarP(&o.Output, "output", "o", "", "also write the events into this trace.dat file")
	enumFlag(f, &o.Format, "format", "", "text", filterFormats, "format", "",
		"output format: text (trace-cmd report's lines) or ndjson (one JSON object a line)")
	intFlag(f, &o.BufferKB, "buffer-size", "b", record.DefaultBufferKB, 1, record.MaxBufferKB, "buffer size",
		fmt.Sprintf("the ring buffer per CPU is 1 to %d KiB", record.MaxBufferKB),
		"ring buffer per CPU in KiB, rounded up to a power of two (at least 64)")
	pidsFlag(f, &o.PIDs, "pid", "P", "only print events of these processes (ids of running processes, comma-separated)")
	f.BoolVar(&o.Follow, "follow", false, "with -- CMD or -P: print only the events of those processes and of every process they fork")
	enumFlag(f, &o.Clock, "clock", "C", "mono", recordClocks, "clock", "BPF cannot read trace-cmd's default clock, local",
		"trace clock of the timestamps: "+strings.Join(recordClocks, ", "))
	durationFlag(f, &o.Duration, "duration", time.Nanosecond, "leave --duration out to run until Ctrl-C", "stop after this long (e.g. 10s)")
	enumFlag(f, &o.Compression, "compression", "", "none", recordCompressions, "compression", "",
		"compression of the -o file: "+strings.Join(recordCompressions, ", ")+" (zstd needs --file-version 7)")
	intFlag(f, &o.FileVersion, "file-version", "", 7, 6, 7, "file version", "trace.dat versions 6 and 7 are written", "trace.dat version of the -o file: 6 or 7")
	f.BoolVar(&o.Check, "check", false, "check the filters against the events' formats, print them in normal form, load nothing")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "leave out the attach line (warnings and the statistics stay)")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan and the BPF programs, load nothing")
	f.BoolVar(&o.StartOff, "start-off", false, "start with tracing off: nothing is printed until a traceon trigger (-R) fires")
	f.BoolVar(&o.UserStack, "user-stack", false, "follow each kernel stack of a stacktrace trigger (-R) with the user stack (8 frames)")
	o.Synth.register(f)
	return c
}

// positionalFilter takes a filter given as the argument: it is the -f of
// the only -e. With several -e, or a -f already given, it is ambiguous.
func positionalFilter(o *filterOptions, args []string) error {
	switch {
	case len(args) == 0:
		return nil
	case len(args) > 1:
		return usagef("filter takes one filter argument, got %d (%q): quote the filter, and put the command to trace after --", len(args), args)
	case len(o.Events) > 1:
		return usagef("a filter argument needs exactly one -e, and %d are given: give each -e its own -f", len(o.Events))
	case o.Events[0].Filter != "":
		return usagef("-e %s has a filter already (-f): join the two with && in one", o.Events[0].Pattern)
	}
	o.Events[0].Filter = args[0]
	return nil
}

func runFilter(ctx context.Context, d *Deps, o *filterOptions) error {
	fs, err := d.TraceFS()
	if err != nil {
		if o.Check {
			return fmt.Errorf("--check reads the events' formats from tracefs: %w", err)
		}
		return err
	}
	synths, err := o.Synth.live(fs)
	if err != nil {
		return err
	}
	probes, err := probeFormats(fs, &o.Probes, &o.Funcs)
	if err != nil {
		return err
	}
	plan, err := record.NewPlan(fs, &record.Options{Events: o.Events, BufferKB: o.BufferKB, PIDs: o.PIDs, Follow: o.Follow, Clock: o.Clock, Stream: true, StartOff: o.StartOff, UserStack: o.UserStack,
		HistOut: d.Out, HistFormat: o.Format, Synths: synths, Probes: probes})
	if err != nil {
		return err
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(d.Err, "gtrace: warning: %s\n", capLines(w.Caret()))
	}
	switch {
	case o.Check:
		return printCheck(d, plan)
	case o.DryRun:
		return plan.Describe(d.Out)
	}
	job := stream.NewJob(fs, plan, stream.JobOptions{
		Out: d.Out, JSON: o.Format == "ndjson",
		Output: o.Output,
		File:   record.FileOptions{Version: o.FileVersion, Compression: o.Compression, Tracer: "gtrace " + version},
		Err:    d.Err,
		Fired:  o.Fired,
	})
	lo := live.Options{
		Command: o.Command, Stdin: d.In, Stdout: d.Out, Stderr: d.Err, Duration: o.Duration,
		Quiet: o.Quiet, NoStatus: true,
	}
	if o.Fired {
		lo.Interval = firedInterval
	}
	if o.Follow {
		lo.Follow = job.Follow
	}
	return live.Run(ctx, job, lo)
}

// printCheck prints each event of the plan with its filter in normal
// form, or "(no filter)".
func printCheck(d *Deps, p *record.Plan) error {
	var b strings.Builder
	for _, ev := range p.Events {
		b.WriteString(ev.Format.FullName())
		if ev.Filter != nil {
			b.WriteString(": ")
			b.WriteString(ev.Filter.String())
		} else {
			b.WriteString(": (no filter)")
		}
		b.WriteString("\n")
	}
	_, err := fmt.Fprint(d.Out, b.String())
	return err
}
