package cmd

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// triggerEvents records the "write-getppid 10" workload (writes of 1..10
// bytes to fd 100, each followed by a getppid) with args, and returns
// what the file holds in order: the size of each write recorded, and 0
// for each getppid.
func triggerEvents(t *testing.T, args ...string) []int {
	t.Helper()
	file := filepath.Join(t.TempDir(), "trigger.dat")
	args = append(append([]string{"record", "-q", "-o", file}, args...), "--follow")
	args = append(args, workload(t, "write-getppid 10")...)
	if _, errOut, code := run(t, args...); code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return fileEvents(t, file)
}

// fileEvents returns what a recording of the "write-getppid" workload
// holds in order: the size of each write to fd 100, and 0 for each
// getppid.
func fileEvents(t *testing.T, file string) []int {
	t.Helper()
	var got []int
	write := regexp.MustCompile(`sys_enter_write: +fd: 0x0*64, buf: 0x[0-9a-f]+, count: (0x[0-9a-f]+)`)
	for _, line := range strings.Split(traceCmdReport(t, file), "\n") {
		switch {
		case strings.Contains(line, "sys_enter_getppid:"):
			got = append(got, 0)
		case write.MatchString(line):
			n, err := strconv.ParseInt(write.FindStringSubmatch(line)[1], 0, 64)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, int(n))
		}
	}
	return got
}

// sizes returns the writes of sizes from..to, each followed by a getppid
// when getppid is set.
func sizes(from, to int, getppid bool) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
		if getppid {
			s = append(s, 0)
		}
	}
	return s
}

// TestPrivilegedTriggers runs traceon, traceoff and enable_event triggers
// on the writes of a helper, filtered to its own fd 100 and followed
// from its start, and checks exactly which events the file holds. The
// kernel (6.18, an instance with the same filter and trigger) records
// the writes 1..5 for "traceoff if count == 5" and 3.. for a traceon on
// the write of 3: the event that fires a trigger is recorded.
func TestPrivilegedTriggers(t *testing.T) {
	testutil.RequirePrivileged(t)
	w := []string{"-e", "syscalls:sys_enter_write", "-f", "fd == 100"}
	for _, tc := range []struct {
		name string
		args []string
		want []int
	}{
		{"traceoff if", append(w, "-R", "traceoff if count == 5"), sizes(1, 5, false)},
		// A firing while tracing is off changes nothing and spends
		// no count: the traceon of 3 and the traceoff of 5 each fire
		// once, for good.
		{"traceon traceoff start-off", append([]string{"--start-off"}, append(w, "-R", "traceon if count == 3", "-R", "traceoff if count == 5")...), sizes(3, 5, false)},
		// Three state changes each: on at 2, off at 3, on at 4, off at
		// 5, on at 6, off at 7; the counts are spent, so 8..10 stay off.
		{"traceon:3 traceoff:3", append([]string{"--start-off"}, append(w, "-R", "traceon:3 if count == 2 || count == 4 || count == 6 || count == 8", "-R", "traceoff:3 if count == 3 || count == 5 || count == 7 || count == 9")...), []int{2, 3, 4, 5, 6, 7}},
		{"traceoff:3 unfiltered", append(w, "-R", "traceoff:3", "-R", "traceon if count > 3"), []int{1, 4, 5, 6, 7, 8, 9, 10}},
		{"enable_event", append(w, "-R", "enable_event:syscalls:sys_enter_getppid if count == 3"), append(sizes(1, 2, false), sizes(3, 10, true)...)},
		{"enable_event disable_event", append(w, "-R", "enable_event:syscalls:sys_enter_getppid if count == 3", "-R", "disable_event:syscalls:sys_enter_getppid if count == 6"),
			append(append(sizes(1, 2, false), sizes(3, 5, true)...), sizes(6, 10, false)...)},
		{"removed", append(w, "-R", "traceoff if count == 2", "-R", "!traceoff"), sizes(1, 10, false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := triggerEvents(t, tc.args...); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("gtrace record %s:\n got %v\nwant %v", strings.Join(tc.args, " "), got, tc.want)
			}
		})
	}
}

