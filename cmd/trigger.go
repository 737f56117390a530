package cmd

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/record"
)

// firedInterval is how often gtrace trigger looks for triggers that fired.
const firedInterval = 100 * time.Millisecond

func newTriggerCmd(d *Deps, runF func(*filterOptions, bool) error) *cobra.Command {
	o := &filterOptions{Fired: true}
	ev := &eventFlags{}
	var list bool
	c := &cobra.Command{
		Use:   "trigger -e EVENT [-f FILTER] 'TRIGGER' ['TRIGGER'...] [-e EVENT ...]... [-- CMD ARGS...]",
		Short: "Run the kernel's event triggers in BPF: print the events they let through, and when they fire",
		Long: `Put event triggers on events, as writes to the events' trigger files
would, and run them in BPF: each TRIGGER argument goes with the -e before
it, in order, so that '!TRIGGER' removes an earlier one (see
docs/triggers.md for the language). gtrace runs traceon, traceoff,
enable_event:SYS:EVENT, disable_event:SYS:EVENT, stacktrace,
enable_hist:SYS:EVENT and disable_hist:SYS:EVENT, each with :N and if
FILTER, and hist:... A hist counts its event whether tracing is on or off
(the kernel's rule) and is printed after the events end, as gtrace hist
prints it; enable_hist and disable_hist continue and pause the hists of
their target, which must have one. A stacktrace prints the kernel stack of its firing after
the event, as trace-cmd report prints it (and the user stack with
--user-stack); its own if decides when it fires, not -f.

It prints the events of the -e that pass the gate, as gtrace filter does:
recorded while tracing is on, each event while it is enabled and its -f
passes. The target of an enable_event that no -e names is traced too,
soft disabled until the trigger enables it. Each time a trigger fires
(changes tracing or an event's state), a line on stderr says which and
how many times in all; gtrace looks for them every 100ms. --start-off
starts with tracing off.

Counts follow the kernel: a traceon, traceoff, enable_event or
disable_event spends one of its :N only when it changes the state, and the
event that fires a trigger is printed (it is in the window it opens or
closes).

--list prints, for each event, the trigger file that the command line sets
up, as the kernel lists it, and loads nothing. It takes every trigger of
the language, those gtrace trigger does not run too (snapshot,
enable_hist, disable_hist, hist:...), each checked against its event's
format.

Every option of gtrace filter applies (-P, --follow, -o, --format,
--duration, -q, --dry-run).`,
		Example: `  # the writes of make up to the one of 5 bytes, then nothing
  gtrace trigger -e syscalls:sys_enter_write 'traceoff if count == 5' -- make

  # a uprobe's events until libc's write of 10 bytes
  gtrace trigger --probe 'p:myw /lib/x86_64-linux-gnu/libc.so.6:write len=%dx:u64' -e uprobes:myw 'traceoff if len == 10' -- ./app
  gtrace trigger --funcevent '/lib/x86_64-linux-gnu/libc.so.6:write(int fd, x64 buf, size_t len)' -e functions:write 'traceoff if len == 10' -- ./app

  # the openat calls from the first write of 100 bytes on
  gtrace trigger -e syscalls:sys_enter_write 'enable_event:syscalls:sys_enter_openat if count == 100' -- ./app

  # a window: on at the first getppid, off at the first getpgid
  gtrace trigger --start-off -e syscalls:sys_enter_getppid traceon:1 -e syscalls:sys_enter_getpgid traceoff:1 -e 'sched:*'

  # the kernel stacks of the writes of 100 bytes or more, at most 5
  gtrace trigger -e syscalls:sys_enter_write 'stacktrace:5 if count >= 100' -- ./app

  # the writes of ./app up to the one of 5 bytes, and a hist of all of them by size
  gtrace trigger -e syscalls:sys_enter_write 'traceoff if count == 5' 'hist:keys=count' -- ./app

  # what the trigger file would hold, loading nothing
  gtrace trigger --list -e sched:sched_switch 'traceoff:2 if prev_pid == 1' traceon '!traceoff'

  # a listing of hists and the triggers that pause and continue them
  gtrace trigger --list -e sched:sched_switch 'hist:keys=next_pid:vals=hitcount.percent:pause' \
    -e sched:sched_waking 'enable_hist:sched:sched_switch:1 if pid == 42'`,
		RunE: func(c *cobra.Command, args []string) error {
			if at := c.ArgsLenAtDash(); at >= 0 {
				o.Command = args[at:]
				args = args[:at]
			}
			if err := bindTriggerArgs(ev, args); err != nil {
				return err
			}
			o.Events = eventSpecs(ev)
			if len(o.Events) == 0 {
				return usagef("trigger needs an event: -e SYS:EVENT 'TRIGGER' (gtrace list shows the events)")
			}
			if list && (len(o.Command) > 0 || o.DryRun) {
				return usagef("--list only lists the triggers: it takes no --dry-run and no command")
			}
			if list && len(o.Synth.defs) > 0 {
				return usagef("--list lists the trigger files of tracefs's events, and --synth defines events of gtrace's: run the triggers, or leave --synth out")
			}
			if err := checkFollow(o.Follow, o.Command, o.PIDs); err != nil {
				return err
			}
			if runF != nil {
				return runF(o, list)
			}
			if list {
				return listTriggers(d, o)
			}
			return runFilter(c.Context(), d, o)
		},
	}
	f := c.Flags()
	ev.event(f, "event to put the TRIGGER arguments after it on: SYS:EVENT, SYS:*, *:*, EVENT or SYS (repeatable)")
	ev.option(f, eventOption{name: "filter", short: "f", typ: "FILTER", once: "a filter", onceHint: "join the two with && in one -f",
		needsEvent: "a filter must follow the -e EVENT it filters"}, "filter for the events of the -e just before (what is printed, not when the triggers fire)")
	f.BoolVar(&list, "list", false, "print the trigger file listing of each event, load nothing")
	f.StringVarP(&o.Output, "output", "o", "", "also write the events into this trace.dat file")
	enumFlag(f, &o.Format, "format", "", "text", filterFormats, "format", "",
		"output format: text (trace-cmd report's lines) or ndjson (one JSON object a line)")
	pidsFlag(f, &o.PIDs, "pid", "P", "only these processes' events print and fire triggers (ids of running processes, comma-separated)")
	f.BoolVar(&o.Follow, "follow", false, "with -- CMD or -P: only those processes and every process they fork")
	durationFlag(f, &o.Duration, "duration", time.Nanosecond, "leave --duration out to run until Ctrl-C", "stop after this long (e.g. 10s)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "leave out the attach line (warnings, firings and the statistics stay)")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan and the BPF programs, load nothing")
	f.BoolVar(&o.StartOff, "start-off", false, "start with tracing off: nothing is printed until a traceon fires")
	f.BoolVar(&o.UserStack, "user-stack", false, "follow each kernel stack of a stacktrace trigger with the user stack (8 frames)")
	o.Synth.register(f)
	o.Probes.register(f)
	o.Funcs.register(f)
	o.BufferKB, o.Clock, o.FileVersion, o.Compression = record.DefaultBufferKB, "mono", 7, "none"
	return c
}

