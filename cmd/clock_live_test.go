package cmd

import (
	"path/filepath"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestPrivilegedRecordClocks records with each clock that gtrace record
// offers and checks that gtrace report prints the file as trace-cmd
// report does, with and without -t: trace-cmd shows seconds for the clocks
// it knows count nanoseconds and raw counts for the others (boot).
func TestPrivilegedRecordClocks(t *testing.T) {
	testutil.RequirePrivileged(t)
	for _, clock := range []string{"mono", "boot", "tai"} {
		t.Run(clock, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), clock+".dat")
			args := append([]string{"-C", clock, "-e", "raw_syscalls:sys_enter", "-o", file}, workload(t, "getppid 100")...)
			if errOut, code := recordLive(t, args...); code != 0 {
				t.Fatalf("record -C %s: exit %d, stderr:\n%s", clock, code, errOut)
			}
			for _, extra := range [][]string{nil, {"-t"}} {
				want := traceCmdReport(t, file, extra...)
				got, errOut, code := run(t, append([]string{"report", "-i", file}, extra...)...)
				if code != 0 || got != want {
					t.Errorf("report %v of a %s file: exit %d (%s), differs from trace-cmd:\n%s", extra, clock, code, errOut, testutil.FirstDiff(got, want))
				}
			}
		})
	}
}
