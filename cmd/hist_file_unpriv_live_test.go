package cmd

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestPrivilegedHistFileUnprivileged runs gtrace hist -i, which generates
// and loads no BPF, as nobody: it must print what it prints as root. It
// needs root to switch to nobody.
func TestPrivilegedHistFileUnprivileged(t *testing.T) {
	testutil.RequirePrivileged(t)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build gtrace")
	}
	// A directory the user nobody can read, for the binary and a copy of the
	// sample.
	dir, err := os.MkdirTemp("", "gtrace-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gtrace")
	build := exec.Command(goCmd, "build", "-o", bin, ".")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "trace.dat")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}

	args := []string{"hist", "-i", file, "-e", "sched:sched_switch", "-k", "common_pid.execname,prev_comm",
		"--vals", "prev_prio", "-s", "hitcount.descending", "-f", "prev_prio >= 100"}
	run := func(attr *syscall.SysProcAttr) (stdout, stderr string, code int) {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Dir = dir
		c.Env = []string{"PATH=/usr/bin:/bin", "HOME=/"}
		c.SysProcAttr = attr
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	want, errOut, code := run(nil)
	if code != 0 || !strings.Contains(want, "\nTotals:\n    Hits: ") {
		t.Fatalf("gtrace %s as root: exit %d, stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, errOut)
	}
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	got, errOut, code := run(nobody)
	if code != 0 || got != want {
		t.Errorf("gtrace %s as nobody: exit %d, stderr %q, stdout differs from root's:\n%s",
			strings.Join(args, " "), code, errOut, testutil.FirstDiff(got, want))
	}
}
