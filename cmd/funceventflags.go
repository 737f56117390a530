package cmd

import (
	"github.com/spf13/pflag"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// funcEventDefs is --funcevent: function event prototypes, each parsed
// as it is given (a bad one is a *parse.Error with its caret), which
// join a command's catalog as events of system functions. A command
// that takes them registers the flag and calls catalog on its catalog.
type funcEventDefs struct {
	name string // what errors call the prototypes; "" is "--funcevent"
	evs  []*parse.FuncEvent
}

// register defines --funcevent on f.
func (s *funcEventDefs) register(f *pflag.FlagSet) {
	f.Var(s, "funcevent", "define a function event: 'FUNC(TYPE NAME, ...)' on a kernel function or 'PATH:FUNC(...)' on a user-space one (repeatable)")
}

// catalog returns c with the function events added, each function
// checked against c's kernel symbols (when it has them) or its file.
func (s *funcEventDefs) catalog(c catalog.Catalog) (catalog.Catalog, error) {
	if len(s.evs) == 0 {
		return c, nil
	}
	syms := ""
	if s.kernel() {
		// Only a kernel function is looked up: kallsyms takes a third
		// of a second to read.
		if text, err := c.Kallsyms(); err == nil {
			syms = text
		}
	}
	return s.apply(c, syms)
}

// kernel reports whether a prototype is on a kernel function.
func (s *funcEventDefs) kernel() bool {
	for _, e := range s.evs {
		if !e.User() {
			return true
		}
	}
	return false
}

// formats returns the formats of the function events, for a live
// command: each checked against the running kernel's symbols or its
// file, with the probe that runs it (a prototype whose fields no probe
// reads is its error, with the caret).
func (s *funcEventDefs) formats(fs *tracefs.FS) ([]*parse.Format, error) {
	if len(s.evs) == 0 {
		return nil, nil
	}
	c, err := s.catalog(catalog.Live(fs))
	if err != nil {
		return nil, err
	}
	return catalog.FuncEventFormats(c)
}

// apply checks the functions against the kernel symbols syms ("": not
// checked) and the files, and adds the events to c.
func (s *funcEventDefs) apply(c catalog.Catalog, syms string) (catalog.Catalog, error) {
	for _, e := range s.evs {
		if err := catalog.CheckFuncEvent(s.what(), e, syms); err != nil {
			return nil, err
		}
	}
	return catalog.WithFuncEvents(c, s.evs, s.what())
}

// what names the prototypes in errors.
func (s *funcEventDefs) what() string {
	if s.name == "" {
		return "--funcevent"
	}
	return s.name
}

func (s *funcEventDefs) Set(v string) error {
	e, err := parse.ParseFuncEvent(s.what(), v, parse.ProbeOptions{})
	if err != nil {
		return err
	}
	s.evs = append(s.evs, e)
	return nil
}

// String is "" for help: the prototypes are not a default.
func (s *funcEventDefs) String() string { return "" }
func (s *funcEventDefs) Type() string   { return "PROTO" }

// probeFormats returns the formats of the probe events and the function
// events that a live command defines: both run on the probe source.
func probeFormats(fs *tracefs.FS, probes *probeDefs, funcs *funcEventDefs) ([]*parse.Format, error) {
	p, err := probes.formats(fs)
	if err != nil {
		return nil, err
	}
	f, err := funcs.formats(fs)
	if err != nil {
		return nil, err
	}
	return append(p, f...), nil
}
