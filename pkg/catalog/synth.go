package catalog

import (
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
)

// SynthIDTop is the ID of the first synthetic event a session defines;
// the next ones count down from it. The kernel numbers its events from the
// bottom of the 16-bit range up, so these do not meet them.
const SynthIDTop = 0xffff

// synth is a catalog with the synthetic events of a session added, in
// system "synthetic".
type synth struct {
	Catalog
	defs   []*parse.SynthDef
	byName map[string]int // name → index in defs
}

// WithSynth returns base with the synthetic events defs defined: each is
// an event of system "synthetic" whose format is the definition's derived
// format (parse.SynthDef.Format), numbered down from SynthIDTop. A name
// defined twice, or that of a synthetic event base has already, is the
// kernel's "Event already exists" error with the caret on the second one;
// srcName names the definitions' input ("--synth") in it.
func WithSynth(base Catalog, defs []*parse.SynthDef, srcName string) (Catalog, error) {
	if len(defs) == 0 {
		return base, nil
	}
	return withSynth(base, defs, srcName, false)
}

// WithSynthRecorded is WithSynth over a recording that may hold the
// synthetic events of the same definitions (gtrace record --synth): a
// definition whose derived format file is, byte for byte, that of a
// synthetic event of base takes its place (a session over the records
// emits that event itself and leaves the recorded ones); another one of
// a name base has is "Event already exists".
func WithSynthRecorded(base Catalog, defs []*parse.SynthDef, srcName string) (Catalog, error) {
	return withSynth(base, defs, srcName, true)
}

func withSynth(base Catalog, defs []*parse.SynthDef, srcName string, recorded bool) (Catalog, error) {
	if len(defs) == 0 {
		return base, nil
	}
	taken := map[string]bool{}
	evs, err := base.Events()
	if err != nil {
		return nil, err
	}
	for _, e := range evs {
		if e.System == parse.SynthSystem {
			taken[e.Name] = true
		}
	}
	c := &synth{Catalog: base, defs: defs, byName: map[string]int{}}
	for i, d := range defs {
		_, dup := c.byName[d.Name]
		if !dup && taken[d.Name] && recorded {
			_, text, err := base.Format(Event{parse.SynthSystem, d.Name})
			if err == nil && text == d.FormatFile(SynthIDTop-i) {
				c.byName[d.Name] = i
				continue
			}
		}
		if dup || taken[d.Name] {
			return nil, d.ExistsError(srcName)
		}
		c.byName[d.Name] = i
	}
	return c, nil
}

func (c *synth) Events() ([]Event, error) {
	all, err := c.Catalog.Events()
	if err != nil {
		return nil, err
	}
	var evs []Event
	for _, e := range all {
		if _, replaced := c.byName[e.Name]; !replaced || e.System != parse.SynthSystem {
			evs = append(evs, e)
		}
	}
	for _, d := range c.defs {
		evs = append(evs, Event{parse.SynthSystem, d.Name})
	}
	sortEvents(evs)
	return evs, nil
}

func (c *synth) Format(e Event) (*parse.Format, string, error) {
	if i, ok := c.byName[e.Name]; ok && e.System == parse.SynthSystem {
		id := SynthIDTop - i
		return c.defs[i].Format(id), c.defs[i].FormatFile(id), nil
	}
	return c.Catalog.Format(e)
}

func (c *synth) short() string                 { return shortWhere(c.Catalog) }
func (c *synth) listCommand() string           { return listCommand(c.Catalog) }
func (c *synth) symbols() (*ksym.Table, error) { return Symbols(c.Catalog) }

// empty is a catalog without events.
type empty struct{}

// Empty returns a catalog without events, to check synthetic event
// definitions on their own (WithSynth).
func Empty() Catalog { return empty{} }

func (empty) Events() ([]Event, error) { return nil, nil }
func (empty) Format(e Event) (*parse.Format, string, error) {
	return nil, "", &EventError{Pattern: e.String(), Where: "the definitions"}
}
func (empty) Kallsyms() (string, error) { return "", nil }
func (empty) Where() string             { return "the definitions" }
