package cmd

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/complete"
)

// registerCompletions adds to the commands under root the completion of
// what the kernel or a file knows (cobra's __complete, which the scripts
// of gtrace completion call): event names after -e and as list's
// patterns, field names after -k, --vals, -s and -f (those of the -e
// before), and the words of every word-valued flag (--format, -C,
// --compression). With -i FILE on the command line, events and fields
// come from the file. Completion prints no errors: what cannot be read
// gives no candidates.
func registerCompletions(d *Deps, root *cobra.Command) {
	for _, c := range root.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if ev, ok := f.Value.(*enumValue); ok {
				words := ev.words
				c.RegisterFlagCompletionFunc(f.Name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return words, cobra.ShellCompDirectiveNoFileComp
				})
			}
		})
		if c.Flags().Lookup("event") != nil {
			c.RegisterFlagCompletionFunc("event", eventCompletion(d))
		}
		if c.Name() == "list" {
			c.ValidArgsFunction = eventCompletion(d)
		}
		fieldFlags := map[string]complete.Kind{"keys": complete.Keys, "vals": complete.Vals, "sort": complete.Sort}
		for name, kind := range fieldFlags {
			if c.Flags().Lookup(name) != nil && c.Flags().Lookup("event") != nil {
				c.RegisterFlagCompletionFunc(name, fieldCompletion(d, func(fields []string, s string) []string {
					return complete.List(fields, kind, s)
				}))
			}
		}
		if c.Flags().Lookup("filter") != nil && c.Flags().Lookup("event") != nil {
			c.RegisterFlagCompletionFunc("filter", fieldCompletion(d, complete.Filter))
		}
	}
}

// eventCompletion completes an event name.
func eventCompletion(d *Deps) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cat, done := completionCatalog(d, c)
		if cat == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer done()
		cands, more := complete.Events(cat, toComplete)
		if more {
			return cands, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
		return cands, cobra.ShellCompDirectiveNoFileComp
	}
}

// fieldCompletion completes the fields of the last -e given so far with
// find.
func fieldCompletion(d *Deps, find func(fields []string, toComplete string) []string) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		events := c.Flags().Lookup("event").Value.String()
		if events == "" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cat, done := completionCatalog(d, c)
		if cat == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer done()
		last := events[strings.LastIndexByte(events, ',')+1:]
		return find(complete.Fields(cat, last), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completionCatalog returns the catalog that completion reads, that of
// the -i FILE on the command line or else tracefs's, and what closes it;
// nil when it cannot be read.
func completionCatalog(d *Deps, c *cobra.Command) (catalog.Catalog, func()) {
	if in := c.Flags().Lookup("input"); in != nil && in.Changed {
		if in.Value.String() == stdinName {
			return nil, nil
		}
		f, cat, err := catalog.OpenFile(in.Value.String())
		if err != nil {
			return nil, nil
		}
		return cat, func() { f.Close() }
	}
	fs, err := d.TraceFS()
	if err != nil {
		return nil, nil
	}
	return catalog.Live(fs), func() {}
}
