package catalog

import (
	"debug/elf"
	"os"

	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
)

// FuncEventIDTop is the ID of the first function event a session
// defines; the next ones count down from it, below the probe events'
// IDs (ProbeIDTop), 4096 of which are left to them.
const FuncEventIDTop = ProbeIDTop - 4096

// CheckFuncEvent checks a function event's function against the system:
// a kernel function must be in kallsyms once (checked only when kallsyms
// is not ""); a user-space function's file must exist, be a regular ELF
// file and have the function in its symbol table, whose file offset
// Resolve then sets. name names the input in errors.
func CheckFuncEvent(name string, e *parse.FuncEvent, kallsyms string) error {
	if !e.User() {
		if kallsyms == "" {
			return nil
		}
		switch n := countSymbol(kallsyms, e.Func); {
		case n == 0:
			return e.PlaceError(name, false, "%s", parse.ProbeBadProbeAddr).WithHint("%s is not a kernel symbol (/proc/kallsyms)", e.Func)
		case n > 1:
			return e.PlaceError(name, false, "%s", parse.ProbeNonUniqSymbol).WithHint("%d kernel symbols are called %s", n, e.Func)
		}
		return nil
	}
	st, err := os.Stat(e.Path)
	if err != nil {
		return e.PlaceError(name, true, "%s", parse.ProbeFileNotFound).WithHint("%v", unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return e.PlaceError(name, true, "%s", parse.ProbeNoRegularFile).WithHint("a function is in an executable or a library")
	}
	f, err := elf.Open(e.Path)
	if err != nil {
		return e.PlaceError(name, true, "not an ELF file").WithHint("a function is in an executable or a library: %v", unwrapPath(err))
	}
	defer f.Close()
	off, err := symbolOffset(f, e.Func)
	if err != nil {
		return e.PlaceError(name, false, "%v", err).WithHint("gtrace finds PATH:FUNC in the file's symbol table (symtab or dynsym)")
	}
	e.Resolve(off)
	return nil
}

// funcEvents is a catalog with the function events of a session added.
type funcEvents struct {
	Catalog
	events []*parse.FuncEvent
	byName map[Event]int
	src    string // names the prototypes' input in errors
}

// WithFuncEvents returns base with the function events of evs defined,
// in order, in system functions, each with its derived format, numbered
// down from FuncEventIDTop; the format's Func is the event and its Probes
// the probe that runs it (FuncEvent.Probe), when one reads its fields
// (FuncEventFormats reports the error of one that does not). A function with an event already (of base or
// an earlier prototype) is an error with the caret on its name; srcName
// names the prototypes' input.
func WithFuncEvents(base Catalog, evs []*parse.FuncEvent, srcName string) (Catalog, error) {
	if len(evs) == 0 {
		return base, nil
	}
	have, err := base.Events()
	if err != nil {
		return nil, err
	}
	taken := map[Event]bool{}
	for _, e := range have {
		taken[e] = true
	}
	c := &funcEvents{Catalog: base, byName: map[Event]int{}, src: srcName}
	for _, e := range evs {
		ev := Event{parse.FuncEventSystem, e.Func}
		if _, dup := c.byName[ev]; dup || taken[ev] {
			return nil, e.PlaceError(srcName, false, "%s is an event already", ev).WithHint("a function has one function event: give its fields in one prototype")
		}
		c.byName[ev] = len(c.events)
		c.events = append(c.events, e)
	}
	return c, nil
}

// FuncEventListing returns the prototypes c has (WithFuncEvents), as
// function_events lists them, a line each in order; none for another
// catalog.
func FuncEventListing(c Catalog) []string {
	f, ok := c.(*funcEvents)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range f.events {
		out = append(out, e.String())
	}
	return out
}

// FuncEvents returns the function events c has (WithFuncEvents), in the
// order they were defined; none for another catalog.
func FuncEvents(c Catalog) []Event {
	f, ok := c.(*funcEvents)
	if !ok {
		return nil
	}
	var out []Event
	for _, e := range f.events {
		out = append(out, Event{parse.FuncEventSystem, e.Func})
	}
	return out
}

// FuncEventFormats returns the formats of the function events c has
// (WithFuncEvents), in order, each with the probe that runs it; a
// prototype whose fields no probe reads is its *parse.Error.
func FuncEventFormats(c Catalog) ([]*parse.Format, error) {
	fc, ok := c.(*funcEvents)
	if !ok {
		return nil, nil
	}
	var out []*parse.Format
	for _, e := range fc.events {
		if _, err := e.Probe(fc.src); err != nil {
			return nil, err
		}
		f, _, err := c.Format(Event{parse.FuncEventSystem, e.Func})
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func (c *funcEvents) Events() ([]Event, error) {
	evs, err := c.Catalog.Events()
	if err != nil {
		return nil, err
	}
	for _, e := range c.events {
		evs = append(evs, Event{parse.FuncEventSystem, e.Func})
	}
	sortEvents(evs)
	return evs, nil
}

func (c *funcEvents) Format(e Event) (*parse.Format, string, error) {
	if i, ok := c.byName[e]; ok {
		id := FuncEventIDTop - i
		fe := c.events[i]
		f := fe.Format(id)
		f.Func = fe
		if d, err := fe.Probe(c.src); err == nil {
			// What runs it: the probe, building the event's record.
			f.Probes = []*parse.ProbeDef{d}
		}
		return f, fe.FormatFile(id), nil
	}
	return c.Catalog.Format(e)
}

func (c *funcEvents) short() string                 { return shortWhere(c.Catalog) }
func (c *funcEvents) listCommand() string           { return listCommand(c.Catalog) }
func (c *funcEvents) symbols() (*ksym.Table, error) { return Symbols(c.Catalog) }
