package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestPrivilegedFilterStream streams the writes of 7 bytes to fd 1 while a
// helper writes n numbered lines to fd 1 and to fd 2 (the first nine of
// each are 7 bytes): exactly the helper's nine matching writes print, and
// the stream is byte for byte what gtrace report and trace-cmd report
// print of the file that -o wrote; the same with --format ndjson against
// gtrace report's NDJSON.
func TestPrivilegedFilterStream(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n, want = 30, 9
	comm := commOf(t)
	line := regexp.MustCompile(`(?m)^ *` + regexp.QuoteMeta(comm) + `-(\d+) +\[\d+\] +\d+\.\d+: sys_enter_write: +fd: 0x00000001, buf: 0x[0-9a-f]+, count: 0x00000007$`)
	for _, format := range []string{"text", "ndjson"} {
		file := filepath.Join(t.TempDir(), "trace.dat")
		args := append([]string{"filter", "-e", "syscalls:sys_enter_write", "-f", "fd == 1 && count == 7", "-o", file, "--format", format},
			workload(t, fmt.Sprintf("lines %d", n))...)
		out, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("gtrace filter --format %s: exit %d, stderr:\n%s", format, code, errOut)
		}
		if !strings.Contains(errOut, "gtrace: streaming syscalls:sys_enter_write if fd == 1 && count == 7 while "+filepath.Base(os.Args[0])+" runs; Ctrl-C to stop\n") ||
			!regexp.MustCompile(`(?m)^gtrace: \d+ events, 0 lost; written to `+regexp.QuoteMeta(file)+`$`).MatchString(errOut) {
			t.Errorf("--format %s: stderr:\n%s", format, errOut)
		}
		if format == "text" {
			got := line.FindAllStringSubmatch(out, -1)
			if len(got) != want {
				t.Fatalf("%d matching lines of %s, want %d; stream:\n%s", len(got), comm, want, out)
			}
			for _, m := range got[1:] {
				if m[1] != got[0][1] {
					t.Fatalf("lines of pids %s and %s, want the helper's alone:\n%s", got[0][1], m[1], out)
				}
			}
			mine, errOut, code := run(t, "report", "-i", file)
			if code != 0 || cutCPUs(t, mine) != out {
				t.Errorf("gtrace report -i: exit %d (%s), differs from the stream:\n%s", code, errOut, testutil.FirstDiff(out, cutCPUs(t, mine)))
			}
			if theirs := cutCPUs(t, traceCmdReport(t, file)); theirs != out {
				t.Errorf("trace-cmd report differs from the stream:\n%s", testutil.FirstDiff(out, theirs))
			}
			continue
		}
		if got := strings.Count(out, `"comm":"`+comm+`","pid":`); got != want {
			t.Errorf("%d objects of %s, want %d; stream:\n%s", got, comm, want, out)
		}
		mine, errOut, code := run(t, "report", "-i", file, "--format", "ndjson")
		if code != 0 || mine != out {
			t.Errorf("gtrace report -i --format ndjson: exit %d (%s), differs from the stream:\n%s", code, errOut, testutil.FirstDiff(out, mine))
		}
	}
}

// cutCPUs returns report text without its first line, "cpus=N".
func cutCPUs(t *testing.T, report string) string {
	t.Helper()
	first, rest, ok := strings.Cut(report, "\n")
	if !ok || !strings.HasPrefix(first, "cpus=") {
		t.Fatalf("report starts %q, want cpus=N", first)
	}
	return rest
}

// TestPrivilegedFilterLive checks that the stream is live: a helper makes
// n getpgid calls and then none until the test has seen all n lines on
// gtrace's stdout, which must therefore print them while the helper
// runs. The filter keeps every other process's events out of the CPUs'
// batches, so no later event pushes them out: a recording's batching
// would hold them until the end.
func TestPrivilegedFilterLive(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 3
	goOn := filepath.Join(t.TempDir(), "go-on")
	t.Setenv(goOnEnv, goOn)
	args := append([]string{"filter", "-e", "syscalls:sys_enter_getpgid", fmt.Sprintf("pid == %d", noPID)},
		workload(t, fmt.Sprintf("getpgid-wait %d", n))...)
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- Main(context.Background(), args, &out, &errb) }()
	line := regexp.MustCompile(`(?m)^ *` + regexp.QuoteMeta(commOf(t)) + `-\d+ +\[\d+\] +\d+\.\d+: sys_enter_getpgid: +pid: 0x7ffffff0$`)
	deadline := time.Now().Add(30 * time.Second)
	for len(line.FindAllString(out.String(), -1)) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	seen := len(line.FindAllString(out.String(), -1))
	if err := os.WriteFile(goOn, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code := <-done
	if seen != n {
		t.Errorf("%d lines printed while the helper waited, want %d; stdout:\n%s\nstderr:\n%s", seen, n, out.String(), errb.String())
	}
	if got := len(line.FindAllString(out.String(), -1)); code != 0 || got != n {
		t.Errorf("exit %d, %d lines in all, want 0 and %d; stderr:\n%s", code, got, n, errb.String())
	}
}

// TestPrivilegedFilterCPUs streams the getpgid calls of a helper thread
// pinned to each CPU, all at once: the stream has every call, on every
// CPU, merged in the order gtrace report and trace-cmd report print the
// file that -o wrote, byte for byte.
func TestPrivilegedFilterCPUs(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 3000
	file := filepath.Join(t.TempDir(), "trace.dat")
	args := append([]string{"filter", "-e", "syscalls:sys_enter_getpgid", "-f", fmt.Sprintf("pid == %d", noPID), "-o", file, "-q"},
		workload(t, fmt.Sprintf("getpgid-cpus %d", n))...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace filter: exit %d, stderr:\n%s", code, errOut)
	}
	line := regexp.MustCompile(`(?m)^ *` + regexp.QuoteMeta(commOf(t)) + `-\d+ +\[(\d+)\] +\d+\.\d+: sys_enter_getpgid: +pid: 0x7ffffff0$`)
	got := line.FindAllStringSubmatch(out, -1)
	cpus := map[string]int{}
	for _, m := range got {
		cpus[m[1]]++
	}
	if len(got) != n*runtime.NumCPU() || len(cpus) != runtime.NumCPU() {
		t.Fatalf("%d lines on CPUs %v, want %d on each of %d CPUs; stderr:\n%s", len(got), cpus, n, runtime.NumCPU(), errOut)
	}
	if mine, errOut, code := run(t, "report", "-i", file); code != 0 || cutCPUs(t, mine) != out {
		t.Errorf("gtrace report -i: exit %d (%s), differs from the stream:\n%s", code, errOut, testutil.FirstDiff(out, cutCPUs(t, mine)))
	}
	if theirs := cutCPUs(t, traceCmdReport(t, file)); theirs != out {
		t.Errorf("trace-cmd report differs from the stream:\n%s", testutil.FirstDiff(out, theirs))
	}
}
