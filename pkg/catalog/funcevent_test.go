package catalog

import (
	"debug/elf"
	"errors"
	"os"
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

// TestCheckFuncEventUser resolves PATH:FUNC from the test binary's
// symbol table and refuses a missing file or function.
func TestCheckFuncEventUser(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Skipf("no symbol table: %v", err)
	}
	// A function with a C name, there once.
	count := map[string]int{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && parse.IsGoodName(s.Name) {
			count[s.Name]++
		}
	}
	name := ""
	for n, c := range count {
		if c == 1 && (name == "" || n < name) {
			name = n
		}
	}
	if name == "" {
		t.Skip("no function with a C name in the test binary")
	}
	want, err := symbolOffset(f, name)
	if err != nil {
		t.Fatal(err)
	}
	e := funcEvent(t, exe+":"+name+"(int a)")
	if err := CheckFuncEvent("funcevent", e, ""); err != nil || !e.Resolved || e.FileOffset != want {
		t.Fatalf("CheckFuncEvent(%s) = %v, offset 0x%x, want 0x%x", name, err, e.FileOffset, want)
	}
	d, err := e.Probe("funcevent")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckProbe("funcevent", d, ""); err != nil || d.FileOffset != want {
		t.Errorf("the equivalent uprobe %s: %v", d.Kernel(), err)
	}
	for _, tt := range []struct{ src, msg, caret string }{
		{t.TempDir() + "/none:f()", "Failed to find the given file", "none"},
		{exe + ":no_such_function_here()", "no function no_such_function_here in the file", "no_such_function_here"},
	} {
		err := CheckFuncEvent("funcevent", funcEvent(t, tt.src), "")
		var pe *parse.Error
		if !errors.As(err, &pe) || pe.Msg != tt.msg || !strings.Contains(tt.src[pe.Off:pe.End], tt.caret) {
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
	if got := strings.Join(FuncEventListing(c), "\n"); got != "vfs_read(int fd)\ndo_sys_open(int dfd, string path)" {
		t.Errorf("FuncEventListing() = %q", got)
	}
	_, err = WithFuncEvents(c, []*parse.FuncEvent{funcEvent(t, "vfs_read()")}, "funcevent")
	var pe *parse.Error
	if !errors.As(err, &pe) || pe.Msg != "functions:vfs_read is an event already" || pe.Off != 0 || pe.End != 8 {
		t.Errorf("WithFuncEvents(twice) = %+v", err)
	}
}
