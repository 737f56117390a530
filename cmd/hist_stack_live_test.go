package cmd

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestPrivilegedHistStackKey counts a helper's getppid calls by kernel
// stack: every call is counted, in stacks of the syscall's entry path,
// whose first frame is the kernel's, not the tracing glue's.
func TestPrivilegedHistStackKey(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 321
	args := append([]string{"hist", "-e", "syscalls:sys_enter_getppid", "-k", "common_stacktrace", "--follow"}, workload(t, fmt.Sprintf("getppid %d", n))...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace hist exit %d, stderr:\n%s", code, errOut)
	}
	entry := regexp.MustCompile(`(?m)^\{ common_stacktrace:\n((?:         \S+\n)+)\} hitcount: +(\d+)$`)
	m := entry.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		t.Fatalf("no stack entries in:\n%s", out)
	}
	total := 0
	for _, e := range m {
		hits, _ := strconv.Atoi(e[2])
		total += hits
		frames := strings.Fields(e[1])
		if !strings.Contains(e[1], "do_syscall_64+0x") {
			t.Errorf("stack without do_syscall_64:\n%s", e[1])
		}
		if strings.HasPrefix(frames[0], "perf_") || strings.HasPrefix(frames[0], "bpf_") {
			t.Errorf("first frame %s is the tracing machinery's", frames[0])
		}
		for _, f := range frames {
			if !regexp.MustCompile(`^[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+$`).MatchString(f) {
				t.Errorf("frame %q is not symbol+0xoff/0xsize", f)
			}
		}
	}
	if total != n {
		t.Errorf("hitcounts add up to %d, want %d:\n%s", total, n, out)
	}
	if !strings.Contains(out, "\n    Dropped: 0\n") {
		t.Errorf("stacks were dropped:\n%s", out)
	}
}

// TestPrivilegedHistUserStackKey counts a helper's getppid calls by user
// stack: the helper lives on after its calls, so its mappings are read
// while it runs, and its frames are named from its own ELF file.
func TestPrivilegedHistUserStackKey(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 123
	args := append([]string{"hist", "-e", "syscalls:sys_enter_getppid", "-k", "ustacktrace", "--follow"}, workload(t, fmt.Sprintf("getppid-sleep %d 500", n))...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace hist exit %d, stderr:\n%s", code, errOut)
	}
	entry := regexp.MustCompile(`(?m)^\{ ustacktrace:\n((?:         \S.*\n)+)\} hitcount: +(\d+)$`)
	m := entry.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		t.Fatalf("no stack entries in:\n%s", out)
	}
	// The test binary may have no symbol table (go test links it
	// without): then its frames are cmd.test+0xOFF.
	ours := regexp.MustCompile(`(?m)^         (syscall\.Getppid\+0x[0-9a-f]+/0x[0-9a-f]+ \[cmd\.test\]|cmd\.test\+0x[0-9a-f]+)$`)
	total := 0
	for _, e := range m {
		hits, _ := strconv.Atoi(e[2])
		total += hits
		if !ours.MatchString(e[1]) {
			t.Errorf("stack without the helper's frames:\n%s", e[1])
		}
	}
	if total != n {
		t.Errorf("hitcounts add up to %d, want %d:\n%s", total, n, out)
	}
}
