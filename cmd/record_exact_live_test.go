package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// recordExact runs gtrace record with args, which must end with the
// workload, and returns the records of the file, the hists printed and
// the events the kernel ran no program for (missed: any process's); it
// fails on any event lost.
func recordExact(t *testing.T, file string, args ...string) (recs []sessionRec, hists string, missed int) {
	t.Helper()
	args = append([]string{"record", "-o", file}, args...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	if !strings.Contains(errOut, file+": ") || !strings.HasSuffix(errOut, " 0 lost\n") {
		t.Fatalf("gtrace %s: events lost:\n%s", strings.Join(args, " "), errOut)
	}
	if m := regexp.MustCompile(`(?m)^(\d+) events were missed: `).FindStringSubmatch(errOut); m != nil {
		missed, _ = strconv.Atoi(m[1])
	}
	recs, lost := sessionRecords(t, file)
	if lost {
		t.Fatalf("gtrace %s: the file marks events lost", strings.Join(args, " "))
	}
	return recs, out, missed
}

// checkCount fails t unless got is want, or short of it by no more than
// the events missed: every event is in the file or counted.
func checkCount(t *testing.T, what string, got, want, missed int) {
	t.Helper()
	if got > want || got < want-missed {
		t.Errorf("%s: %d, want %d (%d events missed)", what, got, want, missed)
	}
}

// countEvent counts the records of event among recs for which keep says
// yes.
func countEvent(recs []sessionRec, event string, keep func(sessionRec) bool) int {
	n := 0
	for _, r := range recs {
		if r.event == event && keep(r) {
			n++
		}
	}
	return n
}

// TestPrivilegedRecordExact records exactly the N getppid calls of a
// followed workload, entries and exits, alone and with an inter-event
// session (with and without a stack field) whose synthetic event the
// recording records: N of each in the file, none lost or missed, and
// every hist counted N. Run it in a loop under load (CPU hogs on every
// CPU): the end of a recording, the per-CPU batches drained after the
// programs are switched off, and the synthetic records written by the
// session's own programs must all reach the file.
func TestPrivilegedRecordExact(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 20000
	plain := []string{"-e", "syscalls:sys_enter_getppid", "-e", "syscalls:sys_exit_getppid"}
	session := func(stack bool) []string {
		def, vars, params := "gp pid_t pid; long ret", "p=common_pid", "$p,ret"
		if stack {
			def, vars, params = def+"; unsigned long[] stack", vars+",st=common_stacktrace", params+",$st"
		}
		return []string{"--synth", def,
			"-e", "syscalls:sys_enter_getppid", "-R", "hist:keys=common_pid:" + vars,
			"-e", "syscalls:sys_exit_getppid", "-R", "hist:keys=common_pid:onmatch(syscalls.sys_enter_getppid).gp(" + params + ")",
			"-e", "synthetic:gp", "-R", "hist:keys=pid"}
	}
	for _, tc := range []struct {
		name  string
		args  []string
		synth int // gp records, hists
	}{
		{"plain", plain, 0},
		{"session", session(false), 3},
		{"session-stack", session(true), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "trace.dat")
			args := append(append([]string{"--follow"}, tc.args...), workload(t, "getppid "+strconv.Itoa(n))...)
			recs, out, missed := recordExact(t, file, args...)
			all := func(sessionRec) bool { return true }
			for _, ev := range []string{"sys_enter_getppid", "sys_exit_getppid"} {
				checkCount(t, ev+" records", countEvent(recs, ev, all), n, missed)
			}
			checkCount(t, "gp records", countEvent(recs, "gp", all), min(tc.synth, 1)*n, missed)
			blocks := histBlocks(out)
			if len(blocks) != tc.synth {
				t.Fatalf("%d hists printed, want %d:\n%s", len(blocks), tc.synth, out)
			}
			for _, b := range blocks {
				checkCount(t, "hits of "+strings.SplitN(b, "\n", 3)[1], blockHits(t, b), n, missed)
			}
		})
	}
}

// TestPrivilegedRecordSessionWakeups records the wakeup-latency session's
// events, its synthetic event wl included, while a workload sleeps: the
// file holds exactly the workload's wakeups and wl events that the
// session's hists counted. Neither is checked against the workload's
// sleeps: without the kernel's BTF, a wakeup raised in an interrupt while
// one of gtrace's threads is current counts as gtrace's own event, which
// gtrace neither records nor counts (docs/record.md).
func TestPrivilegedRecordSessionWakeups(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	t.Setenv(pidFileEnv, pidFile)
	file := filepath.Join(dir, "trace.dat")
	args := []string{"--synth", "wl u64 lat; pid_t pid",
		"-e", "sched:sched_waking", "-R", "hist:keys=pid:ts0=common_timestamp.usecs",
		"-e", "sched:sched_switch", "-R", "hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wl($l,next_pid)",
		"-e", "synthetic:wl", "-R", "hist:keys=pid"}
	recs, out, _ := recordExact(t, file, append(args, workload(t, "sleeps 200 1")...)...)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	blocks := histBlocks(out)
	if len(blocks) != 3 {
		t.Fatalf("%d hists printed, want 3:\n%s", len(blocks), out)
	}
	// The hists keyed on pid: sched_waking's first, wl's last.
	entry := regexp.MustCompile(`(?m)^\{ pid: +` + strconv.Itoa(pid) + ` \} hitcount: +(\d+)$`)
	for _, c := range []struct {
		event string
		block string
	}{{"sched_waking", blocks[0]}, {"wl", blocks[2]}} {
		counted := 0
		if m := entry.FindStringSubmatch(c.block); m != nil {
			counted, _ = strconv.Atoi(m[1])
		}
		got := countEvent(recs, c.event, func(r sessionRec) bool { return r.num(t, "pid") == int64(pid) })
		if counted == 0 || got != counted {
			t.Errorf("%s of pid %d: %d records in the file, the hist counted %d (want the same, not 0)\n%s", c.event, pid, got, counted, c.block)
		}
	}
}
