package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/probe"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// fakeDeps serves a tracefs tree made of the real format files of
// internal/testutil (named SYSTEM_EVENT.format).
func fakeDeps(t *testing.T) (*Deps, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	root := t.TempDir()
	formats := testutil.FormatFiles()
	files, err := fs.Glob(formats, "*.format")
	if err != nil || len(files) == 0 {
		t.Fatalf("no format fixtures: %v", err)
	}
	for _, p := range files {
		b, err := fs.ReadFile(formats, p)
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(filepath.Base(p), ".format")
		name := strings.SplitN(string(b), "\n", 2)[0][len("name: "):]
		sys := strings.TrimSuffix(base, "_"+name)
		dir := filepath.Join(root, "events", sys, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "format"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	return &Deps{Out: &out, Err: &errb, TraceFS: func() (*tracefs.FS, error) { return tracefs.At(root), nil }}, &out, &errb
}

// runDeps runs the root command with d as Main does.
func runDeps(d *Deps, args ...string) int {
	root := newRootCmd(d)
	root.SetArgs(args)
	root.SetOut(d.Out)
	root.SetErr(d.Err)
	// Bad input is refused at once; a command that runs on instead is
	// stopped after runLimit and its exit status fails the test.
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	return handleError(d.Err, root.ExecuteContext(ctx))
}

func TestHistCmdFlags(t *testing.T) {
	var got *histOptions
	c := newHistCmd(&Deps{}, func(o *histOptions) error { got = o; return nil })
	c.SetArgs([]string{"-e", "raw_syscalls:sys_enter", "-k", "common_pid.execname,id.syscall", "--vals", "args", "-s", "hitcount.descending",
		"--size", "100", "-f", "id == 1", "-P", "1," + strconv.Itoa(os.Getpid()), "--follow", "--interval", "1s", "--clear", "--format", "json", "--", "sleep", "1"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	want := &histOptions{
		Hists: []histEvent{{Pattern: "raw_syscalls:sys_enter", Flags: parse.HistFlags{Keys: []string{"common_pid.execname,id.syscall"}, Vals: []string{"args"},
			Sort: []string{"hitcount.descending"}, Size: "100", Filter: "id == 1"}}},
		PIDs: []int{1, os.Getpid()}, Follow: true, Interval: time.Second, Clear: true,
		Format: "json", Command: []string{"sleep", "1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("options = %+v\nwant %+v", got, want)
	}
}

// TestHistCmdBinding checks that the options of a hist bind to the -e
// before them, those before the first -e to every event that does not
// give its own, and a 'hist:...' string to the -e before it.
func TestHistCmdBinding(t *testing.T) {
	sw, enter := "sched:sched_switch", "raw_syscalls:sys_enter"
	flags := func(pattern string, f parse.HistFlags) histEvent { return histEvent{Pattern: pattern, Flags: f} }
	keys := func(k ...string) []string { return k }
	tests := []struct {
		args []string
		want []histEvent
	}{
		{[]string{"-e", sw, "-k", "prev_comm", "-e", enter, "-k", "id.syscall"},
			[]histEvent{flags(sw, parse.HistFlags{Keys: keys("prev_comm")}), flags(enter, parse.HistFlags{Keys: keys("id.syscall")})}},
		// Before the first -e: for every event, option by option.
		{[]string{"-k", "common_pid", "-s", "hitcount", "-f", "common_pid > 1", "-e", sw, "-e", enter, "-k", "id", "--vals", "args", "--size", "256"},
			[]histEvent{
				flags(sw, parse.HistFlags{Keys: keys("common_pid"), Sort: keys("hitcount"), Filter: "common_pid > 1"}),
				flags(enter, parse.HistFlags{Keys: keys("id"), Vals: keys("args"), Sort: keys("hitcount"), Filter: "common_pid > 1", Size: "256"})}},
		// A repeated list adds up; global flags do not cut the binding.
		{[]string{"-e", sw, "-k", "prev_pid", "--format", "csv", "-k", "next_pid", "-e", enter, "-k", "id"},
			[]histEvent{flags(sw, parse.HistFlags{Keys: keys("prev_pid", "next_pid")}), flags(enter, parse.HistFlags{Keys: keys("id")})}},
		// A hist string goes with the -e before it, or every -e before the first.
		{[]string{"-e", sw, "hist:keys=prev_pid", "-e", enter, "-k", "id"},
			[]histEvent{{Pattern: sw, Raw: "hist:keys=prev_pid"}, flags(enter, parse.HistFlags{Keys: keys("id")})}},
		{[]string{"-e", sw, "-k", "prev_pid", "-e", enter, "hist:keys=id"},
			[]histEvent{flags(sw, parse.HistFlags{Keys: keys("prev_pid")}), {Pattern: enter, Raw: "hist:keys=id"}}},
		{[]string{"hist:keys=common_pid", "-e", sw, "-e", enter},
			[]histEvent{{Pattern: sw, Raw: "hist:keys=common_pid"}, {Pattern: enter, Raw: "hist:keys=common_pid"}}},
	}
	for _, tc := range tests {
		var got *histOptions
		c := newHistCmd(&Deps{}, func(o *histOptions) error { got = o; return nil })
		c.SetArgs(tc.args)
		if err := c.Execute(); err != nil {
			t.Errorf("hist %q: %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(got.Hists, tc.want) {
			t.Errorf("hist %q:\n got %+v\nwant %+v", tc.args, got.Hists, tc.want)
		}
	}
}

// TestHistCmdBindingErrors checks the bindings that are refused: two of
// a one-value option or two hist strings on one -e, a string and flags on
// one -e, and an -e without keys.
func TestHistCmdBindingErrors(t *testing.T) {
	sw, enter := "sched:sched_switch", "raw_syscalls:sys_enter"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-e", sw, "-k", "prev_pid", "-f", "prev_pid > 1", "-f", "prev_pid < 9"}, "-e sched:sched_switch already has a filter: join the two with && in one -f"},
		{[]string{"-f", "common_pid > 1", "-f", "common_pid < 9", "-e", sw, "-k", "prev_pid"}, "the options before the first -e already has a filter"},
		{[]string{"-e", sw, "-k", "prev_pid", "--size", "128", "--size", "256"}, "-e sched:sched_switch already has a size"},
		{[]string{"-e", sw, "hist:keys=prev_pid", "hist:keys=next_pid"}, "-e sched:sched_switch already has a 'hist:...' string"},
		{[]string{"-e", sw, "hist:keys=prev_pid", "-f", "prev_pid > 1"}, "give the hist of -e sched:sched_switch either as a 'hist:...' string or with -k/--vals/-s/--size/-f/--name, not both"},
		{[]string{"hist:keys=common_pid", "-k", "common_pid", "-e", sw}, "not both"},
		{[]string{"-e", sw, "-k", "prev_pid", "-e", enter, "hist:keys=id", "-k", "common_pid"}, "give the hist of -e raw_syscalls:sys_enter either as a 'hist:...' string"},
		{[]string{"hist:keys=common_pid", "-e", sw, "-e", enter, "-k", "id"}, "-e raw_syscalls:sys_enter has flags of its own, but the 'hist:...' string before the first -e is the hist of every event"},
		{[]string{"-e", sw, "-k", "prev_pid", "-e", enter}, "hist needs keys for -e raw_syscalls:sys_enter"},
	}
	for _, tc := range tests {
		c := newHistCmd(&Deps{}, func(o *histOptions) error { return nil })
		c.SetArgs(tc.args)
		c.SetOut(io.Discard)
		c.SetErr(io.Discard)
		if err := c.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("hist %q: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestHistUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"hist", "-k", "id"}, "hist needs an event"},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter"}, "hist needs keys"},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "id", "hist:keys=id"}, "not both"},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "id", "--format", "xml"}, `--format:1:1: invalid format "xml"`},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "id", "--clear"}, "--clear needs --interval"},
		{[]string{"hist", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"nosuchcommand"}, "unknown command"},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "ustacktrace.hex"}, "--keys:1:1: invalid field modifier .hex: ustacktrace takes no modifier\n  ustacktrace.hex\n  ^~~~~~~~~~~~~~~\n"},
		{[]string{"hist", "-e", "raw_syscalls:sys_entr", "-k", "id"}, `unknown event "raw_syscalls:sys_entr" (did you mean "raw_syscalls:sys_enter", "raw_syscalls:sys_exit"?)`},
	}
	for _, tc := range tests {
		d, _, errb := fakeDeps(t)
		if code := runDeps(d, tc.args...); code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("gtrace %v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

func TestHistFieldErrorsHaveCarets(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "common_pid,idd"},
			"gtrace: --keys:1:12: unknown field \"idd\" in raw_syscalls:sys_enter\n  common_pid,idd\n             ^~~\n  hint: did you mean \"id\"?\n"},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "hist:keys=id:vals=args"},
			"gtrace: hist:1:19: field \"args\" (array) cannot be a value: values must be numeric fields of the event\n  hist:keys=id:vals=args\n                    ^~~~\n"},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "common_pid.stacktrace"},
			"gtrace: --keys:1:12: invalid field modifier .stacktrace: field \"common_pid\" of raw_syscalls:sys_enter is not a stack\n  common_pid.stacktrace\n             ^~~~~~~~~~\n  hint: the kernel stack of the event is the key common_stacktrace\n"},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "hist:keys=id,cpu.stacktrace"},
			"gtrace: hist:1:18: invalid field modifier .stacktrace: \"cpu\" is not a stack\n  hist:keys=id,cpu.stacktrace\n                   ^~~~~~~~~~\n  hint: the kernel stack of the event is the key common_stacktrace\n"},
	}
	for _, tc := range tests {
		d, _, errb := fakeDeps(t)
		if code := runDeps(d, tc.args...); code != exitUsage || errb.String() != tc.want {
			t.Errorf("gtrace %v: exit %d, stderr\n%s\nwant exit 2 and\n%s", tc.args, code, errb.String(), tc.want)
		}
	}
}

