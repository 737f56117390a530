package cmd

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// stackBlocks returns the number of "<stack trace >" blocks of a report
// and the number of events named event, failing unless each block goes
// through the system call's entry.
func stackBlocks(t *testing.T, text, event string) (stacks, events int) {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.Contains(line, "<stack trace >"):
			stacks++
		case strings.Contains(line, " "+event+":"):
			events++
		}
	}
	if n := strings.Count(text, "=> entry_SYSCALL_64_after_hwframe ("); n != stacks {
		t.Errorf("%d of %d stack blocks go through entry_SYSCALL_64_after_hwframe:\n%s", n, stacks, text)
	}
	return stacks, events
}

// TestPrivilegedRecordStacktrace records a helper's 5 getppid calls with
// -R stacktrace:2: exactly 2 kernel_stack records, which trace-cmd
// report reads with nothing on stderr and prints as 2 "<stack trace >"
// blocks, and gtrace report prints the same bytes. With --user-stack,
// each is followed by a user_stack record.
func TestPrivilegedRecordStacktrace(t *testing.T) {
	testutil.RequirePrivileged(t)
	for _, user := range []bool{false, true} {
		file := filepath.Join(t.TempDir(), "trace.dat")
		args := []string{"record", "-q", "-o", file, "--follow", "-e", "syscalls:sys_enter_getppid", "-R", "stacktrace:2"}
		if user {
			args = append(args, "--user-stack")
		}
		args = append(args, workload(t, "getppid 5")...)
		if _, errOut, code := run(t, args...); code != 0 {
			t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
		theirs := traceCmdReport(t, file)
		if stacks, events := stackBlocks(t, theirs, "sys_enter_getppid"); stacks != 2 || events != 5 {
			t.Errorf("user %v: %d stack blocks and %d events, want 2 and 5:\n%s", user, stacks, events, theirs)
		}
		users := 0
		if user {
			users = 2
		}
		if n := strings.Count(theirs, "user_stack:"); n != users {
			t.Errorf("user %v: %d user_stack records, want %d:\n%s", user, n, users, theirs)
		}
		mine, errOut, code := run(t, "report", "-i", file)
		if code != 0 || mine != theirs {
			t.Errorf("gtrace report: exit %d (%s), differs from trace-cmd report:\n%s", code, errOut, testutil.FirstDiff(mine, theirs))
		}
	}
}

// TestPrivilegedFilterStacktrace: gtrace filter prints the stack blocks
// of -R stacktrace as the report of its -o file does, and gtrace
// trigger likewise, here on the writes of 3 and 4 bytes only.
func TestPrivilegedFilterStacktrace(t *testing.T) {
	testutil.RequirePrivileged(t)
	for _, tc := range []struct {
		args   []string
		stacks int
	}{
		{[]string{"filter", "-e", "syscalls:sys_enter_write", "-f", "fd == 100", "-R", "stacktrace if fd == 100"}, 5},
		{[]string{"trigger", "-e", "syscalls:sys_enter_write", "-f", "fd == 100", "stacktrace if fd == 100 && count >= 3 && count <= 4"}, 2},
	} {
		file := filepath.Join(t.TempDir(), "trace.dat")
		args := append(append(tc.args, "-q", "--follow", "-o", file), workload(t, "write 5")...)
		out, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
		if stacks, events := stackBlocks(t, out, "sys_enter_write"); stacks != tc.stacks || events != 5 {
			t.Errorf("%s: %d stack blocks and %d events, want %d and 5:\n%s", tc.args[0], stacks, events, tc.stacks, out)
		}
		// The stream may print the helper's first events as <...>, before
		// the comm program saw it: the comms are not compared.
		if mine, errOut, code := run(t, "report", "-i", file); code != 0 || noComms(cutCPUs(t, mine)) != noComms(out) {
			t.Errorf("%s: gtrace report -i: exit %d (%s), differs from the stream:\n%s", tc.args[0], code, errOut, testutil.FirstDiff(noComms(out), noComms(cutCPUs(t, mine))))
		}
	}
}

// commPID is the comm-pid column of a report line.
var commPID = regexp.MustCompile(`(?m)^ *\S+-(\d+) `)

// noComms returns a report with each line's comm-pid column cut to the pid.
func noComms(s string) string { return commPID.ReplaceAllString(s, "$1 ") }
