package cmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// requireTraceCmd returns the trace-cmd binary, or skips (fails under
// GTRACE_REQUIRE_BPF=1) when it is not installed.
func requireTraceCmd(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("trace-cmd")
	if err != nil {
		if os.Getenv("GTRACE_REQUIRE_BPF") == "1" {
			t.Fatal("trace-cmd is not installed (apt-get install trace-cmd); GTRACE_REQUIRE_BPF=1 forbids skipping")
		}
		t.Skip("trace-cmd is not installed (apt-get install trace-cmd)")
	}
	return p
}

// traceCmd runs trace-cmd and returns its stdout; any stderr output fails
// the test.
func traceCmd(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	c := exec.Command(requireTraceCmd(t), args...)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("trace-cmd %v: %v\n%s", args, err, errb.String())
	}
	// extract and convert report their progress on stderr; report must not
	// print anything there.
	if args[0] == "report" && errb.Len() > 0 {
		t.Errorf("trace-cmd %v printed on stderr:\n%s", args, errb.String())
	}
	return out.String()
}

func writeFile(t *testing.T, fs *tracefs.FS, name, val string) {
	t.Helper()
	if err := os.WriteFile(fs.Path(name), []byte(val), 0); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

// TestPrivilegedReportTraceCmdFiles captures events with the kernel's own
// ring buffer, has trace-cmd extract them (v7 zstd, its default), convert
// them (v7 uncompressed, v6), and wants gtrace report to print exactly
// what trace-cmd report prints for each.
func TestPrivilegedReportTraceCmdFiles(t *testing.T) {
	testutil.RequirePrivileged(t)
	requireTraceCmd(t)
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	events := []string{"sched/sched_switch", "sched/sched_wakeup", "sched/sched_process_exec", "raw_syscalls/sys_enter", "raw_syscalls/sys_exit", "syscalls/sys_enter_openat", "syscalls/sys_exit_openat", "timer/hrtimer_start", "irq/softirq_entry"}
	writeFile(t, fs, "tracing_on", "0")
	writeFile(t, fs, "trace", "")
	for _, e := range events {
		writeFile(t, fs, "events/"+e+"/enable", "1")
	}
	t.Cleanup(func() {
		for _, e := range events {
			os.WriteFile(fs.Path("events/"+e+"/enable"), []byte("0"), 0)
		}
		os.WriteFile(fs.Path("trace"), nil, 0)
	})
	writeFile(t, fs, "tracing_on", "1")
	self, _ := os.Executable()
	w := exec.Command(self)
	w.Env = append(os.Environ(), workloadEnv+"=exec /bin/true 20")
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs, "tracing_on", "0")

	dir := t.TempDir()
	v7 := filepath.Join(dir, "v7.dat")
	traceCmdExtract(t, "-o", v7)
	files := map[string]string{"v7-zstd": v7}
	files["v7-none"] = filepath.Join(dir, "v7n.dat")
	traceCmd(t, "convert", "-i", v7, "-o", files["v7-none"], "--compression", "none")
	files["v6"] = filepath.Join(dir, "v6.dat")
	traceCmd(t, "convert", "-i", v7, "-o", files["v6"], "--file-version", "6")
	for name, f := range files {
		for _, flags := range [][]string{nil, {"-t"}, {"--cpu", "1"}, {"-R"}, {"--stat"}} {
			want := traceCmd(t, append([]string{"report", "-i", f}, flags...)...)
			if flags == nil && strings.Count(want, "\n") < 100 {
				t.Fatalf("%s: trace-cmd report printed only:\n%s", name, want)
			}
			got, errOut, code := run(t, append([]string{"report", "-i", f}, flags...)...)
			if code != 0 {
				t.Fatalf("%s %v: exit %d: %s", name, flags, code, errOut)
			}
			if got != want {
				t.Errorf("%s %v: gtrace report differs from trace-cmd report:\n%s", name, flags, testutil.FirstDiff(got, want))
			}
		}
	}
}
