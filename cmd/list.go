package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

type listOptions struct {
	Pattern string
	Fields  bool
}

func newListCmd(d *Deps, runF func(*listOptions) error) *cobra.Command {
	o := &listOptions{}
	c := &cobra.Command{
		Use:   "list [PATTERN]",
		Short: "List trace events and, with -F, their fields",
		Long: `List the kernel's trace events as SYSTEM:EVENT. PATTERN is a trace-cmd style
event pattern: SYS:EVENT, SYS:*, *:EVENT, EVENT or SYS, each part a shell glob.
With -F, print each event's fields as its format file describes them.`,
		Example: `  gtrace list
  gtrace list 'sched:*'
  gtrace list raw_syscalls:sys_enter -F`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Pattern = args[0]
			}
			if runF != nil {
				return runF(o)
			}
			return runList(d, o)
		},
	}
	c.Flags().BoolVarP(&o.Fields, "fields", "F", false, "print each event's fields")
	return c
}

func runList(d *Deps, o *listOptions) error {
	fs, err := d.TraceFS()
	if err != nil {
		return err
	}
	pattern := o.Pattern
	if pattern == "" {
		pattern = "*:*"
	}
	evs, err := fs.Match(pattern)
	if err != nil {
		return err
	}
	for _, e := range evs {
		fmt.Fprintln(d.Out, e)
		if !o.Fields {
			continue
		}
		f, err := fs.Format(e)
		if err != nil {
			return err
		}
		for _, fld := range f.Fields {
			sign := 0
			if fld.Signed {
				sign = 1
			}
			fmt.Fprintf(d.Out, "\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;\n", fld.Decl(), fld.Offset, fld.Size, sign)
		}
	}
	return nil
}
