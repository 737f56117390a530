package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestPrivilegedRecordCPU: two helpers make n getppid calls each, one
// pinned to CPU 0 and one to CPU 1 (taskset, sched_setaffinity); record
// --cpu 1 has exactly the second one's, all on CPU 1, in a file of both
// CPUs that trace-cmd reads.
func TestPrivilegedRecordCPU(t *testing.T) {
	testutil.RequirePrivileged(t)
	requireTraceCmd(t)
	if _, err := os.Stat("/sys/devices/system/cpu/cpu1/online"); err != nil {
		t.Skip("needs CPU 1")
	}
	const n = 3000
	file := filepath.Join(t.TempDir(), "trace.dat")
	self := workload(t, "getppid 3000")[1]
	args := []string{"record", "--cpu", "1", "-e", "raw_syscalls:sys_enter", "-f", "id == 110", "-o", file,
		"--", "sh", "-c", `taskset -c 0 "$0" && taskset -c 1 "$0"`, self}
	_, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace record --cpu 1: exit %d, stderr:\n%s", code, errOut)
	}
	if strings.Contains(errOut, "CPU 0:") || !regexp.MustCompile(`(?m)^CPU 1: \d+ events, 0 lost$`).MatchString(errOut) {
		t.Errorf("statistics of CPU 0, or none of CPU 1:\n%s", errOut)
	}
	report := traceCmdReport(t, file)
	if !strings.HasPrefix(report, "cpus=2\n") {
		t.Errorf("trace-cmd report starts %q, want cpus=2", report[:min(len(report), 40)])
	}
	comm := regexp.QuoteMeta(commOf(t))
	on := func(cpu string) int {
		return len(regexp.MustCompile(`(?m)^ *`+comm+`-\d+ +\[`+cpu+`\] +\d+\.\d+: sys_enter: +NR 110 \(`).FindAllString(report, -1))
	}
	if c0, c1 := on("000"), on("001"); c0 != 0 || c1 != n {
		t.Errorf("getppid calls of the helpers: %d on CPU 0, %d on CPU 1; want 0 and %d", c0, c1, n)
	}
	// Bad lists and CPUs that are not online are caret errors.
	for list, want := range map[string]string{
		"x":       `invalid CPU list item "x"`,
		"0,65000": "CPU 65000 is not online",
	} {
		_, errOut, code := run(t, "record", "--cpu", list, "-e", "sched:sched_switch", "-o", file)
		if code != exitUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, "^") {
			t.Errorf("record --cpu %s: exit %d, stderr %q; want exit 2 and %q with a caret", list, code, errOut, want)
		}
	}
}
