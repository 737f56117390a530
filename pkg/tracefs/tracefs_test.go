package tracefs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// fakeFS builds a tracefs-like tree with the given events.
func fakeFS(t *testing.T, events ...string) *FS {
	t.Helper()
	root := t.TempDir()
	for _, e := range events {
		sys, ev, _ := strings.Cut(e, ":")
		dir := filepath.Join(root, "events", sys, ev)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		format := "name: " + ev + "\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\nprint fmt: \"id=%ld\", REC->id\n"
		if err := os.WriteFile(filepath.Join(dir, "format"), []byte(format), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return At(root)
}

func names(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.String())
	}
	return out
}

func TestMatch(t *testing.T) {
	fs := fakeFS(t, "sched:sched_switch", "sched:sched_wakeup", "raw_syscalls:sys_enter", "raw_syscalls:sys_exit")
	tests := []struct {
		pattern string
		want    []string
	}{
		{"sched:sched_switch", []string{"sched:sched_switch"}},
		{"sched:*", []string{"sched:sched_switch", "sched:sched_wakeup"}},
		{"*:sys_e*", []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"}},
		{"sys_enter", []string{"raw_syscalls:sys_enter"}},
		{"raw_syscalls", []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"}},
		{"*:*", []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit", "sched:sched_switch", "sched:sched_wakeup"}},
	}
	for _, tc := range tests {
		got, err := fs.Match(tc.pattern)
		if err != nil || !reflect.DeepEqual(names(got), tc.want) {
			t.Errorf("Match(%q) = %v, %v, want %v", tc.pattern, names(got), err, tc.want)
		}
	}
}

func TestUnknownEventSuggests(t *testing.T) {
	fs := fakeFS(t, "sched:sched_switch", "raw_syscalls:sys_enter")
	_, err := fs.Lookup("sched:sched_swich")
	if !errors.Is(err, ErrNoEvent) || !strings.Contains(err.Error(), `did you mean "sched:sched_switch"?`) {
		t.Errorf("Lookup(typo) = %v", err)
	}
	if _, err := fs.Lookup("sched:*"); err == nil {
		t.Error("Lookup(pattern) = nil error")
	}
}

func TestFormat(t *testing.T) {
	fs := fakeFS(t, "raw_syscalls:sys_enter")
	f, err := fs.Format(Event{"raw_syscalls", "sys_enter"})
	if err != nil {
		t.Fatal(err)
	}
	if f.FullName() != "raw_syscalls:sys_enter" || f.ID != 7 || f.Field("id") == nil {
		t.Errorf("Format() = %+v", f)
	}
	if _, err := fs.Format(Event{"raw_syscalls", "sys_entr"}); !errors.Is(err, ErrNoEvent) {
		t.Errorf("Format(missing) = %v, want ErrNoEvent", err)
	}
}

func TestPrivilegedOpen(t *testing.T) {
	testutil.RequirePrivileged(t)
	fs, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.Format(Event{"raw_syscalls", "sys_enter"})
	if err != nil {
		t.Fatal(err)
	}
	if id := f.Field("id"); id == nil || id.Offset != 8 || id.Size != 8 || !id.Signed {
		t.Errorf("raw_syscalls:sys_enter id = %+v", id)
	}
}

func TestReadFormat(t *testing.T) {
	fs := fakeFS(t, "raw_syscalls:sys_enter")
	f, text, err := fs.ReadFormat(Event{"raw_syscalls", "sys_enter"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(fs.Path("events", "raw_syscalls", "sys_enter", "format"))
	if f.FullName() != "raw_syscalls:sys_enter" || text != string(b) {
		t.Errorf("ReadFormat() = %s, %q, want the format and %q", f.FullName(), text, b)
	}
	if _, _, err := fs.ReadFormat(Event{"raw_syscalls", "sys_entr"}); !errors.Is(err, ErrNoEvent) {
		t.Errorf("ReadFormat(no such event) = %v, want ErrNoEvent", err)
	}
}

func TestKallsyms(t *testing.T) {
	fs := fakeFS(t)
	fs.KallsymsPath = filepath.Join(t.TempDir(), "kallsyms")
	want := "ffffffff81000000 T _stext\n"
	if err := os.WriteFile(fs.KallsymsPath, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := fs.Kallsyms(); got != want || err != nil {
		t.Errorf("Kallsyms() = %q, %v, want %q", got, err, want)
	}
	fs.KallsymsPath = filepath.Join(t.TempDir(), "none")
	if _, err := fs.Kallsyms(); err == nil {
		t.Error("Kallsyms() of a missing file: no error")
	}
}
