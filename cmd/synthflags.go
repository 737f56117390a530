package cmd

import (
	"github.com/spf13/pflag"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/hist"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// synthDefs is --synth: synthetic event definitions, each parsed as it
// is given (a bad one is a *parse.Error with its caret), which join a
// command's catalog as events of system synthetic. A command that takes
// them registers the flag and calls catalog on its catalog.
type synthDefs struct {
	name string // what errors call the definitions; "" is "--synth"
	defs []*parse.SynthDef
}

// register defines --synth on f.
func (s *synthDefs) register(f *pflag.FlagSet) {
	f.Var(s, "synth", "define a synthetic event, as the kernel's synthetic_events takes it: 'NAME TYPE FIELD[; TYPE FIELD]...' (repeatable)")
}

// catalog returns c with the synthetic events added; a name defined twice
// or already an event of c's system synthetic is an error on it.
func (s *synthDefs) catalog(c catalog.Catalog) (catalog.Catalog, error) {
	return catalog.WithSynth(c, s.defs, s.what())
}

// recorded is catalog for the catalog of a recording, which may hold
// the synthetic events of these very definitions: those are the
// definitions' (catalog.WithSynthRecorded).
func (s *synthDefs) recorded(c catalog.Catalog) (catalog.Catalog, error) {
	return catalog.WithSynthRecorded(c, s.defs, s.what())
}

// events returns the synthetic events with their formats in cat, the
// catalog that catalog returned.
func (s *synthDefs) events(cat catalog.Catalog) ([]hist.SynthEvent, error) {
	var out []hist.SynthEvent
	for _, def := range s.defs {
		fm, _, err := cat.Format(catalog.Event{System: parse.SynthSystem, Name: def.Name})
		if err != nil {
			return nil, err
		}
		out = append(out, hist.SynthEvent{Def: def, Format: fm})
	}
	return out, nil
}

// live returns the synthetic events of the definitions, numbered in the
// catalog of the events of fs (none: nil), for a command that records or
// streams them.
func (s *synthDefs) live(fs *tracefs.FS) ([]hist.SynthEvent, error) {
	if len(s.defs) == 0 {
		return nil, nil
	}
	cat, err := s.catalog(catalog.Live(fs))
	if err != nil {
		return nil, err
	}
	return s.events(cat)
}

// what names the definitions in errors.
func (s *synthDefs) what() string {
	if s.name == "" {
		return "--synth"
	}
	return s.name
}

func (s *synthDefs) Set(v string) error {
	d, err := parse.ParseSynth(s.what(), v)
	if err != nil {
		return err
	}
	s.defs = append(s.defs, d)
	return nil
}

// String is "" for help: the definitions are not a default.
func (s *synthDefs) String() string { return "" }
func (s *synthDefs) Type() string   { return "DEF" }
