package cmd

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// pidFree finds the process ids in hist lines, to compare two runs of one
// workload.
var pidFree = regexp.MustCompile(`(common_pid:(?: \S+ +\[)?) *\d+`)

// checkBlocks checks that out is one hist per trigger info, in order, each
// with one line matching the regexp of the same index.
func checkBlocks(t *testing.T, what, out string, infos []string, lines []*regexp.Regexp) {
	t.Helper()
	blocks := strings.Split(out, "# event histogram\n")
	if len(blocks) != len(infos)+1 || blocks[0] != "" {
		t.Fatalf("%s: want %d hists, got %d:\n%s", what, len(infos), len(blocks)-1, out)
	}
	for i, b := range blocks[1:] {
		if !strings.Contains(b, "# trigger info: "+infos[i]+"\n") {
			t.Errorf("%s: hist %d lacks %q:\n%s", what, i+1, infos[i], b)
		}
		if m := lines[i].FindAllString(b, -1); len(m) != 1 {
			t.Errorf("%s: hist %d: want one line matching %s, got %d in:\n%s", what, i+1, lines[i], len(m), b)
		}
	}
}

// TestPrivilegedHistNamedAndSeveral runs, over a helper making n getppid
// and m getuid calls, a named hist of sys_enter_getppid and
// sys_enter_getuid (one table: n+m hits for the helper, printed for each
// event) and two hists of raw_syscalls:sys_enter with other keys, live and
// then with -i over a recording of the same workload: both count exactly.
func TestPrivilegedHistNamedAndSeveral(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n, m = 321, 123
	self := commOf(t)
	w := fmt.Sprintf("getppid-getuid %d %d", n, m)
	named := []string{"--name", "ids", "-k", "common_pid", "-e", "syscalls:sys_enter_getppid", "-e", "syscalls:sys_enter_getuid"}
	namedInfo := "hist:name=ids:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]"
	namedLine := regexp.MustCompile(fmt.Sprintf(`(?m)^\{ common_pid: +\d+ \} hitcount: +%d$`, n+m))
	filter := "id == 110 || id == 102"
	several := []string{
		"-e", "raw_syscalls:sys_enter", "-k", "id.syscall", "-f", filter,
		"-e", "raw_syscalls:sys_enter", "-k", "common_pid.execname", "-f", filter,
	}
	severalInfos := []string{
		"hist:keys=id.syscall:vals=hitcount:sort=hitcount:size=2048 if " + filter + " [active]",
		"hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:size=2048 if " + filter + " [active]",
	}
	severalLines := []*regexp.Regexp{
		regexp.MustCompile(fmt.Sprintf(`(?m)^\{ id: sys_getppid +\[110\] \} hitcount: +%d$`, n)),
		regexp.MustCompile(fmt.Sprintf(`(?m)^\{ common_pid: %s +\[ *\d+\] \} hitcount: +%d$`, regexp.QuoteMeta(self), n+m)),
	}
	uidLine := regexp.MustCompile(fmt.Sprintf(`(?m)^\{ id: sys_getuid +\[102\] \} hitcount: +%d$`, m))

	file := filepath.Join(t.TempDir(), "ids.dat")
	rec := []string{"-e", "syscalls:sys_enter_getppid", "-e", "syscalls:sys_enter_getuid", "-e", "raw_syscalls:sys_enter", "--follow", "-o", file}
	if errOut, code := recordLive(t, append(rec, workload(t, w)...)...); code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		infos []string
		lines []*regexp.Regexp
	}{
		{"named", named, []string{namedInfo, namedInfo}, []*regexp.Regexp{namedLine, namedLine}},
		{"several", several, severalInfos, severalLines},
	} {
		live := append(append([]string{"hist"}, tc.args...), "--follow")
		out, errOut, code := run(t, append(live, workload(t, w)...)...)
		if code != 0 {
			t.Fatalf("%s: gtrace hist exit %d, stderr:\n%s", tc.name, code, errOut)
		}
		checkBlocks(t, tc.name+" live", out, tc.infos, tc.lines)
		if tc.name == "several" && len(uidLine.FindAllString(out, -1)) != 1 {
			t.Errorf("several live: no getuid line %s in:\n%s", uidLine, out)
		}
		fileOut, errOut, code := run(t, append([]string{"hist", "-i", file}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%s: gtrace hist -i exit %d, stderr:\n%s", tc.name, code, errOut)
		}
		checkBlocks(t, tc.name+" -i", fileOut, tc.infos, tc.lines)
		// The same events, but two runs of the helper: the same bytes
		// but for its process id.
		if a, b := pidFree.ReplaceAllString(out, "$1 PID"), pidFree.ReplaceAllString(fileOut, "$1 PID"); a != b {
			t.Errorf("%s: live and -i differ:\nlive:\n%s\n-i:\n%s", tc.name, a, b)
		}
	}
}
