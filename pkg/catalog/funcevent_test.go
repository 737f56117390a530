package catalog

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

func funcEvent(t *testing.T, src string) *parse.FuncEvent {
	t.Helper()
	e, err := parse.ParseFuncEvent("funcevent", src, parse.ProbeOptions{Arch: "amd64"})
	if err != nil {
		t.Fatalf("ParseFuncEvent(%q) = %v", src, err)
	}
	return e
}

// TestCheckFuncEvent checks a kernel function against kallsyms, with the
// caret on the function's name.
func TestCheckFuncEvent(t *testing.T) {
	syms := "ffffffff81000000 T vfs_read\nffffffff81000200 t dup_sym\nffffffff81000300 t dup_sym\n"
	for _, tt := range []struct{ src, msg string }{
		{"vfs_read(int fd)", ""},
		{"nope(int fd)", "Invalid probed address or symbol"},
		{"dup_sym()", "The symbol is not unique"},
	} {
		err := CheckFuncEvent("funcevent", funcEvent(t, tt.src), syms)
		var pe *parse.Error
		switch {
		case tt.msg == "" && err != nil:
			t.Errorf("CheckFuncEvent(%q) = %v", tt.src, err)
		case tt.msg != "" && (!errors.As(err, &pe) || pe.Msg != tt.msg || pe.Off != 0 || pe.End != strings.IndexByte(tt.src, '(')):
			t.Errorf("CheckFuncEvent(%q) = %+v, want %q on the name", tt.src, err, tt.msg)
		}
	}
	if err := CheckFuncEvent("funcevent", funcEvent(t, "nope()"), ""); err != nil {
		t.Errorf("without kallsyms: %v", err)
	}
}

// writeELF writes a minimal x86-64 executable to path: one loadable
// segment at 0x400000 from file offset 0, and a symbol table with the
// function name at 0x400080, file offset 0x80.
func writeELF(t *testing.T, path, name string) {
	t.Helper()
	var b bytes.Buffer
	le := binary.LittleEndian
	text := bytes.Repeat([]byte{0xc3}, 16)
	strtab := "\x00" + name + "\x00"
	shstr := "\x00.text\x00.symtab\x00.strtab\x00.shstrtab\x00"
	const textOff = 0x80
	symOff := textOff + len(text)
	strOff := symOff + 2*24
	shstrOff := strOff + len(strtab)
	shOff := (shstrOff + len(shstr) + 7) &^ 7
	hdr := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: 1, Entry: 0x400080,
		Phoff: 64, Shoff: uint64(shOff), Ehsize: 64, Phentsize: 56, Phnum: 1, Shentsize: 64, Shnum: 5, Shstrndx: 4,
	}
	copy(hdr.Ident[:], "\x7fELF")
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	size := uint64(shOff + 5*64)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(binary.Write(&b, le, hdr))
	must(binary.Write(&b, le, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Vaddr: 0x400000, Paddr: 0x400000, Filesz: size, Memsz: size, Align: 0x1000}))
	b.Write(make([]byte, textOff-b.Len()))
	b.Write(text)
	must(binary.Write(&b, le, elf.Sym64{}))
	must(binary.Write(&b, le, elf.Sym64{Name: 1, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: 1, Value: 0x400080, Size: 16}))
	b.WriteString(strtab)
	b.WriteString(shstr)
	b.Write(make([]byte, shOff-b.Len()))
	for _, sh := range []elf.Section64{
		{},
		{Name: 1, Type: uint32(elf.SHT_PROGBITS), Flags: uint64(elf.SHF_ALLOC | elf.SHF_EXECINSTR), Addr: 0x400080, Off: textOff, Size: uint64(len(text)), Addralign: 16},
		{Name: 7, Type: uint32(elf.SHT_SYMTAB), Off: uint64(symOff), Size: 48, Link: 3, Info: 1, Addralign: 8, Entsize: 24},
		{Name: 15, Type: uint32(elf.SHT_STRTAB), Off: uint64(strOff), Size: uint64(len(strtab)), Addralign: 1},
		{Name: 23, Type: uint32(elf.SHT_STRTAB), Off: uint64(shstrOff), Size: uint64(len(shstr)), Addralign: 1},
	} {
		must(binary.Write(&b, le, sh))
	}
	must(os.WriteFile(path, b.Bytes(), 0o755))
}

