package bpfgen

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/parse"
)

// globFormat has a string of each class, a misaligned array among them.
const globFormat = `name: glob_test
ID: 78
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char comm[16];	offset:8;	size:16;	signed:0;
	field:char tiny[5];	offset:25;	size:5;	signed:0;
	field:__data_loc char[] name;	offset:32;	size:4;	signed:0;
	field:__rel_loc char[] path;	offset:36;	size:4;	signed:0;

print fmt: "x"
`

// globRecord is a record of globFormat whose strings are all s: cut to
// the arrays (with no NUL when s fills them), whole in the dynamic ones.
func globRecord(s string) []byte {
	rec := make([]byte, 40, 40+2*(len(s)+1))
	binary.LittleEndian.PutUint16(rec, 78)
	copy(rec[8:24], s)
	copy(rec[25:30], s)
	n := uint32(len(s) + 1)
	binary.LittleEndian.PutUint32(rec[32:], n<<16|40)
	binary.LittleEndian.PutUint32(rec[36:], n<<16|n)
	rec = append(append(rec, s...), 0)
	return append(append(rec, s...), 0)
}

// loadMatcher loads bf as a BPF_PROG_TYPE_SYSCALL program that returns 1
// when the record passed as its context passes the filter. Such programs
// read their context as tracepoints read theirs, and prog.Run runs them
// on any bytes, in the calling thread.
func loadMatcher(t *testing.T, bf *parse.BoundFilter) *ebpf.Program {
	t.Helper()
	b := &Builder{}
	miss := b.Label("miss")
	b.Comment("R6 = ctx; R9 = pid_tgid")
	b.Emit(
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
	)
	if err := EmitFilter(b, bf, miss, filterScratch); err != nil {
		t.Fatalf("EmitFilter(%q) = %v", bf.Src, err)
	}
	b.Emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
	b.Mark(miss)
	b.Emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	insns := b.Instructions()
	if err := withFilterBuffer(insns); err != nil {
		t.Fatal(err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.Syscall,
		Flags:        unix.BPF_F_SLEEPABLE,
		License:      "GPL",
		Instructions: insns,
	})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("load filter %q: %-30v\n%v", bf.Src, ve, b.Instructions())
		}
		t.Fatalf("load filter %q: %v", bf.Src, err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

// quote writes a pattern as a filter string.
func quote(pat string) string {
	if strings.Contains(pat, `"`) {
		return "'" + pat + "'"
	}
	return `"` + pat + `"`
}

// globCase is a pattern and the strings it is tried on.
type globCase struct {
	pat  string
	strs []string
}

// diffGlobs checks that BPF and the interpreter agree on every pattern
// and string, for the arrays, the dynamic strings and the task name. It
// returns how many pairs it compared.
func diffGlobs(t *testing.T, cases []globCase) int {
	t.Helper()
	f := format(t, globFormat, "glob")
	pairs := 0
	for _, field := range []string{"comm", "tiny", "name", "path"} {
		for _, c := range cases {
			src := field + " ~ " + quote(c.pat)
			prog := loadMatcher(t, bindLive(t, f, src))
			bf := bindLive(t, f, src)
			for _, s := range c.strs {
				rec := globRecord(s)
				got, err := prog.Run(&ebpf.RunOptions{Context: rec})
				if err != nil {
					t.Fatalf("run %q: %v", src, err)
				}
				if want := eval.Match(bf, rec, eval.Context{PID: -1}); (got == 1) != want {
					t.Errorf("%s on %q: BPF says %v, the interpreter %v", src, s, got == 1, want)
				}
				pairs++
			}
		}
	}
	// The task name: this thread's, set to each string in turn. The
	// thread is left locked, so that it dies with the goroutine.
	done := make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		runtime.LockOSThread()
		for _, c := range cases {
			src := "COMM ~ " + quote(c.pat)
			bf := bindLive(t, f, src)
			prog := loadMatcher(t, bf)
			for _, s := range c.strs {
				name, err := unix.BytePtrFromString(s)
				if err != nil {
					t.Errorf("task name %q: %v", s, err)
					return
				}
				if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0); err != nil {
					t.Errorf("prctl(PR_SET_NAME, %q): %v", s, err)
					return
				}
				comm := s[:min(len(s), CommLen-1)]
				got, err := prog.Run(&ebpf.RunOptions{Context: globRecord("")})
				if err != nil {
					t.Errorf("run %q: %v", src, err)
					return
				}
				if want := eval.Match(bf, globRecord(""), eval.Context{PID: -1, Comm: comm}); (got == 1) != want {
					t.Errorf("%s on task %q: BPF says %v, the interpreter %v", src, comm, got == 1, want)
				}
				n++
			}
		}
	}()
	return pairs + <-done
}

