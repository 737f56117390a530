package cmd

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

func TestListCmdFlags(t *testing.T) {
	tests := []struct {
		args []string
		want listOptions
	}{
		{nil, listOptions{}},
		{[]string{"sched:*", "-F"}, listOptions{Patterns: []string{"sched:*"}, Fields: true}},
		{[]string{"-i", "x.dat", "sys_enter"}, listOptions{Input: "x.dat", Patterns: []string{"sys_enter"}}},
		{[]string{"sched:*", "irq:*", "--format", "json"}, listOptions{Patterns: []string{"sched:*", "irq:*"}, Format: "json"}},
	}
	for _, tc := range tests {
		var got *listOptions
		c := newListCmd(&Deps{}, func(o *listOptions) error { got = o; return nil })
		c.SetArgs(tc.args)
		if tc.want.Format == "" {
			tc.want.Format = "text"
		}
		if len(tc.want.Patterns) == 0 {
			tc.want.Patterns = []string{}
		}
		if err := c.Execute(); err != nil || got == nil || !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("list %q: Execute() = %v, options %+v, want %+v", tc.args, err, got, tc.want)
		}
	}
}

// TestListFile lists the events of the sample file: every format it
// stores, ftrace's own included, the fields as the live list prints them.
func TestListFile(t *testing.T) {
	d, out, errb := fakeDeps(t)
	if code := runDeps(d, "list", "-i", sample); code != 0 {
		t.Fatalf("list -i: exit %d: %s", code, errb)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, want := range []string{"ftrace:function", "raw_syscalls:sys_enter", "sched:sched_switch"} {
		if !strings.Contains(out.String(), "\n"+want+"\n") {
			t.Errorf("list -i lacks %s", want)
		}
	}
	if len(lines) != 2323 {
		t.Errorf("list -i printed %d events, want the sample's 2323", len(lines))
	}

	// The sample and the fixtures of fakeDeps come from the same kernel.
	d, live, _ := fakeDeps(t)
	if code := runDeps(d, "list", "sched:sched_s*", "-F"); code != 0 {
		t.Fatalf("list -F: exit %d", code)
	}
	d, file, errb := fakeDeps(t)
	if code := runDeps(d, "list", "-i", sample, "sched:sched_switch", "-F"); code != 0 {
		t.Fatalf("list -i -F: exit %d: %s", code, errb)
	}
	if !strings.HasPrefix(live.String(), file.String()) || !strings.Contains(file.String(), "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n") {
		t.Errorf("list -i -F printed\n%s\nwant what the live list prints:\n%s", file, live)
	}
}

func TestListErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"list", "-i", sample, "sched_swich"}, exitFailure,
			`gtrace: no event of trace.dat file ` + sample + ` matches "sched_swich" (did you mean "sched:sched_switch"?)` + "\n"},
		{[]string{"list", "sched:sched_swich"}, exitFailure,
			`gtrace: no event matches "sched:sched_swich" (did you mean "sched:sched_switch", "sched:sched_waking"?)` + "\n"},
		{[]string{"list", "nosuch:*", "-F", "--format", "json"}, exitFailure, `gtrace: no event matches "nosuch:*"` + "\n"},
		{[]string{"list", "sched:*", "sched:sw[z-"}, exitUsage, "gtrace: pattern:1:9: bad glob \"sw[z-\"\n  sched:sw[z-\n          ^~~\n"},
		{[]string{"list", "--format", "yaml"}, exitUsage, `gtrace: --format:1:1: invalid format "yaml"`},
		{[]string{"list", "-i", "no-such-file.dat"}, exitFailure, "gtrace: open no-such-file.dat: no such file or directory\n"},
		{[]string{"list", "-i", ""}, exitUsage, "gtrace: -i needs a trace.dat file\n"},
	}
	for _, tc := range tests {
		d, out, errb := fakeDeps(t)
		code := runDeps(d, tc.args...)
		if code != tc.code || !strings.HasPrefix(errb.String(), tc.want) || out.Len() != 0 || tc.code == exitFailure && strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("gtrace %q: exit %d, stdout %q, stderr\n%s\nwant exit %d and\n%s", tc.args, code, out, errb, tc.code, tc.want)
		}
	}
}

// TestFileCommandImports: report and list work on files through pkg/report
// and pkg/catalog alone (and pkg/status for the progress line); nothing of
// the kernel side, no trace.dat reader.
func TestFileCommandImports(t *testing.T) {
	allowed := map[string]bool{
		"github.com/spf13/cobra":               true,
		"github.com/gtrace/gtrace/pkg/report":  true,
		"github.com/gtrace/gtrace/pkg/catalog": true,
		"github.com/gtrace/gtrace/pkg/parse":   true,
		"github.com/gtrace/gtrace/pkg/status":  true, // the progress line: a terminal, no kernel
	}
	for _, name := range []string{"report.go", "list.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(strings.SplitN(path, "/", 2)[0], ".") && !allowed[path] {
				t.Errorf("cmd/%s imports %s; file commands import only pkg/report, pkg/catalog, pkg/parse, pkg/status and cobra", name, path)
			}
		}
	}
}

