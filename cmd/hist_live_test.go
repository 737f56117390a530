package cmd

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/hist"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

func TestPrivilegedHistGetppidCount(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 1234
	// --follow: the workload's calls only, whatever else runs a cmd.test.
	args := append([]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "common_pid.execname,id.syscall", "--follow"}, workload(t, fmt.Sprintf("getppid %d", n))...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace hist exit %d, stderr:\n%s", code, errOut)
	}
	self := commOf(t)
	re := regexp.MustCompile(`(?m)^\{ common_pid: ` + regexp.QuoteMeta(self) + ` +\[ *\d+\], id: sys_getppid +\[110\] \} hitcount: +(\d+)$`)
	m := re.FindAllStringSubmatch(out, -1)
	if len(m) != 1 {
		t.Fatalf("want exactly one sys_getppid line for %s, got %d in:\n%s", self, len(m), out)
	}
	if m[0][1] != fmt.Sprint(n) {
		t.Errorf("hitcount = %s, want %d", m[0][1], n)
	}
	if !strings.HasPrefix(out, "# event histogram\n#\n# trigger info: hist:keys=common_pid.execname,id.syscall:vals=hitcount:sort=hitcount:size=2048 [active]\n#\n\n") {
		t.Errorf("header:\n%s", out[:min(len(out), 300)])
	}
}

func TestPrivilegedHistExitStatus(t *testing.T) {
	testutil.RequirePrivileged(t)
	args := append([]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "id"}, workload(t, "exit 7")...)
	if _, errOut, code := run(t, args...); code != 7 {
		t.Fatalf("exit status = %d, want 7 (stderr %s)", code, errOut)
	}
}

