package ksym

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

func parseFixture(tb testing.TB) *Table {
	tb.Helper()
	f, err := os.Open("testdata/kallsyms.txt")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	t, err := Parse(f)
	if err != nil {
		tb.Fatalf("Parse(testdata/kallsyms.txt) = %v", err)
	}
	return t
}

func TestParse(t *testing.T) {
	tab := parseFixture(t)
	if len(tab.syms) != 25 {
		t.Errorf("Parse() = %d symbols, want 25", len(tab.syms))
	}
	if !slices.IsSortedFunc(tab.syms, func(a, b Sym) int { return cmp.Compare(a.Addr, b.Addr) }) {
		t.Errorf("Parse() symbols not sorted by address")
	}
	want := Sym{Name: "i915_gem_execbuffer2", Addr: 0xffffffffa04603b0, Size: 0x2c0, Type: 'T', Module: "i915"}
	if got, ok := tab.Lookup(0xffffffffa04603b0); !ok || got != want {
		t.Errorf("Lookup(0xffffffffa04603b0) = %+v, %v, want %+v", got, ok, want)
	}
}

func TestSym(t *testing.T) {
	tab := parseFixture(t)
	tests := []struct {
		addr      uint64
		sym, symo string
	}{
		// The examples of grammar.md §6.3.
		{0xffffffff811e2a1b, "seq_buf_alloc", "seq_buf_alloc+0x2b/0x70"},
		{0xffffffffa046041c, "i915_gem_execbuffer2 [i915]", "i915_gem_execbuffer2+0x6c/0x2c0 [i915]"},
		// Aliases: the first listed wins, in vmlinux and in modules.
		{0xffffffff81000000, "srso_alias_untrain_ret", "srso_alias_untrain_ret+0x0/0x40"},
		{0xffffffff8100003f, "srso_alias_untrain_ret", "srso_alias_untrain_ret+0x3f/0x40"},
		{0xffffffffa0460000, "i915_gem_object_init [i915]", "i915_gem_object_init+0x0/0x3b0 [i915]"},
		{0xffffffff81c1f7d0, "schedule", "schedule+0x0/0xd0"},
		{0xffffffff83783020, "early_init_fn", "early_init_fn+0x10/0x75900"},
		{0xffffffffa04a0000, "ext4_file_read_iter [ext4]", "ext4_file_read_iter+0x0/0x100 [ext4]"},
		// BPF programs print without their pseudo-module.
		{0xffffffffc0203050, "bpf_prog_6deef7357e7b4530_sd_fw_ingress", "bpf_prog_6deef7357e7b4530_sd_fw_ingress+0x50/0x100"},
		// Not resolved: below the first symbol, per-CPU offsets, outside
		// the kernel text, trampolines.
		{0x10, "0x10", "0x10"},
		{0xffffffff80000000, "0xffffffff80000000", "0xffffffff80000000"},
		{0xffffffff8220bb08, "0xffffffff8220bb08", "0xffffffff8220bb08"},
		{0xffffffff83000000, "0xffffffff83000000", "0xffffffff83000000"},
		{0xffffffffc0201010, "0xffffffffc0201010", "0xffffffffc0201010"},
		{0xffffffffc0205000, "0xffffffffc0205000", "0xffffffffc0205000"},
		{0xffffffffffffffff, "0xffffffffffffffff", "0xffffffffffffffff"},
	}
	for _, tt := range tests {
		if got := tab.Sym(tt.addr); got != tt.sym {
			t.Errorf("Sym(%#x) = %q, want %q", tt.addr, got, tt.sym)
		}
		if got := tab.SymOffset(tt.addr); got != tt.symo {
			t.Errorf("SymOffset(%#x) = %q, want %q", tt.addr, got, tt.symo)
		}
	}
}