// TestPrivilegedTriggerCommand runs gtrace trigger on the helper's
// writes: it prints the writes of 1..5 bytes and the getppid calls from
// the write of 2 bytes on, up to the traceoff, and says on stderr that
// each trigger fired once.
func TestPrivilegedTriggerCommand(t *testing.T) {
	testutil.RequirePrivileged(t)
	args := append([]string{"trigger", "-q", "--follow", "-e", "syscalls:sys_enter_write", "-f", "fd == 100",
		"traceoff if count == 5", "enable_event:syscalls:sys_enter_getppid if count == 2"}, workload(t, "write-getppid 10")...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			t.Fatalf("line %q", l)
		}
		name := strings.TrimSuffix(f[3], ":")
		if name == "sys_enter_write" {
			name += " " + f[len(f)-1]
		}
		got = append(got, name)
	}
	want := "[sys_enter_write 0x00000001 sys_enter_write 0x00000002 sys_enter_getppid " +
		"sys_enter_write 0x00000003 sys_enter_getppid sys_enter_write 0x00000004 sys_enter_getppid sys_enter_write 0x00000005]"
	if fmt.Sprint(got) != want {
		t.Errorf("stdout:\n%s\ngot  %v\nwant %s", out, got, want)
	}
	for _, w := range []string{
		"gtrace: syscalls:sys_enter_write: enable_event:syscalls:sys_enter_getppid if count == 2 fired (1 in all)\n",
		"gtrace: syscalls:sys_enter_write: traceoff if count == 5 fired (1 in all)\n",
	} {
		if strings.Count(errOut, w) != 1 {
			t.Errorf("stderr has not once %q:\n%s", w, errOut)
		}
	}
}

// TestPrivilegedHistTriggers runs traceoff and traceon triggers on a live
// hist of the helper's writes: the hist counts exactly the writes of the
// window, the firing ones included.
func TestPrivilegedHistTriggers(t *testing.T) {
	testutil.RequirePrivileged(t)
	w := []string{"hist", "-q", "--follow", "-e", "syscalls:sys_enter_write", "-f", "fd == 100", "-k", "count"}
	for _, tc := range []struct {
		name     string
		args     []string
		from, to int
	}{
		{"traceoff", append(w, "-R", "traceoff if count == 5"), 1, 5},
		{"start-off traceon traceoff", append(append([]string{}, w...), "--start-off", "-R", "traceon if count == 3", "-R", "traceoff:1 if count >= 7"), 3, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, tc.args...), workload(t, "write 10")...)
			out, errOut, code := run(t, args...)
			if code != 0 {
				t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
			}
			var want strings.Builder
			for i := tc.from; i <= tc.to; i++ {
				fmt.Fprintf(&want, "{ count: %10d } hitcount:          1\n", i)
			}
			fmt.Fprintf(&want, "\nTotals:\n    Hits: %d\n    Entries: %d\n    Dropped: 0\n", tc.to-tc.from+1, tc.to-tc.from+1)
			if !strings.Contains(out, want.String()) {
				t.Errorf("gtrace %s:\n%s\nwant the entries and totals:\n%s", strings.Join(tc.args, " "), out, want.String())
			}
		})
	}
}

