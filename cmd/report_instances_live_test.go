package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// TestPrivilegedReportInstances records into the top ring buffer and two
// instances whose names differ in length, has trace-cmd extract all
// three (v7 zstd), converts the file (v7 uncompressed, v6), and wants
// gtrace report to print exactly what trace-cmd report prints for each
// file: plain, -t, -R, --cpu (a CPU of the top instance and one of each
// other instance, as trace-cmd numbers them), --stat and -F.
//
// The longer instance has a 4 KiB buffer per CPU and records every
// system call, so that it loses events: the dropped-events lines carry
// its name.
func TestPrivilegedReportInstances(t *testing.T) {
	testutil.RequirePrivileged(t)
	requireTraceCmd(t)
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Fatalf("taskset (util-linux) is needed to run work on every CPU: %v", err)
	}
	tfs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	short := fmt.Sprintf("gtrace_%08x", rand.Uint32())
	long := short + "_instance"
	setTop(t, tfs, "tracing_on", "0")
	writeFile(t, tfs, "trace", "")
	for _, name := range []string{short, long} {
		if err := os.Mkdir(tfs.Path("instances", name), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.Remove(tfs.Path("instances", name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("remove instance %s: %v", name, err)
			}
		})
	}
	for _, e := range []string{"sched/sched_switch", "sched/sched_wakeup"} {
		setTop(t, tfs, "events/"+e+"/enable", "1")
	}
	t.Cleanup(func() { os.WriteFile(tfs.Path("trace"), nil, 0) })
	writeFile(t, tfs, "instances/"+short+"/events/sched/sched_switch/enable", "1")
	writeFile(t, tfs, "instances/"+long+"/buffer_size_kb", "4")
	for _, e := range []string{"sched/sched_switch", "sched/sched_process_exec", "raw_syscalls/sys_enter", "raw_syscalls/sys_exit"} {
		writeFile(t, tfs, "instances/"+long+"/events/"+e+"/enable", "1")
	}

	on := []string{"tracing_on", "instances/" + short + "/tracing_on", "instances/" + long + "/tracing_on"}
	for _, f := range on {
		writeFile(t, tfs, f, "1")
	}
	// Work on every CPU, so that the top instance has data on each.
	self, _ := os.Executable()
	for cpu := 0; cpu < runtime.NumCPU(); cpu++ {
		w := exec.Command(taskset, "-c", strconv.Itoa(cpu), self)
		w.Env = append(os.Environ(), workloadEnv+"=exec /bin/true 5")
		if out, err := w.CombinedOutput(); err != nil {
			t.Fatalf("workload on CPU %d: %v\n%s", cpu, err, out)
		}
	}
	for _, f := range on {
		writeFile(t, tfs, f, "0")
	}

	dir := t.TempDir()
	files := map[string]string{"v7-zstd": filepath.Join(dir, "v7.dat"), "v7-none": filepath.Join(dir, "v7n.dat"), "v6": filepath.Join(dir, "v6.dat")}
	extractAll(t, files["v7-zstd"])
	traceCmd(t, "convert", "-i", files["v7-zstd"], "-o", files["v7-none"], "--compression", "none")
	traceCmd(t, "convert", "-i", files["v7-zstd"], "-o", files["v6"], "--file-version", "6")

	plain := traceCmd(t, "report", "-i", files["v7-zstd"])
	cpus, err := strconv.Atoi(strings.TrimPrefix(strings.SplitN(plain, "\n", 2)[0], "cpus="))
	if err != nil {
		t.Fatalf("trace-cmd report does not start with cpus=N:\n%.200s", plain)
	}
	// Lines of the top instance, of both others (names right-aligned) and
	// lost events of the longer one.
	pad := strings.Repeat(" ", len(long)-len(short))
	for _, tag := range []string{"\n" + strings.Repeat(" ", len(long)+2), pad + short + ": ", long + ": ", long + ": CPU:"} {
		if !strings.Contains(plain, tag) {
			t.Fatalf("no %q in trace-cmd report:\n%s", tag, plain)
		}
	}

	// trace-cmd numbers the CPUs of the instances after those of the top
	// one: with N CPUs, N is the first CPU of the first instance.
	runs := [][]string{nil, {"-t"}, {"-R"}, {"--stat"}, {"--cpu", "0"}, {"--cpu", strconv.Itoa(cpus)}, {"--cpu", fmt.Sprintf("1,%d-%d", 2*cpus, 3*cpus-1)}}
	filters := []string{"sched_switch: prev_comm == \"true\" || next_pid == 0", "sched_wakeup,sys_enter: common_pid != 0"}
	for name, f := range files {
		for _, args := range runs {
			want := traceCmd(t, append([]string{"report", "-i", f}, args...)...)
			got, errOut, code := run(t, append([]string{"report", "-i", f}, args...)...)
			if code != 0 {
				t.Fatalf("%s %v: exit %d: %s", name, args, code, errOut)
			}
			if got != want {
				t.Errorf("%s %v: gtrace report differs from trace-cmd report:\n%s", name, args, testutil.FirstDiff(got, want))
			}
		}
		for _, filter := range filters {
			want := traceCmdFiltered(t, f, filter)
			if strings.Count(want, "\n") < 3 {
				t.Fatalf("%s -F %q: trace-cmd report printed only:\n%s", name, filter, want)
			}
			got, errOut, code := run(t, "report", "-i", f, "-F", filter)
			if code != 0 {
				t.Fatalf("%s -F %q: exit %d: %s", name, filter, code, errOut)
			}
			if got != want {
				t.Errorf("%s -F %q: gtrace report differs from trace-cmd report:\n%s", name, filter, testutil.FirstDiff(got, want))
			}
		}
	}

	// JSON: the records of the instances, and only those, name them.
	out, errOut, code := run(t, "report", "-i", files["v7-zstd"], "--format", "ndjson")
	if code != 0 {
		t.Fatalf("--format json: exit %d: %s", code, errOut)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var rec struct{ Instance *string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("--format json: %v in line %s", err, line)
		}
		switch {
		case rec.Instance == nil:
			seen[""]++
		case *rec.Instance == short || *rec.Instance == long:
			seen[*rec.Instance]++
		default:
			t.Errorf("--format json: line of instance %q", *rec.Instance)
		}
	}
	if seen[""] == 0 || seen[short] == 0 || seen[long] == 0 {
		t.Errorf("--format json: records per instance %v, want some of the top instance, %s and %s", seen, short, long)
	}
}

