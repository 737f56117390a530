package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/catalog"
)

type listOptions struct {
	Input    string
	Patterns []string
	Fields   bool
	Format   string
	Synth    synthDefs
	Probes   probeDefs
	Funcs    funcEventDefs
}

var listFormats = []string{"text", "json"}

func newListCmd(d *Deps, runF func(*listOptions) error) *cobra.Command {
	o := &listOptions{}
	c := &cobra.Command{
		Use:   "list [-i FILE] [--synth DEF]... [--probe DEF]... [--probes FILE] [--funcevent PROTO]... [PATTERN...] [-F] [--format text|json]",
		Short: "List trace events and, with -F, their fields",
		Long: `List the kernel's trace events as SYSTEM:EVENT, or with -i those a trace.dat
file holds (ftrace's own events included; -i - reads the file from standard
input). PATTERN is a trace-cmd style event pattern: SYS:EVENT, SYS:*,
*:EVENT, EVENT or SYS, each part a shell glob; with several, the events of
any of them are listed, once each. A pattern that matches nothing exits 1
with one line on stderr, as grep does; a bad glob is bad input (exit 2).
With -F, print each event's fields as its format file describes them.
--synth DEF (repeatable) defines a synthetic event for the listing, as the
kernel's synthetic_events takes it (see gtrace synth): it joins the events
as system synthetic, with the format the kernel would give it. --probe DEF
(repeatable) and --probes FILE (a definition a line) define kprobe and
uprobe events the same way, as the kernel's kprobe_events and
uprobe_events take them (see gtrace kprobe): they join as system kprobes,
uprobes or their group. --funcevent PROTO (repeatable) defines a function
event (see gtrace funcevent): it joins as system functions.

--format json prints one document, {"events":[...]}, one event object a
line: system and name, and with -F also id, print_fmt and fields, each
field's name, type (the C type without the name), offset, size, signed and
common (one of the common_* fields every event has).

Listing a file needs no privileges: it reads the formats the file stores,
which are those of the kernel that recorded it.`,
		Example: `  gtrace list
  gtrace list 'sched:*'
  gtrace list raw_syscalls:sys_enter -F
  gtrace list -i trace.dat
  gtrace list -i other-box.dat 'syscalls:sys_enter_open*' -F
  gtrace list 'sched:*' 'irq:*'
  gtrace list --format json sched:sched_switch -F | jq '.events[].fields[].name'
  gtrace list --synth 'wakeup_latency u64 lat; pid_t pid; int prio' -F 'synthetic:*'
  gtrace list --probe 'p:myprobe do_sys_openat2 dfd=%ax' -F 'kprobes:*'
  gtrace list --probe 'p:mywrite /lib/x86_64-linux-gnu/libc.so.6:write fd=$arg1:s32' -F uprobes:mywrite
  gtrace list --funcevent 'do_sys_open(int dfd, string path, int flags)' -F 'functions:*'`,
		RunE: func(c *cobra.Command, args []string) error {
			o.Patterns = args
			if c.Flags().Changed("input") && o.Input == "" {
				return usagef("-i needs a trace.dat file")
			}
			if runF != nil {
				return runF(o)
			}
			return runList(d, o)
		},
	}
	c.Flags().StringVarP(&o.Input, "input", "i", "", "list the events of this trace.dat file (- reads standard input) instead of the kernel's")
	c.Flags().BoolVarP(&o.Fields, "fields", "F", false, "print each event's fields")
	o.Synth.register(c.Flags())
	o.Probes.register(c.Flags())
	o.Funcs.register(c.Flags())
	enumFlag(c.Flags(), &o.Format, "format", "", "text", listFormats, "format", "", "output format: text, or json (one document)")
	return c
}

func runList(d *Deps, o *listOptions) error {
	var c catalog.Catalog
	if o.Input != "" {
		f, fc, err := openFile(d, o.Input)
		if err != nil {
			return err
		}
		defer f.Close()
		defer warnDamage(d, o.Input, f)
		c = fc
	} else {
		fs, err := d.TraceFS()
		if err != nil {
			return err
		}
		c = catalog.Live(fs)
	}
	c, err := o.Synth.catalog(c)
	if err != nil {
		return err
	}
	if c, err = o.Probes.catalog(c); err != nil {
		return err
	}
	if c, err = o.Funcs.catalog(c); err != nil {
		return err
	}
	patterns := o.Patterns
	if len(patterns) == 0 {
		patterns = []string{"*:*"}
	}
	evs, matchErr := catalog.MatchAll(c, "pattern", patterns)
	var nm *catalog.NoMatchError
	if matchErr != nil && (!errors.As(matchErr, &nm) || len(evs) == 0) {
		return matchErr
	}
	w := bufio.NewWriter(d.Out)
	if o.Format == "json" {
		err = listJSON(w, c, evs, o.Fields)
	} else {
		err = listText(w, c, evs, o.Fields)
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err == nil {
		err = matchErr
	}
	return err
}

func listText(w io.Writer, c catalog.Catalog, evs []catalog.Event, fields bool) error {
	for _, e := range evs {
		fmt.Fprintln(w, e)
		if !fields {
			continue
		}
		f, _, err := c.Format(e)
		if err != nil {
			return err
		}
		for _, fld := range f.Fields {
			sign := 0
			if fld.Signed {
				sign = 1
			}
			fmt.Fprintf(w, "\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;\n", fld.Decl(), fld.Offset, fld.Size, sign)
		}
	}
	return nil
}

// jsonEvent is an event of list --format json; the fields with -F.
type jsonEvent struct {
	System   string      `json:"system"`
	Name     string      `json:"name"`
	ID       *int        `json:"id,omitempty"`
	PrintFmt *string     `json:"print_fmt,omitempty"`
	Fields   []jsonField `json:"fields,omitempty"`
}

type jsonField struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
	Signed bool   `json:"signed"`
	Common bool   `json:"common"`
}

// listJSON prints {"events":[...]}, one event a line.
func listJSON(w io.Writer, c catalog.Catalog, evs []catalog.Event, fields bool) error {
	io.WriteString(w, `{"events":[`)
	for i, e := range evs {
		je := jsonEvent{System: e.System, Name: e.Name}
		if fields {
			f, _, err := c.Format(e)
			if err != nil {
				return err
			}
			je.ID, je.PrintFmt = &f.ID, &f.PrintFmt
			je.Fields = make([]jsonField, len(f.Fields))
			for j, fld := range f.Fields {
				je.Fields[j] = jsonField{fld.Name, fld.Type, fld.Offset, fld.Size, fld.Signed, fld.Common}
			}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(je); err != nil {
			return err
		}
		if i > 0 {
			io.WriteString(w, ",")
		}
		io.WriteString(w, "\n")
		w.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	}
	_, err := io.WriteString(w, "\n]}\n")
	return err
}
