package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
)

// The filter matrix: every operator, glob form, pseudo-field and literal
// of the filter language, each on events of a helper whose behaviour is
// known to the event, so that each filter has one exact count. Every row
// runs through every path (record, then report; hist), each of which
// runs the helper under gtrace and counts the events of the helper's own
// pid: the count must be the row's, exactly.

// What the filter-matrix workload does, after naming its thread
// matrixComm and pinning it to the CPU it is given.
const (
	matrixComm    = "gtfm-worker"
	matrixGetppid = 150 // getppid calls
	matrixWrites  = 64  // writes of 1, 2, ... matrixWrites bytes to workloadFD
)

// matrixOpens are the files the workload opens (none exists: an open that
// fails is an event all the same), each a different power of two times,
// so that a count names the set of files that a filter matched. All but
// the last are opened relative to the working directory (AT_FDCWD, -100);
// the last relative to workloadFD, which is no directory.
var matrixOpens = []struct {
	name  string
	times int
}{
	{"gtfm-a1.dat", 1},
	{"gtfm-b2.dat", 2},
	{"gtfm-c3.log", 4},
	{"gtfm-x4.log", 8},
	{"gtfm-ab.txt", 16},
	{"gtfm-dd.dat", 32},
}

// The counts of the opens above, by name.
const (
	opA1 = 1 << iota
	opB2
	opC3
	opX4
	opAB
	opDD
)

// filterMatrixWorkload is the "filter-matrix CPU" workload: it names its
// thread, pins it to CPU, writes its pid to the file pidFileEnv names,
// then makes the system calls above, all on its main thread (locked to
// it by the init of workload_live_test.go, so that the tid is the pid).
func filterMatrixWorkload(args []string) int {
	if len(args) != 1 {
		return 99
	}
	cpu, err := strconv.Atoi(args[0])
	if err != nil {
		return 99
	}
	name, err := unix.BytePtrFromString(matrixComm)
	if err != nil {
		return 90
	}
	if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0); err != nil {
		return 90
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return 91
	}
	if err := os.WriteFile(os.Getenv(pidFileEnv), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return 92
	}
	for range matrixGetppid {
		syscall.Getppid()
	}
	null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil || unix.Dup3(null, workloadFD, 0) != nil {
		return 93
	}
	buf := make([]byte, matrixWrites)
	for n := 1; n <= matrixWrites; n++ {
		if _, err := unix.Write(workloadFD, buf[:n]); err != nil {
			return 94
		}
	}
	for i, o := range matrixOpens {
		dir := unix.AT_FDCWD
		if i == len(matrixOpens)-1 {
			dir = workloadFD
		}
		for range o.times {
			if fd, err := unix.Openat(dir, o.name, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
		}
	}
	return 0
}

// matrixRow is one filter on one event and the number of the helper's
// events that pass it.
type matrixRow struct {
	event, filter string
	want          int
}

// matrixPath runs the helper under gtrace with a row's event and filter,
// and returns how many of the helper's events gtrace let through.
type matrixPath struct {
	name  string
	count func(t *testing.T, r matrixRow) int
}