func TestHistDryRun(t *testing.T) {
	d, out, errb := fakeDeps(t)
	code := runDeps(d, "hist", "-e", "raw_syscalls:sys_enter", "-k", "common_pid.execname,id.syscall", "-f", "id == 39", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// Where the kernel has BTF, sys_enter's hist runs on its raw
	// tracepoint (pkg/bpfgen/direct.go); without, the plan says why not.
	prog := "# on classic tracepoint raw_syscalls:sys_enter\ngtrace_hist (TracePoint, "
	switch {
	case runtime.GOARCH != "amd64":
	case probe.HaveKernelBTF():
		prog = "# on raw tracepoint sys_enter: the record is built from its arguments\ngtrace_hist (Tracing, "
	default:
		prog = "# on classic tracepoint raw_syscalls:sys_enter: no kernel BTF (/sys/kernel/btf/vmlinux) for raw tracepoint sys_enter\ngtrace_hist (TracePoint, "
	}
	for _, want := range []string{
		"# trigger info: hist:keys=common_pid.execname,id.syscall:vals=hitcount:sort=hitcount:size=2048 if id == 39 [active]\n",
		"  key   common_pid.execname (number)\n",
		"  key   id.syscall (number)\n",
		prog,
		"Call FnMapLookupElem",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--dry-run output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestList(t *testing.T) {
	d, out, _ := fakeDeps(t)
	if code := runDeps(d, "list", "sched:sched_s*", "-F"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(out.String(), "sched:sched_switch\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n") ||
		!strings.Contains(out.String(), "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n") {
		t.Errorf("list -F output:\n%s", out.String())
	}
	d, out, _ = fakeDeps(t)
	if code := runDeps(d, "list"); code != 0 || !strings.Contains(out.String(), "raw_syscalls:sys_enter\n") {
		t.Errorf("list: exit %d, output %s", code, out.String())
	}
}

func TestVersion(t *testing.T) {
	d, out, _ := fakeDeps(t)
	if code := runDeps(d, "--version"); code != 0 || out.String() != "gtrace version dev\n" {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
}

func TestCompletion(t *testing.T) {
	d, out, _ := fakeDeps(t)
	if code := runDeps(d, "completion", "bash"); code != 0 || !strings.HasPrefix(out.String(), "# bash completion") {
		t.Errorf("completion bash: exit %d, %.40q", code, out.String())
	}
}

// TestHistFilePIDs checks that -P over a file (-i) takes the ids of
// processes that are gone, which a live -P refuses.
func TestHistFilePIDs(t *testing.T) {
	pid := deadPID(t)
	dead := strconv.Itoa(pid)
	var got *histOptions
	c := newHistCmd(&Deps{}, func(o *histOptions) error { got = o; return nil })
	c.SetArgs([]string{"-P", dead + ",1", "-i", "x.dat", "-e", "raw_syscalls:sys_enter", "-k", "id"})
	if err := c.Execute(); err != nil || !reflect.DeepEqual(got.PIDs, []int{pid, 1}) {
		t.Fatalf("hist -i -P %s,1: %v, pids %v", dead, err, got)
	}
	c = newHistCmd(&Deps{}, func(o *histOptions) error { return nil })
	c.SetArgs([]string{"-P", dead, "-e", "raw_syscalls:sys_enter", "-k", "id"})
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	if err := c.Execute(); err == nil || !strings.Contains(err.Error(), "no process "+dead) {
		t.Fatalf("live hist -P %s: %v, want no process", dead, err)
	}
}

// TestHistCmdHistTrigger: -R 'hist:...' is a hist of the -e before it,
// as the same string given as the -e's own hist; with an own hist too,
// the event has both, and the other -R stay with the first.
func TestHistCmdHistTrigger(t *testing.T) {
	sw := "sched:sched_switch"
	parsed := func(args ...string) []string {
		t.Helper()
		var got *histOptions
		c := newHistCmd(&Deps{}, func(o *histOptions) error { got = o; return nil })
		c.SetArgs(args)
		if err := c.Execute(); err != nil {
			t.Fatalf("hist %q: %v", args, err)
		}
		var specs []string
		for _, h := range got.Hists {
			spec, err := histSpec(h)
			if err != nil {
				t.Fatalf("hist %q: %v", args, err)
			}
			specs = append(specs, fmt.Sprintf("%s %s %q", h.Pattern, spec, h.Triggers))
		}
		return specs
	}
	own := parsed("-e", sw, "hist:keys=next_pid:ts=common_timestamp")
	r := parsed("-e", sw, "-R", "hist:keys=next_pid:ts=common_timestamp")
	if !reflect.DeepEqual(own, r) || len(own) != 1 {
		t.Errorf("the -e's own hist %q, the same with -R %q", own, r)
	}
	got := parsed("-e", sw, "-k", "prev_pid", "-R", "traceoff", "-R", "hist:keys=next_pid")
	want := []string{
		sw + ` hist:keys=prev_pid:vals=hitcount:sort=hitcount:size=2048 ["traceoff"]`,
		sw + ` hist:keys=next_pid:vals=hitcount:sort=hitcount:size=2048 []`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got = parsed("-e", sw, "-R", "traceoff", "-R", "hist:keys=next_pid", "-R", "hist:keys=prev_pid")
	want = []string{
		sw + ` hist:keys=next_pid:vals=hitcount:sort=hitcount:size=2048 ["traceoff"]`,
		sw + ` hist:keys=prev_pid:vals=hitcount:sort=hitcount:size=2048 []`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestPrivilegedHistSessionLiveRefused: what a live inter-event session does not
// take is refused with exit 2.
func TestPrivilegedHistSessionLiveRefused(t *testing.T) {
	testutil.RequirePrivileged(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hist", "--synth", "lat u64 lat", "-e", "sched:sched_switch", "-k", "prev_pid", "--start-off"},
			"--start-off waits for a traceon trigger, which an inter-event session does not run"},
		{[]string{"hist", "-e", "sched:sched_switch", "-R", "hist:keys=next_pid:ts0=common_timestamp", "-R", "traceoff"},
			"-R traceoff: the hists of an inter-event session run no other triggers (only -R 'hist:...')"},
	} {
		_, errOut, code := run(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("gtrace %q: exit %d\n%s\nwant exit 2 and\n%s", tc.args, code, errOut, tc.want)
		}
	}
}
