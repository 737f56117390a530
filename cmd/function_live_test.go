package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestPrivilegedFunctionFilter checks .function in every backend over a
// helper that makes exactly n nanosleep calls, each arming an hrtimer
// whose function is hrtimer_wakeup: the BPF filters of record and hist,
// and the interpreter of report -F and hist -i, by name and by an address
// inside the function, == and !=.
func TestPrivilegedFunctionFilter(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 200
	dir := t.TempDir()
	comm := regexp.QuoteMeta(commOf(t))
	pidFile := filepath.Join(dir, "pid")
	t.Setenv(pidFileEnv, pidFile)
	// helperLines counts the hrtimer_wakeup lines of the helper's main
	// thread, which made the n calls, in the last run.
	helperLines := func(report string) int {
		t.Helper()
		pid, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`(?m)^ *` + comm + `-` + string(pid) + ` +\[\d+\] +\d+\.\d+: hrtimer_start: +hrtimer=\S+ function=hrtimer_wakeup[/ ]`)
		return len(re.FindAllString(report, -1))
	}
	const filter = "function.function == hrtimer_wakeup"
	events := func(report string) []string {
		var out []string
		for _, l := range strings.Split(report, "\n") {
			if strings.Contains(l, " hrtimer_start: ") {
				out = append(out, l)
			}
		}
		return out
	}
	onlyWakeups := func(what string, lines []string) {
		t.Helper()
		for _, l := range lines {
			if !regexp.MustCompile(` function=hrtimer_wakeup[/ ]`).MatchString(l) {
				t.Errorf("%s: a line of another function: %s", what, l)
				return
			}
		}
	}

	// BPF, in record.
	filtered := filepath.Join(dir, "filtered.dat")
	args := append([]string{"-e", "timer:hrtimer_start", "-f", filter, "-o", filtered}, workload(t, fmt.Sprintf("nanosleep %d", n))...)
	if errOut, code := recordLive(t, args...); code != 0 {
		t.Fatalf("record: exit %d, stderr:\n%s", code, errOut)
	}
	rep := traceCmdReport(t, filtered)
	if got := helperLines(rep); got != n {
		t.Errorf("record -f %q: %d lines of the helper, want %d", filter, got, n)
	}
	onlyWakeups("record -f", events(rep))

	// The interpreter, in report -F over an unfiltered recording.
	all := filepath.Join(dir, "all.dat")
	args = append([]string{"-e", "timer:hrtimer_start", "-o", all}, workload(t, fmt.Sprintf("nanosleep %d", n))...)
	if errOut, code := recordLive(t, args...); code != 0 {
		t.Fatalf("record: exit %d, stderr:\n%s", code, errOut)
	}
	total := len(events(traceCmdReport(t, all)))
	byName, errOut, code := run(t, "report", "-i", all, "-F", "hrtimer_start: "+filter)
	if code != 0 {
		t.Fatalf("report -F: exit %d, %s", code, errOut)
	}
	if got := helperLines(byName); got != n {
		t.Errorf("report -F %q: %d lines of the helper, want %d", filter, got, n)
	}
	onlyWakeups("report -F", events(byName))
	addr := kernelSymbol(t, "hrtimer_wakeup") + 1
	byAddr, _, _ := run(t, "report", "-i", all, "-F", fmt.Sprintf("hrtimer_start: function.function == 0x%x", addr))
	if byAddr != byName {
		t.Errorf("by address 0x%x and by name differ:\n%s", addr, testutil.FirstDiff(byAddr, byName))
	}
	others, _, _ := run(t, "report", "-i", all, "-F", "hrtimer_start: function.function != hrtimer_wakeup")
	if helperLines(others) != 0 || len(events(others))+len(events(byName)) != total {
		t.Errorf("!=: %d lines, == %d lines, want %d in all, none of the helper's wakeups", len(events(others)), len(events(byName)), total)
	}

	// hist: BPF live, the interpreter over the file.
	for _, h := range [][]string{
		{"hist", "-i", all, "-e", "timer:hrtimer_start", "-k", "common_pid.execname", "-f", filter},
		append([]string{"hist", "-e", "timer:hrtimer_start", "-k", "common_pid.execname", "-f", filter}, workload(t, fmt.Sprintf("nanosleep %d", n))...),
	} {
		out, errOut, code := run(t, h...)
		pid, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^\{ common_pid: `+comm+` +\[ *`+string(pid)+`\] \} hitcount: +(\d+)$`).FindAllStringSubmatch(out, -1)
		if code != 0 || len(m) != 1 || m[0][1] != strconv.Itoa(n) {
			t.Errorf("%v: exit %d (%s), helper lines %v, want hitcount %d:\n%s", h[:4], code, errOut, m, n, out)
		}
	}

	// An unknown function is a usage error pointing at it.
	_, errOut, code = run(t, "record", "-e", "timer:hrtimer_start", "-f", "function.function == no_such_function_x", "--dry-run")
	if code != 2 || !strings.Contains(errOut, `no kernel function "no_such_function_x"`) || !strings.Contains(errOut, "^~~~") {
		t.Errorf("unknown function: exit %d, stderr:\n%s", code, errOut)
	}
}

// kernelSymbol returns the address of a kernel symbol from /proc/kallsyms.
func kernelSymbol(t *testing.T, name string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[2] == name {
			addr, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil || addr == 0 {
				t.Fatalf("kallsyms address of %s: %q", name, f[0])
			}
			return addr
		}
	}
	t.Fatalf("no %s in /proc/kallsyms", name)
	return 0
}
