package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/probe"
)

func TestPrivilegedHistIntervalClear(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 5000
	args := append([]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "common_pid.execname,id.syscall", "--interval", "50ms", "--clear"},
		workload(t, "getppid-sleep 5000 400")...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if blocks := strings.Count(out, "# event histogram\n"); blocks < 4 {
		t.Errorf("%d histograms printed, want one per 50ms interval and a final one:\n%s", blocks, out)
	}
	re := regexp.MustCompile(`(?m)^\{ common_pid: ` + regexp.QuoteMeta(commOf(t)) + ` +\[ *\d+\], id: sys_getppid +\[110\] \} hitcount: +(\d+)$`)
	sum := 0
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.Atoi(m[1])
		sum += v
	}
	if sum != n {
		t.Errorf("getppid hitcounts over all intervals sum to %d, want %d", sum, n)
	}
}

// selfAs runs the test binary as gtrace with args, with cmd's attributes.
func selfAs(t *testing.T, attr *syscall.SysProcAttr, shell string, args ...string) (string, string, int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "gtrace-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gtrace")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("sh", "-c", shell+`exec "$0"`, bin)
	c.Env = append(os.Environ(), workloadEnv+"=main "+strings.Join(args, " "))
	c.SysProcAttr = attr
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err = c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestPrivilegedNotRootAdvice(t *testing.T) {
	testutil.RequirePrivileged(t)
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	_, errOut, code := selfAs(t, nobody, "", "hist", "-e", "raw_syscalls:sys_enter", "-k", "id", "--duration", "1s")
	if code != exitFailure || !strings.Contains(errOut, "gtrace needs root (or CAP_BPF, CAP_PERFMON") {
		t.Errorf("as nobody: exit %d, stderr %q; want exit 1 and advice on privileges", code, errOut)
	}
}

func TestPrivilegedMountsTracefs(t *testing.T) {
	testutil.RequirePrivileged(t)
	// In a mount namespace of its own, with tracefs (and debugfs) unmounted,
	// as on a fresh machine.
	ns := &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	unmount := `umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null; test -d /sys/kernel/tracing/events && exit 9; `
	out, errOut, code := selfAs(t, ns, unmount, "list", "raw_syscalls:sys_enter")
	if code != 0 || out != "raw_syscalls:sys_enter\n" {
		t.Errorf("list with tracefs unmounted: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestPrivilegedNoCapBPFAdvice(t *testing.T) {
	testutil.RequirePrivileged(t)
	drop := `exec setpriv --inh-caps=-bpf,-perfmon,-sys_admin --bounding-set=-bpf,-perfmon,-sys_admin "$0"; `
	_, errOut, code := selfAs(t, nil, drop, "hist", "-e", "raw_syscalls:sys_enter", "-k", "id", "--duration", "1s")
	want := "gtrace: load BPF program: permission denied: gtrace needs CAP_BPF and CAP_PERFMON"
	if code != exitFailure || !strings.HasPrefix(errOut, want) || strings.Contains(errOut, "\nprogram:\n") {
		t.Errorf("without CAP_BPF: exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
	}
}

// TestPrivilegedHistStringKeys counts execs and exits of a program with a
// name of its own: a __data_loc key (sched_process_exec's filename) and a
// char[16] key (sched_process_exit's comm).
func TestPrivilegedHistStringKeys(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 25
	dir, err := os.MkdirTemp("", "gtrace-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	prog := filepath.Join(dir, "gtrace_uniq_prog")
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		event, key, want string
	}{
		{"sched:sched_process_exec", "filename", "{ filename: " + pad50(prog) + " } hitcount:         25\n"},
		{"sched:sched_process_exit", "comm", "{ comm: " + pad50("gtrace_uniq_pro") + " } hitcount:         25\n"},
	} {
		args := append([]string{"hist", "-e", tc.event, "-k", tc.key}, workload(t, "exec "+prog+" "+strconv.Itoa(n))...)
		out, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.event, code, errOut)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s -k %s: no line %q in:\n%s", tc.event, tc.key, tc.want, out)
		}
	}
}

func pad50(s string) string { return s + strings.Repeat(" ", 50-len(s)) }

func TestPrivilegedHistSymKey(t *testing.T) {
	testutil.RequirePrivileged(t)
	out, errOut, code := run(t, "hist", "-e", "timer:hrtimer_start", "-k", "function.sym", "-s", "hitcount.descending", "--duration", "300ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// e.g. "{ function: [ffffffff8123a4b0] tick_nohz_handler                             } hitcount: ..."
	re := regexp.MustCompile(`(?m)^\{ function: \[ffff[0-9a-f]{12}\] [a-z_][a-z0-9_.]* +\} hitcount: +\d+$`)
	if !re.MatchString(out) {
		t.Errorf("no resolved .sym key line in:\n%s", out)
	}
}

func TestPrivilegedHistJSON(t *testing.T) {
	testutil.RequirePrivileged(t)
	args := append([]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "common_pid.execname,id.syscall", "--format", "json"}, workload(t, "getppid 777")...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var hists []struct {
		Trigger string
		Entries []struct {
			Keys     map[string]any
			Hitcount uint64
		}
	}
	if err := json.Unmarshal([]byte(out), &hists); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	found := 0
	for _, e := range hists[0].Entries {
		if e.Keys["common_pid.execname"] == commOf(t) && e.Keys["id.syscall"] == "sys_getppid" {
			found++
			if e.Hitcount != 777 || e.Keys["id"] != 110.0 {
				t.Errorf("hitcount, id = %d, %v; want 777, 110", e.Hitcount, e.Keys["id"])
			}
		}
	}
	if found != 1 {
		t.Errorf("found %d getppid entries for the workload, want 1:\n%s", found, out)
	}
}

func TestPrivilegedVerifierRejectionReport(t *testing.T) {
	testutil.RequirePrivileged(t)
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"bad": {
		Type: ebpf.TracePoint, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Reg(asm.R0, asm.R2), asm.Return()},
	}}}
	_, err := probe.Load(&bpfgen.Program{Collection: spec})
	if err == nil {
		t.Fatal("loading a bad program succeeded")
	}
	var b bytes.Buffer
	code := handleError(&b, err)
	out := b.String()
	if code != exitFailure || !strings.Contains(out, "verifier log (last lines):\n") || !strings.Contains(out, "R2 !read_ok") || !strings.Contains(out, "program:\nbad (TracePoint, 2 instructions):\n") {
		t.Errorf("handleError() = %d,\n%s", code, out)
	}
}
