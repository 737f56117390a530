package cmd

import (
	"bufio"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/catalog"
)

type kprobeOptions struct {
	Defs   []string
	List   bool
	Format bool
}

func newKprobeCmd(d *Deps, runF func(*kprobeOptions) error) *cobra.Command {
	o := &kprobeOptions{}
	c := &cobra.Command{
		Use:   "kprobe DEF [DEF...] [--list] [-F]",
		Short: "Check kprobe and uprobe definitions and list them as the kernel does",
		Long: `Check kprobe, kretprobe, uprobe and uretprobe definitions, each as the
kernel's kprobe_events and uprobe_events take it, in order:

  p[:[GRP/]EV] [MOD:]SYMBOL[+OFFSET] | ADDRESS [ARG...]     kprobe
  r[MAXACTIVE][:[GRP/]EV] [MOD:]SYMBOL[+0] [ARG...]         kretprobe
  p[:[GRP/]EV] PATH:OFFSET[%return][(REFCTR)] [ARG...]      uprobe
  -:[GRP/]EV                                                removal
  ARG = [NAME=]FETCHARG[:TYPE]

A bad definition exits 2 with the kernel's message and a caret under the
token that is wrong. A kprobe's symbol is looked up in /proc/kallsyms
(where it is readable), a uprobe's file must be an ELF file. Beyond the
kernel, a uprobe may be at PATH:SYMBOL[+OFFSET] (resolved from the file's
symbol table) and read $argN (the calling convention's registers at a
function's entry). With --list, print the definitions as 'cat
dynamic_events' lists them; with -F, each event's format file as
events/GRP/EV/format shows it (gtrace numbers its events down from 65279).
With neither, only check them. A removal starts with '-': give the
definitions after -- (gtrace kprobe --list -- 'p:ev vfs_read' '-:ev').

Nothing is written to the kernel and nothing attaches here: the same
definitions given with --probe (or --probes FILE) to record, hist,
filter, trigger and list make events of their groups (kprobes, uprobes)
that BPF programs record and count. A kernel probe at a function's
entry, or a return probe, runs on the function's fentry or fexit where
the kernel allows it (BTF) and the probe reads only the function's
arguments, else on a kprobe: --dry-run of those commands says which and
why. A kernel without kprobes (CONFIG_KPROBES, CONFIG_KPROBE_EVENTS)
still parses them, derives their formats and prints their programs
(--dry-run); attaching one that fentry does not take fails, exit 1.
docs/probes.md has the whole language.`,
		Example: `  gtrace kprobe 'p:myprobe do_sys_openat2 dfd=%ax filename=+0(%si):string' --list
  gtrace kprobe 'r16:myret do_sys_openat2 ret=$retval' -F
  gtrace kprobe 'p:mywrite /lib/x86_64-linux-gnu/libc.so.6:0xf8340 fd=%di:s32 len=%dx:u64 buf=+0(%si):string' -F
  gtrace kprobe 'p:mywrite /lib/x86_64-linux-gnu/libc.so.6:write fd=$arg1:s32 buf=+0($arg2):string' --list
  gtrace list --probe 'p:myprobe do_sys_openat2 dfd=%ax' -F 'kprobes:*'
  gtrace record --probe 'r:myret vfs_read ret=$retval:s64' -e kprobes:myret --dry-run   # fexit or kretprobe, and why
  gtrace record --probe 'p:mywrite /lib/x86_64-linux-gnu/libc.so.6:write fd=$arg1:s32 buf=+0($arg2):string' -e uprobes:mywrite -- ./app
  gtrace kprobe 'p:myio /lib/x86_64-linux-gnu/libc.so.6:read fd=%di:s32' 'p:myio /lib/x86_64-linux-gnu/libc.so.6:write fd=%di:s32' --list
  gtrace record --probe 'p:myexec /lib/x86_64-linux-gnu/libc.so.6:execve path=+0(%di):string argv=+0(%si):string[4]' -e uprobes:myexec -- ./app
  gtrace kprobe 'p:mycall vfs_read caller=+0($stack):symstr' -F`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Defs = args
			if runF != nil {
				return runF(o)
			}
			return runKprobe(d, o)
		},
	}
	c.Flags().BoolVar(&o.List, "list", false, "print the definitions as the kernel lists them in dynamic_events")
	c.Flags().BoolVarP(&o.Format, "fields", "F", false, "print each event's format file, as events/GRP/EV/format")
	return c
}

func runKprobe(d *Deps, o *kprobeOptions) error {
	s := probeDefs{name: "kprobe"}
	for _, def := range o.Defs {
		if err := s.Set(def); err != nil {
			return err
		}
	}
	syms := ""
	if fs, err := d.TraceFS(); err == nil && s.kprobes() {
		if text, err := fs.Kallsyms(); err == nil {
			syms = text
		}
	}
	c, err := s.apply(catalog.Empty(), syms)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(d.Out)
	if err := writeDefs(w, c, o.List, catalog.ProbeListing(c), o.Format, catalog.ProbeEvents(c)); err != nil {
		return err
	}
	return w.Flush()
}

// writeDefs writes, for gtrace kprobe and funcevent, the listing lines
// (with list) and the format file of each event of c in evs (with
// format).
func writeDefs(w io.Writer, c catalog.Catalog, list bool, listing []string, format bool, evs []catalog.Event) error {
	if list {
		for _, l := range listing {
			fmt.Fprintln(w, l)
		}
	}
	if format {
		for _, e := range evs {
			_, text, err := c.Format(e)
			if err != nil {
				return err
			}
			fmt.Fprint(w, text)
		}
	}
	return nil
}
