package cmd

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
)

// gtraceBinary runs the test binary as gtrace with args, its stdout and
// stderr pipes, and returns them, its exit status and how long it ran.
func gtraceBinary(t *testing.T, args ...string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	start := time.Now()
	stdout, stderr, code = runGtraceCmd(t, gtraceCommand(t, args...))
	return stdout, stderr, code, time.Since(start)
}

// TestPrivilegedAttachLine: record and hist print one line on stderr
// once attached, saying what they trace and how they end; -q leaves it
// out; a stderr that is a pipe gets no status line (no \r, no escape).
func TestPrivilegedAttachLine(t *testing.T) {
	testutil.RequirePrivileged(t)
	file := filepath.Join(t.TempDir(), "t.dat")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "-e", "sched:sched_process_exec", "-o", file, "--", "true"},
			"gtrace: recording 1 event (3 programs) to " + file + " while true runs; Ctrl-C to stop\n"},
		{[]string{"hist", "-e", "sched:sched_process_exec", "-k", "common_pid", "--duration", "1500ms"},
			"gtrace: counting a hist of sched:sched_process_exec (1 program) for 1.5s; Ctrl-C to stop sooner\n"},
	} {
		for _, quiet := range []bool{false, true} {
			args := tc.args
			if quiet {
				args = append([]string{args[0], "-q"}, args[1:]...)
			}
			_, stderr, code, _ := gtraceBinary(t, args...)
			if code != 0 {
				t.Fatalf("gtrace %s: exit %d: %s", strings.Join(args, " "), code, stderr)
			}
			n := strings.Count(stderr, tc.want)
			if quiet && (n != 0 || strings.Contains(stderr, "gtrace: ")) || !quiet && n != 1 {
				t.Errorf("gtrace %s: stderr %q; want the attach line %q %s", strings.Join(args, " "), stderr, tc.want, map[bool]string{false: "once", true: "left out"}[quiet])
			}
			if strings.ContainsAny(stderr, "\r\x1b") {
				t.Errorf("gtrace %s: status bytes on a pipe: %q", strings.Join(args, " "), stderr)
			}
		}
	}
}

// TestPrivilegedDurationStopsCommand: when --duration ends, -- CMD is
// stopped (SIGINT, then SIGTERM, then SIGKILL), its children with it,
// within the grace rather than after its 30 seconds, and gtrace exits
// with its status: 130 for a sleep that SIGINT ends, 143 for a shell
// that ignores SIGINT. The output is complete: the hist's totals, a file
// that trace-cmd reads.
func TestPrivilegedDurationStopsCommand(t *testing.T) {
	testutil.RequirePrivileged(t)
	requireTraceCmd(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "t.dat")
	pidFile := filepath.Join(dir, "pid")
	for _, tc := range []struct {
		args  []string
		want  int
		check func(stdout string) bool
	}{
		{[]string{"hist", "-e", "sched:sched_switch", "-k", "prev_comm", "--duration", "1s", "--", "sh", "-c", "echo $$ >" + pidFile + "; exec sleep 30"}, 130,
			func(out string) bool { return strings.Contains(out, "\nTotals:\n    Hits: ") }},
		{[]string{"record", "-e", "sched:sched_switch", "-o", file, "--duration", "1s", "--", "sh", "-c", `trap "" INT; sleep 30 & echo $! >` + pidFile + "; wait"}, 143,
			func(string) bool { return traceCmdReport(t, file) != "" }},
	} {
		os.Remove(pidFile)
		out, stderr, code, took := gtraceBinary(t, tc.args...)
		// Attaching can take seconds on a loaded machine; the sleep
		// would take 30.
		if code != tc.want || took > 20*time.Second {
			t.Errorf("gtrace %s: exit %d after %v, want %d well before the sleep's 30s; stderr:\n%s", tc.args[0], code, took, tc.want, stderr)
		}
		if !tc.check(out) {
			t.Errorf("gtrace %s: incomplete output:\n%s\nstderr:\n%s", tc.args[0], out, stderr)
		}
		b, err := os.ReadFile(pidFile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			t.Fatalf("gtrace %s: no pid of the sleep: %q, %v", tc.args[0], b, err)
		}
		if testutil.Running(pid, 5*time.Second) {
			t.Errorf("gtrace %s: the sleep, process %d, still runs after gtrace exited", tc.args[0], pid)
		}
	}
}
