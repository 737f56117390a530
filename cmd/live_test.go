package cmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
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
