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

// TestPrivilegedSQLRun runs a statement without --dry-run: the syscall
// latency of nanosleep (sys_enter to sys_exit on common_pid) while a
// helper makes K nanosleeps of MS ms. gtrace sql streams the synthetic
// event, and only it: the helper's lines are exactly K, each of id 35
// and a latency of at least MS ms. Without JOIN, the statement is a hist,
// printed at the end.
func TestPrivilegedSQLRun(t *testing.T) {
	testutil.RequirePrivileged(t)
	const k, ms = 4, 10
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv(pidFileEnv, pidFile)
	args := append([]string{"sql", "-q", "-n", "slat",
		"SELECT start.id AS id, TIMESTAMP_DELTA_USECS AS lat FROM raw_syscalls.sys_enter AS start JOIN raw_syscalls.sys_exit AS end ON start.common_pid = end.common_pid WHERE start.id == 35"},
		workload(t, fmt.Sprintf("sleeps %d %d", k, ms))...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %q: exit %d\n%s", args, code, errOut)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := string(b)
	line := regexp.MustCompile(`(?m)^ *\S+-(\d+) +\[\d+\] [0-9.]+: (\w+): +(.*)$`)
	n := 0
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		if m[2] != "slat" {
			t.Errorf("gtrace sql streamed an event other than the synthetic one: %q", m[0])
			continue
		}
		if m[1] != pid {
			continue
		}
		n++
		f := regexp.MustCompile(`^id=(\d+), lat=(\d+)$`).FindStringSubmatch(m[3])
		if f == nil {
			t.Errorf("line %q: want id=N, lat=N", m[0])
			continue
		}
		if lat, _ := strconv.Atoi(f[2]); f[1] != "35" || lat < ms*1000 {
			t.Errorf("line %q: want id 35 and at least %d µs", m[0], ms*1000)
		}
	}
	if n != k {
		t.Errorf("%d synthetic events of the helper (pid %s), want %d:\n%s", n, pid, k, out)
	}

	out, errOut, code = run(t, "sql", "-q", "--duration", "300ms", "SELECT CAST(common_pid AS EXECNAME) FROM raw_syscalls.sys_enter")
	if code != 0 || !strings.Contains(out, "# trigger info: hist:keys=common_pid.execname:") || !strings.Contains(out, "Totals:") {
		t.Errorf("gtrace sql without JOIN: exit %d, want a hist of common_pid.execname:\n%s\n%s", code, out, errOut)
	}
}
