package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/report"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

type reportOptions struct {
	Input   string
	Filters []string
	CPUs    string
	Ns      bool
	Raw     bool
	Stat    bool
	Format  string
}

var reportFormats = []string{"text", "json", "ndjson"}

func newReportCmd(d *Deps, runF func(*reportOptions) error) *cobra.Command {
	o := &reportOptions{}
	c := &cobra.Command{
		Use:   "report [-i FILE | FILE] [-F 'EVENT: FILTER'] [--cpu LIST] [-t] [-R] [--stat] [--format text|json]",
		Short: "Print a trace.dat file as trace-cmd report does",
		Long: `Print the events of a trace.dat file (versions 6 and 7, uncompressed or zstd;
made by gtrace record or by trace-cmd) byte for byte as trace-cmd report prints
them: CPUs merged by timestamp, each event through its print format.

-F keeps only the events it names that match its filter (trace-cmd's syntax:
'EVENT[,EVENT...][: FILTER]', EVENT being NAME, SYSTEM:NAME or a glob; the
filter is the kernel's event filter language). It can be repeated.

A file with several ring buffers (trace-cmd record -B, extract -a) prints as
trace-cmd prints it: the records of all instances merged by timestamp, each
line starting with its instance's name and ": " (blanks for the top
instance). --cpu then numbers the CPUs of all instances one after the other,
as trace-cmd does: the top instance's are 0 to N-1 (N of cpus=N), the next
instance's follow, and so on.

A recording that was killed before it finished is reported up to its last
complete page.`,
		Example: `  gtrace report
  gtrace report -i trace.dat --cpu 0,2-3 -t
  gtrace report -F 'sched_switch: prev_pid == 0 || next_pid == 0'
  gtrace report -F 'raw_syscalls:sys_enter: id == 110' --format json
  gtrace report --stat other-box.dat`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				if c.Flags().Changed("input") {
					return usagef("give the file either with -i or as an argument, not both")
				}
				o.Input = args[0]
			}
			if !oneOf(o.Format, reportFormats) {
				return usagef("invalid --format %q: want one of %s", o.Format, strings.Join(reportFormats, ", "))
			}
			if runF != nil {
				return runF(o)
			}
			return runReport(d, o)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.Input, "input", "i", "trace.dat", "the trace.dat file to read")
	f.StringArrayVarP(&o.Filters, "filter", "F", nil, "only events matching 'EVENT[,EVENT...][: FILTER]' (repeatable)")
	f.StringVar(&o.CPUs, "cpu", "", "only these CPUs, e.g. 0,2-3")
	f.BoolVarP(&o.Ns, "ns", "t", false, "print timestamps in nanoseconds")
	f.BoolVarP(&o.Raw, "raw", "R", false, "print every field as name=value instead of the print format")
	f.BoolVar(&o.Stat, "stat", false, "print the file's per-CPU statistics, as trace-cmd report --stat")
	f.StringVar(&o.Format, "format", "text", "output format: "+strings.Join(reportFormats, ", "))
	return c
}

// openTrace opens a trace.dat file, or an interrupted recording (its
// metadata and per-CPU spools) up to its last complete page.
func openTrace(p string) (*tracedat.File, error) {
	f, err := tracedat.OpenSpooled(p)
	if errors.Is(err, tracedat.ErrNotSpooled) {
		f, err = tracedat.Open(p)
	}
	return f, err
}

