package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/live"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// recordLive runs gtrace record with args on the real tracefs and returns
// its stderr and exit status: 0, the traced command's status, or 1 for
// another error, which is then in stderr.
func recordLive(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb syncBuffer
	err := execRecord(&Deps{Out: &out, Err: &errb, In: os.Stdin, TraceFS: tracefs.Open}, args...)
	var st *live.ExitError
	switch {
	case err == nil:
		return errb.String(), 0
	case errors.As(err, &st):
		return errb.String(), st.Code
	}
	return errb.String() + err.Error(), 1
}

// traceCmdReport runs trace-cmd report on file and returns its stdout;
// it fails the test if trace-cmd writes anything to stderr.
func traceCmdReport(t *testing.T, file string, args ...string) string {
	t.Helper()
	c := exec.Command(requireTraceCmd(t), append([]string{"report", "-i", file}, args...)...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("trace-cmd report: %v, stderr:\n%s", err, errb.String())
	}
	return out.String()
}

// TestPrivilegedRecordGetppid records system calls and context switches
// while a helper makes exactly n getppid calls, then reads the file with
// trace-cmd: every call is there once, under the helper's name, with
// timestamps of the mono clock.
func TestPrivilegedRecordGetppid(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 4321
	file := filepath.Join(t.TempDir(), "trace.dat")
	args := append([]string{"-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit", "-e", "sched:sched_switch", "-o", file},
		workload(t, fmt.Sprintf("getppid-sleep %d 50", n))...)
	errOut, code := recordLive(t, args...)
	if code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	if !regexp.MustCompile(`(?m)^CPU 0: \d+ events, 0 lost$`).MatchString(errOut) ||
		!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(file)+`: \d+ events \([\d.]+ MB of records\), 0 lost$`).MatchString(errOut) {
		t.Errorf("summary on stderr:\n%s", errOut)
	}
	report := traceCmdReport(t, file)
	comm := commOf(t)
	enter := regexp.MustCompile(`(?m)^ *` + regexp.QuoteMeta(comm) + `-(\d+) +\[(\d+)\] +(\d+\.\d+): sys_enter: +NR 110 \(`)
	got := enter.FindAllStringSubmatch(report, -1)
	if len(got) != n {
		t.Fatalf("%d sys_enter NR 110 lines of %s, want %d; report starts:\n%s", len(got), comm, n, report[:min(len(report), 2000)])
	}
	exits := regexp.MustCompile(`(?m)^ *`+regexp.QuoteMeta(comm)+`-\d+ +\[\d+\] +\d+\.\d+: sys_exit: +NR 110 = \d+$`).FindAllString(report, -1)
	if len(exits) != n {
		t.Errorf("%d sys_exit NR 110 lines, want %d", len(exits), n)
	}
	if !regexp.MustCompile(`(?m)sched_switch: +\S+:\d+ \[\d+\] \S+ ==> `).MatchString(report) {
		t.Error("no sched_switch records")
	}
	if strings.Contains(report, "EVENTS DROPPED") {
		t.Error("events were dropped")
	}
	// gtrace reads its own file exactly as trace-cmd does, and its offline
	// hist counts the same calls.
	if mine, errOut, code := run(t, "report", "-i", file); code != 0 || mine != report {
		t.Errorf("gtrace report: exit %d (%s), differs from trace-cmd report:\n%s", code, errOut, testutil.FirstDiff(mine, report))
	}
	hist, errOut, code := run(t, "hist", "-i", file, "-e", "raw_syscalls:sys_enter", "-k", "common_pid.execname,id.syscall")
	line := regexp.MustCompile(`(?m)^\{ common_pid: `+regexp.QuoteMeta(comm)+` +\[ *\d+\], id: sys_getppid +\[110\] \} hitcount: +(\d+)$`).FindAllStringSubmatch(hist, -1)
	if code != 0 || len(line) != 1 || line[0][1] != strconv.Itoa(n) {
		t.Errorf("gtrace hist -i: exit %d (%s), getppid lines %v, want one with hitcount %d:\n%s", code, errOut, line, n, hist)
	}
	// mono timestamps are seconds since boot (less any suspend): close
	// to /proc/uptime, and in order on each CPU.
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	uptime, _ := strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	last := map[string]float64{}
	for _, m := range got {
		ts, _ := strconv.ParseFloat(m[3], 64)
		if ts < last[m[2]] {
			t.Fatalf("CPU %s: time goes back from %f to %f", m[2], last[m[2]], ts)
		}
		last[m[2]] = ts
		if ts > uptime || ts < uptime-60 {
			t.Fatalf("timestamp %f is not near the uptime %f", ts, uptime)
		}
	}
}