// TestCheckFuncEventUser resolves PATH:FUNC from the file's symbol
// table, gives the equivalent uprobe, and refuses a missing file or
// function with the caret on it.
func TestCheckFuncEventUser(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "app")
	writeELF(t, exe, "handle")
	e := funcEvent(t, exe+":handle(int fd, string buf)")
	if err := CheckFuncEvent("funcevent", e, ""); err != nil || !e.Resolved || e.FileOffset != 0x80 {
		t.Fatalf("CheckFuncEvent = %v, offset 0x%x, want 0x80", err, e.FileOffset)
	}
	d, err := e.Probe("funcevent")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Kernel(), "p:functions/handle "+exe+":0x80 fd=%di:s32 buf=+0(%si):string"; got != want {
		t.Errorf("Probe() = %q, want %q", got, want)
	}
	if err := CheckProbe("funcevent", d, ""); err != nil {
		t.Errorf("CheckProbe(%s) = %v", d.Kernel(), err)
	}
	for _, tt := range []struct{ src, msg, caret string }{
		{filepath.Dir(exe) + "/none:f()", "Failed to find the given file", "none"},
		{filepath.Dir(exe) + ":f()", "Not a regular file", filepath.Dir(exe)},
		{exe + ":nothere()", "no function nothere in the file", "nothere"},
	} {
		err := CheckFuncEvent("funcevent", funcEvent(t, tt.src), "")
		var pe *parse.Error
		if !errors.As(err, &pe) || pe.Msg != tt.msg || !strings.HasSuffix(tt.src[pe.Off:pe.End], tt.caret) {
			t.Errorf("CheckFuncEvent(%q) = %+v, want %q", tt.src, err, tt.msg)
		}
	}
}

// TestWithFuncEvents lists the events in system functions with their
// derived formats, numbered down from FuncEventIDTop, and refuses a
// function defined twice.
func TestWithFuncEvents(t *testing.T) {
	c, err := WithFuncEvents(Empty(), []*parse.FuncEvent{funcEvent(t, "vfs_read(int fd)"), funcEvent(t, "do_sys_open(int dfd, string path)")}, "funcevent")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := c.Events()
	if err != nil || len(evs) != 2 || evs[0].String() != "functions:do_sys_open" || evs[1].String() != "functions:vfs_read" {
		t.Fatalf("Events() = %v, %v", evs, err)
	}
	f, text, err := c.Format(Event{"functions", "do_sys_open"})
	if err != nil || f.ID != FuncEventIDTop-1 || f.System != "functions" || f.Field("path") == nil || !strings.HasPrefix(text, "name: do_sys_open\nID: ") {
		t.Fatalf("Format() = %+v, %v", f, err)
	}
	if f.Func == nil || f.Func.Func != "do_sys_open" || len(f.Probes) != 1 || f.Probes[0].String() != "p:functions/do_sys_open do_sys_open dfd=%di:s32 path=+0(%si):string" {
		t.Errorf("Format() runs on %+v, probes %v", f.Func, f.Probes)
	}
	fs, err := FuncEventFormats(c)
	if err != nil || len(fs) != 2 || fs[0].Name != "vfs_read" || fs[1].Name != "do_sys_open" || fs[1].DerivedFile() != text {
		t.Errorf("FuncEventFormats() = %v, %v", fs, err)
	}
	if got := strings.Join(FuncEventListing(c), "\n"); got != "vfs_read(int fd)\ndo_sys_open(int dfd, string path)" {
		t.Errorf("FuncEventListing() = %q", got)
	}
	_, err = WithFuncEvents(c, []*parse.FuncEvent{funcEvent(t, "vfs_read()")}, "funcevent")
	var pe *parse.Error
	if !errors.As(err, &pe) || pe.Msg != "functions:vfs_read is an event already" || pe.Off != 0 || pe.End != 8 {
		t.Errorf("WithFuncEvents(twice) = %+v", err)
	}
	// A field that no probe reads: listed, with its format, but not run.
	c, err = WithFuncEvents(Empty(), []*parse.FuncEvent{funcEvent(t, "vfs_read(x64 file+8)")}, "funcevent")
	if err != nil {
		t.Fatal(err)
	}
	if f, _, err := c.Format(Event{"functions", "vfs_read"}); err != nil || f.Probes != nil {
		t.Errorf("Format(vfs_read(x64 file+8)) = %+v, %v", f, err)
	}
	if _, err := FuncEventFormats(c); !errors.As(err, &pe) || pe.Msg != "no probe reads a value plus an offset" || pe.Off != 17 {
		t.Errorf("FuncEventFormats(vfs_read(x64 file+8)) = %+v", err)
	}
}
