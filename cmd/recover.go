package cmd

import (
	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/tracedat"
)

type recoverOptions struct {
	Input  string
	Output string
}

func newRecoverCmd(d *Deps, runF func(*recoverOptions) error) *cobra.Command {
	o := &recoverOptions{}
	c := &cobra.Command{
		Use:   "recover IN OUT",
		Short: "Write an interrupted recording as a complete trace.dat file",
		Long: `A recording that gtrace record could not finish (killed by SIGKILL, a crash,
a full disk) is left as IN, its metadata, and IN.cpu0, IN.cpu1, ..., the pages
of each CPU. gtrace report, list -i and hist -i read it as it is; trace-cmd
does not. recover writes the whole pages it holds to OUT, a new trace.dat file
(mode 0600) that trace-cmd reads, and leaves IN and its spool files alone:
check OUT, then remove them.

The pages gtrace still held in memory when it was killed are lost, and so is
the last page of a CPU if it was cut in the middle of a write. OUT must not
exist.`,
		Example: `  gtrace recover trace.dat recovered.dat
  gtrace recover trace.dat recovered.dat && trace-cmd report -i recovered.dat`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			o.Input, o.Output = args[0], args[1]
			if runF != nil {
				return runF(o)
			}
			return runRecover(o)
		},
	}
	return c
}

func runRecover(o *recoverOptions) error {
	return tracedat.RecoverTo(o.Input, o.Output)
}
