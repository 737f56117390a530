package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gtrace/gtrace/pkg/live"
	"github.com/gtrace/gtrace/pkg/record"
)

type recordOptions struct {
	Events      []record.EventSpec // each -e with the -f that follows it
	Synth       synthDefs          // --synth: synthetic events that the hist triggers' actions emit
	Output      string
	BufferKB    int
	PIDs        []int
	CPUs        []int
	CPUList     string // --cpu as given
	Follow      bool
	Clock       string
	Duration    time.Duration
	Compression string
	FileVersion int
	DryRun      bool
	StartOff    bool
	UserStack   bool
	Snapshot    bool
	Quiet       bool
	Probes      probeDefs     // --probe, --probes: probe events -e may name
	Funcs       funcEventDefs // --funcevent: function events -e may name
	Command     []string
}

var (
	recordCompressions = []string{"none", "zstd"}
	recordClocks       = []string{"mono", "boot", "tai"}
)

func newRecordCmd(d *Deps, runF func(*recordOptions) error) *cobra.Command {
	o := &recordOptions{}
	ev := &eventFlags{}
	c := &cobra.Command{
		Use:   "record -e EVENT [-f FILTER] [-e EVENT [-f FILTER]]... [-o FILE] [-- CMD ARGS...]",
		Short: "Record events into a trace.dat file, like trace-cmd record, in BPF",
		Long: `Record the raw records of trace events into a trace.dat file that trace-cmd
report, KernelShark and gtrace report read, as trace-cmd record does. The
events are copied by BPF programs into a ring buffer per CPU, so the kernel's
own ring buffer stays free for other tools, and filters run in BPF.

-e takes SYS:EVENT, SYS:* or *:* (shell globs), a bare EVENT, or a whole
SYS. -f FILTER applies to the -e right before it, and to every event that
-e names. -R TRIGGER (repeatable) puts a trigger on those events, as
trace-cmd's -R: traceon, traceoff, enable_event:SYS:EVENT,
disable_event:SYS:EVENT, stacktrace, snapshot, enable_hist:SYS:EVENT
and disable_hist:SYS:EVENT, with :N and if FILTER, and hist:..., run in
BPF;
!TRIGGER removes an earlier one. --start-off starts with tracing off. A
hist trigger counts the event alongside the recording, whether tracing
is on or off, and is printed on stdout at the end as gtrace hist prints
it (docs/hist.md, "Hist triggers on a recording"). A
stacktrace writes the kernel stack after the event (trace-cmd report's
<stack trace > block) on each firing, which its own if decides, not -f;
--user-stack adds the user stack. A snapshot writes, on each firing,
the last records of every CPU up to it (as many bytes as -b) as a
trace.dat of its own, FILE.snapshot-N.dat (FILE without .dat), as the
kernel's snapshot buffer would hold them; so does a hist's snapshot()
action (onmax($v).snapshot()), at each new max. --snapshot records into that
flight recorder only, and writes what it holds at the end to FILE. The filter language is the kernel's (== != < <= > >= & ~ on
fields, && || ! and parentheses).

Timestamps come from the mono clock (CLOCK_MONOTONIC) unless -C says boot
or tai: BPF cannot read trace-cmd's default local clock. common_flags and
common_preempt_count are 0 in every record: BPF programs cannot see them.

On x86-64 with kernel BTF, the system call events (raw_syscalls:* and
syscalls:*) are recorded by programs on the sys_enter and sys_exit raw
tracepoints that build the records as the kernel does: cheaper per event,
and -e 'syscalls:*' takes two programs instead of one per event.
--dry-run shows where each event's program runs.

Events the ring buffers had no room for are counted per CPU, marked in the
file where they were lost (trace-cmd report prints CPU:N [N EVENTS
DROPPED]) and summed up at exit. gtrace's own events are never recorded.
While it records, gtrace runs at nice -10, so that a workload that keeps every
CPU busy does not keep it from emptying the buffers.

It records until Ctrl-C (SIGINT) or SIGTERM, for --duration, or, given
-- CMD ARGS, while CMD runs: CMD is started held, released once the probes are
attached, and gtrace exits with CMD's exit status. When --duration ends
first, or gtrace is stopped by signal N, CMD and its children get SIGINT
(signal N), then SIGTERM, then SIGKILL, 250ms apart, and gtrace exits
with CMD's status: 128+N if signal N killed it. Events of all processes
are recorded unless -P names some, on all CPUs unless --cpu names some.

Once the programs are attached, a line on stderr says what is recorded and
how it ends; on a terminal, a status line (events/s, events, MB, lost, time
left) is redrawn every second. -q leaves both out.

--follow, with -- CMD or -P, records only CMD or the processes of -P and
every process they fork from then on, children and grandchildren, from the
child's first event (trace-cmd record's -c and -F): BPF programs on the
fork and free events keep the set in a map of 65536 entries. Without
--follow, -- CMD does not limit what is recorded.`,
		Example: `  # every system call entry and context switch, until Ctrl-C
  gtrace record -e raw_syscalls:sys_enter -e sched:sched_switch
  trace-cmd report -i trace.dat

  # writes to fd 1 of one command, into out.dat
  gtrace record -e syscalls:sys_enter_write -f 'fd == 1' -o out.dat -- ls -l

  # libc's write as a uprobe event: fd, size and the bytes, as the kernel's
  # uprobe_events would record them (trace-cmd report prints them)
  gtrace record --probe 'p:myw /lib/x86_64-linux-gnu/libc.so.6:write fd=%di:s32 len=%dx:u64 buf=+0(%si):string' \
      -e uprobes:myw --follow -- ./app

  # the same calls as a function event: functions:write prints caller->write(fd=..., buf=..., len=...)
  gtrace record --funcevent '/lib/x86_64-linux-gnu/libc.so.6:write(int fd, string buf, size_t len)' \
      -e functions:write --follow -- ./app

  # all scheduler events for 5 seconds, zstd-compressed
  gtrace record -e 'sched:*' --duration 5s --compression zstd

  # every system call's entry and exit, with arguments and return values
  gtrace record -e 'syscalls:*' -- make

  # timers armed by sleeping tasks: a filter on a function's address range
  gtrace record -e timer:hrtimer_start -f 'function.function == hrtimer_wakeup'

  # system calls of make and every process it starts
  gtrace record -e raw_syscalls:sys_enter --follow -- make

  # context switches of process 1234 and the children it forks from now on
  gtrace record -e sched:sched_switch -P 1234 --follow

  # context switches on CPUs 0 and 2 only, as trace-cmd record -M 5
  gtrace record -e sched:sched_switch --cpu 0,2

  # no attach line, no status line: for scripts
  gtrace record -q -e sched:sched_switch --duration 10s

  # the writes of ls up to and including the one of 5 bytes: then tracing is off
  gtrace record -e syscalls:sys_enter_write -R 'traceoff if count == 5' -- ls

  # nothing until the first openat, then every openat and read
  gtrace record --start-off -e syscalls:sys_enter_openat -R traceon:1 -e syscalls:sys_enter_read

  # the kernel and user stacks of the first 3 writes of 4096 bytes or more
  gtrace record -e syscalls:sys_enter_write -R 'stacktrace:3 if count >= 4096' --user-stack -- ./app

  # a flight recorder: the last 1 MiB of each CPU's context switches, written
  # to trace.dat at Ctrl-C, and to trace.snapshot-1.dat when a task segfaults
  gtrace record --snapshot -b 1024 -e sched:sched_switch -e signal:signal_deliver -R 'snapshot:1 if sig == 11'

  # a snapshot at each new longest write of ./app: trace.snapshot-N.dat ends with that write
  gtrace record -e syscalls:sys_enter_write -R 'hist:keys=common_pid:n=count:onmax($n).snapshot()' -- ./app

  # record the getppid calls of ./app, and print a hist of them per process at the end
  gtrace record -e syscalls:sys_enter_getppid -R 'hist:keys=common_pid.execname' -- ./app

  # wakeup latencies of ./app as a synthetic event in trace.dat (trace-cmd report prints them)
  gtrace record --synth 'wakeup_latency u64 lat; pid_t pid; int prio' --follow \
    -e sched:sched_waking -R 'hist:keys=pid:ts0=common_timestamp.usecs' \
    -e sched:sched_switch -R 'hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio)' \
    -e synthetic:wakeup_latency -f 'lat > 100' -- ./app

  # show the plan and the generated BPF, load nothing
  gtrace record -e raw_syscalls:sys_enter -f 'id == 1' --dry-run`,
		RunE: func(c *cobra.Command, args []string) error {
			if at := c.ArgsLenAtDash(); at >= 0 {
				o.Command = args[at:]
				args = args[:at]
			}
			if len(args) > 0 {
				return usagef("record takes no arguments, got %q (give events with -e, and put the command to trace after --)", args[0])
			}
			o.Events = eventSpecs(ev)
			if len(o.Events) == 0 {
				return usagef("record needs an event: -e SYS:EVENT (gtrace list shows them)")
			}
			if o.Output == "" {
				return usagef("-o needs a file name")
			}
			if err := checkFollow(o.Follow, o.Command, o.PIDs); err != nil {
				return err
			}
			if o.FileVersion == 6 && o.Compression != "none" {
				return usagef("--compression %s needs --file-version 7", o.Compression)
			}
			o.CPUList = c.Flags().Lookup("cpu").Value.String()
			if runF != nil {
				return runF(o)
			}
			return runRecord(c.Context(), d, o)
		},
	}
	f := c.Flags()
	eventFilterFlags(f, ev, "record")
	f.StringVarP(&o.Output, "output", "o", "trace.dat", "file to write")
	intFlag(f, &o.BufferKB, "buffer-size", "b", record.DefaultBufferKB, 1, record.MaxBufferKB, "buffer size",
		fmt.Sprintf("the ring buffer per CPU is 1 to %d KiB", record.MaxBufferKB),
		"ring buffer per CPU in KiB, rounded up to a power of two (at least 64)")
	pidsFlag(f, &o.PIDs, "pid", "P", "only record events of these processes (ids of running processes, comma-separated)")
	f.Var(&cpusValue{p: &o.CPUs, flag: "--cpu"}, "cpu", "only record events on these CPUs, e.g. 0,2-3 (the file keeps every CPU, the others empty)")
	f.BoolVar(&o.Follow, "follow", false, "with -- CMD or -P: record only those processes and every process they fork")
	enumFlag(f, &o.Clock, "clock", "C", "mono", recordClocks, "clock", "BPF cannot read trace-cmd's default clock, local",
		"trace clock of the timestamps: "+strings.Join(recordClocks, ", "))
	durationFlag(f, &o.Duration, "duration", time.Nanosecond, "leave --duration out to record until Ctrl-C", "stop after this long (e.g. 10s)")
	enumFlag(f, &o.Compression, "compression", "", "none", recordCompressions, "compression", "",
		"compression of the file: "+strings.Join(recordCompressions, ", ")+" (zstd needs --file-version 7)")
	intFlag(f, &o.FileVersion, "file-version", "", 7, 6, 7, "file version", "trace.dat versions 6 and 7 are written", "trace.dat version: 6 or 7")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan and the BPF programs, load nothing")
	f.BoolVar(&o.StartOff, "start-off", false, "start with tracing off: nothing is recorded until a traceon trigger (-R) fires")
	f.BoolVar(&o.UserStack, "user-stack", false, "follow each kernel stack of a stacktrace trigger (-R) with the user stack (8 frames)")
	f.BoolVar(&o.Snapshot, "snapshot", false, "a flight recorder: keep only the last -b KiB of each CPU, and write them to -o at the end")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "leave out the attach line and the status line (warnings and the statistics stay)")
	o.Synth.register(f)
	o.Probes.register(f)
	o.Funcs.register(f)
	return c
}

