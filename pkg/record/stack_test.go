package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// stackTraceFS is the fake tracefs with the ftrace stack formats of a
// 6.18 kernel (testdata/ftrace) added.
func stackTraceFS(t *testing.T) *tracefs.FS {
	fs := fakeTraceFS(t)
	for _, name := range []string{"kernel_stack", "user_stack"} {
		b, err := os.ReadFile(filepath.Join("testdata", "ftrace", name+".format"))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(fs.Root, "events", "ftrace", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "format"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

// TestNewPlanStacktrace: a stacktrace trigger puts the event on a classic
// program of its own with the stack action after the record, the stack
// formats in the plan for the file, the count in the counter map, and
// says so in --dry-run's description.
func TestNewPlanStacktrace(t *testing.T) {
	fs := stackTraceFS(t)
	p, err := NewPlan(fs, &Options{Events: []EventSpec{
		{Pattern: "syscalls:sys_enter_getppid", Triggers: []string{"stacktrace:2"}},
		{Pattern: "syscalls:sys_enter_write", Triggers: []string{"stacktrace if count > 10"}},
		{Pattern: "raw_syscalls:sys_enter"},
	}, Classic: true, UserStack: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ev := range p.Stacks {
		names = append(names, ev.Format.FullName())
	}
	if strings.Join(names, " ") != "ftrace:kernel_stack ftrace:user_stack" {
		t.Errorf("stack formats %v, want kernel_stack and user_stack", names)
	}
	m := p.Program.Collection.Maps[StackCountsMapName]
	if m == nil || len(m.Contents) != 1 || m.Contents[0].Value != uint64(2) {
		t.Errorf("counter map %+v: want one word of 2", m)
	}
	var b strings.Builder
	if err := p.Describe(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"sys_enter_getppid (ID 305), 12-byte records, the kernel and user stacks of each event (the first 2)\n",
		"sys_enter_write (ID 840), 40-byte records, the kernel and user stacks of each event that passes count > 10\n",
		"FnGetStack",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Describe() lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Count(b.String(), "FnGetStack") != 4 {
		t.Errorf("%d bpf_get_stack calls, want 4 (2 kernel stacks, 2 user stacks)", strings.Count(b.String(), "FnGetStack"))
	}
	for _, r := range p.Program.Recorders {
		if r.Shared() {
			t.Errorf("recorder %+v shares its program", r)
		}
	}
	if p.Program.Collection.Programs[bpfgen.RecordProgName(0)] == nil {
		t.Error("no record program")
	}
}

// TestNewPlanStacktraceErrors: --user-stack without a stacktrace
// trigger, and a kernel without ftrace's kernel_stack format, are errors;
// stacktrace:0, which never fires, takes no stack.
func TestNewPlanStacktraceErrors(t *testing.T) {
	fs := stackTraceFS(t)
	_, err := NewPlan(fs, &Options{Events: []EventSpec{{Pattern: "syscalls:sys_enter_getppid"}}, Classic: true, UserStack: true})
	if err == nil || !strings.HasPrefix(err.Error(), "--user-stack adds the user stack to the kernel stacks of a stacktrace trigger") {
		t.Errorf("--user-stack alone: %v", err)
	}
	p, err := NewPlan(fs, &Options{Events: []EventSpec{{Pattern: "syscalls:sys_enter_getppid", Triggers: []string{"stacktrace:0"}}}, Classic: true})
	if err != nil || len(p.Stacks) != 0 {
		t.Errorf("stacktrace:0: %v, stack formats %d, want none", err, len(p.Stacks))
	}
	_, err = NewPlan(fakeTraceFS(t), &Options{Events: []EventSpec{{Pattern: "syscalls:sys_enter_getppid", Triggers: []string{"stacktrace"}}}, Classic: true})
	if err == nil || !strings.HasPrefix(err.Error(), "stacktrace of syscalls:sys_enter_getppid: read format of ftrace:kernel_stack: ") {
		t.Errorf("no kernel_stack format: %v", err)
	}
}