func TestPrivilegedHistDuration(t *testing.T) {
	testutil.RequirePrivileged(t)
	out, errOut, code := run(t, "hist", "-e", "sched:sched_switch", "-k", "common_cpu", "--duration", "200ms")
	if code != 0 || !strings.Contains(out, "\nTotals:\n    Hits: ") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestPrivilegedHistWritesMatchInterpreter runs hists over a workload that
// writes 1..n bytes to fd 100, in BPF and in the interpreter (the file
// engine of gtrace hist -i) over records with the same field values, and
// wants the same bytes out.
func TestPrivilegedHistWritesMatchInterpreter(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 300
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.Format(tracefs.Event{System: "syscalls", Name: "sys_enter_write"})
	if err != nil {
		t.Fatal(err)
	}
	comm := commOf(t)
	cases := []struct {
		name string
		args []string
	}{
		{"sum", []string{"-k", "comm", "--vals", "count", "-f", "fd == 100"}},
		{"sum-hex", []string{"-k", "fd", "--vals", "count.hex,count", "-f", "fd == 100"}},
		{"log2", []string{"-k", "count.log2", "-f", "fd == 100"}},
		{"buckets", []string{"-k", "count.buckets=32", "-s", "count", "-f", "fd == 100"}},
		{"filter", []string{"-k", "count.buckets=10", "-f", "fd == 100 && (count < 50 || count > 250) && !(count & 1)"}},
		{"dropped", []string{"-k", "count", "--size", "128", "-s", "count.descending", "-f", "fd == 100"}},
		{"two-sort", []string{"-k", "count.log2,fd", "--vals", "count", "-s", "fd,count.descending", "-f", "fd == 100 && count >= 3"}},
		{"raw", []string{"hist:keys=count.buckets=100:vals=count:sort=count.descending:size=128 if fd == 100 && count <= 200"}},
		{"expr", []string{"-k", "count/7,fd-count", "--vals", "count*3-fd,count/fd", "-s", "count/7", "-f", "fd == 100"}},
		{"unary", []string{"hist:keys=-(count-1000):vals=count/1000,fd/3*2:sort=-(count-1000):size=512 if fd == 100"}},
		{"timestamp", []string{"-k", "common_timestamp/1000000000000000", "--vals", "common_timestamp.usecs-common_timestamp.usecs", "-f", "fd == 100"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// --follow: only the workload's writes, whatever else writes
			// to a descriptor 100 meanwhile.
			args := append(append([]string{"hist", "-e", "syscalls:sys_enter_write"}, tc.args...), "--follow")
			args = append(args, workload(t, fmt.Sprintf("write %d", n))...)
			got, errOut, code := run(t, args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			want := interpret(t, tc.args, f, comm, n)
			if got != want {
				t.Errorf("BPF and interpreter differ\nBPF:\n%s\ninterpreter:\n%s", got, want)
			}
		})
	}
}

// TestPrivilegedHistRawSyscallsMatchInterpreter runs hists of the
// raw_syscalls events, whose programs run on raw tracepoints where the
// kernel has BTF and build the record themselves, over a helper that makes
// exactly n getppid calls, and compares them with the interpreter (the
// file engine) over the records the kernel would write.
func TestPrivilegedHistRawSyscallsMatchInterpreter(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 777
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	comm, pid := commOf(t), os.Getpid() // the helper's parent is this test
	exit, err := fs.Format(tracefs.Event{System: "raw_syscalls", Name: "sys_exit"})
	if err != nil {
		t.Fatal(err)
	}
	// sys_exit: only the helper's calls return this pid from getppid.
	args := []string{"-k", "id.syscall,ret", "--vals", "id", "-f", fmt.Sprintf("id == 110 && ret == %d", pid)}
	got, errOut, code := run(t, append(append([]string{"hist", "-e", "raw_syscalls:sys_exit"}, args...), workload(t, fmt.Sprintf("getppid %d", n))...)...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	id, ret := exit.Field("id"), exit.Field("ret")
	want := interpretRecords(t, args, exit, comm, n, func(rec []byte, _ int) {
		putUint(rec[id.Offset:id.Offset+id.Size], 110)
		putUint(rec[ret.Offset:ret.Offset+ret.Size], uint64(pid))
	})
	if got != want {
		t.Errorf("sys_exit: BPF and interpreter differ\nBPF:\n%s\ninterpreter:\n%s", got, want)
	}
	// sys_enter with a filter on the record: the helper's line only.
	got, errOut, code = run(t, append([]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "common_pid.execname,id.syscall", "--vals", "id", "-f", "id == 110"}, workload(t, fmt.Sprintf("getppid %d", n))...)...)
	line := regexp.MustCompile(`(?m)^\{ common_pid: `+regexp.QuoteMeta(comm)+` +\[ *\d+\], id: sys_getppid +\[110\] \} hitcount: +(\d+)  id: +(\d+)$`).FindAllStringSubmatch(got, -1)
	if code != 0 || len(line) != 1 || line[0][1] != fmt.Sprint(n) || line[0][2] != fmt.Sprint(110*n) {
		t.Errorf("sys_enter: exit %d (%s), helper lines %v, want one with hitcount %d and id %d:\n%s", code, errOut, line, n, 110*n, got)
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "{ ") && !strings.Contains(l, "id: sys_getppid ") {
			t.Errorf("the filter id == 110 let another system call in: %s", l)
		}
	}
}

// interpret runs the same hist in the file engine over n records of
// sys_enter_write with fd 100 and count 1..n.
func interpret(t *testing.T, args []string, f *parse.Format, comm string, n int) string {
	t.Helper()
	fd, count := f.Field("fd"), f.Field("count")
	return interpretRecords(t, args, f, comm, n, func(rec []byte, i int) {
		putUint(rec[fd.Offset:fd.Offset+fd.Size], 100)
		putUint(rec[count.Offset:count.Offset+count.Size], uint64(i))
	})
}

// interpretRecords runs the hist of args in the file engine at one worker,
// as gtrace hist -i runs it over a recording, and returns its text. The
// engine is fed n records of format f, the i-th (from 1) filled in by
// fill, made on CPU 0 by a task named comm, the workload's name: their
// common_pid is this process's, which runs the same binary.
func interpretRecords(t *testing.T, args []string, f *parse.Format, comm string, n int, fill func(rec []byte, i int)) string {
	t.Helper()
	o := &histOptions{}
	c := newHistCmd(&Deps{}, func(got *histOptions) error { *o = *got; return nil })
	c.SetArgs(append(args, "-e", "x"))
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	spec, err := histSpec(o.Hists[0])
	if err != nil {
		t.Fatal(err)
	}
	e, err := hist.NewEngine(spec, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	fixed := 0
	for _, fld := range f.Fields {
		fixed = max(fixed, fld.Offset+fld.Size)
	}
	rec := make([]byte, fixed)
	typ, pid := f.Field("common_type"), f.Field("common_pid")
	for i := 1; i <= n; i++ {
		clear(rec)
		putUint(rec[typ.Offset:typ.Offset+typ.Size], uint64(f.ID))
		putUint(rec[pid.Offset:pid.Offset+pid.Size], uint64(os.Getpid()))
		fill(rec, i)
		e.Add(rec, 0, comm)
	}
	tab := e.Table()
	tab.Sort()
	var b bytes.Buffer
	if err := hist.WriteText(&b, []*hist.Table{tab}, []string{spec.String() + " [active]"}, hist.LocalResolver()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func putUint(b []byte, v uint64) {
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
}

// commOf is the task name of the workload process: the test binary's name.
func commOf(t *testing.T) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	base := self[strings.LastIndexByte(self, '/')+1:]
	if len(base) > 15 {
		base = base[:15]
	}
	return base
}
