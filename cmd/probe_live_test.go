package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// The uprobe tests probe libc's write as a real libc program calls it:
// dash's printf builtin, which writes its output with one write(2)
// through libc per printf, to fd 1 (a redirection dup2s the file there).
// The test binary is Go, whose writes are system calls of its own and
// never reach libc's write; a Go function probed by symbol would have
// the Go register ABI, not the C one that $argN reads. dash is Debian's
// /bin/sh; the payloads and sizes below are the calls, exactly. dash's
// output buffer holds no NUL after what it writes (buf=+0(%si):string
// reads on, in the kernel as in gtrace), so each payload is longer than
// those before it.
const probeScript = `printf abcd >/dev/null; printf abcd >/dev/null; printf 0123456789 >/dev/null; printf hello-from-userspace! >/dev/null`

// probeWrites are the writes of probeScript, in order.
var probeWrites = []struct {
	len int
	buf string
}{{4, "abcd"}, {4, "abcd"}, {10, "0123456789"}, {21, "hello-from-userspace!"}}

// probeLibc returns the path of the libc that /bin/sh (dash) uses, or
// skips the test.
func probeLibc(t *testing.T) string {
	t.Helper()
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil || filepath.Base(sh) != "dash" {
		t.Skipf("/bin/sh is not dash (%s, %v): the uprobe tests count dash's printf writes", sh, err)
	}
	out, err := exec.Command("ldd", sh).Output()
	if err != nil {
		t.Skipf("ldd %s: %v", sh, err)
	}
	m := regexp.MustCompile(`libc\.so\.6 => (\S+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Skipf("no libc.so.6 in ldd %s:\n%s", sh, out)
	}
	return m[1]
}

// probeLines returns the lines of a trace-cmd report that name event.
func probeLines(report, event string) []string {
	var out []string
	for _, l := range strings.Split(report, "\n") {
		if strings.Contains(l, " "+event+": ") {
			out = append(out, l)
		}
	}
	return out
}

// TestPrivilegedUprobeRecord records uprobes on libc's write while dash
// prints four known strings: every call once, with the values the
// kernel's uprobe event would record (the same three arguments from
// registers and from $argN at PATH:SYMBOL, and from registers at
// PATH:OFFSET, the offset as gtrace kprobe --list gives it), and the
// return probe's
// $retval is each write's size; trace-cmd report reads the file without
// a word on stderr.
func TestPrivilegedUprobeRecord(t *testing.T) {
	testutil.RequirePrivileged(t)
	libc := probeLibc(t)
	defs := []string{
		fmt.Sprintf("p:myw %s:write fd=%%di:s32 len=%%dx:u64 buf=+0(%%si):string", libc),
		fmt.Sprintf("p:mya %s:write fd=$arg1:s32 len=$arg3:u64 buf=+0($arg2):string", libc),
		fmt.Sprintf("r:myr %s:write ret=$retval:s64", libc),
	}
	listing, _, code := run(t, "kprobe", "--list", "--", defs[0])
	place := strings.Fields(listing)
	if code != 0 || len(place) < 2 {
		t.Fatalf("gtrace kprobe --list %s: exit %d, %q", defs[0], code, listing)
	}
	defs = append(defs, fmt.Sprintf("p:myo %s fd=%%di:s32 len=%%dx:u64 buf=+0(%%si):string", place[1]))
	file := filepath.Join(t.TempDir(), "trace.dat")
	args := []string{"-o", file, "--follow", "-e", "uprobes:*"}
	for _, d := range defs {
		args = append(args, "--probe", d)
	}
	args = append(args, "--", "/bin/sh", "-c", probeScript)
	errOut, code := recordLive(t, args...)
	if code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	report := traceCmdReport(t, file)
	for _, ev := range []string{"myw", "mya", "myo"} {
		lines := probeLines(report, ev)
		if len(lines) != len(probeWrites) {
			t.Fatalf("%d %s events, want %d:\n%s", len(lines), ev, len(probeWrites), report)
		}
		for i, w := range probeWrites {
			want := regexp.MustCompile(fmt.Sprintf(`^ +sh-\d+ +\[\d+\] +\d+\.\d+: %s: +\([0-9a-f]+\) fd=1 len=%d buf="%s"$`, ev, w.len, w.buf))
			if !want.MatchString(lines[i]) {
				t.Errorf("%s call %d:\n got %q\nwant %s", ev, i, lines[i], want)
			}
		}
	}
	rets := probeLines(report, "myr")
	if len(rets) != len(probeWrites) {
		t.Fatalf("%d myr events, want %d:\n%s", len(rets), len(probeWrites), report)
	}
	for i, w := range probeWrites {
		want := regexp.MustCompile(fmt.Sprintf(`: myr: +\([0-9a-f]+ <- [0-9a-f]+\) ret=%d$`, w.len))
		if !want.MatchString(rets[i]) {
			t.Errorf("myr call %d:\n got %q\nwant %s", i, rets[i], want)
		}
	}
}

// TestPrivilegedUprobeHist counts libc's writes by a probe field: each
// size as often as dash wrote it.
func TestPrivilegedUprobeHist(t *testing.T) {
	testutil.RequirePrivileged(t)
	libc := probeLibc(t)
	out, errOut, code := run(t, "hist", "--probe", fmt.Sprintf("p:myw %s:write len=%%dx:u64", libc),
		"-e", "uprobes:myw", "-k", "len", "--follow", "-q", "--", "/bin/sh", "-c", probeScript)
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
}

// TestPrivilegedUprobeOracleReport defines the same uprobes in the
// kernel (uprobe_events, enabled in an instance of the test's own) and
// in gtrace, runs dash under each, and requires trace-cmd report to print
// the same lines of the calls, the address of the probe and the
// timestamps aside (ASLR maps libc elsewhere in each run). Not an
// immediate string: the kernel's uprobes read it as user memory and
// record (fault); gtrace records the string (docs/probes.md).
func TestPrivilegedUprobeOracleReport(t *testing.T) {
	testutil.RequirePrivileged(t)
	libc := probeLibc(t)
	requireTraceCmd(t)
	tfs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tfs.Path("uprobe_events")); err != nil {
		t.Skipf("no uprobe_events: %v", err)
	}
	id := fmt.Sprintf("%08x", rand.Uint32())
	group := "gtrace_" + id
	bodies := []string{
		"p:%s/w%s %s:write fd=%%di:s32 len=%%dx:u64 buf=+0(%%si):string x=+1(%%si):x16 b=+0(%%si):b3@2/8 cm=$comm s=$stack0:x8 i=\\7:u8 u=+0(%%si):ustring",
		// trace-cmd misreads the fields after an array: on an event
		// of its own.
		"p:%s/a%s %s:write c=+0(%%si):char[4] n=+1(%%si):u8[3]",
		"r:%s/r%s %s:write ret=$retval:s32 rx=$retval:x64",
	}
	var gtraceDefs, kernelDefs []string
	for _, b := range bodies {
		def := fmt.Sprintf(b, group, id, libc)
		gtraceDefs = append(gtraceDefs, def)
		k, _, code := run(t, "kprobe", "--list", "--", def)
		if code != 0 {
			t.Fatalf("gtrace kprobe --list %s: exit %d", def, code)
		}
		kernelDefs = append(kernelDefs, strings.TrimSpace(k))
	}
	// The kernel's run.
	for _, d := range kernelDefs {
		appendFile(t, tfs.Path("uprobe_events"), d)
	}
	instance := "gtrace_" + id
	removed := false
	remove := func() {
		if removed {
			return
		}
		removed = true
		if err := os.Remove(tfs.Path("instances", instance)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("remove instance %s: %v", instance, err)
		}
		// gtrace's events take the same names: the kernel's go first.
		appendFile(t, tfs.Path("uprobe_events"), "-:"+group+"/")
	}
	t.Cleanup(remove)
	if err := os.Mkdir(tfs.Path("instances", instance), 0o755); err != nil {
		t.Fatal(err)
	}
	enable := tfs.Path("instances", instance, "events", group, "enable")
	writeFileAt(t, enable, "1")
	sh := exec.Command("/bin/sh", "-c", probeScript)
	if err := sh.Run(); err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, enable, "0")
	kfile := filepath.Join(t.TempDir(), "kernel.dat")
	traceCmdExtract(t, "-B", instance, "-o", kfile)
	kernel := probeReportLines(traceCmd(t, "report", "-i", kfile), fmt.Sprintf("sh-%d ", sh.Process.Pid))
	remove()

	// gtrace's run.
	gfile := filepath.Join(t.TempDir(), "gtrace.dat")
	args := []string{"-o", gfile, "--follow", "-e", group + ":*"}
	for _, d := range gtraceDefs {
		args = append(args, "--probe", d)
	}
	args = append(args, "--", "/bin/sh", "-c", probeScript)
	errOut, code := recordLive(t, args...)
	if code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	ours := probeReportLines(traceCmdReport(t, gfile), "sh-")
	if len(kernel) != 3*len(probeWrites) {
		t.Fatalf("the kernel recorded %d lines of sh, want %d:\n%s", len(kernel), 3*len(probeWrites), strings.Join(kernel, "\n"))
	}
	if got, want := strings.Join(ours, "\n"), strings.Join(kernel, "\n"); got != want {
		t.Errorf("gtrace's report differs from the kernel's:\n%s", testutil.FirstDiff(got, want))
	}
}

// probeAddr matches the probe's addresses at the head of its text.
var probeAddr = regexp.MustCompile(`\([0-9a-f]+( <- [0-9a-f]+)?\)`)

// probeReportLines returns the report lines that hold who ("sh-PID "),
// from the event's name on, the probe's addresses blanked.
func probeReportLines(report, who string) []string {
	var out []string
	for _, l := range strings.Split(report, "\n") {
		i := strings.Index(l, who)
		if i < 0 {
			continue
		}
		l = l[i:]
		if j := strings.Index(l, ": "); j >= 0 {
			l = l[j+2:]
		}
		out = append(out, probeAddr.ReplaceAllString(strings.Join(strings.Fields(l), " "), "(ADDR)"))
	}
	return out
}

// appendFile appends a line to a tracefs file, as echo >> does.
func appendFile(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatalf("write %q to %s: %v", line, path, err)
	}
}

// writeFileAt writes val to a tracefs file.
func writeFileAt(t *testing.T, path, val string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(val), 0); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// TestPrivilegedKprobeNoKprobes: on a kernel without kprobes, a kprobe
// parses, its program generates (--dry-run), and attaching it fails with
// the documented error, exit 1.
func TestPrivilegedKprobeNoKprobes(t *testing.T) {
	testutil.RequirePrivileged(t)
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe"); err == nil {
		t.Skip("this kernel has kprobes")
	}
	def := "p:kp vfs_read fd=%di:s32 n=+8(+0(%si)):u32 s=+0(%si):string"
	out, errOut, code := run(t, "record", "--probe", def, "-e", "kprobes:kp", "--dry-run")
	if code != 0 || !strings.Contains(out, "built at kprobe vfs_read") || !strings.Contains(out, "build the record of kprobes:kp from kprobe vfs_read") {
		t.Errorf("record --dry-run: exit %d, stderr %s, stdout:\n%.2000s", code, errOut, out)
	}
	file := filepath.Join(t.TempDir(), "trace.dat")
	errOut, code = recordLive(t, "--probe", def, "-e", "kprobes:kp", "-o", file, "--", "/bin/true")
	if code != 1 || !strings.Contains(errOut, "attach kprobe vfs_read: this kernel has no kprobes (it is built without CONFIG_KPROBES and CONFIG_KPROBE_EVENTS): probe a tracepoint instead (gtrace list), or a user-space function with a uprobe") {
		t.Errorf("record on a kprobe: exit %d, stderr:\n%s", code, errOut)
	}
}

// TestPrivilegedUprobeFilterTrigger streams a uprobe's events through a
// filter on a probe field, and stops tracing with a trigger on one: the
// events printed are exactly the calls the filter and the trigger let by.
func TestPrivilegedUprobeFilterTrigger(t *testing.T) {
	testutil.RequirePrivileged(t)
	libc := probeLibc(t)
	def := fmt.Sprintf("p:myw %s:write len=%%dx:u64 buf=+0(%%si):string", libc)
	out, errOut, code := run(t, "filter", "-q", "--probe", def, "-e", "uprobes:myw", "-f", "len > 4", "--follow", "--", "/bin/sh", "-c", probeScript)
	lines := probeLines(out, "myw")
	if code != 0 || len(lines) != 2 || !strings.HasSuffix(lines[0], `len=10 buf="0123456789"`) || !strings.HasSuffix(lines[1], `len=21 buf="hello-from-userspace!"`) {
		t.Errorf("filter: exit %d, stderr %s, stdout:\n%s", code, errOut, out)
	}
	out, errOut, code = run(t, "trigger", "-q", "--probe", def, "-e", "uprobes:myw", "traceoff if len == 10", "--follow", "--", "/bin/sh", "-c", probeScript)
	lines = probeLines(out, "myw")
	if code != 0 || len(lines) != 3 || !strings.HasSuffix(lines[2], `len=10 buf="0123456789"`) ||
		!strings.Contains(errOut, "uprobes:myw: traceoff if len == 10 fired (1 in all)") {
		t.Errorf("trigger: exit %d, stderr %s, stdout:\n%s", code, errOut, out)
	}
}
