package cmd

import (
	"fmt"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// signalOrder are the signals the "signals N" workload sends itself, all
// ignored, in this order: an onmax($v) of v=sig sets a new max at 42, 44
// and 46, and at no other.
var signalOrder = []int{42, 41, 44, 43, 46, 40, 45}

// signalsWorkload sends the first n signals of signalOrder to its own
// process, from one thread, each ignored: each is one signal_generate
// event of that thread (res=1, ignored), sig >= 40.
func signalsWorkload(n int) int {
	if n > len(signalOrder) {
		return 99
	}
	runtime.LockOSThread()
	for _, s := range signalOrder {
		signal.Ignore(syscall.Signal(s))
	}
	for _, s := range signalOrder[:n] {
		if err := syscall.Kill(syscall.Getpid(), syscall.Signal(s)); err != nil {
			return 98
		}
	}
	return 0
}

// snapshotHist is the hist of the snapshot tests: the largest signal
// number so far, saved and snapshotted on each new max.
const snapshotHist = `hist:keys=common_pid:v=sig:onmax($v).save(sig):onmax($v).snapshot() if sig >= 40`

// snapshotHistOut is what the kernel prints for snapshotHist after the
// 7 signals of signalOrder (grammar §6.4, §6.6), with the newline gtrace
// gives the snapshot block (§12.13) and PID for the workload's thread.
const snapshotHistOut = `# event histogram
#
# trigger info: hist:keys=common_pid:vals=hitcount:v=sig:sort=hitcount:size=2048:onmax($v).save(sig):onmax($v).snapshot() if sig >= 40 [active]
#

{ common_pid: PID } hitcount:          7
	max:         46  sig:         46

Snapshot taken (see tracing/snapshot).  Details:
	triggering value { onmax($v) }:         46
	triggered by event with key: { common_pid: PID }

Totals:
    Hits: 7
    Entries: 1
    Dropped: 0
`

// withPID replaces the common_pid keys of a hist with PID, and returns
// the text and the pids replaced.
func withPID(out string) (string, []string) {
	re := regexp.MustCompile(`common_pid: +([0-9]+) }`)
	var pids []string
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		pids = append(pids, m[1])
	}
	return re.ReplaceAllString(out, "common_pid: PID }"), pids
}

// checkSnapshotHist checks a printed snapshotHist against
// snapshotHistOut: byte for byte, and one pid, 10 wide, for both keys.
func checkSnapshotHist(t *testing.T, out string) {
	t.Helper()
	got, pids := withPID(out)
	if got != snapshotHistOut {
		t.Errorf("hist differs:\n%s", testutil.FirstDiff(got, snapshotHistOut))
	}
	if len(pids) != 2 || pids[0] != pids[1] || !strings.Contains(out, fmt.Sprintf("{ common_pid: %10s }", pids[0])) {
		t.Errorf("keys %q: want one pid, %%10d, twice:\n%s", pids, out)
	}
}

// TestPrivilegedHistSnapshotLive: hist live with onmax($v).snapshot()
// and onmax($v).save(sig) on the 7 ignored signals of signalOrder prints
// the kernel's entry with its max: line and the snapshot block of the
// last max, 46, with its key.
func TestPrivilegedHistSnapshotLive(t *testing.T) {
	testutil.RequirePrivileged(t)
	args := append([]string{"hist", "-q", "--follow", "-e", "signal:signal_generate", snapshotHist}, workload(t, "signals 7")...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	checkSnapshotHist(t, out)
}

// TestPrivilegedRecordSessionSnapshot: record with onmax($v).snapshot()
// in a hist trigger (-R) writes a snapshot file at each new max, as the
// snapshot trigger does: the 7 ignored signals of signalOrder set a new
// max 3 times (42, 44, 46), so there are exactly 3 snapshots, the k-th
// holding the signals up to the k-th max, the event that set it last;
// the recording has all 7, and the hist prints as hist live prints it.
func TestPrivilegedRecordSessionSnapshot(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "t.dat")
	args := append([]string{"record", "-q", "-o", file, "--follow", "-e", "signal:signal_generate", "-f", "sig >= 40",
		"-R", snapshotHist}, workload(t, "signals 7")...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	checkSnapshotHist(t, out)
	for _, tc := range []struct {
		file string
		want []int
	}{
		{"t.dat", signalOrder},
		{"t.snapshot-1.dat", signalOrder[:1]},
		{"t.snapshot-2.dat", signalOrder[:3]},
		{"t.snapshot-3.dat", signalOrder[:5]},
	} {
		if got := signalsOf(t, filepath.Join(dir, tc.file)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: signals %v, want %v", tc.file, got, tc.want)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.dat")); len(files) != 4 {
		t.Errorf("files %q, want t.dat and 3 snapshots", files)
	}
	for n := 1; n <= 3; n++ {
		if s := fmt.Sprintf("snapshot %d: %s\n", n, filepath.Join(dir, fmt.Sprintf("t.snapshot-%d.dat", n))); !strings.Contains(errOut, s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut)
		}
	}
}

// signalsOf reads a trace.dat with trace-cmd report and with gtrace
// report, which must print the same bytes, and returns the signal of
// each signal_generate line, in order.
func signalsOf(t *testing.T, file string) []int {
	t.Helper()
	theirs := traceCmdReport(t, file)
	if mine, errOut, code := run(t, "report", "-i", file); code != 0 || mine != theirs {
		t.Errorf("%s: gtrace report: exit %d (%s), differs from trace-cmd report:\n%s", file, code, errOut, testutil.FirstDiff(mine, theirs))
	}
	var out []int
	for _, m := range regexp.MustCompile(`signal_generate: +sig=([0-9]+) `).FindAllStringSubmatch(theirs, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// TestPrivilegedRecordSessionSnapshotSyscall: the same on a system call
// event and a variable that is an expression: writes of 1..12 bytes,
// v=count/4, a new max at 4, 8 and 12 bytes, 3 snapshots, each ending
// with the write that set it.
func TestPrivilegedRecordSessionSnapshotSyscall(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "t.dat")
	args := append([]string{"record", "-q", "-o", file, "--follow", "-e", "syscalls:sys_enter_write", "-f", "fd == 100",
		"-R", "hist:keys=common_pid:v=count/4:onmax($v).snapshot() if fd == 100"}, workload(t, "write 12")...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	if !strings.Contains(out, "\ttriggering value { onmax($v) }:          3\n") {
		t.Errorf("no snapshot block of the max 3:\n%s", out)
	}
	checkFiles(t, dir, snapFiles{
		{"t.dat", span(1, 12)},
		{"t.snapshot-1.dat", span(1, 4)},
		{"t.snapshot-2.dat", span(1, 8)},
		{"t.snapshot-3.dat", span(1, 12)},
	})
}
