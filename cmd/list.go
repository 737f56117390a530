package cmd

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/catalog"
)

type listOptions struct {
	Input   string
	Pattern string
	Fields  bool
}

func newListCmd(d *Deps, runF func(*listOptions) error) *cobra.Command {
	o := &listOptions{}
	c := &cobra.Command{
		Use:   "list [-i FILE] [PATTERN] [-F]",
		Short: "List trace events and, with -F, their fields",
		Long: `List the kernel's trace events as SYSTEM:EVENT, or with -i those a trace.dat
file holds (ftrace's own events included). PATTERN is a trace-cmd style event
pattern: SYS:EVENT, SYS:*, *:EVENT, EVENT or SYS, each part a shell glob.
With -F, print each event's fields as its format file describes them.

Listing a file needs no privileges: it reads the formats the file stores,
which are those of the kernel that recorded it.`,
		Example: `  gtrace list
  gtrace list 'sched:*'
  gtrace list raw_syscalls:sys_enter -F
  gtrace list -i trace.dat
  gtrace list -i other-box.dat 'syscalls:sys_enter_open*' -F`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Pattern = args[0]
			}
			if c.Flags().Changed("input") && o.Input == "" {
				return usagef("-i needs a trace.dat file")
			}
			if runF != nil {
				return runF(o)
			}
			return runList(d, o)
		},
	}
	c.Flags().StringVarP(&o.Input, "input", "i", "", "list the events of this trace.dat file instead of the kernel's")
	c.Flags().BoolVarP(&o.Fields, "fields", "F", false, "print each event's fields")
	return c
}

func runList(d *Deps, o *listOptions) error {
	var c catalog.Catalog
	if o.Input != "" {
		f, fc, err := openFile(o.Input)
		if err != nil {
			return err
		}
		defer f.Close()
		c = fc
	} else {
		fs, err := d.TraceFS()
		if err != nil {
			return err
		}
		c = catalog.Live(fs)
	}
	pattern := o.Pattern
	if pattern == "" {
		pattern = "*:*"
	}
	evs, err := catalog.Match(c, pattern)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(d.Out)
	for _, e := range evs {
		fmt.Fprintln(w, e)
		if !o.Fields {
			continue
		}
		f, _, err := c.Format(e)
		if err != nil {
			w.Flush()
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
	return w.Flush()
}
