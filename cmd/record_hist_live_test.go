package cmd

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// histBlock matches a one-entry hist of common_pid with its hitcount.
func histBlock(hits int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`\{ common_pid: +\d+ \} hitcount: +%d\n\nTotals:\n    Hits: %d\n    Entries: 1\n    Dropped: 0\n`, hits, hits))
}

// TestPrivilegedRecordHistTrigger records the getppid calls of a helper
// with a hist trigger on them: record prints the hist at the end, its
// hitcount exactly the helper's 25 calls, and gtrace hist -i with the
// same hist string over the file prints the same bytes.
func TestPrivilegedRecordHistTrigger(t *testing.T) {
	testutil.RequirePrivileged(t)
	const h = "hist:keys=common_pid"
	file := filepath.Join(t.TempDir(), "hist.dat")
	args := append([]string{"record", "-q", "-o", file, "--follow", "-e", "syscalls:sys_enter_getppid", "-R", h}, workload(t, "getppid 25")...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	if !histBlock(25).MatchString(out) || strings.Count(out, "# event histogram") != 1 {
		t.Errorf("record's hist does not count the 25 calls:\n%s", out)
	}
	file2, errOut, code := run(t, "hist", "-q", "-i", file, "-e", "syscalls:sys_enter_getppid", h)
	if code != 0 {
		t.Fatalf("gtrace hist -i: exit %d\n%s", code, errOut)
	}
	if file2 != out {
		t.Errorf("record's hist:\n%s\ngtrace hist -i over its file:\n%s", out, file2)
	}
}

// TestPrivilegedRecordHistTriggerWindows runs hist triggers on the
// helper's writes of 1..10 bytes to fd 100, each followed by a getppid,
// alongside the recording of them, and checks each hist and what the
// file holds, exactly.
func TestPrivilegedRecordHistTriggerWindows(t *testing.T) {
	testutil.RequirePrivileged(t)
	w := []string{"-e", "syscalls:sys_enter_write", "-f", "fd == 100"}
	for _, tc := range []struct {
		name  string
		args  []string
		file  []int          // what the file holds, as fileEvents reads it
		hist  *regexp.Regexp // the hist's entries and totals
		state string
	}{
		// The kernel's hist triggers do not look at tracing_on: a
		// traceoff stops the recording, not the hist.
		{"traceoff", append(w, "-R", "traceoff if count == 3", "-R", "hist:keys=count:sort=count"), sizes(1, 3, false), regexp.MustCompile(regexp.QuoteMeta(countEntries(1, 10))), "[active]"},
		// The getppid calls are recorded and counted while the event is
		// enabled: from the write of 1 byte on (its getppid comes
		// after), off at the write of 1 and on again at that of 4.
		{"disable_event enable_event", append(w, "-R", "disable_event:syscalls:sys_enter_getppid if count == 1", "-R", "enable_event:syscalls:sys_enter_getppid if count == 4",
			"-e", "syscalls:sys_enter_getppid", "-R", "hist:keys=common_pid"), append(sizes(1, 3, false), sizes(4, 10, true)...), histBlock(7), "[active]"},
		// A paused hist counts the calls between the write that
		// continues it and the one that pauses it: after the writes
		// of 3, 4 and 5 bytes; the recording is not paused.
		{"enable_hist disable_hist", append(w, "-R", "enable_hist:syscalls:sys_enter_getppid if count == 3", "-R", "disable_hist:syscalls:sys_enter_getppid if count == 6",
			"-e", "syscalls:sys_enter_getppid", "-R", "hist:keys=common_pid:pause"), sizes(1, 10, true), histBlock(3), "[paused]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "hist.dat")
			args := append(append([]string{"record", "-q", "-o", file, "--follow"}, tc.args...), workload(t, "write-getppid 10")...)
			out, errOut, code := run(t, args...)
			if code != 0 {
				t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
			}
			if !strings.Contains(out, " "+tc.state+"\n") {
				t.Errorf("the hist is not %s:\n%s", tc.state, out)
			}
			if !tc.hist.MatchString(out) {
				t.Errorf("hist:\n%s\nwant the entries and totals %s", out, tc.hist)
			}
			if got := fileEvents(t, file); fmt.Sprint(got) != fmt.Sprint(tc.file) {
				t.Errorf("the file holds %v, want %v", got, tc.file)
			}
		})
	}
}

// countEntries is the entries and totals of a hist keyed by count, sorted
// by it, of one write of each size from..to.
func countEntries(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "{ count: %10d } hitcount:          1\n", i)
	}
	fmt.Fprintf(&b, "\nTotals:\n    Hits: %d\n    Entries: %d\n    Dropped: 0\n", to-from+1, to-from+1)
	return b.String()
}

// TestPrivilegedTriggerHist runs a hist trigger with gtrace trigger and
// with gtrace filter --format ndjson: the events stream first, then the
// hist, in the text and in the JSON form.
func TestPrivilegedTriggerHist(t *testing.T) {
	testutil.RequirePrivileged(t)
	args := append([]string{"trigger", "-q", "--follow", "-e", "syscalls:sys_enter_write", "-f", "fd == 100", "traceoff if count == 2", "hist:keys=count:sort=count if count > 6"},
		workload(t, "write 10")...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	events, hist, ok := strings.Cut(out, "# event histogram\n")
	if !ok || strings.Count(events, "sys_enter_write:") != 2 || !strings.HasSuffix(hist, countEntries(7, 10)) {
		t.Errorf("want the writes of 1 and 2 bytes, then the hist of those of 7..10:\n%s", out)
	}
	args = append([]string{"filter", "-q", "--follow", "--format", "ndjson", "-e", "syscalls:sys_enter_write", "-f", "fd == 100", "-R", "hist:keys=count:sort=count if count > 8"},
		workload(t, "write 10")...)
	out, errOut, code = run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := `{"event":"syscalls:sys_enter_write","trigger":"hist:keys=count:vals=hitcount:sort=count:size=2048 if count > 8 [active]",` +
		`"entries":[{"keys":{"count":9},"hitcount":1,"values":[]},{"keys":{"count":10},"hitcount":1,"values":[]}],"totals":{"hits":2,"entries":2,"dropped":0,"lost":0}}`
	if len(lines) != 11 || lines[10] != want {
		t.Errorf("want 10 events, then the hist's line\n%s\ngot:\n%s", want, out)
	}
}