// bindTriggerArgs makes each positional argument a trigger (-R) of the -e
// before it on the command line.
func bindTriggerArgs(ev *eventFlags, args []string) error {
	for i, a := range args {
		j := len(ev.Events) - 1
		for j >= 0 && ev.Events[j].Args > i {
			j--
		}
		if j < 0 {
			return usagef("trigger %q comes before any -e: put each trigger after the -e EVENT it is on", a)
		}
		ev.Events[j].Opts["trigger"] = append(ev.Events[j].Opts["trigger"], a)
	}
	return nil
}

// listTriggers prints the trigger files the command line sets up.
func listTriggers(d *Deps, o *filterOptions) error {
	if len(o.Probes.defs) > 0 || len(o.Funcs.evs) > 0 {
		return usagef("--list prints the trigger files of the kernel's events: not with --probe, --probes or --funcevent")
	}
	fs, err := d.TraceFS()
	if err != nil {
		return fmt.Errorf("--list reads the events' formats from tracefs: %w", err)
	}
	s, err := record.TriggerListing(fs, o.Events)
	if err != nil {
		return err
	}
	if s == "" {
		return usagef("no triggers: give each -e its triggers, e.g. -e %s 'traceoff if ...'", strings.Fields(o.Events[0].Pattern)[0])
	}
	_, err = io.WriteString(d.Out, s)
	return err
}
