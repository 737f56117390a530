package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TraceCmdExtract runs `trace-cmd ARGS...` (bin is trace-cmd's path;
// extract, or anything else that stores /proc/kallsyms in a file) with a
// copy of /proc/kallsyms taken now in its place, and fails tb with the
// command's stderr if it fails.
//
// trace-cmd stats /proc/kallsyms, then reads it into the file, and fails
// ("error in size of file '/proc/kallsyms'") when the size changed in
// between. It changes whenever a BPF program is loaded or freed (each has
// a bpf_prog_* symbol), which the live tests of other packages, run in
// parallel by go test ./..., do all the time. Trying again is no cure:
// extract consumes the ring buffers as it reads them, so a second try
// finds them empty. A copy cannot change under it.
func TraceCmdExtract(tb testing.TB, bin string, args ...string) {
	tb.Helper()
	kallsyms, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		tb.Fatal(err)
	}
	TraceCmdWithKallsyms(tb, append([]string{bin}, args...), kallsyms)
}

// TraceCmdWithKallsyms runs the command argv with kallsyms in place of
// /proc/kallsyms: a file bind-mounted over it in a mount namespace of the
// command's own, so that nothing else sees it. It fails tb with the
// command's stderr if the command fails.
func TraceCmdWithKallsyms(tb testing.TB, argv []string, kallsyms []byte) {
	tb.Helper()
	copied := filepath.Join(tb.TempDir(), "kallsyms")
	if err := os.WriteFile(copied, kallsyms, 0o444); err != nil {
		tb.Fatal(err)
	}
	// Go makes the new namespace's mounts private: the bind mount stays
	// inside it.
	c := exec.Command("/bin/sh", append([]string{"-c", `mount --bind "$0" /proc/kallsyms && exec "$@"`, copied}, argv...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Run(); err != nil {
		tb.Fatalf("%s, with a copy of /proc/kallsyms mounted over it: %v\n%s", strings.Join(argv, " "), err, errb.String())
	}
}
