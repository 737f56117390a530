// Command gen writes the syscall tables of package syscalls from the
// zsysnum_linux_<arch>.go files of golang.org/x/sys/unix, in the version
// that go.mod selects. It is run by go generate in the package directory:
//
//	go run ./internal/gen -o zsyscalls.go
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const xsys = "golang.org/x/sys"

func main() {
	out := flag.String("o", "zsyscalls.go", "output `file`")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	mod, err := findModule()
	if err != nil {
		return err
	}
	src, err := generate(mod)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// module is the part of `go list -m -json` that gen needs.
type module struct {
	Version string
	Dir     string
}

// findModule locates the source of golang.org/x/sys in the module cache.
func findModule() (module, error) {
	var m module
	cmd := exec.Command("go", "list", "-m", "-json", xsys)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return m, fmt.Errorf("go list -m %s: %w", xsys, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("go list -m %s: %w", xsys, err)
	}
	if m.Dir == "" {
		return m, fmt.Errorf("go list -m %s: module source not downloaded (run go mod download %s)", xsys, xsys)
	}
	return m, nil
}

// arch is the syscall table of one architecture.
type arch struct {
	name  string            // GOARCH
	nums  map[string]uint64 // uapi name (lower case, no sys_) -> number
	base  uint64            // lowest number
	names []string          // uapi name by number-base; "" for a gap
	// entry maps the number of a slot whose kernel entry point differs
	// from sys_<uapi name> to that entry point without sys_ ("" for none).
	entry map[uint64]string
}

// notSyscalls are SYS_ constants of x/sys that mark a range rather than
// name a system call.
var notSyscalls = map[string]bool{
	"ARCH_SPECIFIC_SYSCALL": true, // asm-generic: first arch-private number
	"SYSCALL_MASK":          true, // arm: OABI number mask
}

// generic64 lists the slots of the asm-generic table (scripts/syscall.tbl,
// 64-bit ABI) whose kernel entry point is not sys_<uapi name>.
var generic64 = map[string]string{
	"fadvise64":      "fadvise64_64",
	"fstat":          "newfstat",
	"lookup_dcookie": "", // sys_ni_syscall
	"nfsservctl":     "", // sys_ni_syscall
	"sendfile":       "sendfile64",
	"uname":          "newuname",
	"umount2":        "umount",
}

// entryPoints lists, per architecture, the slots whose kernel entry point,
// and so the name of its syscall metadata and of its syscalls:sys_enter_*
// event, is not sys_<uapi name>. An empty entry point means the slot has
// none (or sys_ni_syscall, which has no metadata): the kernel then prints
// unknown_syscall. Only the tables below have been checked against the
// kernel's syscall tables; other architectures use sys_<uapi name>.
var entryPoints = map[string]map[string]string{
	// arch/x86/entry/syscalls/syscall_64.tbl
	"amd64": {
		"_sysctl":         "", // sys_ni_syscall
		"afs_syscall":     "",
		"create_module":   "",
		"epoll_ctl_old":   "",
		"epoll_wait_old":  "",
		"get_kernel_syms": "",
		"get_thread_area": "",
		"getpmsg":         "",
		"lookup_dcookie":  "",
		"lstat":           "newlstat",
		"fstat":           "newfstat",
		"nfsservctl":      "",
		"putpmsg":         "",
		"query_module":    "",
		"security":        "",
		"sendfile":        "sendfile64",
		"set_thread_area": "",
		"stat":            "newstat",
		"tuxcall":         "",
		"umount2":         "umount",
		"uname":           "newuname",
		"uselib":          "",
		"vserver":         "",
	},
	"arm64":   generic64,
	"loong64": generic64,
	"riscv64": generic64,
}

// readArch parses one zsysnum_linux_<arch>.go file.
func readArch(name, file string) (*arch, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, err
	}
	a := &arch{name: name, nums: map[string]uint64{}, entry: map[uint64]string{}}
	byNum := map[uint64]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				sys, ok := strings.CutPrefix(id.Name, "SYS_")
				if !ok || notSyscalls[sys] {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.INT {
					return nil, fmt.Errorf("%s: %s is not an integer literal", file, id.Name)
				}
				nr, err := strconv.ParseUint(lit.Value, 0, 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", file, id.Name, err)
				}
				// powerpc's SYS_SYS_DEBUG_SETCONTEXT is sys_debug_setcontext.
				sys = strings.TrimPrefix(strings.ToLower(sys), "sys_")
				if prev, dup := byNum[nr]; dup {
					return nil, fmt.Errorf("%s: %s and %s are both %d", file, prev, sys, nr)
				}
				byNum[nr] = sys
				a.nums[sys] = nr
			}
		}
	}
	if len(byNum) == 0 {
		return nil, fmt.Errorf("%s: no SYS_ constants", file)
	}
	nrs := make([]uint64, 0, len(byNum))
	for nr := range byNum {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	a.base = nrs[0]
	a.names = make([]string, nrs[len(nrs)-1]-a.base+1)
	for nr, sys := range byNum {
		a.names[nr-a.base] = sys
	}
	for sys, ep := range entryPoints[name] {
		nr, ok := a.nums[sys]
		if !ok {
			return nil, fmt.Errorf("%s: entry point of %s: no such syscall", name, sys)
		}
		if ep != "" {
			if other, ok := a.nums[ep]; ok && other != nr {
				return nil, fmt.Errorf("%s: entry point %s of %s is also syscall %d", name, ep, sys, other)
			}
		}
		a.entry[nr] = ep
	}
	return a, nil
}