func runReport(d *Deps, o *reportOptions) error {
	cpus, err := parseCPUList(o.CPUs)
	if err != nil {
		return err
	}
	f, err := openTrace(o.Input)
	if err != nil {
		return err
	}
	defer f.Close()
	filter, err := reportFilter(f, o.Filters)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(d.Out, 1<<16)
	ro := report.Options{CPUs: cpus, NsTimestamps: o.Ns, Raw: o.Raw, Filter: filter}
	switch {
	case o.Stat:
		err = report.Stat(w, f)
	case o.Format == "json":
		err = report.JSON(w, f, ro)
	case o.Format == "ndjson":
		err = report.NDJSON(w, f, ro)
	default:
		err = report.Text(w, f, ro)
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// parseCPUList parses "0,2-3".
func parseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var cpus []int
	off := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b > 1<<16 {
			return nil, parse.Errorf("--cpu", s, off, off+len(part), "invalid CPU list item %q", part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
		off += len(part) + 1
	}
	return cpus, nil
}

// eventFilter is one -F: the events it names and, per event ID, the bound
// filter (nil: every record of the event).
type eventFilter struct {
	bound map[int]*parse.BoundFilter
}

// reportFilter turns -F arguments into a record filter; nil when none.
func reportFilter(f *tracedat.File, specs []string) (func(*parse.Format, *tracedat.Record) bool, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	var filters []eventFilter
	for _, spec := range specs {
		ef, err := bindEventFilter(f, spec)
		if err != nil {
			return nil, err
		}
		filters = append(filters, ef)
	}
	return func(fm *parse.Format, r *tracedat.Record) bool {
		if fm == nil {
			return false
		}
		for _, ef := range filters {
			bf, ok := ef.bound[fm.ID]
			if !ok {
				continue
			}
			if bf == nil {
				return true
			}
			pid := int32(-1)
			comm := ""
			if len(r.Data) >= 8 {
				pid = int32(uint32(r.Data[4]) | uint32(r.Data[5])<<8 | uint32(r.Data[6])<<16 | uint32(r.Data[7])<<24)
				comm = f.Cmdlines[int(pid)]
			}
			if eval.Match(bf, r.Data, eval.Context{PID: pid, CPU: r.CPU, Comm: comm}) {
				return true
			}
		}
		return false
	}, nil
}

// bindEventFilter parses 'EVENTS[: FILTER]' against the file's formats.
func bindEventFilter(f *tracedat.File, spec string) (eventFilter, error) {
	events, filterOff := splitEventFilter(spec)
	ef := eventFilter{bound: map[int]*parse.BoundFilter{}}
	funcs := ksym.TextFuncRange(f.Kallsyms) // .function values, in the file's symbols
	var expr parse.Expr
	if filterOff >= 0 {
		var err error
		// Pad so that offsets in errors are offsets in the whole -F value.
		if expr, err = parse.ParseFilter("-F", strings.Repeat(" ", filterOff)+spec[filterOff:]); err != nil {
			return ef, retarget(err, spec)
		}
	}
	off := 0
	for _, name := range strings.Split(events, ",") {
		pat := strings.TrimSpace(name)
		sysPat, evPat, qualified := strings.Cut(pat, ":")
		if !qualified {
			sysPat, evPat = "*", pat
		}
		n := 0
		for id, ev := range f.Events {
			fm := ev.Format
			if !globMatch(sysPat, fm.System) || !globMatch(evPat, fm.Name) {
				continue
			}
			n++
			if expr == nil {
				ef.bound[id] = nil
				continue
			}
			bf, err := parse.BindFilter("-F", strings.Repeat(" ", filterOff)+spec[filterOff:], expr, fm)
			if err != nil {
				return ef, retarget(err, spec)
			}
			if err := bf.ResolveFunctions(funcs); err != nil {
				return ef, retarget(err, spec)
			}
			ef.bound[id] = bf
		}
		if n == 0 {
			start := off + strings.Index(name, pat)
			return ef, parse.Errorf("-F", spec, start, start+len(pat), "no event %q in the file", pat).
				WithHint("gtrace report --stat shows what the file holds; events are NAME, SYSTEM:NAME or a glob")
		}
		off += len(name) + 1
	}
	return ef, nil
}

// splitEventFilter splits 'EVENTS: FILTER' and returns the events part and
// the offset of the filter (-1 if none). "sys:event: filter" keeps the
// system: the separator is the first ':' that is followed by a blank, or
// else the second ':' of a "word:word:" prefix, or else the only ':'.
func splitEventFilter(spec string) (string, int) {
	if i := strings.Index(spec, ": "); i >= 0 {
		return spec[:i], i + 1
	}
	first := strings.IndexByte(spec, ':')
	if first < 0 {
		return spec, -1
	}
	if second := strings.IndexByte(spec[first+1:], ':'); second >= 0 && !strings.ContainsAny(spec[:first+1+second], " =<>!&|~") {
		return spec[:first+1+second], first + 2 + second
	}
	return spec[:first], first + 1
}

// retarget makes a filter error's source the whole -F value.
func retarget(err error, spec string) error {
	var pe *parse.Error
	if errors.As(err, &pe) {
		return parse.Errorf("-F", spec, pe.Off, pe.End, "%s", pe.Msg).WithHint("%s", pe.Hint)
	}
	return fmt.Errorf("-F %q: %w", spec, err)
}

func globMatch(pattern, s string) bool {
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}
