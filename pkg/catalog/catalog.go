package catalog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"sync"

	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// Event names one event.
type Event struct{ System, Name string }

// String returns "SYSTEM:NAME".
func (e Event) String() string { return e.System + ":" + e.Name }

// Catalog answers which events exist and what each one's format is.
type Catalog interface {
	// Events returns every event that has a format, sorted by system,
	// then name.
	Events() ([]Event, error)
	// Format returns the event's parsed format, with System set, and the
	// text of its format file verbatim. The format may be shared: callers
	// must not change it. An unknown event is an error wrapping
	// ErrNoEvent.
	Format(e Event) (*parse.Format, string, error)
	// Kallsyms returns the text of the kernel's symbols, as
	// /proc/kallsyms lists them, or "" if there are none (for .function
	// filters and .sym keys).
	Kallsyms() (string, error)
	// Where says where the events are, for messages: "tracefs" or
	// "trace.dat file NAME".
	Where() string
}

// described is implemented by this package's catalogs: it gives messages
// a shorter name and the command that lists the events.
type described interface {
	short() string       // the catalog in a phrase: "tracefs", "the file"
	listCommand() string // what lists its events, e.g. "gtrace list"
}

// shortWhere returns the catalog in a phrase for messages.
func shortWhere(c Catalog) string {
	if d, ok := c.(described); ok {
		return d.short()
	}
	return c.Where()
}

// listCommand returns the command that lists the catalog's events, or "".
func listCommand(c Catalog) string {
	if d, ok := c.(described); ok {
		return d.listCommand()
	}
	return ""
}

// symbolCache is implemented by catalogs that keep their parsed kernel
// symbols.
type symbolCache interface {
	symbols() (*ksym.Table, error)
}

// Symbols returns the catalog's kernel symbols, parsed (once per catalog
// for this package's catalogs). A catalog without symbols is an error.
func Symbols(c Catalog) (*ksym.Table, error) {
	if s, ok := c.(symbolCache); ok {
		return s.symbols()
	}
	return parseSymbols(c)
}

func parseSymbols(c Catalog) (*ksym.Table, error) {
	text, err := c.Kallsyms()
	if err != nil {
		return nil, err
	}
	if text == "" {
		return nil, fmt.Errorf("%s holds no kernel symbols", shortWhere(c))
	}
	t, err := ksym.ParseText(text)
	if err != nil {
		return nil, fmt.Errorf("kernel symbols of %s: %w", shortWhere(c), err)
	}
	return t, nil
}

// Funcs returns a resolver of .function values over the catalog's kernel
// symbols, which it reads and parses on first use.
func Funcs(c Catalog) parse.FuncResolver {
	return func(name string, addr uint64) (lo, hi uint64, err error) {
		t, err := Symbols(c)
		if err != nil {
			return 0, 0, err
		}
		return t.FuncRange(name, addr)
	}
}

// live is the catalog of the running kernel.
type live struct {
	fs       *tracefs.FS
	kallsyms func() (string, error)
	syms     func() (*ksym.Table, error)
}

// Live returns the catalog of the running kernel's events: the format
// files under fs, and /proc/kallsyms (read once, on first use).
func Live(fs *tracefs.FS) Catalog {
	c := &live{fs: fs}
	c.kallsyms = sync.OnceValues(fs.Kallsyms)
	c.syms = sync.OnceValues(func() (*ksym.Table, error) { return parseSymbols(c) })
	return c
}

func (c *live) Events() ([]Event, error) {
	evs, err := c.fs.Events()
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = Event(e)
	}
	return out, nil
}

func (c *live) Format(e Event) (*parse.Format, string, error) {
	f, text, err := c.fs.ReadFormat(tracefs.Event(e))
	var ee *tracefs.EventError
	if errors.As(err, &ee) {
		return nil, "", &EventError{Pattern: ee.Pattern, Suggestions: ee.Suggestions, Where: c.Where(), List: c.listCommand()}
	}
	return f, text, err
}

func (c *live) Kallsyms() (string, error)     { return c.kallsyms() }
func (c *live) Where() string                 { return "tracefs" }
func (c *live) short() string                 { return "tracefs" }
func (c *live) listCommand() string           { return "gtrace list" }
func (c *live) symbols() (*ksym.Table, error) { return c.syms() }

// file is the catalog of a trace.dat file.
type file struct {
	f      *tracedat.File
	name   string // "" when not known
	events []Event
	byName map[Event]*tracedat.Event
	syms   func() (*ksym.Table, error)
}

// File returns the catalog of the events a trace.dat file stores, the
// formats of ftrace's own events (system "ftrace") included, and of its
// kernel symbols.
func File(f *tracedat.File) Catalog { return newFile(f, "") }

// OpenFile opens a trace.dat file, or an interrupted recording (its
// metadata and per-CPU spools, up to the last complete page), and returns
// it with its catalog, whose Where names the file. The caller closes the
// file.
func OpenFile(name string) (*tracedat.File, Catalog, error) {
	f, err := tracedat.OpenSpooled(name)
	if errors.Is(err, tracedat.ErrNotSpooled) {
		f, err = tracedat.Open(name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == name {
		return nil, nil, pe // not "open NAME: open NAME: ..."
	}
	if err != nil {
		return nil, nil, err
	}
	return f, newFile(f, name), nil
}

// ReadFile reads a trace.dat file from r, a stream such as standard
// input (see tracedat.ReadStream), and returns it with its catalog, whose
// Where names it name. The caller closes the file.
func ReadFile(r io.Reader, name string) (*tracedat.File, Catalog, error) {
	f, err := tracedat.ReadStream(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	return f, newFile(f, name), nil
}

func newFile(f *tracedat.File, name string) *file {
	c := &file{f: f, name: name, byName: map[Event]*tracedat.Event{}}
	ids := make([]int, 0, len(f.Events))
	for id := range f.Events {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		ev := f.Events[id]
		e := Event{ev.Format.System, ev.Format.Name}
		if _, dup := c.byName[e]; dup {
			continue // the lower ID names it
		}
		c.byName[e] = ev
		c.events = append(c.events, e)
	}
	sortEvents(c.events)
	c.syms = sync.OnceValues(func() (*ksym.Table, error) { return parseSymbols(c) })
	return c
}

func (c *file) Events() ([]Event, error) {
	return append([]Event(nil), c.events...), nil
}

func (c *file) Format(e Event) (*parse.Format, string, error) {
	ev, ok := c.byName[e]
	if !ok {
		return nil, "", &EventError{Pattern: e.String(), Suggestions: closest(e.String(), c.events, 3), Where: c.Where(), List: c.listCommand()}
	}
	return ev.Format, ev.Text, nil
}

func (c *file) Kallsyms() (string, error)     { return c.f.Kallsyms, nil }
func (c *file) short() string                 { return "the file" }
func (c *file) symbols() (*ksym.Table, error) { return c.syms() }

func (c *file) Where() string {
	if c.name == "" {
		return "trace.dat file"
	}
	return "trace.dat file " + c.name
}

func (c *file) listCommand() string {
	if c.name == "" {
		return "gtrace list -i FILE"
	}
	return "gtrace list -i " + c.name
}

// sortEvents sorts events by system, then name.
func sortEvents(evs []Event) {
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].System != evs[j].System {
			return evs[i].System < evs[j].System
		}
		return evs[i].Name < evs[j].Name
	})
}
