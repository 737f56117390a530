package bpfgen

import (
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/eval"
)

// testFilterBuffer is the filter's buffer of the programs that tests
// load on their own, outside a collection; it lives as long as the test
// binary.
var testFilterBuffer = sync.OnceValues(func() (*ebpf.Map, error) {
	return ebpf.NewMap(FilterBufferSpec())
})

// withFilterBuffer points the references of insns to the filter's buffer
// at testFilterBuffer.
func withFilterBuffer(insns asm.Instructions) error {
	for _, ins := range insns {
		if ins.Reference() == FilterBufferName {
			m, err := testFilterBuffer()
			if err != nil {
				return err
			}
			return insns.AssociateMap(FilterBufferName, m)
		}
	}
	return nil
}

// TestFilterBufferLength: the BPF buffer holds what the interpreter
// compares of a dynamic string, and a NUL.
func TestFilterBufferLength(t *testing.T) {
	if filterBufferSize != eval.MaxDynamicString+1 {
		t.Errorf("the filter's buffer holds %d bytes, the interpreter compares %d of a dynamic string", filterBufferSize, eval.MaxDynamicString)
	}
}

// longString is a string of n bytes whose start, middle and end differ.
func longString(n int) string {
	s := []byte(strings.Repeat("ab", n/2+1)[:n])
	if n >= 3 {
		copy(s[n-3:], "xyz")
	}
	if n >= 16 {
		copy(s[n/2:], "mid")
	}
	return string(s)
}

// TestPrivilegedFilterBPFLongStrings runs every glob form in BPF on
// dynamic strings of lengths around the stack's and the buffer's sizes
// and requires the interpreter's verdict on each.
func TestPrivilegedFilterBPFLongStrings(t *testing.T) {
	testutil.RequirePrivileged(t)
	var strs []string
	for _, n := range []int{0, 1, 255, 256, 500, 511, 512, 1000, 1023, 1024, 1025, 2000, 3000, 4094, 4095, 4096, 5000} {
		strs = append(strs, longString(n))
	}
	pats := []string{
		"*xyz", "*yz", "*z", "*abx", "*mid*", "*xyz*", "*ab*", "ab*", "a*", "ab",
		"*", "", "?*", "*?z", "ab*mid*xyz", "a*m?d*[x-z]", "*[!a-b]", "[a]*[z]", "*b[x]y?", `*\z`,
		longString(255), longString(254) + "*", "*" + longString(200)[100:],
	}
	var cases []globCase
	for _, p := range pats {
		cases = append(cases, globCase{p, strs})
	}
	n := diffGlobs(t, cases)
	t.Logf("%d (pattern, string) pairs", n)
}

// ustringPath returns a path of n bytes in dir that need not exist:
// ./ components, then x, then zzz.
func ustringPath(dir string, n int) string {
	p := dir + "/" + strings.Repeat("./", (n-len(dir)-6)/2)
	return p + strings.Repeat("x", n-len(p)-3) + "zzz"
}

// TestPrivilegedFilterBPFUstringLong opens paths of known lengths and
// counts the openat events that .ustring filters pass: the kernel
// compares the first 1023 bytes of a user string (measured on 6.18 with
// its own event filters), and so does gtrace. The expected counts are
// the interpreter's on the strings cut to 1023 bytes.
func TestPrivilegedFilterBPFUstringLong(t *testing.T) {
	testutil.RequirePrivileged(t)
	f := liveFormat(t, "syscalls", "sys_enter_openat")
	dir := t.TempDir()
	var paths []string
	for _, n := range []int{100, 700, 1000, 1022, 1023, 1024, 1025, 1500} {
		p := ustringPath(dir, n)
		if len(p) != n {
			t.Fatalf("path of %d bytes, want %d", len(p), n)
		}
		paths = append(paths, p)
	}
	pats := []string{
		"~ \"*zzz\"", "~ \"*xzz\"", "~ \"*xxz\"", "~ \"*xxx\"", "~ \"*z*\"", "~ \"*xz*\"",
		"~ " + quote(dir+"/*"), "~ \"*x[z]z\"", "~ \"/*z?\"", "~ \"*[!x]zz\"", "~ \"*./x*\"", "~ \"!*zzz\"",
		"== " + quote(paths[0]), "!= " + quote(paths[0]), "~ " + quote(paths[0][:50]+"*"),
	}
	gf := format(t, globFormat, "glob")
	type check struct {
		src  string
		c    *counter
		want uint64
	}
	var checks []check
	// The opens run on one locked thread, which the counters wait for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pidTgid := uint64(unix.Getpid())<<32 | uint64(unix.Gettid())
	// Attaching the counters opens files on this thread too: only the
	// paths in dir count.
	only := "filename.ustring ~ " + quote(dir+"/*") + " && filename.ustring "
	for _, pat := range pats {
		src := only + pat
		c := loadCounter(t, bindLive(t, f, src), pidTgid)
		l := c.attach(t, "syscalls", "sys_enter_openat")
		defer l.Close()
		model := bindLive(t, gf, "name "+pat)
		var want uint64
		for _, p := range paths {
			if eval.Match(model, globRecord(p[:min(len(p), pointerStringSize-1)]), eval.Context{PID: -1}) {
				want++
			}
		}
		checks = append(checks, check{src, c, want})
	}
	// As the kernel: the five paths of at most 1023 bytes end in zzz,
	// the one of 1024 is cut to ...xzz, the one of 1025 to ...xxz.
	if checks[0].want != 5 || checks[1].want != 1 || checks[2].want != 1 {
		t.Fatalf("the model expects %d, %d, %d events of *zzz, *xzz, *xxz, want 5, 1, 1", checks[0].want, checks[1].want, checks[2].want)
	}
	for _, p := range paths {
		fd, err := unix.Open(p, unix.O_RDONLY, 0)
		if err == nil {
			unix.Close(fd)
		}
	}
	for _, c := range checks {
		if got := c.c.count(t); got != c.want {
			t.Errorf("filter %q: BPF counted %d events, want %d", short(c.src), got, c.want)
		}
	}
}