func TestLookupLastAndUnbounded(t *testing.T) {
	// Without _stext, every vmlinux symbol resolves; the last symbol has
	// no size and holds only its own address.
	tab, err := Parse(strings.NewReader("1000 T a\n1000 t a_alias\n1100 t b\n1200 T c\n"))
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	tests := []struct {
		addr uint64
		want string
	}{
		{0xfff, "0xfff"},
		{0x1000, "a+0x0/0x100"},
		{0x10ff, "a+0xff/0x100"},
		{0x1100, "b+0x0/0x100"},
		{0x1200, "c+0x0/0x0"},
		{0x1201, "0x1201"},
	}
	for _, tt := range tests {
		if got := tab.SymOffset(tt.addr); got != tt.want {
			t.Errorf("SymOffset(%#x) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestCoreSpans(t *testing.T) {
	tests := []struct {
		name, text string
		in, out    []uint64
	}{
		{"all symbols", "100 T _stext\n180 D data\n200 T _etext\n300 B _end\n", []uint64{0x100, 0x180, 0x200, 0x2ff}, []uint64{0xff, 0x300}},
		{"text only", "100 T _stext\n200 T _etext\n300 T _sinittext\n400 T _einittext\n500 T last\n", []uint64{0x100, 0x1ff, 0x300, 0x3ff}, []uint64{0x200, 0x2ff, 0x400}},
		{"no _etext", "100 T _stext\n200 T last\n", []uint64{0x100, 0x200}, []uint64{0xff}},
	}
	for _, tt := range tests {
		tab, err := Parse(strings.NewReader(tt.text))
		if err != nil {
			t.Fatalf("%s: Parse() = %v", tt.name, err)
		}
		for _, a := range tt.in {
			if !tab.inCore(a) {
				t.Errorf("%s: inCore(%#x) = false, want true", tt.name, a)
			}
		}
		for _, a := range tt.out {
			if tab.inCore(a) {
				t.Errorf("%s: inCore(%#x) = true, want false", tt.name, a)
			}
		}
	}
}

func TestNilTable(t *testing.T) {
	var tab *Table
	if got, ok := tab.Lookup(0x1000); ok {
		t.Errorf("nil.Lookup(0x1000) = %+v, true, want false", got)
	}
	if got := tab.Sym(0x1000); got != "0x1000" {
		t.Errorf("nil.Sym(0x1000) = %q, want 0x1000", got)
	}
	if got := tab.SymOffset(0x1000); got != "0x1000" {
		t.Errorf("nil.SymOffset(0x1000) = %q, want 0x1000", got)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, text := range []string{"", "\n", "\n\n  \n"} {
		tab, err := Parse(strings.NewReader(text))
		if err != nil || tab == nil {
			t.Fatalf("Parse(%q) = %v, %v, want a table", text, tab, err)
		}
		if got, ok := tab.Lookup(0); ok {
			t.Errorf("Parse(%q).Lookup(0) = %+v, want nothing", text, got)
		}
	}
}

func TestParseHidden(t *testing.T) {
	text := "0000000000000000 T _stext\n0000000000000000 T schedule\n0000000000000000 t ext4_read\t[ext4]\n"
	tab, err := Parse(strings.NewReader(text))
	if !errors.Is(err, ErrHidden) || tab != nil {
		t.Errorf("Parse(zero addresses) = %v, %v, want ErrHidden", tab, err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"zz T foo\n", `kallsyms line 1: bad address "zz"`},
		{"1000 T foo\n1000 TT bar\n", `kallsyms line 2: bad symbol type "TT"`},
		{"1000 T\n", "kallsyms line 1: no symbol name"},
		{"1000\n", "kallsyms line 1: bad symbol type \"\""},
		{"1000 T \n", "kallsyms line 1: no symbol name"},
		{"1000 t foo\text4\n", `kallsyms line 1: bad module "ext4"`},
		{"1000 t foo\t[]\n", `kallsyms line 1: bad module "[]"`},
		{"1000 t foo\t[ext4] x\n", `kallsyms line 1: unexpected "x" after the module`},
		{"10000000000000000 T foo\n", `kallsyms line 1: bad address "10000000000000000"`},
	}
	for _, tt := range tests {
		tab, err := Parse(strings.NewReader(tt.text))
		if err == nil || err.Error() != tt.want || tab != nil {
			t.Errorf("Parse(%q) = %v, %v, want error %q", tt.text, tab, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	b, err := os.ReadFile("testdata/kallsyms.txt")
	if err != nil {
		f.Fatal(err)
	}
	// The file in pieces of a few lines: go test minimizes every input
	// that finds new code in time quadratic in its size, and fuzzes
	// nothing meanwhile.
	lines := strings.SplitAfter(string(b), "\n")
	for i := 0; i < len(lines); i += 4 {
		f.Add(strings.Join(lines[i:min(i+4, len(lines))], ""))
	}
	f.Add("")
	f.Add("0 T a\n")
	f.Add("1000 T a\n1000 t b\t[m]\nffffffffffffffff T z\n")
	f.Add("100 T _stext\n200 T _etext\n300 T _sinittext\n400 T _einittext\n")
	f.Fuzz(func(t *testing.T, text string) {
		tab, err := Parse(strings.NewReader(text))
		if (tab == nil) == (err == nil) {
			t.Fatalf("Parse(%q) = %v, %v: want exactly one of table and error", text, tab, err)
		}
		if tab == nil {
			return
		}
		for i, s := range tab.syms {
			if i > 0 && tab.syms[i-1].Addr > s.Addr {
				t.Fatalf("Parse(%q): symbols not sorted", text)
			}
			if s.Name == "" || strings.ContainsAny(s.Name+s.Module, " \t\n") {
				t.Fatalf("Parse(%q): bad symbol %+v", text, s)
			}
			for _, a := range []uint64{s.Addr, s.Addr + s.Size/2, s.Addr - 1} {
				got, ok := tab.Lookup(a)
				if ok && (a < got.Addr || (got.Size > 0 && a-got.Addr >= got.Size) || (got.Size == 0 && a != got.Addr)) {
					t.Fatalf("Parse(%q).Lookup(%#x) = %+v: does not hold the address", text, a, got)
				}
				if ok != (tab.Sym(a) != fmt.Sprintf("%#x", a)) {
					t.Fatalf("Parse(%q): Sym(%#x) = %q disagrees with Lookup", text, a, tab.Sym(a))
				}
				tab.SymOffset(a)
			}
		}
	})
}

// synthetic returns kallsyms text with n vmlinux and n module symbols.
func synthetic(n int) string {
	var b strings.Builder
	addr := uint64(0xffffffff81000000)
	for i := range n {
		fmt.Fprintf(&b, "%016x T func_%d\n", addr, i)
		addr += 16 + uint64(i%200)
	}
	addr = 0xffffffffc0000000
	for i := range n {
		fmt.Fprintf(&b, "%016x t mod_func_%d\t[mod%d]\n", addr, i, i/1000)
		addr += 16 + uint64(i%200)
	}
	return b.String()
}

func BenchmarkLookup(b *testing.B) {
	tab, err := Parse(strings.NewReader(synthetic(100000)))
	if err != nil {
		b.Fatal(err)
	}
	lo, hi := tab.syms[0].Addr, tab.syms[len(tab.syms)-1].Addr
	r := rand.New(rand.NewPCG(1, 2))
	addrs := make([]uint64, 1024)
	for i := range addrs {
		addrs[i] = lo + r.Uint64N(hi-lo)
	}
	b.ResetTimer()
	for i := range b.N {
		tab.Lookup(addrs[i%len(addrs)])
	}
}

func BenchmarkParse(b *testing.B) {
	text := synthetic(100000)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		if _, err := Parse(strings.NewReader(text)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFuncRange resolves .function values as the kernel does: a name to
// its function's range, an address to the range of the function holding
// it; data symbols, the last symbol and unknown names fail.
func TestFuncRange(t *testing.T) {
	tab := parseFixture(t)
	tests := []struct {
		name   string
		addr   uint64
		lo, hi uint64
		err    string
	}{
		{name: "schedule", lo: 0xffffffff81c1f7d0, hi: 0xffffffff81c1f8a0},
		{name: "seq_buf_alloc", lo: 0xffffffff811e29f0, hi: 0xffffffff811e2a60},
		{addr: 0xffffffff811e2a1b, lo: 0xffffffff811e29f0, hi: 0xffffffff811e2a60},
		{name: "ext4_file_read_iter", lo: 0xffffffffa04a0000, hi: 0xffffffffa04a0100},
		{name: "no_such_function", err: `no kernel function "no_such_function"`},
		{name: "kprobe_insn_page", err: `kernel symbol "kprobe_insn_page" has no size to match addresses against`},
		{addr: 0x1234, err: "no kernel function holds 0x1234"},
	}
	for _, tc := range tests {
		lo, hi, err := tab.FuncRange(tc.name, tc.addr)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("FuncRange(%q, %#x) = %#x, %#x, %v, want error %q", tc.name, tc.addr, lo, hi, err, tc.err)
			}
			continue
		}
		if err != nil || lo != tc.lo || hi != tc.hi {
			t.Errorf("FuncRange(%q, %#x) = %#x, %#x, %v, want %#x, %#x", tc.name, tc.addr, lo, hi, err, tc.lo, tc.hi)
		}
	}
	if _, _, err := (*Table)(nil).FuncRange("schedule", 0); err == nil {
		t.Error("nil table resolved a function")
	}
	text, err := os.ReadFile("testdata/kallsyms.txt")
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi, err := TextFuncRange(string(text))("schedule", 0); err != nil || lo != 0xffffffff81c1f7d0 || hi != 0xffffffff81c1f8a0 {
		t.Errorf("TextFuncRange(...)(schedule) = %#x, %#x, %v", lo, hi, err)
	}
}