// matrixRows returns the rows for a helper pinned to cpu; other is
// another CPU, or -1 if there is none.
func matrixRows(cpu, other int) []matrixRow {
	const getppid, write, openat = "syscalls:sys_enter_getppid", "syscalls:sys_enter_write", "syscalls:sys_enter_openat"
	const ours = `filename.ustring ~ "gtfm-*"`
	c := strconv.Itoa(cpu)
	rows := []matrixRow{
		// Numbers: every operator, decimal, hex and octal.
		{write, "fd == 100", matrixWrites},
		{write, "fd == 100 && count != 7", matrixWrites - 1},
		{write, "fd == 100 && count < 10", 9},
		{write, "fd == 100 && count <= 10", 10},
		{write, "fd == 100 && count > 60", 4},
		{write, "fd == 100 && count >= 60", 5},
		{write, "fd == 100 && count & 1", 32},
		{write, "fd == 100 && count & 0x30", 48}, // 16..63
		{write, "fd == 0144 && count == 010", 1},
		{write, "fd == 0x64 && count <= 0x1F", 31},
		{write, "fd == 100 && count == 0", 0},
		// Logic: precedence, negation, parentheses.
		{write, "fd == 100 && count == 1 || fd == 100 && count == 2", 2},
		{write, "fd == 100 && (count < 3 || count > 62) && !(count == 64)", 3},
		{write, "!(fd != 100 || count > 5)", 5},
		{write, "fd == 100 && !(count < 5 || count > 8)", 4},
		{write, "fd == 100 && !!(count > 62)", 2},
		{write, "(fd == 100) && ((count == 3) || (count == 4 && !(fd != 100)))", 2},
		// comm: strings, every glob form, a suffix on the real end.
		{getppid, `comm == "gtfm-worker"`, matrixGetppid},
		{getppid, `COMM == 'gtfm-worker'`, matrixGetppid},
		{getppid, "comm == gtfm-worker", matrixGetppid},
		{getppid, `comm != "gtfm-worker"`, 0},
		{getppid, `comm ~ "gtfm*"`, matrixGetppid},
		{getppid, `comm ~ "*worker"`, matrixGetppid},
		{getppid, `comm ~ "*-wor*"`, matrixGetppid},
		{getppid, `comm ~ "*zz*"`, 0},
		{getppid, `comm ~ "g*m*w*r"`, matrixGetppid},
		{getppid, `comm ~ "gt?m-w[a-z]rk[!x]r"`, matrixGetppid},
		{getppid, `comm ~ "gtfm-[abc]*"`, 0},
		{getppid, `comm ~ "gtfm-[!w]*"`, 0},
		// The cpu pseudo-fields and CPUS{}.
		{getppid, "cpu == " + c, matrixGetppid},
		{getppid, "common_cpu != " + c, 0},
		{getppid, "CPU & CPUS{" + c + "}", matrixGetppid},
		{getppid, "common_cpu == CPUS{" + c + "}", matrixGetppid},
		{getppid, "cpu != CPUS{" + c + "}", 0},
		// User strings: .ustring, with globs of every form.
		{openat, `filename.ustring == "gtfm-b2.dat"`, opB2},
		{openat, `filename.ustring != "gtfm-a1.dat" && ` + ours, opB2 + opC3 + opX4 + opAB + opDD},
		{openat, `filename.ustring ~ "gtfm-a*"`, opA1 + opAB},
		{openat, `filename.ustring ~ "*.log"`, opC3 + opX4},
		{openat, `filename.ustring ~ "*-x*"`, opX4},
		{openat, `filename.ustring ~ "*f*-*b*"`, opB2 + opAB},
		{openat, `filename.ustring ~ "gtfm-??.dat"`, opA1 + opB2 + opDD},
		{openat, `filename.ustring ~ "gtfm-[abc]?.*"`, opA1 + opB2 + opC3 + opAB},
		{openat, `filename.ustring ~ "gtfm-[a-c][0-9].*"`, opA1 + opB2 + opC3},
		{openat, `filename.ustring ~ "gtfm-[!x]?.log"`, opC3},
		// Signed arguments: dfd is an int, AT_FDCWD is -100.
		{openat, "dfd == -100 && " + ours, opA1 + opB2 + opC3 + opX4 + opAB},
		{openat, "dfd < 0 && " + ours, opA1 + opB2 + opC3 + opX4 + opAB},
		{openat, "dfd >= 0 && " + ours, opDD},
		{openat, "dfd == 100 && " + ours, opDD},
		// A raw_syscalls event: the syscall number.
		{"raw_syscalls:sys_enter", fmt.Sprintf("id == %d && comm == %q", syscall.SYS_GETPPID, matrixComm), matrixGetppid},
	}
	if other >= 0 {
		o := strconv.Itoa(other)
		rows = append(rows,
			matrixRow{getppid, "cpu & CPUS{" + o + "}", 0},
			matrixRow{getppid, "cpu & CPUS{" + c + "," + o + "}", matrixGetppid},
			matrixRow{getppid, "common_cpu == " + o, 0},
		)
	}
	return rows
}