// namedWorkload is workload under a name no other task has: the test
// binary run through a symbolic link named for this test process, whose
// name exec makes the workload's comm. A test that filters on its
// workload's comm needs it: other runs of this test binary on the machine
// are cmd.test too, and so are the children they fork until these exec
// (recorded under the name they exec, as the kernel's saved cmdlines name
// them).
func namedWorkload(t *testing.T, w string) (args []string, comm string) {
	t.Helper()
	args = workload(t, w)
	comm = fmt.Sprintf("wl-%d", os.Getpid())
	link := filepath.Join(t.TempDir(), comm)
	if err := os.Symlink(args[len(args)-1], link); err != nil {
		t.Fatal(err)
	}
	return []string{"--", link}, comm
}

// TestPrivilegedRecordSyscalls records every syscalls event (on this
// kernel's BTF, through the two syscall group programs) while a helper
// makes exactly n getppid calls: trace-cmd reads the file with nothing on
// stderr and shows each call's entry and exit, with the parent's pid as
// the return value, and gtrace report prints the same bytes.
func TestPrivilegedRecordSyscalls(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 321
	file := filepath.Join(t.TempDir(), "syscalls.dat")
	w, name := namedWorkload(t, fmt.Sprintf("getppid-sleep %d 50", n))
	args := append([]string{"-e", "syscalls:*", "-o", file}, w...)
	if errOut, code := recordLive(t, args...); code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	report := traceCmdReport(t, file)
	comm := regexp.QuoteMeta(name)
	enterRe := regexp.MustCompile(`(?m)^ *` + comm + `-\d+ +\[\d+\] +\d+\.\d+: sys_enter_getppid: *$`)
	enters := enterRe.FindAllString(report, -1)
	exits := regexp.MustCompile(`(?m)^ *`+comm+`-\d+ +\[\d+\] +\d+\.\d+: sys_exit_getppid: +0x`+strconv.FormatInt(int64(os.Getpid()), 16)+`$`).FindAllString(report, -1)
	if len(enters) != n || len(exits) != n {
		t.Errorf("%d sys_enter_getppid and %d sys_exit_getppid lines of %s, want %d each; report starts:\n%s", len(enters), len(exits), comm, n, report[:min(len(report), 2000)])
	}
	if !regexp.MustCompile(`(?m)sys_enter_openat: +dfd: 0x[0-9a-f]+, filename: 0x[0-9a-f]+, flags: 0x[0-9a-f]+, mode: 0x[0-9a-f]+$`).MatchString(report) {
		t.Error("no sys_enter_openat line with its four arguments")
	}
	if mine, errOut, code := run(t, "report", "-i", file); code != 0 || mine != report {
		t.Errorf("gtrace report: exit %d (%s), differs from trace-cmd report:\n%s", code, errOut, testutil.FirstDiff(mine, report))
	}

	// A filter on what every syscalls event has runs in the group
	// programs: only the helper's events are recorded, not those of this
	// test process, which meanwhile runs /bin/true, its children making
	// calls as cmd.test until they exec.
	filter := fmt.Sprintf("comm == %q", name)
	plan, errOut, code := run(t, "record", "-e", "syscalls:*", "-f", filter, "--dry-run")
	if code != 0 || !strings.Contains(plan, "gtrace_sysenter: syscalls:sys_enter_getppid (ID ") || !strings.Contains(plan, ", filter "+filter+", with the other syscall events on raw tracepoint sys_enter\n") {
		t.Errorf("--dry-run: exit %d (%s), no filtered syscall group in:\n%.3000s", code, errOut, plan)
	}
	w, _ = namedWorkload(t, fmt.Sprintf("getppid-sleep %d 300", n))
	args = append([]string{"-e", "syscalls:*", "-f", filter, "-o", file}, w...)
	stop := runTrueEvery(10 * time.Millisecond)
	errOut, code = recordLive(t, args...)
	stop()
	if code != 0 {
		t.Fatalf("gtrace record -f: exit %d, stderr:\n%s", code, errOut)
	}
	report = traceCmdReport(t, file)
	lines := regexp.MustCompile(`(?m)^ *(\S+)-\d+ +\[\d+\] `).FindAllStringSubmatch(report, -1)
	for _, l := range lines {
		if l[1] != name {
			t.Errorf("-f %s: a line of %s", filter, l[1])
			break
		}
	}
	if got := len(enterRe.FindAllString(report, -1)); got != n {
		t.Errorf("-f %s: %d sys_enter_getppid lines, want %d", filter, got, n)
	}
}

