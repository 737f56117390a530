package cmd

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// probeDefs is --probe and --probes: kprobe and uprobe definitions, each
// parsed as it is given (a bad one is a *parse.Error with its caret),
// which join a command's catalog as events of their groups (kprobes,
// uprobes). A command that takes them registers the flags and calls
// catalog on its catalog.
type probeDefs struct {
	name string // what errors call the definitions; "" is "--probe"
	defs []*parse.ProbeDef
}

// register defines --probe and --probes on f.
func (s *probeDefs) register(f *pflag.FlagSet) {
	f.Var(s, "probe", "define a kprobe or uprobe event, as the kernel's kprobe_events and uprobe_events take it: 'p:[GRP/]EV PLACE [ARG...]' (repeatable)")
	f.Var(&probeFile{s}, "probes", "define the probe events of FILE, a definition a line ('#' comments and blank lines skipped; repeatable)")
}

// catalog returns c with the probe events added: each place checked
// against c's kernel symbols (when it has them) or the file, PATH:SYMBOL
// resolved, then the definitions applied in order.
func (s *probeDefs) catalog(c catalog.Catalog) (catalog.Catalog, error) {
	if len(s.defs) == 0 {
		return c, nil
	}
	syms := ""
	if s.kprobes() {
		// Only a kprobe's symbol is looked up: kallsyms takes a third
		// of a second to read.
		if text, err := c.Kallsyms(); err == nil {
			syms = text
		}
	}
	return s.apply(c, syms)
}

// kprobes reports whether a definition is a kprobe's, whose symbol is
// checked against the kernel's.
func (s *probeDefs) kprobes() bool {
	for _, d := range s.defs {
		if !d.User && !d.Remove {
			return true
		}
	}
	return false
}

// formats returns the formats of the probe events, for a live
// command: the definitions checked against the running kernel's symbols
// and the files, and applied in order over tracefs's events.
func (s *probeDefs) formats(fs *tracefs.FS) ([]*parse.Format, error) {
	if len(s.defs) == 0 {
		return nil, nil
	}
	c, err := s.catalog(catalog.Live(fs))
	if err != nil {
		return nil, err
	}
	var out []*parse.Format
	for _, e := range catalog.ProbeEvents(c) {
		f, _, err := c.Format(e)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// apply checks the places against the kernel symbols syms ("": not
// checked) and the files, and adds the probe events to c.
func (s *probeDefs) apply(c catalog.Catalog, syms string) (catalog.Catalog, error) {
	for _, d := range s.defs {
		if err := catalog.CheckProbe(s.what(), d, syms); err != nil {
			return nil, err
		}
	}
	return catalog.WithProbes(c, s.defs, s.what())
}

// what names the definitions in errors.
func (s *probeDefs) what() string {
	if s.name == "" {
		return "--probe"
	}
	return s.name
}

func (s *probeDefs) add(name, v string) error {
	d, err := parse.ParseProbe(name, v, parse.ProbeOptions{})
	if err != nil {
		return err
	}
	s.defs = append(s.defs, d)
	return nil
}

func (s *probeDefs) Set(v string) error { return s.add(s.what(), v) }

// String is "" for help: the definitions are not a default.
func (s *probeDefs) String() string { return "" }
func (s *probeDefs) Type() string   { return "DEF" }

// probeFile is --probes FILE: the definitions of a file, added to the
// same list as --probe's, in order.
type probeFile struct{ s *probeDefs }

func (p *probeFile) Set(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read probe definitions: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := p.s.add(fmt.Sprintf("%s:%d", path, n), line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read probe definitions %s: %w", path, err)
	}
	return nil
}

func (p *probeFile) String() string { return "" }
func (p *probeFile) Type() string   { return "FILE" }
