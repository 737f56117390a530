package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Options that bind to an event: record's -f, hist's -k, --vals, -s,
// --size and -f. pflag keeps no order between flags, so -e and these
// options are values of one eventFlags, which sees them in command-line
// order: each option goes with the -e before it, and an option given
// before the first -e goes into Common (where a command allows it).

// boundEvent is one -e and the options given after it, up to the next -e.
type boundEvent struct {
	Pattern string
	Opts    eventOpts
	// Args is how many positional arguments came before this -e, to
	// bind an argument to the -e before it (eventFlags.bindArgs).
	Args int
}

// eventOpts are options of an event by flag name, each with its values
// in command-line order.
type eventOpts map[string][]string

// get returns the values of option name, and whether it was given.
func (o eventOpts) get(name string) ([]string, bool) {
	v, ok := o[name]
	return v, ok
}

// eventFlags holds -e and the options that bind to it.
type eventFlags struct {
	set    *pflag.FlagSet // for the positional arguments seen so far
	Events []boundEvent
	Common eventOpts // options before the first -e
}

// event defines the -e flag of the set.
func (b *eventFlags) event(f *pflag.FlagSet, usage string) {
	b.set = f
	f.VarP(&eventValue{b: b}, "event", "e", usage)
}

// option defines an option that binds to the -e before it. A list
// option may repeat, its values adding up; another takes one value per
// event, and once names that value for the error ("a filter", "a size")
// with a hint on what to do instead. With needsEvent set, the option
// cannot come before the first -e, and that is the error.
func (b *eventFlags) option(f *pflag.FlagSet, o eventOption, usage string) {
	o.b = b
	f.VarP(&o, o.name, o.short, usage)
}

// eventOption is an option that binds to the -e before it.
type eventOption struct {
	b          *eventFlags
	name       string
	short      string
	typ        string // for help: "strings", "FILTER"
	once       string // "" for a list; else what it sets, for errors: "a filter"
	onceHint   string // what to do instead of giving it twice
	needsEvent string // the error when it comes before the first -e; "": allowed there
}

func (v *eventOption) Set(s string) error {
	b := v.b
	opts, who := b.Common, "the options before the first -e"
	if n := len(b.Events); n > 0 {
		opts, who = b.Events[n-1].Opts, "-e "+b.Events[n-1].Pattern
	} else if v.needsEvent != "" {
		return fmt.Errorf("%s", v.needsEvent)
	}
	if opts == nil {
		opts = eventOpts{}
		b.Common = opts
	}
	if _, dup := opts[v.name]; dup && v.once != "" {
		return fmt.Errorf("%s already has %s: %s", who, v.once, v.onceHint)
	}
	opts[v.name] = append(opts[v.name], s)
	return nil
}

// String is "" for help: the values belong to events, not to the flag.
func (v *eventOption) String() string { return "" }
func (v *eventOption) Type() string   { return v.typ }

// eventValue is -e: each use starts a new event.
type eventValue struct{ b *eventFlags }

func (v *eventValue) Set(s string) error {
	if err := checkEventName(s); err != nil {
		return err
	}
	v.b.Events = append(v.b.Events, boundEvent{Pattern: s, Opts: eventOpts{}, Args: len(v.b.set.Args())})
	return nil
}

func (v *eventValue) String() string {
	var names []string
	for _, e := range v.b.Events {
		names = append(names, e.Pattern)
	}
	return strings.Join(names, ",")
}

func (v *eventValue) Type() string { return "EVENT" }

// bindArgs binds each positional argument (those before --) to the -e
// before it on the command line, as option name: an argument before the
// first -e goes into Common. An event or Common given two arguments is an
// error, as for an option given twice.
func (b *eventFlags) bindArgs(name string, args []string, what string) error {
	for i, a := range args {
		opts, who := b.Common, "the options before the first -e"
		for j := len(b.Events) - 1; j >= 0; j-- {
			if b.Events[j].Args <= i {
				opts, who = b.Events[j].Opts, "-e "+b.Events[j].Pattern
				break
			}
		}
		if opts == nil {
			opts = eventOpts{}
			b.Common = opts
		}
		if _, dup := opts[name]; dup {
			return usagef("%s already has %s: give one per -e, right after it (and the command to trace after --)", who, what)
		}
		opts[name] = []string{a}
	}
	return nil
}