// TestPrivilegedRecordLost records into rings of one page: the events that
// do not fit are counted on stderr and in the file's CPU stats, and marked
// in the pages (trace-cmd report prints those followed by a record).
func TestPrivilegedRecordLost(t *testing.T) {
	testutil.RequirePrivileged(t)
	file := filepath.Join(t.TempDir(), "lost.dat")
	args := append([]string{"-e", "raw_syscalls:sys_enter", "-b", "4", "-o", file}, workload(t, "getppid 200000")...)
	errOut, code := recordLive(t, args...)
	if code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	m := regexp.MustCompile(`(?m)^.*: \d+ events \([\d.]+ MB of records\), (\d+) lost$`).FindStringSubmatch(errOut)
	if m == nil || m[1] == "0" {
		t.Fatalf("no events lost with 4 KiB rings; stderr:\n%s", errOut)
	}
	lost, _ := strconv.Atoi(m[1])
	sum := func(re, text string) int {
		n := 0
		for _, d := range regexp.MustCompile(re).FindAllStringSubmatch(text, -1) {
			v, _ := strconv.Atoi(d[1])
			n += v
		}
		return n
	}
	if stats := sum(`(?m)^dropped events: (\d+)$`, traceCmdReport(t, file, "--stat")); stats != lost {
		t.Errorf("CPU stats count %d dropped events, gtrace %d", stats, lost)
	}
	// The events lost after a CPU's last record are in the file, but
	// trace-cmd prints none of them.
	if marked := sum(`CPU:\d+ \[(\d+) EVENTS DROPPED\]`, traceCmdReport(t, file)); marked == 0 || marked > lost {
		t.Errorf("trace-cmd report shows %d dropped events, gtrace counted %d", marked, lost)
	}
}

// TestPrivilegedRecordFilterDynamic records, as file version 6, the
// getppid calls of a helper with a filter, and the execs of commands run
// meanwhile, whose file names are __data_loc strings.
func TestPrivilegedRecordFilterDynamic(t *testing.T) {
	testutil.RequirePrivileged(t)
	file := filepath.Join(t.TempDir(), "v6.dat")
	args := append([]string{"-e", "raw_syscalls:sys_enter", "-f", "id == 110", "-e", "sched:sched_process_exec", "--file-version", "6", "-o", file},
		workload(t, "getppid-sleep 77 500")...)
	stop := runTrueEvery(20 * time.Millisecond)
	errOut, code := recordLive(t, args...)
	stop()
	if code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	report := traceCmdReport(t, file)
	if n := strings.Count(report, "sys_enter:"); n != strings.Count(report, "NR 110 (") || n < 77 {
		t.Errorf("%d sys_enter records, %d of getppid: want only getppid, at least 77", n, strings.Count(report, "NR 110 ("))
	}
	if !regexp.MustCompile(`(?m)^ +true-(\d+) +\[\d+\] +\d+\.\d+: sched_process_exec: +filename=/\S*bin/true pid=(\d+) old_pid=\d+$`).MatchString(report) {
		t.Errorf("no sched_process_exec record of /bin/true in:\n%s", report[:min(len(report), 3000)])
	}
}

// TestPrivilegedRecordExitStatusZstd passes the command's exit status on
// and writes a zstd-compressed file that trace-cmd reads.
func TestPrivilegedRecordExitStatusZstd(t *testing.T) {
	testutil.RequirePrivileged(t)
	file := filepath.Join(t.TempDir(), "zstd.dat")
	args := append([]string{"-e", "sched:*", "--compression", "zstd", "-o", file}, workload(t, "exit 3")...)
	if errOut, code := recordLive(t, args...); code != 3 {
		t.Fatalf("exit status %d, want the command's 3; stderr:\n%s", code, errOut)
	}
	traceCmdReport(t, file)
}

// TestPrivilegedRecordPID records the system calls of one process given
// with -P, and of no other.
func TestPrivilegedRecordPID(t *testing.T) {
	testutil.RequirePrivileged(t)
	// The shell runs until the recording is over, however long gtrace
	// takes to start on a loaded machine.
	sh := exec.Command("sh", "-c", "while :; do sleep 0.05; done")
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sh.Process.Kill()
		sh.Wait()
	}()
	file := filepath.Join(t.TempDir(), "pid.dat")
	pid := strconv.Itoa(sh.Process.Pid)
	if errOut, code := recordLive(t, "-e", "raw_syscalls:sys_enter", "-P", pid, "--duration", "300ms", "-o", file); code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	lines := regexp.MustCompile(`(?m)^ *\S+-(\d+) +\[\d+\] +\d+\.\d+: sys_enter: `).FindAllStringSubmatch(traceCmdReport(t, file), -1)
	if len(lines) == 0 {
		t.Fatal("no system calls of the shell recorded")
	}
	for _, m := range lines {
		if m[1] != pid {
			t.Fatalf("a system call of pid %s recorded, want only %s", m[1], pid)
		}
	}
}

// runTrueEvery runs /bin/true every d, from a goroutine, until the
// returned stop is called, which returns once the last has ended.
func runTrueEvery(d time.Duration) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(d):
				_ = exec.Command("/bin/true").Run()
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