func runRecord(ctx context.Context, d *Deps, o *recordOptions) error {
	fs, err := d.TraceFS()
	if err != nil {
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
	plan, err := record.NewPlan(fs, &record.Options{Events: o.Events, BufferKB: o.BufferKB, PIDs: o.PIDs, CPUs: o.CPUs, CPUList: o.CPUList, Follow: o.Follow, Clock: o.Clock, StartOff: o.StartOff, UserStack: o.UserStack,
		Snapshots: true, HistOut: d.Out, HistFormat: "text", Synths: synths, Probes: probes})
	if err != nil {
		return err
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(d.Err, "gtrace: warning: %s\n", capLines(w.Caret()))
	}
	if o.DryRun {
		return plan.Describe(d.Out)
	}
	job := record.NewJob(fs, plan, record.JobOptions{
		Output: o.Output,
		File:   record.FileOptions{Version: o.FileVersion, Compression: o.Compression, Tracer: "gtrace " + version},
		Err:    d.Err,
		Flight: o.Snapshot,
	})
	lo := live.Options{Command: o.Command, Stdin: d.In, Stdout: d.Out, Stderr: d.Err, Duration: o.Duration, Quiet: o.Quiet}
	if o.Follow {
		lo.Follow = job.Follow
	}
	return live.Run(ctx, job, lo)
}

// eventFilterFlags defines -e and the -f that binds to it, as record and
// filter take them; what is what the command does with the events.
func eventFilterFlags(f *pflag.FlagSet, ev *eventFlags, what string) {
	ev.event(f, "event to "+what+": SYS:EVENT, SYS:*, *:*, EVENT or SYS (repeatable)")
	ev.option(f, eventOption{name: "filter", short: "f", typ: "FILTER", once: "a filter", onceHint: "join the two with && in one -f",
		needsEvent: "a filter must follow the -e EVENT it filters"}, "filter for the events of the -e just before")
	ev.option(f, eventOption{name: "trigger", short: "R", typ: "TRIGGER",
		needsEvent: "a trigger must follow the -e EVENT it is on"}, "trigger on the events of the -e just before, as the kernel's (repeatable; see docs/triggers.md)")
}

// eventSpecs returns each -e with the -f that followed it.
func eventSpecs(ev *eventFlags) []record.EventSpec {
	var specs []record.EventSpec
	for _, e := range ev.Events {
		filter, _ := e.Opts.get("filter")
		triggers, _ := e.Opts.get("trigger")
		specs = append(specs, record.EventSpec{Pattern: e.Pattern, Filter: strings.Join(filter, ""), Triggers: triggers})
	}
	return specs
}
