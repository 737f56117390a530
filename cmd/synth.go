package cmd

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/parse"
)

type synthOptions struct {
	Defs   []string
	Format bool
}

func newSynthCmd(d *Deps, runF func(*synthOptions) error) *cobra.Command {
	o := &synthOptions{}
	c := &cobra.Command{
		Use:   "synth DEF [DEF...] [-F]",
		Short: "Check synthetic event definitions and list them as the kernel does",
		Long: `Check synthetic event definitions, each as the kernel's synthetic_events file
takes it (NAME TYPE FIELD[; TYPE FIELD]..., or the dynamic_events form
s:[synthetic/]NAME ...), and print them as 'cat synthetic_events' lists
them: the name, a tab, and the fields joined by '; ', arrays written on the
type. A bad definition exits 2 with the kernel's message and a caret under
the word that is wrong. With -F, print each event's format file instead, as
events/synthetic/NAME/format shows it (a 6.12 kernel's; the kernel numbers
its events as it creates them: gtrace counts down from 65535).

Types: s64 u64 s32 u32 s16 u16 s8 u8 char 'unsigned char' int 'unsigned
int' long 'unsigned long' bool pid_t gfp_t; strings char NAME[N] (N up to
256) and char NAME[] (any length); stacktraces 'unsigned long[] NAME'.
Nothing is written to the kernel: the same definitions given to 'gtrace
list --synth' make events of system synthetic.`,
		Example: `  gtrace synth 'wakeup_latency u64 lat; pid_t pid; int prio'
  gtrace synth 'wakeup_latency u64 lat; pid_t pid; int prio' -F
  gtrace synth 'wake_comm char comm[16]; pid_t pid' 's:synthetic/stacks unsigned long[] stack'
  gtrace list --synth 'wakeup_latency u64 lat; pid_t pid; int prio' -F 'synthetic:*'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Defs = args
			if runF != nil {
				return runF(o)
			}
			return runSynth(d, o)
		},
	}
	c.Flags().BoolVarP(&o.Format, "fields", "F", false, "print each event's format file, as events/synthetic/NAME/format")
	return c
}

func runSynth(d *Deps, o *synthOptions) error {
	s := synthDefs{name: "synth"}
	for _, def := range o.Defs {
		if err := s.Set(def); err != nil {
			return err
		}
	}
	c, err := s.catalog(catalog.Empty())
	if err != nil {
		return err
	}
	w := bufio.NewWriter(d.Out)
	for _, def := range s.defs {
		if !o.Format {
			fmt.Fprintln(w, def)
			continue
		}
		_, text, err := c.Format(catalog.Event{System: parse.SynthSystem, Name: def.Name})
		if err != nil {
			return err
		}
		fmt.Fprint(w, text)
	}
	return w.Flush()
}
