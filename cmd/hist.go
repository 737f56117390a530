package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/hist"
	"github.com/gtrace/gtrace/pkg/live"
	"github.com/gtrace/gtrace/pkg/parse"
)

type histOptions struct {
	Input    string // a trace.dat file: aggregate its records instead of live events
	Events   []string
	Raw      string // a kernel 'hist:...' string
	Keys     []string
	Vals     []string
	Sort     []string
	Size     string // as typed: the hist string's size= rule judges it
	Filter   string
	Name     string
	PIDs     []int
	Follow   bool
	Duration time.Duration
	Interval time.Duration
	Clear    bool
	Format   string
	DryRun   bool
	Quiet    bool
	Command  []string
}

var histFormats = []string{"text", "json", "csv", "table"}

func newHistCmd(d *Deps, runF func(*histOptions) error) *cobra.Command {
	o := &histOptions{}
	c := &cobra.Command{
		Use:   "hist -e SYS:EVENT [-k KEYS] [--vals VALS] [-s SORT] [--size N] [-f FILTER] ['hist:...'] [-i FILE] [-- CMD ARGS...]",
		Short: "Aggregate events into a histogram, like the kernel's hist triggers, in BPF",
		Long: `Count events by keys and sum their fields, as the kernel's hist triggers do
(Documentation/trace/histogram.rst), but in a BPF hash map, so it works on
kernels built without CONFIG_HIST_TRIGGERS. The default output is byte for
byte what the kernel's events/SYS/EVENT/hist file prints.

The hist is given either with flags (-k, --vals, -s, --size, -f, --name) or as
the kernel's own trigger string 'hist:keys=...:vals=...:sort=...:size=N if FILTER'.

Key modifiers: .execname (common_pid only) .syscall .hex .sym .sym-offset
.log2 .buckets=N. Value modifiers: .hex .percent .graph. Keys may be event
fields, common_pid, common_cpu and comm. The filter supports == != < <= > >= &
on numbers, == != on strings, && || ! and parentheses.

It runs until Ctrl-C (SIGINT) or SIGTERM, for --duration, or, given
-- CMD ARGS, while CMD runs: CMD is started held, released once the probes are
attached, and gtrace exits with CMD's exit status. Stopped by signal N, it
prints and exits 128+N (CMD gets the signal, then SIGTERM, then SIGKILL).
Events of all processes count unless -P names some.

--follow, with -- CMD or -P, counts only CMD or the processes of -P and
every process they fork from then on, children and grandchildren, from the
child's first event (trace-cmd's -c and -F): BPF programs on the fork and
free events keep the set in a map of 65536 entries. Without --follow,
-- CMD does not limit what is counted.`,
		Example: `  # syscalls by process and syscall, until Ctrl-C
  gtrace hist -e raw_syscalls:sys_enter -k common_pid.execname,id.syscall

  # bytes written per process, biggest first, for 10 seconds
  gtrace hist -e syscalls:sys_enter_write -k common_pid.execname --vals count -s count.descending --duration 10s

  # the same as a kernel trigger string
  gtrace hist -e syscalls:sys_enter_write 'hist:keys=common_pid.execname:vals=count:sort=count.descending'

  # a log2 histogram of write sizes of one command, as JSON
  gtrace hist -e syscalls:sys_enter_write -k count.log2 -f 'fd == 1' --format json -- dd if=/dev/zero of=/dev/null bs=1k count=100

  # system calls of each process of a build: make and all it starts
  gtrace hist -e raw_syscalls:sys_enter -k common_pid.execname --follow -- make

  # print every second, starting afresh each time
  gtrace hist -e sched:sched_switch -k prev_comm --interval 1s --clear

  # the same hist over a recording, offline (gtrace record or trace-cmd)
  gtrace hist -i trace.dat -e raw_syscalls:sys_enter -k common_pid.execname,id.syscall

  # at most 10 seconds of a command (stopped then, as by Ctrl-C), no attach line
  gtrace hist -q -e raw_syscalls:sys_enter -k id.syscall --duration 10s -- make

  # show the plan and the generated BPF, load nothing
  gtrace hist -e raw_syscalls:sys_enter -k id.syscall --dry-run`,
		RunE: func(c *cobra.Command, args []string) error {
			if at := c.ArgsLenAtDash(); at >= 0 {
				o.Command = args[at:]
				args = args[:at]
			}
			switch len(args) {
			case 0:
			case 1:
				o.Raw = args[0]
			default:
				return usagef("hist takes at most one 'hist:...' string, got %d arguments (put the command to trace after --)", len(args))
			}
			if len(o.Events) == 0 {
				return usagef("hist needs an event: -e SYS:EVENT (gtrace list shows them)")
			}
			if o.Raw != "" && (len(o.Keys) > 0 || len(o.Vals) > 0 || len(o.Sort) > 0 || c.Flags().Changed("size") || o.Filter != "" || o.Name != "") {
				return usagef("give the hist either as a 'hist:...' string or with -k/--vals/-s/--size/-f/--name, not both")
			}
			if o.Raw == "" && len(o.Keys) == 0 {
				return usagef("hist needs keys: -k FIELD[,FIELD...] or a 'hist:keys=...' string")
			}
			if o.Input != "" && (len(o.Command) > 0 || o.Duration != 0 || o.Interval != 0 || len(o.PIDs) > 0 || o.Follow || o.DryRun) {
				return usagef("-i reads a recorded file: --duration, --interval, -P, --follow, --dry-run and -- CMD apply to live hists only")
			}
			if err := checkFollow(o.Follow, o.Command, o.PIDs); err != nil {
				return err
			}
			if o.Clear && o.Interval == 0 {
				return usagef("--clear needs --interval")
			}
			if c.Flags().Changed("size") && o.Size == "" {
				return parse.Errorf("--size", "", 0, 0, "missing size").WithHint("leave --size out for the default, 2048 entries")
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
	f.VarP(&eventsValue{p: &o.Events}, "event", "e", "event to aggregate, SYS:EVENT, or a glob such as 'sched:*' (repeatable: one hist per event)")
	f.StringSliceVarP(&o.Keys, "keys", "k", nil, "keys: FIELD[.MODIFIER][,...] (at most 3)")
	f.StringSliceVar(&o.Vals, "vals", nil, "values to sum: FIELD[.hex|.percent|.graph][,...] (hitcount is always counted)")
	f.StringSliceVarP(&o.Sort, "sort", "s", nil, "sort by up to two keys or values: NAME[.ascending|.descending]")
	f.StringVar(&o.Size, "size", "", "table size in entries, rounded up to a power of two (128..131072, default 2048)")
	f.StringVarP(&o.Filter, "filter", "f", "", "only count events that match this filter")
	f.StringVar(&o.Name, "name", "", "not supported yet: named hists shared between events are refused (every hist has its own table)")
	pidsFlag(f, &o.PIDs, "pid", "P", "only count events of these processes (ids of running processes, comma-separated)")
	f.BoolVar(&o.Follow, "follow", false, "with -- CMD or -P: count only those processes and every process they fork")
	durationFlag(f, &o.Duration, "duration", time.Nanosecond, "leave --duration out to run until Ctrl-C", "stop after this long (e.g. 10s)")
	durationFlag(f, &o.Interval, "interval", time.Millisecond, "print every 1ms or more; leave --interval out to print once, at the end", "print the hist every interval (at least 1ms)")
	f.BoolVar(&o.Clear, "clear", false, "with --interval: empty the hist after each print")
	enumFlag(f, &o.Format, "format", "", "text", histFormats, "format", "", "output format: "+strings.Join(histFormats, ", "))
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan and the BPF program, load nothing")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "leave out the attach line and the status line (warnings stay)")
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

// histSpec parses the hist from the raw string or the flags.
func histSpec(o *histOptions) (*parse.HistSpec, error) {
	if o.Raw != "" {
		return parse.ParseHist("hist", o.Raw)
	}
	return parse.HistFromFlags(parse.HistFlags{
		Keys: o.Keys, Vals: o.Vals, Sort: o.Sort, Size: o.Size, Filter: o.Filter, Name: o.Name,
	})
}

func runHist(ctx context.Context, d *Deps, o *histOptions) error {
	spec, err := histSpec(o)
	if err != nil {
		return err
	}
	fs, err := d.TraceFS()
	if err != nil {
		return err
	}
	events, err := histEvents(catalog.Live(fs), o.Events, false)
	if err != nil {
		return err
	}
	job, err := hist.NewLive(fs, hist.LiveConfig{
		Spec: spec, Events: events, PIDs: o.PIDs, Follow: o.Follow, Format: o.Format, Clear: o.Clear, Out: d.Out,
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
	spec, err := histSpec(o)
	if err != nil {
		return err
	}
	f, cat, err := openFile(d, o.Input)
	if err != nil {
		return err
	}
	defer f.Close()
	defer func() {
		warnDamage(d, o.Input, f)
		warnSkipped(d, o.Input, "the hist", f)
	}()
	events, err := histEvents(cat, o.Events, true)
	if err != nil {
		return err
	}
	var tables []*hist.Table
	var infos []string
	var damage error
	for _, ev := range events {
		t, err := hist.RunFile(ctx, spec, f, ev, hist.FileOptions{})
		if t == nil {
			return spec.Locate(err)
		}
		if err != nil && ctx.Err() == nil {
			// A damaged or cut file: print what could be read, then fail.
			damage = fmt.Errorf("%s: %w (the hist above counts the records before the damage)", o.Input, err)
		}
		t.Sort()
		tables = append(tables, t)
		infos = append(infos, spec.String()+" [active]")
		if ctx.Err() != nil {
			break // interrupted: print the counts so far
		}
	}
	if err := hist.Write(d.Out, o.Format, tables, infos, hist.FileResolver(f)); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return damage
}
