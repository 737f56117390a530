package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// funcWriteLine matches a report line of the function event on libc's
// write: the caller and the function, then the fields.
var funcWriteLine = regexp.MustCompile(`^ +sh-\d+ +\[\d+\] +\d+\.\d+: write: +(0x[0-9a-f]+)->(0x[0-9a-f]+)\(fd=(\d+), buf=(.*), len=(\d+)\)$`)

// TestPrivilegedFuncEventRecord records a function event on libc's write
// while dash prints four known strings: every call once, with its fd, its
// payload and its size, one caller (dash's write site) and one function
// address for all; trace-cmd report reads the file without a word on
// stderr, and gtrace report prints the same bytes.
func TestPrivilegedFuncEventRecord(t *testing.T) {
	testutil.RequirePrivileged(t)
	libc := probeLibc(t)
	requireTraceCmd(t)
	file := filepath.Join(t.TempDir(), "trace.dat")
	errOut, code := recordLive(t, "-o", file, "--follow", "--funcevent", libc+":write(int fd, string buf, size_t len)",
		"-e", "functions:write", "--", "/bin/sh", "-c", probeScript)
	if code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	report := traceCmdReport(t, file)
	lines := probeLines(report, "write")
	if len(lines) != len(probeWrites) {
		t.Fatalf("%d write events, want %d:\n%s", len(lines), len(probeWrites), report)
	}
	var caller, fn string
	for i, w := range probeWrites {
		m := funcWriteLine.FindStringSubmatch(lines[i])
		if m == nil || m[3] != "1" || m[4] != w.buf || m[5] != fmt.Sprint(w.len) {
			t.Fatalf("call %d: %q, want fd=1, buf=%s, len=%d", i, lines[i], w.buf, w.len)
		}
		if i == 0 {
			caller, fn = m[1], m[2]
		}
		if m[1] != caller || m[2] != fn || caller == fn {
			t.Errorf("call %d: %s->%s, want %s->%s as the first call's", i, m[1], m[2], caller, fn)
		}
	}
	if mine, errOut, code := run(t, "report", "-i", file); code != 0 || mine != report {
		t.Errorf("gtrace report: exit %d (%s), differs from trace-cmd report:\n%s", code, errOut, testutil.FirstDiff(mine, report))
	}
}

// TestPrivilegedFuncEventHist counts libc's writes by a function event's
// field, and streams and triggers on them: each size as often as dash
// wrote it.
func TestPrivilegedFuncEventHist(t *testing.T) {
	testutil.RequirePrivileged(t)
	libc := probeLibc(t)
	proto := libc + ":write(int fd, string buf, size_t len)"
	out, errOut, code := run(t, "hist", "--funcevent", proto, "-e", "functions:write", "-k", "len", "--follow", "-q", "--", "/bin/sh", "-c", probeScript)
	if code != 0 {
		t.Fatalf("gtrace hist exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"{ len:         21 } hitcount:          1\n",
		"{ len:          4 } hitcount:          2\n",
		"{ len:         10 } hitcount:          1\n",
		"    Hits: 4\n",
		"    Dropped: 0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	out, errOut, code = run(t, "filter", "-q", "--funcevent", proto, "-e", "functions:write", "-f", "len > 4", "--follow", "--", "/bin/sh", "-c", probeScript)
	lines := probeLines(out, "write")
	if code != 0 || len(lines) != 2 || !strings.HasSuffix(lines[0], "(fd=1, buf=0123456789, len=10)") || !strings.HasSuffix(lines[1], "(fd=1, buf=hello-from-userspace!, len=21)") {
		t.Errorf("filter: exit %d, stderr %s, stdout:\n%s", code, errOut, out)
	}
	out, errOut, code = run(t, "trigger", "-q", "--funcevent", proto, "-e", "functions:write", "traceoff if len == 10", "--follow", "--", "/bin/sh", "-c", probeScript)
	lines = probeLines(out, "write")
	if code != 0 || len(lines) != 3 || !strings.HasSuffix(lines[2], "(fd=1, buf=0123456789, len=10)") ||
		!strings.Contains(errOut, "functions:write: traceoff if len == 10 fired (1 in all)") {
		t.Errorf("trigger: exit %d, stderr %s, stdout:\n%s", code, errOut, out)
	}
}

// TestPrivilegedFuncEventNoKprobes: on a kernel without kprobes, a
// function event on a kernel function generates its program (--dry-run:
// a kprobe building the event's record), and attaching it fails with the
// kprobe's documented error, exit 1.
func TestPrivilegedFuncEventNoKprobes(t *testing.T) {
	testutil.RequirePrivileged(t)
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe"); err == nil {
		t.Skip("this kernel has kprobes")
	}
	proto := "vfs_read(x64 file, string buf, size_t count)"
	out, errOut, code := run(t, "record", "--funcevent", proto, "-e", "functions:vfs_read", "--dry-run")
	if code != 0 || !strings.Contains(out, "built at kprobe vfs_read") || !strings.Contains(out, "build the record of functions:vfs_read from kprobe vfs_read") {
		t.Errorf("record --dry-run: exit %d, stderr %s, stdout:\n%.2000s", code, errOut, out)
	}
	file := filepath.Join(t.TempDir(), "trace.dat")
	errOut, code = recordLive(t, "--funcevent", proto, "-e", "functions:vfs_read", "-o", file, "--", "/bin/true")
	if code != 1 || !strings.Contains(errOut, "attach kprobe vfs_read: this kernel has no kprobes (it is built without CONFIG_KPROBES and CONFIG_KPROBE_EVENTS): probe a tracepoint instead (gtrace list), or a user-space function with a uprobe") {
		t.Errorf("record on a kernel function event: exit %d, stderr:\n%s", code, errOut)
	}
}
