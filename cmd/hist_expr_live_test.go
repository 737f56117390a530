package cmd

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// TestPrivilegedHistSignedExprMatchInterpreter runs hists with signed
// expressions of raw_syscalls:sys_exit's ret over a helper that makes
// exactly n getppid calls, and compares them with the file engine over
// the records the kernel would write: signed keys and values print
// signed in both.
func TestPrivilegedHistSignedExprMatchInterpreter(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 321
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	comm, pid := commOf(t), os.Getpid()
	exit, err := fs.Format(tracefs.Event{System: "raw_syscalls", Name: "sys_exit"})
	if err != nil {
		t.Fatal(err)
	}
	id, ret := exit.Field("id"), exit.Field("ret")
	filter := fmt.Sprintf("id == 110 && ret == %d", pid)
	for _, args := range [][]string{
		{"-k", "id-ret", "--vals", "0-ret,ret/2", "-f", filter},
		{"hist:keys=-(ret-id):vals=ret*2-id,ret/3:sort=-(ret-id) if " + filter},
	} {
		got, errOut, code := run(t, append(append([]string{"hist", "-e", "raw_syscalls:sys_exit"}, args...), workload(t, fmt.Sprintf("getppid %d", n))...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr:\n%s", args, code, errOut)
		}
		want := interpretRecords(t, args, exit, comm, n, func(rec []byte, _ int) {
			putUint(rec[id.Offset:id.Offset+id.Size], 110)
			putUint(rec[ret.Offset:ret.Offset+ret.Size], uint64(pid))
		})
		if got != want {
			t.Errorf("%v: BPF and interpreter differ\nBPF:\n%s\ninterpreter:\n%s", args, got, want)
		}
		if !regexp.MustCompile(`(?m)^\{ [^ ]+: +-\d+ \}`).MatchString(got) {
			t.Errorf("%v: no negative key in\n%s", args, got)
		}
	}
}

// TestPrivilegedHistTimestamp sums common_timestamp.usecs over exactly n
// getppid calls of a helper, in each clock BPF reads, and wants the sum
// between n times the clock's time before the helper ran and n times the
// time after.
func TestPrivilegedHistTimestamp(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 100
	pid := os.Getpid()
	for clock, id := range map[string]int32{"mono": unix.CLOCK_MONOTONIC, "boot": unix.CLOCK_BOOTTIME, "tai": unix.CLOCK_TAI} {
		usecs := func() uint64 {
			var ts unix.Timespec
			if err := unix.ClockGettime(id, &ts); err != nil {
				t.Fatal(err)
			}
			return uint64(ts.Nano()) / 1000
		}
		spec := fmt.Sprintf("hist:keys=id:vals=common_timestamp.usecs:clock=%s if id == 110 && ret == %d", clock, pid)
		before := usecs()
		out, errOut, code := run(t, append([]string{"hist", "-e", "raw_syscalls:sys_exit", spec}, workload(t, fmt.Sprintf("getppid %d", n))...)...)
		after := usecs() + 1
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr:\n%s", clock, code, errOut)
		}
		m := regexp.MustCompile(`(?m)^\{ id: +110 \} hitcount: +(\d+)  common_timestamp: +(\d+)$`).FindStringSubmatch(out)
		if m == nil || m[1] != strconv.Itoa(n) {
			t.Fatalf("%s: want one entry of %d hits:\n%s", clock, n, out)
		}
		sum, _ := strconv.ParseUint(m[2], 10, 64)
		if sum < n*before || sum > n*after {
			t.Errorf("%s: sum of common_timestamp.usecs = %d, want between %d and %d", clock, sum, n*before, n*after)
		}
		if want := ":clock=" + clock + " if "; !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(out) {
			t.Errorf("%s: trigger info lacks %q:\n%s", clock, want, out)
		}
	}
}

// TestPrivilegedHistStringPointerKey counts a helper's openat calls by
// their filename, a char * to user memory: the key is the string, not the
// pointer (each call passes a new copy of the name), so exactly two
// entries, n and 2n.
func TestPrivilegedHistStringPointerKey(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 40
	filter := fmt.Sprintf("flags == %d && comm == %q", openFlags, commOf(t))
	out, errOut, code := run(t, append([]string{"hist", "-e", "syscalls:sys_enter_openat", "-k", "filename", "-f", filter}, workload(t, fmt.Sprintf("open %d", n))...)...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	want := fmt.Sprintf("{ filename: %-50s } hitcount: %10d\n{ filename: %-50s } hitcount: %10d\n", "/dev/null", n, "/", 2*n)
	if !strings.Contains(out, "#\n\n"+want+"\nTotals:\n") {
		t.Errorf("want the entries\n%s\nin\n%s", want, out)
	}
}

// TestPrivilegedHistFileTimestamp records exactly n getppid calls of a
// helper with gtrace record (clock mono) and sums common_timestamp.usecs
// over the file with gtrace hist -i: the records' time stamps, between n
// times the time before the helper ran and n times the time after; the
// same hist with clock=boot is refused at clock=.
func TestPrivilegedHistFileTimestamp(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 200
	file := t.TempDir() + "/trace.dat"
	usecs := func() uint64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		return uint64(ts.Nano()) / 1000
	}
	filter := fmt.Sprintf("id == 110 && ret == %d", os.Getpid())
	before := usecs()
	if _, errOut, code := run(t, append([]string{"record", "-q", "-e", "raw_syscalls:sys_exit", "-f", filter, "-o", file}, workload(t, fmt.Sprintf("getppid %d", n))...)...); code != 0 {
		t.Fatalf("record: exit %d, stderr:\n%s", code, errOut)
	}
	after := usecs() + 1
	out, errOut, code := run(t, "hist", "-i", file, "-e", "raw_syscalls:sys_exit", "hist:keys=id:vals=common_timestamp.usecs,common_timestamp-common_timestamp if "+filter)
	if code != 0 {
		t.Fatalf("hist -i: exit %d, stderr:\n%s", code, errOut)
	}
	m := regexp.MustCompile(`(?m)^\{ id: +110 \} hitcount: +(\d+)  common_timestamp: +(\d+)  common_timestamp-common_timestamp: +0$`).FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(n) {
		t.Fatalf("want one entry of %d hits:\n%s", n, out)
	}
	if sum, _ := strconv.ParseUint(m[2], 10, 64); sum < n*before || sum > n*after {
		t.Errorf("sum of common_timestamp.usecs = %d, want between %d and %d", sum, n*before, n*after)
	}
	_, errOut, code = run(t, "hist", "-i", file, "-e", "raw_syscalls:sys_exit", "hist:keys=id:vals=common_timestamp:clock=boot")
	if code != 2 || !strings.Contains(errOut, "the trace.dat file was recorded with clock mono") {
		t.Errorf("clock=boot over a mono file: exit %d, stderr:\n%s", code, errOut)
	}
}