// TestPrivilegedHistEnableEvent turns on the hist of the helper's getppid
// calls at its write of 3 bytes: the target of an enable_event starts
// disabled, and counts exactly the 8 calls from the firing on.
func TestPrivilegedHistEnableEvent(t *testing.T) {
	testutil.RequirePrivileged(t)
	args := append([]string{"hist", "-q", "--follow",
		"-e", "syscalls:sys_enter_write", "-f", "fd == 100", "-k", "count", "-R", "enable_event:syscalls:sys_enter_getppid if count == 3",
		"-e", "syscalls:sys_enter_getppid", "-k", "common_pid"}, workload(t, "write-getppid 10")...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	hists := strings.Split(out, "# event histogram")
	if len(hists) != 3 {
		t.Fatalf("want two hists:\n%s", out)
	}
	if !strings.Contains(hists[1], "Hits: 10\n    Entries: 10\n") {
		t.Errorf("the writes' hist does not count all 10:\n%s", hists[1])
	}
	if !regexp.MustCompile(`\{ common_pid: +\d+ \} hitcount: +8\n\nTotals:\n    Hits: 8\n    Entries: 1\n`).MatchString(hists[2]) {
		t.Errorf("the getppid hist does not count exactly the 8 calls from the write of 3 bytes on:\n%s", hists[2])
	}
}

// TestPrivilegedHistEnableHist switches the hist of the helper's getppid
// calls from its writes: a paused hist counts exactly the calls between
// the write that continues it and the one that pauses it (the calls
// after the writes of 3, 4 and 5 bytes), and lists [paused] at the end;
// after the write of 1 byte and from that of 8 on, a hist paused by a
// disable_hist at the write of 2 bytes and continued at that of 8 counts
// the calls after the writes of 1, 8, 9 and 10 bytes;
// a count on enable_hist is spent by every firing, even one that finds
// the hist active, as the kernel's is, so "enable_hist:1 if count >= 2"
// is spent at the write of 2 bytes and never continues the hist that the
// write of 4 bytes paused.
func TestPrivilegedHistEnableHist(t *testing.T) {
	testutil.RequirePrivileged(t)
	for _, tc := range []struct {
		name     string
		triggers []string
		hist     string
		want     int
		state    string
	}{
		{"pause window", []string{"enable_hist:syscalls:sys_enter_getppid if count == 3", "disable_hist:syscalls:sys_enter_getppid if count == 6"},
			"hist:keys=common_pid:pause", 3, "[paused]"},
		{"count spent on every firing", []string{"enable_hist:syscalls:sys_enter_getppid:1 if count >= 2", "disable_hist:syscalls:sys_enter_getppid:1 if count == 4"},
			"hist:keys=common_pid:cont", 3, "[paused]"},
		{"continued", []string{"disable_hist:syscalls:sys_enter_getppid if count == 2", "enable_hist:syscalls:sys_enter_getppid if count == 8"},
			"hist:keys=common_pid", 4, "[active]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"hist", "-q", "--follow", "-e", "syscalls:sys_enter_write", "-f", "fd == 100", "-k", "count"}
			for _, tr := range tc.triggers {
				args = append(args, "-R", tr)
			}
			args = append(append(args, "-e", "syscalls:sys_enter_getppid", tc.hist), workload(t, "write-getppid 10")...)
			out, errOut, code := run(t, args...)
			if code != 0 {
				t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
			}
			hists := strings.Split(out, "# event histogram")
			if len(hists) != 3 {
				t.Fatalf("want two hists:\n%s", out)
			}
			if !strings.Contains(hists[1], "Hits: 10\n    Entries: 10\n") || !strings.Contains(hists[1], " [active]\n") {
				t.Errorf("the writes' hist is not active with all 10:\n%s", hists[1])
			}
			want := fmt.Sprintf(`\{ common_pid: +\d+ \} hitcount: +%d\n\nTotals:\n    Hits: %d\n    Entries: 1\n`, tc.want, tc.want)
			if !regexp.MustCompile(want).MatchString(hists[2]) {
				t.Errorf("the getppid hist does not count exactly %d calls:\n%s", tc.want, hists[2])
			}
			if info := "# trigger info: hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 " + tc.state + "\n"; !strings.Contains(hists[2], info) {
				t.Errorf("the getppid hist has not %q:\n%s", info, hists[2])
			}
		})
	}
}
