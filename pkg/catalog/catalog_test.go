package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/tracedat"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// sample is a trace-cmd 3.1.6 file of a 6.18 kernel: every event format
// (ftrace's own included), its kallsyms and a few sched_switch records.
const sample = "../tracedat/testdata/sched_switch.dat"

// kallsyms is a short kallsyms text.
const kallsyms = "../ksym/testdata/kallsyms.txt"

// fakeLive returns the live catalog of a tracefs tree made of the real
// format files of internal/testutil, with extra events (SYS:EVENT, a copy
// of raw_syscalls:sys_enter's format under another name), and a copy of
// kallsyms as its /proc/kallsyms.
func fakeLive(t *testing.T, extra ...string) (Catalog, string) {
	t.Helper()
	root := t.TempDir()
	formats := testutil.FormatFiles()
	files, err := fs.Glob(formats, "*.format")
	if err != nil || len(files) == 0 {
		t.Fatalf("no format fixtures: %v", err)
	}
	put := func(sys, name string, b []byte) {
		dir := filepath.Join(root, "events", sys, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "format"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range files {
		b, err := fs.ReadFile(formats, p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.SplitN(string(b), "\n", 2)[0][len("name: "):]
		put(strings.TrimSuffix(strings.TrimSuffix(p, ".format"), "_"+name), name, b)
	}
	for _, e := range extra {
		sys, name, _ := strings.Cut(e, ":")
		text := strings.Replace(testutil.FormatText(t, "raw_syscalls:sys_enter"), "name: sys_enter", "name: "+name, 1)
		put(sys, name, []byte(text))
	}
	// A directory without a format file is no event.
	if err := os.MkdirAll(filepath.Join(root, "events", "sched", "enable_only"), 0o755); err != nil {
		t.Fatal(err)
	}
	tfs := tracefs.At(root)
	tfs.KallsymsPath = kallsyms
	return Live(tfs), root
}

// openSample returns the catalog of the sample file.
func openSample(t testing.TB) (*tracedat.File, Catalog) {
	t.Helper()
	f, c, err := OpenFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, c
}

func names(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.String()
	}
	return out
}

func TestLiveEvents(t *testing.T) {
	c, _ := fakeLive(t)
	evs, err := c.Events()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kmem:kmalloc", "raw_syscalls:sys_enter", "raw_syscalls:sys_exit",
		"sched:sched_process_exec", "sched:sched_switch", "sched:sched_waking",
		"syscalls:sys_enter_getppid", "syscalls:sys_enter_openat", "syscalls:sys_enter_write",
		"syscalls:sys_exit_openat", "timer:hrtimer_start",
	}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Errorf("Events() = %v, want %v", got, want)
	}
	if c.Where() != "tracefs" {
		t.Errorf("Where() = %q, want tracefs", c.Where())
	}
}

func TestFileEvents(t *testing.T) {
	f, c := openSample(t)
	evs, err := c.Events()
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(f.Events) {
		t.Errorf("Events() = %d events, the file has %d formats", len(evs), len(f.Events))
	}
	if !slices.IsSortedFunc(evs, func(a, b Event) int {
		return strings.Compare(a.System+"\x00"+a.Name, b.System+"\x00"+b.Name)
	}) {
		t.Errorf("Events() not sorted by system, then name")
	}
	for _, want := range []string{"ftrace:function", "ftrace:print", "sched:sched_switch", "raw_syscalls:sys_enter"} {
		if !slices.Contains(names(evs), want) {
			t.Errorf("Events() lacks %s", want)
		}
	}
	evs[0].Name = "changed"
	if again, _ := c.Events(); again[0].Name == "changed" {
		t.Error("Events() returns the catalog's own slice")
	}
	if c.Where() != "trace.dat file "+sample {
		t.Errorf("Where() = %q", c.Where())
	}
	if w := File(f).Where(); w != "trace.dat file" {
		t.Errorf("File(f).Where() = %q", w)
	}
}

func TestFormat(t *testing.T) {
	live, root := fakeLive(t)
	f, file := openSample(t)
	for _, tc := range []struct {
		name string
		c    Catalog
		want func(e Event) string
	}{
		{"live", live, func(e Event) string {
			b, err := os.ReadFile(filepath.Join(root, "events", e.System, e.Name, "format"))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}},
		{"file", file, func(e Event) string {
			for _, ev := range f.Events {
				if ev.Format.System == e.System && ev.Format.Name == e.Name {
					return ev.Text
				}
			}
			t.Fatalf("no %s in the sample", e)
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, e := range []Event{{"sched", "sched_switch"}, {"raw_syscalls", "sys_enter"}} {
				fm, text, err := tc.c.Format(e)
				if err != nil {
					t.Fatalf("Format(%s) = %v", e, err)
				}
				if fm.FullName() != e.String() || fm.Field("common_pid") == nil {
					t.Errorf("Format(%s) = %s with fields %v", e, fm.FullName(), fm.Fields)
				}
				if want := tc.want(e); text != want {
					t.Errorf("Format(%s) text = %q, want %q", e, text, want)
				}
			}
			_, _, err := tc.c.Format(Event{"sched", "sched_swich"})
			var ee *EventError
			if !errors.As(err, &ee) || !errors.Is(err, ErrNoEvent) || !errors.Is(err, tracefs.ErrNoEvent) ||
				!slices.Contains(ee.Suggestions, "sched:sched_switch") {
				t.Errorf("Format(unknown) = %v, want an *EventError suggesting sched:sched_switch", err)
			}
		})
	}
}

func TestKallsyms(t *testing.T) {
	live, _ := fakeLive(t)
	want, err := os.ReadFile(kallsyms)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := live.Kallsyms(); got != string(want) || err != nil {
		t.Errorf("live Kallsyms() = %.40q, %v, want %.40q", got, err, want)
	}
	f, file := openSample(t)
	if got, err := file.Kallsyms(); got != f.Kallsyms || got == "" || err != nil {
		t.Errorf("file Kallsyms() = %d bytes, %v, want the file's %d", len(got), err, len(f.Kallsyms))
	}
	for _, c := range []Catalog{live, file} {
		tab, err := Symbols(c)
		if err != nil {
			t.Fatalf("Symbols(%s) = %v", c.Where(), err)
		}
		if again, _ := Symbols(c); again != tab {
			t.Errorf("Symbols(%s) parsed the symbols again", c.Where())
		}
		lo, hi, err := Funcs(c)("schedule", 0)
		if err != nil || lo == 0 || hi <= lo {
			t.Errorf("Funcs(%s)(schedule) = %#x, %#x, %v", c.Where(), lo, hi, err)
		}
	}
	noSyms := File(&tracedat.File{Events: map[int]*tracedat.Event{}})
	if _, err := Symbols(noSyms); err == nil || err.Error() != "the file holds no kernel symbols" {
		t.Errorf("Symbols(a file without kallsyms) = %v", err)
	}
}
