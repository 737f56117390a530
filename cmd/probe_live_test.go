package cmd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
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

// probeExecScript is probeScript, then the shell execs true in its own
// process: one execve through libc, of argv {"/bin/true", "abc",
// "defgh", NULL}.
const probeExecScript = probeScript + `; exec /bin/true abc defgh`

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

// TestPrivilegedUprobeMultiProbe records and counts an event of two
// probes (the kernel's multi-probe event), on libc's write and execve:
// each write and the exec once, each record at its own probe's address
// (the file offset's page offset: ASLR moves whole pages), the same
// counts in a hist keyed by the address.
func TestPrivilegedUprobeMultiProbe(t *testing.T) {
	testutil.RequirePrivileged(t)
	libc := probeLibc(t)
	defs := []string{
		fmt.Sprintf("p:mm %s:write fd=%%di:s32 s=+0(%%si):string", libc),
		fmt.Sprintf("p:mm %s:execve fd=\\2:s32 s=+0(%%di):string", libc),
	}
	want := map[string]int{} // "fd s" -> calls
	for _, w := range probeWrites {
		want[fmt.Sprintf(`1 "%s"`, w.buf)]++
	}
	want[`2 "/bin/true"`]++
	var pages []uint64 // the page offset of each probe
	for _, d := range defs {
		listing, _, code := run(t, "kprobe", "--list", "--", d)
		place := strings.Fields(listing)
		if code != 0 || len(place) < 2 {
			t.Fatalf("gtrace kprobe --list %s: exit %d, %q", d, code, listing)
		}
		off, err := strconv.ParseUint(place[1][strings.LastIndexByte(place[1], ':')+1:], 0, 64)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, off&0xfff)
	}
	file := filepath.Join(t.TempDir(), "trace.dat")
	errOut, code := recordLive(t, "-o", file, "--follow", "-e", "uprobes:mm", "--probe", defs[0], "--probe", defs[1], "--", "/bin/sh", "-c", probeExecScript)
	if code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	line := regexp.MustCompile(`: mm: +\(([0-9a-f]+)\) fd=(\d) s=(".*")$`)
	got := map[string]int{}
	ips := map[string]map[uint64]bool{"1": {}, "2": {}}
	for _, l := range probeLines(traceCmdReport(t, file), "mm") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q is not an mm record", l)
		}
		got[m[2]+" "+m[3]]++
		ip, _ := strconv.ParseUint(m[1], 16, 64)
		ips[m[2]][ip] = true
	}
	if !maps.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
	for i, fd := range []string{"1", "2"} {
		if len(ips[fd]) != 1 {
			t.Errorf("probe %d recorded at %d addresses, want one", i, len(ips[fd]))
		}
		for ip := range ips[fd] {
			if ip&0xfff != pages[i] {
				t.Errorf("probe %d recorded at %#x, its file offset's page offset is %#x", i, ip, pages[i])
			}
		}
	}
	out, errOut, code := run(t, "hist", "--probe", defs[0], "--probe", defs[1], "-e", "uprobes:mm", "-k", "fd", "--follow", "-q", "--", "/bin/sh", "-c", probeExecScript)
	if code != 0 {
		t.Fatalf("gtrace hist exit %d, stderr:\n%s", code, errOut)
	}
	for _, w := range []string{
		"{ fd:          1 } hitcount:          4\n",
		"{ fd:          2 } hitcount:          1\n",
		"    Hits: 5\n",
		"    Dropped: 0\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in:\n%s", w, out)
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
		// An array of bitfields: the low nibbles of the payload's
		// first three bytes.
		"p:%s/f%s %s:write fd=%%di:s32 bf=+0(%%si):b4@0/8[3]",
		// An array of strings: exec's argv, its NULL last.
		"p:%s/v%s %s:execve path=+0(%%di):string argv=+0(%%si):string[4]",
		// An event of two probes (a multi-probe event).
		"p:%s/m%s %s:write fd=%%di:s32 s=+0(%%si):string",
		"p:%s/m%s %s:execve fd=\\1:s32 s=+0(%%di):string",
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
	sh := exec.Command("/bin/sh", "-c", probeExecScript)
	if err := sh.Run(); err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, enable, "0")
	kfile := filepath.Join(t.TempDir(), "kernel.dat")
	traceCmdExtract(t, "-B", instance, "-o", kfile)
	kernel := probeReportLines(traceCmd(t, "report", "-i", kfile), regexp.MustCompile(fmt.Sprintf(`\S+-%d +\[`, sh.Process.Pid)))
	remove()

	// gtrace's run.
	gfile := filepath.Join(t.TempDir(), "gtrace.dat")
	args := []string{"-o", gfile, "--follow", "-e", group + ":*"}
	for _, d := range gtraceDefs {
		args = append(args, "--probe", d)
	}
	args = append(args, "--", "/bin/sh", "-c", probeExecScript)
	errOut, code := recordLive(t, args...)
	if code != 0 {
		t.Fatalf("gtrace record exit %d, stderr:\n%s", code, errOut)
	}
	ours := probeReportLines(traceCmdReport(t, gfile), regexp.MustCompile(`\S+-\d+ +\[`))
	// Each write hits w, a, r, f and m; the exec v and m.
	if want := 5*len(probeWrites) + 2; len(kernel) != want {
		t.Fatalf("the kernel recorded %d lines of sh, want %d:\n%s", len(kernel), want, strings.Join(kernel, "\n"))
	}
	if got, want := strings.Join(ours, "\n"), strings.Join(kernel, "\n"); got != want {
		t.Errorf("gtrace's report differs from the kernel's:\n%s", testutil.FirstDiff(got, want))
	}
	who := regexp.MustCompile(`\S+-\d+ +\[`)
	for name, file := range map[string]string{"gtrace's": gfile, "the kernel's": kfile} {
		out, errOut, code := run(t, "report", "-i", file)
		if code != 0 {
			t.Fatalf("gtrace report %s: exit %d, stderr:\n%s", file, code, errOut)
		}
		if got, want := strings.Join(probeReportLines(out, who), "\n"), strings.Join(probeReportLines(traceCmd(t, "report", "-i", file), who), "\n"); got != want {
			t.Errorf("gtrace report of %s recording differs from trace-cmd report's:\n%s", name, testutil.FirstDiff(got, want))
		}
	}
	// trace-cmd does not read a field of an array of strings (its
	// format parser stops at "char[][4]"): the records say what each
	// recorded, as the kernel's own text prints it.
	kv := probeStringArray(t, kfile, "v"+id, "argv", sh.Process.Pid)
	gv := probeStringArray(t, gfile, "v"+id, "argv", 0)
	if want := []string{`{"/bin/true","abc","defgh",(fault)}`}; !slices.Equal(kv, want) || !slices.Equal(gv, kv) {
		t.Errorf("argv: gtrace recorded %q, the kernel %q, want %q", gv, kv, want)
	}
}