// same reports whether a and b have the same table.
func same(a, b *arch) bool {
	if a.base != b.base || !slices.Equal(a.names, b.names) || len(a.entry) != len(b.entry) {
		return false
	}
	for nr, ep := range a.entry {
		if bep, ok := b.entry[nr]; !ok || bep != ep {
			return false
		}
	}
	return true
}

// generate returns the source of zsyscalls.go for the x/sys module m.
func generate(m module) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(m.Dir, "unix", "zsysnum_linux_*.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no zsysnum_linux_*.go files in %s %s", xsys, m.Version)
	}
	slices.Sort(files)
	var arches []*arch
	for _, file := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "zsysnum_linux_"), ".go")
		a, err := readArch(name, file)
		if err != nil {
			return nil, err
		}
		arches = append(arches, a)
	}
	for name := range entryPoints {
		if !slices.ContainsFunc(arches, func(a *arch) bool { return a.name == name }) {
			return nil, fmt.Errorf("entry points for %s: no such architecture in %s %s", name, xsys, m.Version)
		}
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by \"go run ./internal/gen\" from %s %s unix/zsysnum_linux_*.go; DO NOT EDIT.\n\n", xsys, m.Version)
	b.WriteString("package syscalls\n\n")
	b.WriteString("// tables holds the syscall table of each architecture, by GOARCH.\n")
	b.WriteString("var tables = map[string]*table{\n")
	// Architectures that differ only in endianness share a table.
	owner := map[string]string{}
	var tabs []*arch
	for _, a := range arches {
		owner[a.name] = a.name
		for _, t := range tabs {
			if same(a, t) {
				owner[a.name] = t.name
				break
			}
		}
		if owner[a.name] == a.name {
			tabs = append(tabs, a)
		}
		fmt.Fprintf(&b, "%q: &%s,\n", a.name, varName(owner[a.name]))
	}
	b.WriteString("}\n")
	for _, a := range tabs {
		writeTable(&b, a, arches, owner)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format generated source: %w", err)
	}
	return src, nil
}

// varName returns the name of the variable that holds arch's table.
func varName(arch string) string {
	return "table" + strings.ToUpper(arch[:1]) + arch[1:]
}

// perRow is the number of names per line of a generated table.
const perRow = 8

func writeTable(b *bytes.Buffer, a *arch, arches []*arch, owner map[string]string) {
	var users []string
	for _, o := range arches {
		if owner[o.name] == a.name {
			users = append(users, o.name)
		}
	}
	fmt.Fprintf(b, "\n// %s is the syscall table of %s.\n", varName(a.name), strings.Join(users, " and "))
	fmt.Fprintf(b, "var %s = table{\n", varName(a.name))
	if a.base != 0 {
		fmt.Fprintf(b, "base: %d,\n", a.base)
	}
	b.WriteString("names: []string{\n")
	skipped := false
	for i := 0; i < len(a.names); i += perRow {
		row := a.names[i:min(i+perRow, len(a.names))]
		if !slices.ContainsFunc(row, func(n string) bool { return n != "" }) {
			skipped = true
			continue
		}
		if skipped {
			fmt.Fprintf(b, "%d: ", i) // an index key skips the gap
			skipped = false
		}
		for j, n := range row {
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(b, "%q,", n)
		}
		fmt.Fprintf(b, " // %d\n", a.base+uint64(i))
	}
	b.WriteString("},\n")
	if len(a.entry) > 0 {
		nrs := make([]uint64, 0, len(a.entry))
		for nr := range a.entry {
			nrs = append(nrs, nr)
		}
		slices.Sort(nrs)
		b.WriteString("entries: []entry{\n")
		for _, nr := range nrs {
			fmt.Fprintf(b, "{%d, %q}, // %s\n", nr, a.entry[nr], a.names[nr-a.base])
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
}
