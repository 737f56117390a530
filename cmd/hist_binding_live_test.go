package cmd

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// histTwoKeys are two hists with keys of their own, the second with a
// filter of its own, and the getppid lines each prints for a workload
// that calls getppid n times: one key is the process, the other the
// system call.
func histTwoKeys(n int, self string) (args []string, want []*regexp.Regexp) {
	args = []string{
		"-e", "raw_syscalls:sys_enter", "-k", "common_pid.execname,id.syscall",
		"-e", "raw_syscalls:sys_exit", "-k", "id", "-f", "id == 110",
	}
	want = []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\{ common_pid: ` + regexp.QuoteMeta(self) + ` +\[ *\d+\], id: sys_getppid +\[110\] \} hitcount: +` + fmt.Sprint(n) + `$`),
		regexp.MustCompile(`(?m)^\{ id:        110 \} hitcount: +` + fmt.Sprint(n) + `$`),
	}
	return args, want
}

// checkTwoHists checks that out is two hists, sys_enter's then
// sys_exit's, each with its own trigger and its getppid line.
func checkTwoHists(t *testing.T, out string, want []*regexp.Regexp) {
	t.Helper()
	blocks := strings.Split(out, "# event histogram\n")
	if len(blocks) != 3 || blocks[0] != "" {
		t.Fatalf("want two hists, got %d:\n%s", len(blocks)-1, out)
	}
	triggers := []string{
		"# trigger info: hist:keys=common_pid.execname,id.syscall:vals=hitcount:sort=hitcount:size=2048 [active]\n",
		"# trigger info: hist:keys=id:vals=hitcount:sort=hitcount:size=2048 if id == 110 [active]\n",
	}
	for i, b := range blocks[1:] {
		if !strings.Contains(b, triggers[i]) {
			t.Errorf("hist %d lacks %q:\n%s", i+1, triggers[i], b)
		}
		if m := want[i].FindAllString(b, -1); len(m) != 1 {
			t.Errorf("hist %d: want one line matching %s, got %d in:\n%s", i+1, want[i], len(m), b)
		}
	}
	if lines := strings.Count(blocks[2], "\n{ "); lines != 1 {
		t.Errorf("sys_exit's hist has %d entries, want 1 (id 110):\n%s", lines, blocks[2])
	}
}

// TestPrivilegedHistTwoEventsOwnKeys runs two hists with different keys in
// one run, live over a workload and then over a recording of it, and wants
// each to count the workload's getppid calls exactly.
func TestPrivilegedHistTwoEventsOwnKeys(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 321
	self := commOf(t)
	args, want := histTwoKeys(n, self)
	live := append(append([]string{"hist"}, args...), "--follow")
	out, errOut, code := run(t, append(live, workload(t, fmt.Sprintf("getppid %d", n))...)...)
	if code != 0 {
		t.Fatalf("gtrace hist exit %d, stderr:\n%s", code, errOut)
	}
	checkTwoHists(t, out, want)

	file := filepath.Join(t.TempDir(), "two.dat")
	rec := []string{"-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit", "--follow", "-o", file}
	if errOut, code := recordLive(t, append(rec, workload(t, fmt.Sprintf("getppid %d", n))...)...); code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	out, errOut, code = run(t, append([]string{"hist", "-i", file}, args...)...)
	if code != 0 {
		t.Fatalf("gtrace hist -i exit %d, stderr:\n%s", code, errOut)
	}
	checkTwoHists(t, out, want)

	// -P over the file: pid 1 made none of the workload's records.
	out, errOut, code = run(t, append([]string{"hist", "-i", file, "-P", "1"}, args...)...)
	if code != 0 || strings.Count(out, "# event histogram\n") != 2 || strings.Contains(out, "\n{ ") {
		t.Fatalf("gtrace hist -i -P 1: exit %d, want two empty hists, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
