package hist

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/syscalls"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// Build resolves spec against an event's format, binds its filter and
// generates the BPF program: everything short of loading it.
func Build(spec *parse.HistSpec, f *parse.Format, o LiveOptions) (*Compiled, error) {
	p, err := NewPlan(spec, f)
	if err != nil {
		return nil, err
	}
	if spec.Filter != nil {
		bf, err := parse.BindFilter("hist", spec.Src, spec.Filter, f)
		if err != nil {
			return nil, spec.Locate(err)
		}
		if err := bf.ResolveFunctions(ksym.KernelFuncRange); err != nil {
			return nil, spec.Locate(err)
		}
		o.Filter = bf
	}
	return Compile(p, f, o)
}

// Write prints tables in one of the output formats: text (the kernel's hist
// file), json, csv or table.
func Write(w io.Writer, format string, tables []*Table, triggerInfo []string, r Resolver) error {
	switch format {
	case "text", "":
		return WriteText(w, tables, triggerInfo, r)
	case "json":
		return WriteJSON(w, tables, triggerInfo, r)
	case "csv":
		return WriteCSV(w, tables, triggerInfo, r)
	case "table":
		return WriteTable(w, tables, triggerInfo, r)
	}
	return fmt.Errorf("unknown output format %q", format)
}

// FileResolver names syscalls for the architecture a trace.dat file was
// recorded on (from its uname) and resolves addresses with its kallsyms.
func FileResolver(f *tracedat.File) Resolver {
	arch := runtime.GOARCH
	if fields := strings.Fields(f.Uname); len(fields) > 0 {
		if a := syscalls.ArchFromMachine(fields[len(fields)-1]); a != "" {
			arch = a
		}
	}
	syms, _ := ksym.Parse(strings.NewReader(f.Kallsyms))
	return Resolver{
		Syscall:   func(nr uint64) (string, bool) { return syscalls.Name(arch, nr) },
		Sym:       syms.Sym,
		SymOffset: syms.SymOffset,
	}
}

// LocalResolver names syscalls for this machine's architecture and
// resolves kernel addresses with /proc/kallsyms, read once on first use.
func LocalResolver() Resolver {
	syms := sync.OnceValue(func() *ksym.Table {
		t, err := ksym.Load()
		if err != nil {
			return nil
		}
		return t
	})
	return Resolver{
		Syscall: func(nr uint64) (string, bool) { return syscalls.Name(runtime.GOARCH, nr) },
		Sym: func(addr uint64) string {
			if t := syms(); t != nil {
				return t.Sym(addr)
			}
			return fmt.Sprintf("0x%x", addr)
		},
		SymOffset: func(addr uint64) string {
			if t := syms(); t != nil {
				return t.SymOffset(addr)
			}
			return fmt.Sprintf("0x%x", addr)
		},
	}
}
