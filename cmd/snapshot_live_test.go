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

// writeCounts returns the count argument of each sys_enter_write line of
// a report, in order.
func writeCounts(t *testing.T, report string) []int {
	t.Helper()
	var out []int
	for _, m := range regexp.MustCompile(`sys_enter_write: .* count: (0x[0-9a-f]+)`).FindAllStringSubmatch(report, -1) {
		n, err := strconv.ParseInt(m[1], 0, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, int(n))
	}
	return out
}

// span returns first..last as a list.
func span(first, last int) []int {
	var out []int
	for i := first; i <= last; i++ {
		out = append(out, i)
	}
	return out
}

// checkFile reads a trace.dat with trace-cmd report, which must say
// nothing on stderr, and with gtrace report, which must print the same
// bytes, and returns the counts of its writes.
func checkFile(t *testing.T, file string) []int {
	t.Helper()
	theirs := traceCmdReport(t, file)
	if mine, errOut, code := run(t, "report", "-i", file); code != 0 || mine != theirs {
		t.Errorf("%s: gtrace report: exit %d (%s), differs from trace-cmd report:\n%s", file, code, errOut, testutil.FirstDiff(mine, theirs))
	}
	return writeCounts(t, theirs)
}

// snapFiles gives the sizes of the writes each file of a recording
// holds, by file name.
type snapFiles []struct {
	file string
	want []int
}

// checkFiles checks that the files of dir are exactly those of want
// (the recording and its snapshots), each with its writes.
func checkFiles(t *testing.T, dir string, want snapFiles) {
	t.Helper()
	for _, tc := range want {
		if got := checkFile(t, filepath.Join(dir, tc.file)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: writes of %v bytes, want %v", tc.file, got, tc.want)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.dat")); len(files) != len(want) {
		t.Errorf("files %q, want %d", files, len(want))
	}
}

// TestPrivilegedRecordSnapshot: -R 'snapshot:2 if ...' on a helper's 12
// writes of 1..12 bytes, firing from the 5th on: the recording has the
// 12, snapshot 1 the writes up to the 5th, snapshot 2 up to the 6th, and
// there is no third.
func TestPrivilegedRecordSnapshot(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "t.dat")
	args := append([]string{"record", "-q", "-o", file, "--follow", "-e", "syscalls:sys_enter_write", "-f", "fd == 100",
		"-R", "snapshot:2 if fd == 100 && count >= 5"}, workload(t, "write 12")...)
	_, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	checkFiles(t, dir, snapFiles{
		{"t.dat", span(1, 12)},
		{"t.snapshot-1.dat", span(1, 5)},
		{"t.snapshot-2.dat", span(1, 6)},
	})
	for _, s := range []string{"snapshot 1: " + filepath.Join(dir, "t.snapshot-1.dat") + "\n", "snapshot 2: "} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut)
		}
	}
}

// TestPrivilegedRecordFlight: record --snapshot -b 64 keeps the last 64
// KiB of samples of each CPU (16-byte headers and 40-byte records of
// sys_enter_write: 1170 of them). A helper on CPU 0 writes 1..3000
// bytes; the snapshot at the write of 2500 holds exactly the 1170
// writes up to it, and the file written at the end the last 1170.
func TestPrivilegedRecordFlight(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "t.dat")
	args := append([]string{"record", "-q", "--snapshot", "-b", "64", "-o", file, "--follow", "-e", "syscalls:sys_enter_write", "-f", "fd == 100",
		"-R", "snapshot if fd == 100 && count == 2500"}, workload(t, "write-paced 3000")...)
	_, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	if !strings.Contains(errOut, "t.dat: the last 1170 events") || !strings.Contains(errOut, "of 3000 recorded, 0 lost") {
		t.Fatalf("statistics: want the last 1170 of 3000 events, 0 lost:\n%s", errOut)
	}
	const kept = 65536 / (16 + 40)
	for _, tc := range []struct {
		file string
		want []int
	}{
		{"t.snapshot-1.dat", span(2500-kept+1, 2500)},
		{"t.dat", span(3000-kept+1, 3000)},
	} {
		if got := checkFile(t, filepath.Join(dir, tc.file)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %d writes (%v...), want %d..%d", tc.file, len(got), got[:min(3, len(got))], tc.want[0], tc.want[len(tc.want)-1])
		}
	}
}
