package ksym

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ErrHidden means that every address in the kallsyms text is zero: the
// kernel hides them from readers without CAP_SYSLOG, and from everyone when
// kernel.kptr_restrict is 2.
var ErrHidden = errors.New("kallsyms addresses are hidden (need CAP_SYSLOG and kernel.kptr_restrict < 2)")

// Sym is a kernel symbol.
type Sym struct {
	Name string
	Addr uint64
	// Size is the distance to the next symbol with a higher address, as
	// the kernel computes it for vmlinux symbols; 0 for the last symbol.
	Size uint64
	// Type is the kallsyms type letter: 'T' or 't' for text, 'D', 'B',
	// 'R' and so on for data.
	Type byte
	// Module is the module that holds the symbol, "" for vmlinux. BPF
	// programs are in module "bpf", which %ps does not print, and kprobe
	// and ftrace trampolines in "__builtin__kprobes" and
	// "__builtin__ftrace", which %ps does not resolve.
	Module string
}

// span is a half-open address range.
type span struct{ lo, hi uint64 }

// Table is a parsed kallsyms. A nil *Table resolves nothing.
type Table struct {
	syms []Sym // sorted by Addr; aliases keep their kallsyms order
	// core lists the ranges in which the kernel resolves vmlinux symbols
	// (its is_ksym_addr); nil when the kallsyms text does not say.
	core []span
}

// Parse reads kallsyms text: lines of "addr type name" or
// "addr type name\t[module]". It returns ErrHidden if every address is
// zero.
func Parse(r io.Reader) (*Table, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read kallsyms: %w", err)
	}
	return ParseText(string(b))
}

// ParseText is Parse of a kallsyms text held in a string, such as
// tracefs.FS.Kallsyms returns or a trace.dat file stores.
func ParseText(text string) (*Table, error) {
	// Names point into text, which saves an allocation per symbol.
	t := &Table{syms: make([]Sym, 0, strings.Count(text, "\n")+1)}
	hidden := true
	for n := 1; text != ""; n++ {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		s, ok, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("kallsyms line %d: %w", n, err)
		}
		if !ok {
			continue
		}
		if s.Addr != 0 {
			hidden = false
		}
		t.syms = append(t.syms, s)
	}
	if hidden && len(t.syms) > 0 {
		return nil, ErrHidden
	}
	slices.SortStableFunc(t.syms, func(a, b Sym) int {
		switch {
		case a.Addr < b.Addr:
			return -1
		case a.Addr > b.Addr:
			return 1
		}
		return 0
	})
	for i := len(t.syms) - 2; i >= 0; i-- {
		next := &t.syms[i+1]
		if next.Addr == t.syms[i].Addr {
			t.syms[i].Size = next.Size
		} else {
			t.syms[i].Size = next.Addr - t.syms[i].Addr
		}
	}
	t.core = t.coreSpans()
	return t, nil
}

// parseLine parses one kallsyms line; ok is false for a blank line.
func parseLine(line string) (s Sym, ok bool, err error) {
	addr, rest := field(line)
	if addr == "" {
		return Sym{}, false, nil
	}
	typ, rest := field(rest)
	name, rest := field(rest)
	mod, rest := field(rest)
	if extra, _ := field(rest); extra != "" {
		return Sym{}, false, fmt.Errorf("unexpected %q after the module", extra)
	}
	s.Addr, err = strconv.ParseUint(addr, 16, 64)
	if err != nil {
		return Sym{}, false, fmt.Errorf("bad address %q", addr)
	}
	if len(typ) != 1 {
		return Sym{}, false, fmt.Errorf("bad symbol type %q", typ)
	}
	s.Type = typ[0]
	if name == "" {
		return Sym{}, false, fmt.Errorf("no symbol name")
	}
	s.Name = name
	if mod != "" {
		m, open := strings.CutPrefix(mod, "[")
		m, closed := strings.CutSuffix(m, "]")
		if !open || !closed || m == "" {
			return Sym{}, false, fmt.Errorf("bad module %q", mod)
		}
		s.Module = m
	}
	return s, true, nil
}

