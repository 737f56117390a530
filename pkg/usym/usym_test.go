package usym

import (
	"debug/elf"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestParseMaps(t *testing.T) {
	const maps = `55d0c8a00000-55d0c8a28000 r--p 00000000 08:01 1234 /usr/bin/bash
55d0c8a28000-55d0c8af0000 r-xp 00028000 08:01 1234 /usr/bin/bash
55d0c9000000-55d0c9100000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
7f0000002000-7f0000003000 r-xp 00001000 08:01 99 /tmp/a b.so
`
	got, err := ParseMaps(strings.NewReader(maps))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{0x55d0c8a00000, 0x55d0c8a28000, 0, "/usr/bin/bash"},
		{0x55d0c8a28000, 0x55d0c8af0000, 0x28000, "/usr/bin/bash"},
		{0x7f0000002000, 0x7f0000003000, 0x1000, "/tmp/a b.so"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseMaps = %+v, want %+v", got, want)
	}
	if _, err := ParseMaps(strings.NewReader("zz 0 0 0 0 /x\n")); err == nil {
		t.Error("ParseMaps of a line without a range: no error")
	}
}

//go:noinline
func marker() int { return 42 }

// TestSymOffsetSelf names a function of the test binary by its address in
// this process.
func TestSymOffsetSelf(t *testing.T) {
	var c Cache
	pid := uint32(os.Getpid())
	c.See(pid)
	addr := uint64(reflect.ValueOf(marker).Pointer())
	// go test may link its binary without a symbol table: then the
	// address is named by the file and its offset.
	got := c.SymOffset(pid, addr+1)
	named := regexp.MustCompile(`^github\.com/gtrace/gtrace/pkg/usym\.marker\+0x1/0x[0-9a-f]+ \[usym\.test\]$`)
	stripped := regexp.MustCompile(`^usym\.test\+0x[0-9a-f]+$`)
	if !named.MatchString(got) && !stripped.MatchString(got) {
		t.Errorf("SymOffset(marker+1) = %q, want usym.marker+0x1/0x... [usym.test] or usym.test+0x...", got)
	}
	if got := c.SymOffset(pid, 8); got != "0x8" {
		t.Errorf("SymOffset of an unmapped address = %q, want 0x8", got)
	}
	if got := c.SymOffset(pid+1<<30, addr); !strings.HasPrefix(got, "0x") {
		t.Errorf("SymOffset for a process never seen = %q, want 0x...", got)
	}
}

// TestSymOffsetStripped: a file without symbols names an address by the
// file and the offset in it.
func TestSymOffsetStripped(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/blob", []byte("not an ELF file"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Cache{procs: map[uint32][]Mapping{7: {{Start: 0x1000, End: 0x3000, Offset: 0x4000, Path: dir + "/blob"}}}}
	if got := c.SymOffset(7, 0x1010); got != "blob+0x4010" {
		t.Errorf("SymOffset = %q, want blob+0x4010", got)
	}
}

// TestSymOffsetSymbols: a file offset is turned into the symbol's
// address through the loadable segment that holds it.
func TestSymOffsetSymbols(t *testing.T) {
	const path = "/opt/bin/prog"
	c := Cache{
		procs: map[uint32][]Mapping{7: {{Start: 0x7f0000001000, End: 0x7f0000003000, Offset: 0x1000, Path: path}}},
		files: map[string]*fileSyms{path: {
			loads: []elf.ProgHeader{{Type: elf.PT_LOAD, Off: 0x1000, Vaddr: 0x401000, Filesz: 0x2000}},
			syms:  []elf.Symbol{{Name: "main", Value: 0x401000, Size: 0x100}, {Name: "work", Value: 0x401100, Size: 0x20}},
		}},
	}
	for addr, want := range map[uint64]string{
		0x7f0000001004: "main+0x4/0x100 [prog]",
		0x7f0000001104: "work+0x4/0x20 [prog]",
		0x7f0000001200: "prog+0x1200", // past work's end
	} {
		if got := c.SymOffset(7, addr); got != want {
			t.Errorf("SymOffset(%#x) = %q, want %q", addr, got, want)
		}
	}
}
