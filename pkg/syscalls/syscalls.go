package syscalls

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// Unknown is what the kernel prints for a .syscall key whose number has no
// name.
const Unknown = "unknown_syscall"

// prefix starts every kernel syscall name.
const prefix = "sys_"

// table is the syscall table of one architecture.
type table struct {
	base    uint64   // number of names[0]
	names   []string // uapi name by number-base, without sys_; "" for a gap
	entries []entry  // slots whose entry point is not sys_<uapi name>, by nr
}

// entry names the kernel entry point, without sys_, of syscall nr; ""
// means that nr has no entry point with syscall metadata.
type entry struct {
	nr   uint64
	name string
}

// entry returns the entry point of syscall nr, if it is listed.
func (t *table) entry(nr uint64) (entry, bool) {
	i, ok := slices.BinarySearchFunc(t.entries, nr, func(e entry, nr uint64) int {
		switch {
		case e.nr < nr:
			return -1
		case e.nr > nr:
			return 1
		}
		return 0
	})
	if !ok {
		return entry{}, false
	}
	return t.entries[i], true
}

// Name returns the name that the kernel's hist triggers print for syscall nr
// of arch (a GOARCH name, see Arches), such as "sys_getppid". It returns
// false, and the kernel prints Unknown, when the number is not a syscall of
// arch or the kernel has no entry point for it.
//
// Kernel entry point names that differ from the uapi names (sys_newfstat
// for fstat, sys_umount for umount2) are known for amd64, arm64, loong64
// and riscv64; other architectures use sys_<uapi name>.
func Name(arch string, nr uint64) (string, bool) {
	t := tables[arch]
	if t == nil || nr < t.base || nr-t.base >= uint64(len(t.names)) {
		return "", false
	}
	name := t.names[nr-t.base]
	if e, ok := t.entry(nr); ok {
		name = e.name
	}
	if name == "" {
		return "", false
	}
	return prefix + name, true
}

// Number returns the number of the syscall of arch called name. The name is
// matched without regard to case, with or without the "sys_" prefix, and
// may be either the uapi name or the kernel's entry point name: on amd64,
// "fstat", "sys_fstat" and "sys_newfstat" are all 5.
func Number(arch, name string) (uint64, bool) {
	t := tables[arch]
	if t == nil {
		return 0, false
	}
	name = strings.TrimPrefix(strings.ToLower(name), prefix)
	if name == "" {
		return 0, false
	}
	for _, e := range t.entries {
		if e.name == name {
			return e.nr, true
		}
	}
	if i := slices.Index(t.names, name); i >= 0 {
		return t.base + uint64(i), true
	}
	return 0, false
}

// EventNumber returns the number of the system call that the kernel's
// syscalls:sys_enter_NAME or sys_exit_NAME event (system and name as
// tracefs gives them) traces on arch. The events are named after the
// kernel's entry points (sys_enter_newfstatat, sys_enter_umount), so only
// those names match; one that two numbers share matches neither.
func EventNumber(arch, system, name string) (uint32, bool) {
	if system != "syscalls" {
		return 0, false
	}
	call, ok := strings.CutPrefix(name, "sys_enter_")
	if !ok {
		if call, ok = strings.CutPrefix(name, "sys_exit_"); !ok {
			return 0, false
		}
	}
	nrs := eventNumbers(arch)
	nr, ok := nrs[prefix+call]
	return nr, ok
}

// eventNumbers maps arch's entry point names to numbers, built once per
// architecture.
func eventNumbers(arch string) map[string]uint32 {
	eventNrsMu.Lock()
	defer eventNrsMu.Unlock()
	if nrs, ok := eventNrs[arch]; ok {
		return nrs
	}
	nrs := map[string]uint32{}
	seen := map[string]bool{}
	if t := tables[arch]; t != nil {
		for nr := t.base; nr < t.base+uint64(len(t.names)); nr++ {
			name, ok := Name(arch, nr)
			switch {
			case !ok:
			case seen[name]:
				delete(nrs, name)
			default:
				seen[name] = true
				nrs[name] = uint32(nr)
			}
		}
	}
	eventNrs[arch] = nrs
	return nrs
}

var (
	eventNrsMu sync.Mutex
	eventNrs   = map[string]map[string]uint32{}
)

// Arches returns the GOARCH names of the architectures that Name and Number
// know, sorted.
func Arches() []string {
	arches := make([]string, 0, len(tables))
	for a := range tables {
		arches = append(arches, a)
	}
	sort.Strings(arches)
	return arches
}

// machines maps the machine names that uname(2) reports, and that
// trace.dat files record, to GOARCH names.
var machines = map[string]string{
	"aarch64":     "arm64",
	"aarch64_be":  "arm64",
	"amd64":       "amd64",
	"arm64":       "arm64",
	"i386":        "386",
	"i486":        "386",
	"i586":        "386",
	"i686":        "386",
	"loongarch64": "loong64",
	"mips":        "mips",
	"mips64":      "mips64",
	"ppc":         "ppc",
	"ppc64":       "ppc64",
	"ppc64le":     "ppc64le",
	"riscv64":     "riscv64",
	"s390x":       "s390x",
	"sparc64":     "sparc64",
	"x86":         "386",
	"x86_64":      "amd64",
}

// ArchFromMachine returns the GOARCH name for the machine name that
// uname -m prints (x86_64, aarch64, i686, armv7l, riscv64, ...), or "" if
// the machine is not one that Name knows. uname reports mips and mips64
// without endianness; their syscall numbers do not depend on it, so they
// map to mips and mips64.
func ArchFromMachine(machine string) string {
	if a, ok := machines[machine]; ok {
		return a
	}
	if strings.HasPrefix(machine, "arm") { // armv7l, armv6l, armv8l, armv7b...
		return "arm"
	}
	return ""
}