// setTop writes a file of the top instance and restores its value at
// cleanup.
func setTop(t *testing.T, tfs *tracefs.FS, name, val string) {
	t.Helper()
	old, err := tfs.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, tfs, name, val)
	t.Cleanup(func() {
		if err := os.WriteFile(tfs.Path(name), bytes.TrimSpace(old), 0); err != nil {
			t.Errorf("restore %s: %v", name, err)
		}
	})
}

// traceCmdFiltered returns what trace-cmd report -F filter prints for a
// file. trace-cmd 3.1.6 ignores a -F given after -i, so it goes first.
// With instances it crashes (SIGSEGV) as it closes the file, after the
// report, losing what stdio still buffered: its output is unbuffered
// here, and the crash is not an error.
func traceCmdFiltered(t *testing.T, file, filter string) string {
	t.Helper()
	stdbuf, err := exec.LookPath("stdbuf")
	if err != nil {
		t.Fatalf("stdbuf (coreutils) is needed for trace-cmd report -F: %v", err)
	}
	var out, errb bytes.Buffer
	c := exec.Command(stdbuf, "-o0", requireTraceCmd(t), "report", "-F", filter, "-i", file)
	c.Stdout, c.Stderr = &out, &errb
	err = c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGSEGV {
			err = nil
		}
	}
	if err != nil || errb.Len() > 0 {
		t.Fatalf("trace-cmd report -F %q -i %s: %v\n%s", filter, file, err, errb.String())
	}
	return out.String()
}

// extractAll has trace-cmd extract the top instance and all others into
// file, keeping the instances (extract -a deletes them otherwise).
func extractAll(t *testing.T, file string) {
	t.Helper()
	traceCmdExtract(t, "-a", "-k", "-o", file)
}

// traceCmdExtract runs trace-cmd extract with args, with a copy of
// /proc/kallsyms in place of the file that changes size
// (testutil.TraceCmdExtract).
func traceCmdExtract(t *testing.T, args ...string) {
	t.Helper()
	testutil.TraceCmdExtract(t, requireTraceCmd(t), append([]string{"extract"}, args...)...)
}
