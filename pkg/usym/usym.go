// Package usym names user-space addresses of processes: it reads a
// process's mappings (/proc/PID/maps) once, at first sight, and the
// function symbols of each mapped ELF file (stdlib debug/elf) once per
// file, on first lookup. An address in a file without symbols prints as
// the file's base name and the offset in it; one outside any file mapping,
// or of a process whose mappings were never read, as 0x<addr>.
package usym

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Mapping is one file mapping of a process.
type Mapping struct {
	Start, End uint64 // addresses [Start, End)
	Offset     uint64 // the file offset at Start
	Path       string
}

// ParseMaps reads the file mappings of a /proc/PID/maps text; anonymous
// and special mappings ([heap], [stack], ...) are left out.
func ParseMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("maps line %q: no address range", sc.Text())
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("maps line %q: bad number", sc.Text())
		}
		out = append(out, Mapping{Start: start, End: end, Offset: off, Path: strings.Join(f[5:], " ")})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read maps: %w", err)
	}
	return out, nil
}

// Cache holds the mappings of the processes seen and the symbols of their
// files. It is safe for concurrent use.
type Cache struct {
	// Root is prepended to /proc/PID/maps and to mapped files' paths
	// ("" for this machine's).
	Root  string
	mu    sync.Mutex
	procs map[uint32][]Mapping
	files map[string]*fileSyms
}

// See reads the mappings of process pid, if not read yet. A process that
// is gone leaves no mappings: its addresses stay unnamed.
func (c *Cache) See(pid uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.procs[pid]; ok {
		return
	}
	if c.procs == nil {
		c.procs = map[uint32][]Mapping{}
	}
	f, err := os.Open(filepath.Join(c.Root, "/proc", strconv.FormatUint(uint64(pid), 10), "maps"))
	if err != nil {
		c.procs[pid] = nil
		return
	}
	defer f.Close()
	m, _ := ParseMaps(f)
	c.procs[pid] = m
}

// SymOffset names address addr of process pid as the kernel's %pS does
// for kernel addresses: "name+0xoff/0xsize [file]"; "file+0xoff" (the
// offset in the file) when the file has no symbol for it; "0x<addr>"
// when no file mapping of the process holds it.
func (c *Cache) SymOffset(pid uint32, addr uint64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.procs[pid] {
		if addr < m.Start || addr >= m.End {
			continue
		}
		off := addr - m.Start + m.Offset
		base := filepath.Base(m.Path)
		if s, ok := c.file(m.Path).lookup(off); ok {
			return fmt.Sprintf("%s+0x%x/0x%x [%s]", s.name, s.off, s.size, base)
		}
		return fmt.Sprintf("%s+0x%x", base, off)
	}
	return "0x" + strconv.FormatUint(addr, 16)
}

// fileSyms are the function symbols of an ELF file and its loadable
// segments, to turn a file offset into a symbol's address.
type fileSyms struct {
	loads []elf.ProgHeader
	syms  []elf.Symbol // functions, by address
}

type hit struct {
	name      string
	off, size uint64
}

func (c *Cache) file(path string) *fileSyms {
	if fs, ok := c.files[path]; ok {
		return fs
	}
	if c.files == nil {
		c.files = map[string]*fileSyms{}
	}
	fs := readSyms(filepath.Join(c.Root, path))
	c.files[path] = fs
	return fs
}

// readSyms reads a file's function symbols (.symtab, else .dynsym); nil
// for a file that is not ELF or cannot be read.
func readSyms(path string) *fileSyms {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fs := &fileSyms{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			fs.loads = append(fs.loads, p.ProgHeader)
		}
	}
	syms, err := f.Symbols()
	if err != nil || len(syms) == 0 {
		syms, _ = f.DynamicSymbols()
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			fs.syms = append(fs.syms, s)
		}
	}
	sort.Slice(fs.syms, func(i, j int) bool { return fs.syms[i].Value < fs.syms[j].Value })
	return fs
}

// lookup finds the function holding file offset off.
func (fs *fileSyms) lookup(off uint64) (hit, bool) {
	if fs == nil {
		return hit{}, false
	}
	var vaddr uint64
	found := false
	for _, p := range fs.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			vaddr, found = off-p.Off+p.Vaddr, true
			break
		}
	}
	if !found {
		return hit{}, false
	}
	i := sort.Search(len(fs.syms), func(i int) bool { return fs.syms[i].Value > vaddr }) - 1
	if i < 0 {
		return hit{}, false
	}
	s := fs.syms[i]
	if vaddr-s.Value >= s.Size && s.Size != 0 {
		return hit{}, false
	}
	return hit{name: s.Name, off: vaddr - s.Value, size: s.Size}, true
}