// probeStringArray returns the array of strings field of each record of
// event in a trace.dat (of the process pid, 0: any) as the kernel's text
// prints it: {"s0","s1",...}, (fault) for a string of length 0.
func probeStringArray(t *testing.T, file, event, field string, pid int) []string {
	t.Helper()
	f, err := tracedat.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fm *parse.Format
	for _, ev := range f.Events {
		if ev.Format.Name == event {
			fm = ev.Format
		}
	}
	if fm == nil {
		t.Fatalf("%s: no event %s", file, event)
	}
	var fld *parse.Field
	for i := range fm.Fields {
		if fm.Fields[i].Name == field {
			fld = &fm.Fields[i]
		}
	}
	if fld == nil {
		t.Fatalf("%s: event %s has no field %s", file, event, field)
	}
	var out []string
	for _, b := range f.Buffers {
		it := f.BufferRecords(b)
		for it.Next() {
			d := it.Record().Data
			if int(binary.LittleEndian.Uint16(d)) != fm.ID || pid != 0 && int(int32(binary.LittleEndian.Uint32(d[4:]))) != pid {
				continue
			}
			var elems []string
			for at := fld.Offset; at < fld.Offset+fld.Size; at += 4 {
				loc := binary.LittleEndian.Uint32(d[at:])
				n, off := int(loc>>16), int(loc&0xffff)
				if n == 0 {
					elems = append(elems, "(fault)")
					continue
				}
				elems = append(elems, strconv.Quote(string(d[off:off+n-1])))
			}
			out = append(out, "{"+strings.Join(elems, ",")+"}")
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// probeAddr matches the probe's addresses at the head of its text.
var probeAddr = regexp.MustCompile(`\([0-9a-f]+( <- [0-9a-f]+)?\)|__probe_ip=0x[0-9a-f]+`)

// probeReportLines returns the report lines of the tasks who matches
// (the head of a line: "COMM-PID [CPU]", the comm as the report names
// the pid, true after the exec), from the event's name on, the probe's
// addresses blanked.
func probeReportLines(report string, who *regexp.Regexp) []string {
	var out []string
	for _, l := range strings.Split(report, "\n") {
		m := who.FindStringIndex(l)
		if m == nil {
			continue
		}
		l = l[m[1]:]
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
