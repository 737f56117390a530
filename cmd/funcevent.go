package cmd

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/catalog"
)

type funcEventOptions struct {
	Protos []string
	List   bool
	Format bool
	DryRun bool
}

func newFuncEventCmd(d *Deps, runF func(*funcEventOptions) error) *cobra.Command {
	o := &funcEventOptions{}
	c := &cobra.Command{
		Use:   "funcevent PROTO [PROTO...] [--list] [-F] [--dry-run]",
		Short: "Check function event prototypes and list them, their formats and probes",
		Long: `Check function based events, each a pseudo prototype as Rostedt's 2018
function_events took it, in order:

  FUNC(ARG, ...)            an event on a kernel function's entry
  PATH:FUNC(ARG, ...)       (gtrace) on a function of an executable or library
  ARG   = TYPE NAME{+OFFSET|[INDEX]} | TYPE [NAME=]0xADDR | NULL | ARG '|' ARG
  TYPE  = [unsigned] u8..u64 s8..s64 x8..x64 char short int long size_t
          symbol string, with [N] for an array

Each argument is read from the calling convention's register (x86-64: 6,
arm64: 8); NULL skips one, '|' reads several fields from one, a field at
a fixed address reads none. NAME[I] reads at the value plus I times the
type's size, +OFFSET adds bytes; chains dereference step by step. Each
event is functions:FUNC, its record __parent_ip (the caller), __ip (the
function), then the fields aligned to their size.

A bad prototype exits 2 with a caret under the token that is wrong. A
kernel function is looked up in /proc/kallsyms (where it is readable), a
user-space function in its file's symbol table. With --list, print the
prototypes as function_events lists them; with -F, each event's format
file; with --dry-run, the kprobe or uprobe definition that reads the same
values (gtrace kprobe takes it). With none, only check them.

This command attaches nothing. The same prototypes given with
--funcevent to record, hist, filter, trigger and list make events of
system functions, which run as the equivalent probe's program (a uprobe;
for a kernel function its fentry where the kernel allows it, else a
kprobe: their --dry-run says which) building the event's own record.
docs/funcevent.md has the whole language.`,
		Example: `  gtrace funcevent 'do_sys_open(int dfd, string path, int flags)' -F
  gtrace funcevent 'ip_rcv(x64 skb | int len[32], NULL, x8[6] perm_addr+558)' --list
  gtrace funcevent '__vfs_read(symbol read+40[0]+16[0])' --dry-run
  gtrace funcevent '/usr/bin/app:handle(int fd, string buf, u64 len)' --dry-run
  gtrace list --funcevent 'do_sys_open(int dfd, string path, int flags)' -F 'functions:*'
  gtrace record --funcevent 'vfs_read(x64 file, NULL, size_t count, long pos[0])' -e functions:vfs_read --dry-run
  gtrace record --funcevent '/lib/x86_64-linux-gnu/libc.so.6:write(int fd, string buf, size_t len)' -e functions:write -- ./app`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Protos = args
			if runF != nil {
				return runF(o)
			}
			return runFuncEvent(d, o)
		},
	}
	c.Flags().BoolVar(&o.List, "list", false, "print the prototypes as function_events lists them")
	c.Flags().BoolVarP(&o.Format, "fields", "F", false, "print each event's format file, as events/functions/FUNC/format")
	c.Flags().BoolVar(&o.DryRun, "dry-run", false, "print the kprobe or uprobe definition that reads what each event reads")
	return c
}

func runFuncEvent(d *Deps, o *funcEventOptions) error {
	s := funcEventDefs{name: "funcevent"}
	for _, p := range o.Protos {
		if err := s.Set(p); err != nil {
			return err
		}
	}
	syms := ""
	if fs, err := d.TraceFS(); err == nil {
		if text, err := fs.Kallsyms(); err == nil {
			syms = text
		}
	}
	c, err := s.apply(catalog.Empty(), syms)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(d.Out)
	if err := writeDefs(w, c, o.List, catalog.FuncEventListing(c), o.Format, catalog.FuncEvents(c)); err != nil {
		return err
	}
	if o.DryRun {
		for _, e := range s.evs {
			p, err := e.Probe(s.what())
			if err != nil {
				return err
			}
			fmt.Fprintln(w, p.Kernel())
		}
	}
	return w.Flush()
}
