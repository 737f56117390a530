package catalog

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
)

// ProbeIDTop is the ID of the first probe event a session defines; the
// next ones count down from it, below the synthetic events' IDs
// (SynthIDTop), which take at most 256.
const ProbeIDTop = SynthIDTop - 256

// CheckProbe checks a definition's place against the system, as the
// kernel does when it is written: a kprobe's symbol must be in kallsyms
// once (checked only when kallsyms is not ""), a uprobe's file must exist,
// be a regular file and an ELF file. A uprobe at PATH:SYMBOL is resolved
// to its file offset here, from the file's symbol table. A kretprobe
// without maxactive gets the kernel's default (KretprobeMaxActive), which
// the kernel lists. name names the input in errors.
func CheckProbe(name string, d *parse.ProbeDef, kallsyms string) error {
	if d.Remove {
		return nil
	}
	if !d.User {
		if d.IsAddr || kallsyms == "" {
			return nil
		}
		switch n := countSymbol(kallsyms, d.Symbol); {
		case n == 0:
			return d.PlaceError(name, false, "%s", parse.ProbeBadProbeAddr).WithHint("%s is not a kernel symbol (/proc/kallsyms)", d.Symbol)
		case n > 1:
			return d.PlaceError(name, false, "%s", parse.ProbeNonUniqSymbol).WithHint("%d kernel symbols are called %s: probe one by its address", n, d.Symbol)
		}
		if d.Return && d.MaxActive == 0 {
			d.MaxActive = KretprobeMaxActive()
		}
		return nil
	}
	st, err := os.Stat(d.Path)
	if err != nil {
		return d.PlaceError(name, true, "%s", parse.ProbeFileNotFound).WithHint("%v", unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return d.PlaceError(name, true, "%s", parse.ProbeNoRegularFile).WithHint("a uprobe is in an executable or a library")
	}
	f, err := elf.Open(d.Path)
	if err != nil {
		return d.PlaceError(name, true, "not an ELF file").WithHint("a uprobe is in an executable or a library: %v", unwrapPath(err))
	}
	defer f.Close()
	if d.PathSymbol == "" {
		return nil
	}
	off, err := symbolOffset(f, d.PathSymbol)
	if err != nil {
		return d.PlaceError(name, false, "%v", err).WithHint("gtrace resolves PATH:SYMBOL from the file's symbol table (symtab or dynsym); write PATH:OFFSET for a place without a symbol")
	}
	d.Resolve(off)
	return nil
}

// KretprobeMaxActive is the maxactive the kernel gives a kretprobe
// defined without one, and lists (r10:...): max(10, 2 × the possible
// CPUs), register_kretprobe's rule.
func KretprobeMaxActive() int {
	n := runtime.NumCPU()
	if b, err := os.ReadFile("/sys/devices/system/cpu/possible"); err == nil {
		if cpus, err := parse.CPUList("possible", strings.TrimSpace(string(b))); err == nil {
			n = len(cpus)
		}
	}
	return max(10, 2*n)
}

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// symbolOffset returns the file offset of the function sym in f: its
// address, in the loadable segment that holds it, less the segment's
// address plus its offset.
func symbolOffset(f *elf.File, sym string) (uint64, error) {
	var addr uint64
	found := 0
	for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, err := read()
		if err != nil {
			continue
		}
		for _, s := range syms {
			name := s.Name
			if i := strings.IndexByte(name, '@'); i >= 0 && !strings.Contains(sym, "@") {
				name = name[:i]
			}
			if name != sym || s.Section == elf.SHN_UNDEF || s.Value == 0 {
				continue
			}
			if t := elf.ST_TYPE(s.Info); t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC {
				continue
			}
			if found > 0 && s.Value == addr {
				continue
			}
			addr = s.Value
			found++
		}
		if found > 0 {
			break
		}
	}
	switch {
	case found == 0:
		return 0, fmt.Errorf("no function %s in the file", sym)
	case found > 1:
		return 0, fmt.Errorf("%d functions are called %s in the file", found, sym)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr < p.Vaddr+p.Filesz {
			return addr - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("function %s at 0x%x is in no loadable segment of the file", sym, addr)
}

// countSymbol counts the kernel symbols called sym ("MOD:SYM": in module
// MOD) in a kallsyms text. A module that is not loaded is the kernel's
// deferred case: counted as one.
func countSymbol(kallsyms, sym string) int {
	mod := ""
	if i := strings.IndexByte(sym, ':'); i >= 0 {
		mod, sym = sym[:i], sym[i+1:]
	}
	n, modSeen := 0, false
	sc := bufio.NewScanner(strings.NewReader(kallsyms))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		m := ""
		if len(f) > 3 {
			m = strings.Trim(f[3], "[]")
		}
		if mod != "" && m == mod {
			modSeen = true
		}
		if f[2] == sym && (mod == "" || m == mod) {
			n++
		}
	}
	if mod != "" && !modSeen {
		return 1
	}
	return n
}

// probes is a catalog with the probe events of a session added.
type probes struct {
	Catalog
	events []probeEvent
	byName map[Event]int
}

// probeEvent is one probe event: its probes, the first giving the
// format.
type probeEvent struct {
	ev   Event
	defs []*parse.ProbeDef
}

// WithProbes returns base with the probe events of defs defined, in
// order, as the kernel's kprobe_events and uprobe_events take them: a
// definition makes an event in its group (kprobes, uprobes), or joins
// the event of its name when it is of the same kind with the same
// arguments at another place (the kernel's multi-probe events); a
// removal takes away an earlier event (-:GRP/ every event of the group).
// Each event's format is the first definition's derived format,
// numbered down from ProbeIDTop. A name that is an event of base, or
// taken by a probe of another kind, is the kernel's error with the caret
// on the definition; srcName names the definitions' input.
func WithProbes(base Catalog, defs []*parse.ProbeDef, srcName string) (Catalog, error) {
	if len(defs) == 0 {
		return base, nil
	}
	evs, err := base.Events()
	if err != nil {
		return nil, err
	}
	taken := map[Event]bool{}
	for _, e := range evs {
		taken[e] = true
	}
	c := &probes{Catalog: base, byName: map[Event]int{}}
	for _, d := range defs {
		if d.Remove {
			if !c.remove(d) {
				return nil, d.NoEventError(srcName)
			}
			continue
		}
		ev := Event{d.Group, d.Event}
		if taken[ev] {
			return nil, d.ExistsError(srcName)
		}
		if i, ok := c.byName[ev]; ok {
			if err := d.AppendError(srcName, c.events[i].defs[0]); err != nil {
				return nil, err
			}
			for _, e := range c.events[i].defs[1:] {
				if err := d.AppendError(srcName, e); err != nil {
					return nil, err
				}
			}
			c.events[i].defs = append(c.events[i].defs, d)
			continue
		}
		c.byName[ev] = len(c.events)
		c.events = append(c.events, probeEvent{ev: ev, defs: []*parse.ProbeDef{d}})
	}
	return c, nil
}

// remove takes away the events a removal names, and reports whether it
// named any.
func (c *probes) remove(d *parse.ProbeDef) bool {
	kept := c.events[:0]
	n := 0
	for _, e := range c.events {
		if (d.GroupOff < 0 || e.ev.System == d.Group) && (d.Event == "" || e.ev.Name == d.Event) {
			n++
			continue
		}
		kept = append(kept, e)
	}
	c.events = kept
	c.byName = map[Event]int{}
	for i, e := range c.events {
		c.byName[e.ev] = i
	}
	return n > 0
}

// ProbeListing returns the probe definitions c has (WithProbes), as
// the kernel lists them in dynamic_events, a line each in the order they
// were given; none for another catalog.
func ProbeListing(c Catalog) []string {
	p, ok := c.(*probes)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range p.events {
		for _, d := range e.defs {
			out = append(out, d.String())
		}
	}
	return out
}

// ProbeEvents returns the probe events c has (WithProbes), in the order
// they were defined; none for another catalog.
func ProbeEvents(c Catalog) []Event {
	p, ok := c.(*probes)
	if !ok {
		return nil
	}
	var out []Event
	for _, e := range p.events {
		out = append(out, e.ev)
	}
	return out
}

func (c *probes) Events() ([]Event, error) {
	evs, err := c.Catalog.Events()
	if err != nil {
		return nil, err
	}
	for _, e := range c.events {
		evs = append(evs, e.ev)
	}
	sortEvents(evs)
	return evs, nil
}

func (c *probes) Format(e Event) (*parse.Format, string, error) {
	if i, ok := c.byName[e]; ok {
		id := ProbeIDTop - i
		d := c.events[i].defs[0]
		f := d.Format(id)
		f.Probes = c.events[i].defs
		return f, d.FormatFile(id), nil
	}
	return c.Catalog.Format(e)
}

func (c *probes) short() string                 { return shortWhere(c.Catalog) }
func (c *probes) listCommand() string           { return listCommand(c.Catalog) }
func (c *probes) symbols() (*ksym.Table, error) { return Symbols(c.Catalog) }