// TestPrivilegedFilterBPFGlob runs globs of every form in BPF on records
// and task names and requires the interpreter's verdict on each.
func TestPrivilegedFilterBPFGlob(t *testing.T) {
	testutil.RequirePrivileged(t)
	strs := []string{
		"", "a", "b", "ab", "abc", "ba", "aa", "axxb", "abbbc", "abcd", "abcde", "abcdef",
		"]", "-", "[", "[a", "[a-", "*", "a*", "a?", `a\`, `\`, "!", "\xe9", "a\xe9b", "\x80\xff",
		"kv_worker", "xkv_worker", "daemon", "abcdefghijklmno", "abcdefghijklmnop", "abcdefghijklmnopq",
	}
	pats := []string{
		"a?c", "?", "??", "???", "?????", "??????", "*?", "?*", "*?*", "***", "a**", "a*?",
		"a*b", "a*b*c", "*a*b*", "*a*a*", "*a?", "kv*ker", "*_w?rker", "*emo?", "d*n",
		"[abc]", "[a-c]*", "*[!a-c]", "[!a]", "[!a]*", "*[!b]", "[]]", "[]a]", "[!]]", "[a-]", "[a-]*",
		"[", "[a", "[a-", "*[", "[]", "[!]", "[z-a]*", "*[!\x01-\xff]*", "[\x80-\xff]*", "*[\xe9]*",
		`\*`, `a\?`, `a\`, `*\`, `\\*`, `\a*`, `*\[a`,
		"!a*b", "![a-c]*", "!*?",
		"abcde?", "?????*", "*e", "*?de", "abcdefghijklmno?", "*p", "*?p", "????????????????",
		"abc", "abc*", "*bc", "*b*", "", "*",
	}
	var cases []globCase
	for _, p := range pats {
		cases = append(cases, globCase{p, strs})
	}
	n := diffGlobs(t, cases)
	t.Logf("%d (pattern, string) pairs", n)
}

// TestPrivilegedFilterBPFGlobRandom compares BPF and the interpreter on
// patterns and strings from a seeded generator.
func TestPrivilegedFilterBPFGlobRandom(t *testing.T) {
	testutil.RequirePrivileged(t)
	r := rand.New(rand.NewPCG(11, 9))
	pick := func(from []string, n int) string {
		var b strings.Builder
		for range r.IntN(n + 1) {
			b.WriteString(from[r.IntN(len(from))])
		}
		return b.String()
	}
	tokens := []string{"a", "b", "c", "?", "*", "*", "[ab]", "[!a]", "[a-c]", "[]b]", `\*`, "[", "-", "]", `\`, "\xe9"}
	bytes := []string{"a", "b", "c", "a", "b", "-", "*", "[", "]", `\`, "\xe9"}
	var cases []globCase
	for range 60 {
		c := globCase{pat: pick(tokens, 7)}
		for range 6 {
			c.strs = append(c.strs, pick(bytes, 18))
		}
		cases = append(cases, c)
	}
	n := diffGlobs(t, cases)
	if n < 300 {
		t.Errorf("compared %d pairs, want at least 300", n)
	}
	t.Logf("%d (pattern, string) pairs", n)
}
