package cmd

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/report"
	"github.com/gtrace/gtrace/pkg/status"
)

type reportOptions struct {
	Input   string
	Filters []string
	CPUs    []int  // nil: every CPU
	CPUText string // --cpu as given, for errors
	Ns      bool
	Raw     bool
	Stat    bool
	Format  string
	Quiet   bool
}

var reportFormats = []string{"text", "json", "ndjson"}

func newReportCmd(d *Deps, runF func(*reportOptions) error) *cobra.Command {
	o := &reportOptions{}
	c := &cobra.Command{
		Use:   "report [-i FILE | FILE | -] [-F 'EVENT: FILTER'] [--cpu LIST] [-t] [-R] [--stat] [--format text|json|ndjson] [-q]",
		Short: "Print a trace.dat file as trace-cmd report does",
		Long: `Print the events of a trace.dat file (versions 6 and 7, uncompressed or zstd;
made by gtrace record or by trace-cmd) byte for byte as trace-cmd report prints
them: CPUs merged by timestamp, each event through its print format.

-F keeps only the events it names that match its filter (trace-cmd's syntax:
'EVENT[,EVENT...][: FILTER]', EVENT being NAME, SYSTEM:NAME, SYSTEM or a glob;
the filter is the kernel's event filter language). It can be repeated: an
event is kept when one -F that names it keeps it.

--format json prints one JSON document, {"cpus":N,"events":[...]}, one event
object a line; --format ndjson prints the event objects alone, one a line
(newline-delimited JSON, for streaming tools). Each object has cpu, ts_ns,
comm, pid, event (SYSTEM:NAME) and fields, the event's fields with typed
values.

A file with several ring buffers (trace-cmd record -B, extract -a) prints as
trace-cmd prints it: the records of all instances merged by timestamp, each
line starting with its instance's name and ": " (blanks for the top
instance). --cpu then numbers the CPUs of all instances one after the other,
as trace-cmd does: the top instance's are 0 to N-1 (N of cpus=N), the next
instance's follow, and so on.

FILE - (or /dev/stdin) reads the file from standard input, a pipe: it is
copied to a temporary file, unlinked at once, since a trace.dat file is
read at any offset.

A recording that was killed before it finished is reported up to its last
complete page.

While a large file is read, a progress line on stderr says how far
(reading trace.dat: 312 MB of 1.20 GB (26%)), redrawn in place four times
a second, and is erased at the end. It is shown only when stderr is a
terminal and standard output is not (the report goes to a file or a
pipe), so that it never draws over the report's lines; -q leaves it out.`,
		Example: `  gtrace report
  gtrace report -i trace.dat --cpu 0,2-3 -t
  gtrace report -F 'sched_switch: prev_pid == 0 || next_pid == 0'
  gtrace report -F 'raw_syscalls:sys_enter: id == 110' --format json
  gtrace report --format ndjson | jq -c 'select(.pid == 42)'
  gtrace report --stat other-box.dat
  gtrace report -q -i big.dat > big.txt
  ssh box 'trace-cmd record -o - ...' | gtrace report -`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				if c.Flags().Changed("input") {
					return usagef("give the file either with -i or as an argument, not both")
				}
				o.Input = args[0]
			}
			if c.Flags().Changed("cpu") {
				o.CPUText = c.Flags().Lookup("cpu").Value.String()
			}
			if runF != nil {
				return runF(o)
			}
			return runReport(c.Context(), d, o)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.Input, "input", "i", "trace.dat", "the trace.dat file to read (- reads standard input)")
	f.StringArrayVarP(&o.Filters, "filter", "F", nil, "only events matching 'EVENT[,EVENT...][: FILTER]' (repeatable)")
	f.Var(&cpusValue{p: &o.CPUs, flag: "--cpu"}, "cpu", "only these CPUs, e.g. 0,2-3")
	f.BoolVarP(&o.Ns, "ns", "t", false, "print timestamps in nanoseconds")
	f.BoolVarP(&o.Raw, "raw", "R", false, "print every field as name=value instead of the print format")
	f.BoolVar(&o.Stat, "stat", false, "print the file's per-CPU statistics, as trace-cmd report --stat")
	enumFlag(f, &o.Format, "format", "", "text", reportFormats, "format", "", "output format: text, json (one document) or ndjson (one event a line)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "leave out the progress line (warnings stay)")
	return c
}

func runReport(ctx context.Context, d *Deps, o *reportOptions) error {
	f, cat, err := openFile(d, o.Input)
	if err != nil {
		return err
	}
	defer f.Close()
	defer warnDamage(d, o.Input, f)
	if err := checkCPUs(o, report.CPUCount(f)); err != nil {
		return err
	}
	events, warns, err := report.ParseEventFilters(cat, o.Filters)
	if err != nil {
		return err
	}
	for _, w := range warns {
		fmt.Fprintf(d.Err, "gtrace: warning: %s\n", capLines(w.Caret()))
	}
	w := bufio.NewWriterSize(d.Out, 1<<16)
	ro := report.Options{CPUs: o.CPUs, NsTimestamps: o.Ns, Raw: o.Raw, Events: events}
	// On a terminal, the progress line would draw over the report's lines.
	stop := showProgress(d, o.Quiet || status.Terminal(d.Out) != nil, "", o.Input, f)
	switch {
	case o.Stat:
		err = report.Stat(ctx, w, f)
	case o.Format == "json":
		err = report.JSON(ctx, w, f, ro)
	case o.Format == "ndjson":
		err = report.NDJSON(ctx, w, f, ro)
	default:
		err = report.Text(ctx, w, f, ro)
	}
	stop()
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// checkCPUs refuses a --cpu list that names a CPU the file does not have
// (n CPUs): the caret is under the first item that does.
func checkCPUs(o *reportOptions, n int) error {
	if len(o.CPUs) == 0 || o.CPUs[len(o.CPUs)-1] < n {
		return nil
	}
	have := "no CPUs"
	switch n {
	case 0:
	case 1:
		have = "CPU 0"
	default:
		have = fmt.Sprintf("CPUs 0-%d", n-1)
	}
	off := 0
	for _, item := range strings.Split(o.CPUText, ",") {
		cpus, err := parse.CPUList("--cpu", item)
		if err == nil && len(cpus) > 0 && cpus[len(cpus)-1] >= n {
			return parse.Errorf("--cpu", o.CPUText, off, off+len(item), "no CPU %d in %s", max(cpus[0], n), shellWord(o.Input)).
				WithHint("the file has %s", have)
		}
		off += len(item) + 1
	}
	return nil
}