// TestPrivilegedFileCommandsAsNobody runs gtrace list -i and gtrace report
// on a trace.dat file as user nobody: reading a file needs no privileges,
// no tracefs and no /proc/kallsyms.
func TestPrivilegedFileCommandsAsNobody(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir, err := os.MkdirTemp("", "gtrace-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gtrace")
	build := exec.Command("go", "build", "-o", bin, "github.com/gtrace/gtrace")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	dat := filepath.Join(dir, "trace.dat")
	if err := os.WriteFile(dat, b, 0o644); err != nil {
		t.Fatal(err)
	}
	nobody := func(args ...string) (string, string, int) {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Dir = dir
		c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}

	out, errOut, code := nobody("list", "-i", "trace.dat", "sched:sched_switch", "-F")
	if code != 0 || !strings.HasPrefix(out, "sched:sched_switch\n\tfield:unsigned short common_type;") {
		t.Errorf("list -i as nobody: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = nobody("list", "-i", "trace.dat")
	if code != 0 || strings.Count(out, "\n") != 2323 {
		t.Errorf("list -i as nobody: exit %d, %d lines, stderr %q", code, strings.Count(out, "\n"), errOut)
	}
	out, errOut, code = nobody("report", "trace.dat")
	if want := readGolden(t, "sched_switch.report.txt"); code != 0 || out != want {
		t.Errorf("report as nobody: exit %d, stderr %q, output differs from trace-cmd's:\n%s", code, errOut, testutil.FirstDiff(out, want))
	}
	out, errOut, code = nobody("report", "-F", "sched_switch: prev_pid == 0", "--format", "json", "trace.dat")
	var doc struct{ Events []json.RawMessage }
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || len(doc.Events) != 26 {
		t.Errorf("report -F --format json as nobody: exit %d, %v, %d events (want 26), stderr %q", code, err, len(doc.Events), errOut)
	}
}

// TestListPatternsAndJSON: several patterns list each matching event
// once; one that matches nothing still lists the others' and exits 1;
// --format json, with and without -F, parses with encoding/json into
// what the text list says.
func TestListPatternsAndJSON(t *testing.T) {
	out, errOut, code := runWithStdin(t, nil, "list", "-i", sample, "sched:sched_switch", "raw_syscalls:*", "sched_switch")
	if code != 0 || out != "raw_syscalls:sys_enter\nraw_syscalls:sys_exit\nsched:sched_switch\n" || errOut != "" {
		t.Errorf("list of three patterns: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = runWithStdin(t, nil, "list", "-i", sample, "sched:sched_switch", "nosuch")
	if code != exitFailure || out != "sched:sched_switch\n" || errOut != "gtrace: no event of trace.dat file "+sample+" matches \"nosuch\"\n" {
		t.Errorf("list of a pattern that matches and one that does not: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	type field struct {
		Name, Type     string
		Offset, Size   int
		Signed, Common bool
	}
	var doc struct {
		Events []struct {
			System, Name string
			ID           *int
			PrintFmt     *string `json:"print_fmt"`
			Fields       []field
		}
	}
	out, errOut, code = runWithStdin(t, nil, "list", "-i", sample, "--format", "json", "sched:*")
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("list --format json: exit %d, %v, stderr %q", code, err, errOut)
	}
	text, _, _ := runWithStdin(t, nil, "list", "-i", sample, "sched:*")
	var names []string
	for _, e := range doc.Events {
		if e.ID != nil || e.Fields != nil || e.PrintFmt != nil {
			t.Errorf("list --format json without -F: %s:%s has an id, fields or print_fmt", e.System, e.Name)
		}
		names = append(names, e.System+":"+e.Name+"\n")
	}
	if strings.Join(names, "") != text {
		t.Errorf("list --format json lists %q, the text list\n%s", names, text)
	}

	out, errOut, code = runWithStdin(t, nil, "list", "-i", sample, "--format", "json", "-F", "sched:sched_switch")
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || len(doc.Events) != 1 {
		t.Fatalf("list --format json -F: exit %d, %v, %d events, stderr %q", code, err, len(doc.Events), errOut)
	}
	e := doc.Events[0]
	if e.ID == nil || *e.ID != 372 || e.PrintFmt == nil || !strings.HasPrefix(*e.PrintFmt, `"prev_comm=%s prev_pid=%d`) {
		t.Errorf("list --format json -F: id %v, print_fmt %v", e.ID, e.PrintFmt)
	}
	want := map[string]field{
		"common_type": {"common_type", "unsigned short", 0, 2, false, true},
		"prev_comm":   {"prev_comm", "char[16]", 8, 16, false, false},
		"next_pid":    {"next_pid", "pid_t", 56, 4, true, false},
	}
	for _, f := range e.Fields {
		if w, ok := want[f.Name]; ok && f != w {
			t.Errorf("list --format json -F: field %+v, want %+v", f, w)
		}
		delete(want, f.Name)
	}
	if len(want) > 0 {
		t.Errorf("list --format json -F: no fields %v", want)
	}
}
