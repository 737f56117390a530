package cmd

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/record"
)

type sqlOptions struct {
	SQL      string
	Opts     parse.SQLOptions
	DryRun   bool
	Duration time.Duration
	Quiet    bool
	Command  []string
}

func newSQLCmd(d *Deps, runF func(*sqlOptions) error) *cobra.Command {
	o := &sqlOptions{}
	c := &cobra.Command{
		Use:   "sql [-n NAME] [-m VAR | -c VAR] [-s] [-S FIELDS] [-T] [--dry-run] 'SELECT ...' [-- CMD ARGS...]",
		Short: "Turn an SQL statement into a synthetic event and hist triggers, as sqlhist does",
		Long: `Compile an SQL statement, as libtracefs's sqlhist takes it, into what the
kernel is given for it: with JOIN, a synthetic event joining two events and
the hist triggers of both; without JOIN, one hist trigger. Fields are
checked against the events' formats (the running kernel's).

  SELECT start.pid, (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS lat
    FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid
    WHERE end.next_prio < 100

Events are EVENT or SYS.EVENT, optionally aliased with AS; fields are
ALIAS.FIELD, EVENT.FIELD or SYS.EVENT.FIELD, TIMESTAMP and TIMESTAMP_USECS
being the event's time; TIMESTAMP_DELTA[_USECS] AS NAME is the end's time
less the start's. ON matches fields of the two events (several joined by
',' or AND); WHERE filters either event, each part between top-level '&&'
of one event. Without JOIN, CAST(FIELD AS HEX|SYM|SYM-OFFSET|SYSCALL|
EXECNAME|LOG2|BUCKETS=N) makes a key of that kind, CAST(FIELD AS _COUNTER_)
a value. Keywords are not case sensitive; \from is a field named from.

Without --dry-run gtrace runs what it compiled, in BPF, as the kernel
would: with JOIN, the two hist triggers and the synthetic event, whose
events print as they come, as gtrace filter prints them (the equivalent
of sqlhist -e, then reading the trace); without JOIN, the hist, printed
at the end as gtrace hist prints it. It runs until Ctrl-C, for
--duration, or while -- CMD runs.

--dry-run prints the commands that make it in a kernel with hist triggers
and synthetic events, as sqlhist prints them (gtrace's process ID in the
variables' names, as sqlhist's): run them there as root. See docs/sql.md.`,
		Example: `  # the wakeup latencies of make's tasks, as they happen
  gtrace sql -n wakeup_lat 'SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat
      FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid' -- make

  gtrace sql --dry-run -n wakeup_lat 'SELECT start.pid, (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) AS lat
      FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid'
  gtrace sql --dry-run -n wakeup_lat -m lat -T 'SELECT end.next_comm AS comm, TIMESTAMP_DELTA_USECS AS lat
      FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.next_pid WHERE end.next_prio < 100'
  gtrace sql --dry-run -n syscall_lat 'SELECT start.id AS syscall, TIMESTAMP_DELTA_USECS AS lat
      FROM raw_syscalls.sys_enter AS start JOIN raw_syscalls.sys_exit AS end ON start.common_pid = end.common_pid'
  gtrace sql --dry-run 'SELECT CAST(common_pid AS COMM), CAST(id AS SYSCALL) FROM sys_enter'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if at := c.ArgsLenAtDash(); at >= 0 {
				o.Command = args[at:]
				args = args[:at]
			}
			if len(args) == 0 {
				return usagef("sql needs a statement: gtrace sql 'SELECT ...'")
			}
			o.SQL = strings.Join(args, " ")
			f := c.Flags()
			if f.Changed("max") && f.Changed("change") {
				return usagef("-m and -c cannot be used together")
			}
			act := o.Opts.Trace || o.Opts.Snapshot || len(o.Opts.Save) > 0
			if (o.Opts.OnMax != "" || o.Opts.OnChange != "") != act {
				return usagef("-m and -c need an action (-s, -S or -T), and -s, -S and -T need -m or -c")
			}
			if o.DryRun && (len(o.Command) > 0 || o.Duration != 0) {
				return usagef("--dry-run prints the kernel's commands and runs nothing: it takes no --duration and no command")
			}
			if runF != nil {
				return runF(o)
			}
			return runSQL(c.Context(), d, o)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.Opts.Name, "name", "n", "", "name of the synthetic event (sqlhist's default: Anonymous)")
	f.StringVarP(&o.Opts.OnMax, "max", "m", "", "run the actions when the synthetic event's field VAR reaches a new maximum")
	f.StringVarP(&o.Opts.OnChange, "change", "c", "", "run the actions when the synthetic event's field VAR changes")
	f.BoolVarP(&o.Opts.Snapshot, "snapshot", "s", false, "with -m or -c: take a snapshot of the trace buffer")
	f.StringSliceVarP(&o.Opts.Save, "save", "S", nil, "with -m or -c: save these fields of the JOIN event (comma separated)")
	f.BoolVarP(&o.Opts.Trace, "trace", "T", false, "with -m or -c: trace the synthetic event, then take a snapshot")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the kernel's commands for the statement, as sqlhist prints them, and run nothing")
	durationFlag(f, &o.Duration, "duration", time.Nanosecond, "leave --duration out to run until Ctrl-C", "stop after this long (e.g. 10s)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "leave out the attach line")
	return c
}

func runSQL(ctx context.Context, d *Deps, o *sqlOptions) error {
	st, err := parse.ParseSQL(o.SQL)
	if err != nil {
		return err
	}
	fs, err := d.TraceFS()
	if err != nil {
		return err
	}
	c := catalog.Live(fs)
	events := func(name string) (*parse.Format, error) {
		e, err := catalog.Lookup(c, strings.Replace(name, ".", ":", 1))
		if err != nil {
			var ee *catalog.EventError
			if errors.As(err, &ee) {
				return nil, errors.New("event not found")
			}
			return nil, err
		}
		fm, _, err := c.Format(e)
		return fm, err
	}
	opts := o.Opts
	opts.Salt = os.Getpid()
	p, err := parse.CompileSQL(st, events, opts)
	if err != nil {
		return err
	}
	if o.DryRun {
		_, err = d.Out.Write([]byte(p.Commands(fs.Root)))
		return err
	}
	return runSQLPlan(ctx, d, o, p)
}

// runSQLPlan runs a compiled statement: with JOIN, as gtrace filter
// streaming the synthetic event that the hist triggers of the two events
// emit; without, as gtrace hist with its one hist.
func runSQLPlan(ctx context.Context, d *Deps, o *sqlOptions, p *parse.SQLPlan) error {
	if p.Synth == "" {
		ho := &histOptions{Format: "text", Duration: o.Duration, Quiet: o.Quiet, Command: o.Command}
		for _, h := range p.Hists {
			ho.Hists = append(ho.Hists, histEvent{Pattern: h.System + ":" + h.Event, Raw: h.Trigger})
		}
		return runHist(ctx, d, ho)
	}
	fo := &filterOptions{Format: "text", Duration: o.Duration, Quiet: o.Quiet, Command: o.Command,
		BufferKB: record.DefaultBufferKB, Clock: "mono", FileVersion: 7, Compression: "none"}
	fo.Synth.name = "sql"
	if err := fo.Synth.Set(p.Synth); err != nil {
		return err
	}
	// The two events carry the hist triggers, which run on every event
	// whatever the event's own filter keeps (triggers.md): a filter that
	// keeps none prints only the synthetic event.
	for _, h := range p.Hists {
		fo.Events = append(fo.Events, record.EventSpec{Pattern: h.System + ":" + h.Event, Filter: "common_pid < 0", Triggers: []string{h.Trigger}})
	}
	fo.Events = append(fo.Events, record.EventSpec{Pattern: parse.SynthSystem + ":" + fo.Synth.defs[0].Name})
	return runFilter(ctx, d, fo)
}