// field splits off the first field of s, which fields separate with
// spaces and tabs.
func field(s string) (f, rest string) {
	s = strings.TrimLeft(s, " \t\r")
	i := strings.IndexAny(s, " \t\r")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// coreSpans returns the ranges of the kernel image in which the kernel
// resolves vmlinux symbols: _stext to _end when kallsyms has all symbols,
// else the text and init text.
func (t *Table) coreSpans() []span {
	marks := map[string]uint64{}
	for _, s := range t.syms {
		if s.Module == "" {
			switch s.Name {
			case "_stext", "_etext", "_sinittext", "_einittext", "_end":
				marks[s.Name] = s.Addr
			}
		}
	}
	stext, ok := marks["_stext"]
	if !ok {
		return nil
	}
	if end, ok := marks["_end"]; ok {
		return []span{{stext, end}}
	}
	etext, ok := marks["_etext"]
	if !ok {
		return []span{{stext, ^uint64(0)}}
	}
	spans := []span{{stext, etext}}
	if lo, ok := marks["_sinittext"]; ok {
		if hi, ok := marks["_einittext"]; ok {
			spans = append(spans, span{lo, hi})
		}
	}
	return spans
}

// inCore reports whether the kernel resolves addr to a vmlinux symbol.
func (t *Table) inCore(addr uint64) bool {
	if t.core == nil {
		return true
	}
	for _, s := range t.core {
		if s.lo <= addr && addr < s.hi {
			return true
		}
	}
	return false
}

// Lookup returns the symbol that holds addr, as the kernel's kallsyms_lookup
// finds it: the closest symbol at or below addr, the first listed of those
// at the same address. The last symbol holds only its own address. Like the
// kernel, Lookup does not resolve vmlinux symbols outside the kernel image
// (such as per-CPU offsets) or addresses in kprobe and ftrace trampolines.
func (t *Table) Lookup(addr uint64) (Sym, bool) {
	if t == nil {
		return Sym{}, false
	}
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].Addr > addr }) - 1
	if i < 0 {
		return Sym{}, false
	}
	for i > 0 && t.syms[i-1].Addr == t.syms[i].Addr {
		i--
	}
	s := t.syms[i]
	switch {
	case s.Size == 0 && addr != s.Addr:
		return Sym{}, false
	case s.Module == "" && !t.inCore(addr):
		return Sym{}, false
	case strings.HasPrefix(s.Module, "__builtin__"):
		return Sym{}, false
	}
	return s, true
}

// FuncRange returns the address range [lo, hi) of the function that holds
// addr or, when name is not "", the address of the first symbol called
// name, as a filter's .function resolves its value in the kernel
// (kallsyms_lookup_name, then kallsyms_lookup_size_offset). It has the
// signature of a parse.FuncResolver.
func (t *Table) FuncRange(name string, addr uint64) (lo, hi uint64, err error) {
	if t == nil {
		return 0, 0, errors.New("no kernel symbols to resolve .function with")
	}
	if name != "" {
		i := slices.IndexFunc(t.syms, func(s Sym) bool { return s.Name == name && s.Module == "" })
		if i < 0 {
			i = slices.IndexFunc(t.syms, func(s Sym) bool { return s.Name == name })
		}
		if i < 0 {
			return 0, 0, fmt.Errorf("no kernel function %q", name)
		}
		addr = t.syms[i].Addr
	}
	s, ok := t.Lookup(addr)
	if !ok || s.Size == 0 {
		if name != "" {
			return 0, 0, fmt.Errorf("kernel symbol %q has no size to match addresses against", name)
		}
		return 0, 0, fmt.Errorf("no kernel function holds 0x%x", addr)
	}
	return s.Addr, s.Addr + s.Size, nil
}

// TextFuncRange returns FuncRange over a kallsyms text, such as a trace.dat
// file's, parsed on first use.
func TextFuncRange(text string) func(name string, addr uint64) (lo, hi uint64, err error) {
	parse := sync.OnceValues(func() (*Table, error) { return ParseText(text) })
	return func(name string, addr uint64) (uint64, uint64, error) {
		t, err := parse()
		if err != nil {
			return 0, 0, err
		}
		return t.FuncRange(name, addr)
	}
}

// Sym formats addr as the kernel's %ps does: the symbol name, followed by
// " [module]" for a module symbol, or 0x<addr> if no symbol holds addr.
func (t *Table) Sym(addr uint64) string {
	s, ok := t.Lookup(addr)
	if !ok {
		return "0x" + strconv.FormatUint(addr, 16)
	}
	return s.Name + s.moduleSuffix()
}

// SymOffset formats addr as the kernel's %pS does:
// name+0x<offset>/0x<size>, followed by " [module]" for a module symbol, or
// 0x<addr> if no symbol holds addr.
func (t *Table) SymOffset(addr uint64) string {
	s, ok := t.Lookup(addr)
	if !ok {
		return "0x" + strconv.FormatUint(addr, 16)
	}
	return s.Name + "+0x" + strconv.FormatUint(addr-s.Addr, 16) +
		"/0x" + strconv.FormatUint(s.Size, 16) + s.moduleSuffix()
}

// moduleSuffix returns what %ps and %pS print after the name of s.
func (s Sym) moduleSuffix() string {
	if s.Module == "" || s.Module == "bpf" {
		return ""
	}
	return " [" + s.Module + "]"
}