// matrixCPUs returns the highest CPU this process may run on, and
// another one, or -1.
func matrixCPUs(t *testing.T) (cpu, other int) {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu, other = -1, -1
	for i := range 1024 {
		if set.IsSet(i) {
			other, cpu = cpu, i
		}
	}
	return cpu, other
}

// TestPrivilegedFilterMatrix runs every row of the filter matrix through
// record (counted in gtrace report's text), filter (counted in its
// stream) and hist (the hitcount of the helper's common_pid).
func TestPrivilegedFilterMatrix(t *testing.T) {
	testutil.RequirePrivileged(t)
	cpu, other := matrixCPUs(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv(pidFileEnv, pidFile)
	helper := func(t *testing.T) []string {
		if err := os.Remove(pidFile); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return workload(t, "filter-matrix "+strconv.Itoa(cpu))
	}
	helperPID := func(t *testing.T) string {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatalf("the helper wrote no pid: %v", err)
		}
		return string(b)
	}
	paths := []matrixPath{
		{"record", func(t *testing.T, r matrixRow) int {
			file := filepath.Join(t.TempDir(), "trace.dat")
			args := append([]string{"record", "-e", r.event, "-f", r.filter, "-o", file}, helper(t)...)
			if _, errOut, code := run(t, args...); code != 0 {
				t.Fatalf("gtrace %s: exit %d: %s", strings.Join(args, " "), code, errOut)
			}
			out, errOut, code := run(t, "report", "-i", file)
			if code != 0 {
				t.Fatalf("gtrace report: exit %d: %s", code, errOut)
			}
			_, name, _ := strings.Cut(r.event, ":")
			re := regexp.MustCompile(`(?m)^ *\S+-` + helperPID(t) + ` +\[\d+\] +\d+\.\d+: ` + name + `: `)
			return len(re.FindAllString(out, -1))
		}},
		{"filter", func(t *testing.T, r matrixRow) int {
			args := append([]string{"filter", "-q", "-e", r.event, "-f", r.filter}, helper(t)...)
			out, errOut, code := run(t, args...)
			if code != 0 {
				t.Fatalf("gtrace %s: exit %d: %s", strings.Join(args, " "), code, errOut)
			}
			_, name, _ := strings.Cut(r.event, ":")
			re := regexp.MustCompile(`(?m)^ *\S+-` + helperPID(t) + ` +\[\d+\] +\d+\.\d+: ` + name + `: `)
			return len(re.FindAllString(out, -1))
		}},
		{"hist", func(t *testing.T, r matrixRow) int {
			args := append([]string{"hist", "-e", r.event, "-f", r.filter, "-k", "common_pid"}, helper(t)...)
			out, errOut, code := run(t, args...)
			if code != 0 {
				t.Fatalf("gtrace %s: exit %d: %s", strings.Join(args, " "), code, errOut)
			}
			m := regexp.MustCompile(`(?m)^\{ common_pid: +` + helperPID(t) + ` \} hitcount: +(\d+)$`).FindStringSubmatch(out)
			if m == nil {
				return 0
			}
			n, _ := strconv.Atoi(m[1])
			return n
		}},
	}
	for _, r := range matrixRows(cpu, other) {
		for _, p := range paths {
			if got := p.count(t, r); got != r.want {
				t.Errorf("%s -e %s -f '%s': %d events of the helper, want %d", p.name, r.event, r.filter, got, r.want)
			}
		}
	}
}
