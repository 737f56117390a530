package parse

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readTestFormat reads testdata/filter/SYSTEM.EVENT.format.
func readTestFormat(tb testing.TB, stem string) *Format {
	tb.Helper()
	name := filepath.Join("testdata", "filter", stem+".format")
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := ParseFormat(name, string(b))
	if err != nil {
		tb.Fatalf("ParseFormat(%s) = %+v", name, err)
	}
	f.System, _, _ = strings.Cut(stem, ".")
	return f
}

// TestBindFilterGolden binds each testdata/filter/CASE.in (a format's
// name, then a filter) and compares the outcome with CASE.golden: the
// error with its caret, or the canonical filter, each predicate as bound
// and the warnings. Regenerate with -update.
func TestBindFilterGolden(t *testing.T) {
	goldenFiles(t, "filter", func(t *testing.T, in string) (string, string) {
		stem, src, _ := strings.Cut(in, "\n")
		src = strings.TrimSuffix(src, "\n")
		return bindReport(readTestFormat(t, stem), src), fmt.Sprintf("BindFilter(%q) on %s", src, stem)
	})
}

func bindReport(f *Format, src string) string {
	e, err := ParseFilter("--filter", src)
	if err != nil {
		return fmt.Sprintf("parse error: %+v\n", err)
	}
	bf, err := BindFilter("--filter", src, e, f)
	if err != nil {
		return fmt.Sprintf("%+v\n", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ok: %s\n", bf.Expr)
	describeBound(&b, bf.Root)
	for _, w := range bf.Warnings {
		fmt.Fprintf(&b, "warning: %+v\n", w)
	}
	return b.String()
}

var (
	operandNames = map[Operand]string{OperandField: "field", OperandPID: "pid", OperandCPU: "cpu", OperandComm: "comm"}
	globNames    = map[GlobKind]string{GlobExact: "exact", GlobPrefix: "prefix", GlobSuffix: "suffix", GlobSubstr: "substring", GlobFull: "glob"}
)

// describeBound writes one line per predicate: what it reads and how it
// compares.
func describeBound(b *strings.Builder, e BoundExpr) {
	switch e := e.(type) {
	case *BoundLogical:
		for _, x := range e.X {
			describeBound(b, x)
		}
	case *BoundNot:
		describeBound(b, e.X)
	case *BoundPred:
		fmt.Fprintf(b, "  %s: %s", e.Pred, operandNames[e.Operand])
		if e.Field != nil {
			fmt.Fprintf(b, " %s@%d", e.Field.Name, e.Field.Offset)
		}
		switch e.Compare {
		case CompareNumber:
			sign := "unsigned"
			if e.Signed {
				sign = "signed"
			}
			fmt.Fprintf(b, ", %d bytes %s at %d, %s %#x", e.Size, sign, e.Offset, e.Op, e.Val)
		case CompareString:
			fmt.Fprintf(b, ", %s %q", globNames[e.Glob.Kind], e.Glob.Text)
			if e.Negate {
				b.WriteString(", negated")
			}
		case CompareCPUs, CompareCPUMask:
			kind := "cpus"
			if e.Compare == CompareCPUMask {
				kind = "cpumask"
			}
			fmt.Fprintf(b, ", %s %s %v", kind, e.Op, e.CPUs)
		case CompareFunction:
			fmt.Fprintf(b, ", function %q at %#x", e.Func, e.Addr)
			if e.Negate {
				b.WriteString(", negated")
			}
		}
		b.WriteString("\n")
	}
}

func TestBindFilterFlattens(t *testing.T) {
	f := readTestFormat(t, "syscalls.sys_enter_write")
	src := "fd == 1 && (count == 2 && fd == 3) && !(count == 4 || fd == 5 || (count == 6 || fd == 7))"
	e, err := ParseFilter("f", src)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := BindFilter("f", src, e, f)
	if err != nil {
		t.Fatal(err)
	}
	and, ok := bf.Root.(*BoundLogical)
	if !ok || and.Op != OpAnd || len(and.X) != 4 {
		t.Fatalf("root = %#v, want an && of 4", bf.Root)
	}
	or, ok := and.X[3].(*BoundNot).X.(*BoundLogical)
	if !ok || or.Op != OpOr || len(or.X) != 4 {
		t.Fatalf("negated operand = %#v, want an || of 4", and.X[3])
	}
}

func TestCastInt(t *testing.T) {
	tests := []struct {
		v      uint64
		size   int
		signed bool
		want   uint64
	}{
		{300, 1, false, 44},
		{300, 1, true, 44},
		{0xff, 1, true, 1<<64 - 1},
		{0x80, 1, false, 0x80},
		{0x1ffffffff, 4, true, 1<<64 - 1},
		{0x1ffffffff, 4, false, 0xffffffff},
		{1<<64 - 100, 4, true, 1<<64 - 100},
		{1<<64 - 100, 4, false, 0xffffff9c},
		{1<<64 - 1, 8, false, 1<<64 - 1},
		{0x8000, 2, true, 0xffffffffffff8000},
	}
	for _, tt := range tests {
		if got := castInt(tt.v, tt.size, tt.signed); got != tt.want {
			t.Errorf("castInt(%#x, %d, %v) = %#x, want %#x", tt.v, tt.size, tt.signed, got, tt.want)
		}
	}
}

func TestParseGlob(t *testing.T) {
	tests := []struct {
		pat  string
		want Glob
		neg  bool
	}{
		{"bash", Glob{GlobExact, "bash"}, false},
		{"", Glob{GlobExact, ""}, false},
		{"!bash", Glob{GlobExact, "bash"}, true},
		{"ba*", Glob{GlobPrefix, "ba"}, false},
		{"*sh", Glob{GlobSuffix, "sh"}, false},
		{"*as*", Glob{GlobSubstr, "as"}, false},
		{"*", Glob{GlobSuffix, ""}, false},
		{"**", Glob{GlobSubstr, ""}, false},
		{"!*sh", Glob{GlobSuffix, "sh"}, true},
		{"b*h", Glob{GlobFull, "b*h"}, false},
		{"*a*b*", Glob{GlobFull, "*a*b*"}, false},
		{"ba?h", Glob{GlobFull, "ba?h"}, false},
		{"[bd]ash", Glob{GlobFull, "[bd]ash"}, false},
		{`a\*`, Glob{GlobFull, `a\*`}, false},
		{"!!x", Glob{GlobExact, "!x"}, true},
		{"***", Glob{GlobFull, "***"}, false},
	}
	for _, tt := range tests {
		got, neg := parseGlob(tt.pat)
		if got != tt.want || neg != tt.neg {
			t.Errorf("parseGlob(%q) = %+v, %v, want %+v, %v", tt.pat, got, neg, tt.want, tt.neg)
		}
	}
}

func TestClosestField(t *testing.T) {
	names := []string{"common_pid", "prev_comm", "prev_pid", "prev_prio", "next_pid", "cpu", "comm"}
	tests := []struct{ in, want string }{
		{"pdi", "prev_pid"},
		{"prevpid", "prev_pid"},
		{"prio", "prev_prio"},
		{"nxet_pid", "next_pid"},
		{"cmm", "comm"},
		{"xyzzy", ""},
		{"timestamp", ""},
	}
	for _, tt := range tests {
		if got := closestField(tt.in, names); got != tt.want {
			t.Errorf("closestField(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestResolveFunctions fills in the ranges of .function predicates and
// points at the value the resolver cannot find.
func TestResolveFunctions(t *testing.T) {
	f := readTestFormat(t, "timer.hrtimer_start")
	resolve := func(name string, addr uint64) (uint64, uint64, error) {
		switch {
		case name == "hrtimer_wakeup", name == "" && addr == 0xffffffff81000010:
			return 0xffffffff81000000, 0xffffffff81000080, nil
		}
		return 0, 0, fmt.Errorf("no kernel function %q", name)
	}
	src := "function.function == hrtimer_wakeup || !(function.function != 0xffffffff81000010)"
	e, err := ParseFilter("-f", src)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := BindFilter("-f", src, e, f)
	if err != nil {
		t.Fatal(err)
	}
	if !bf.HasFunctions() {
		t.Error("HasFunctions() = false")
	}
	if err := bf.ResolveFunctions(resolve); err != nil {
		t.Fatal(err)
	}
	n := 0
	WalkPreds(bf.Root, func(p *BoundPred) {
		n++
		if p.FuncLo != 0xffffffff81000000 || p.FuncHi != 0xffffffff81000080 {
			t.Errorf("%s: range %#x-%#x", p.Pred, p.FuncLo, p.FuncHi)
		}
	})
	if n != 2 {
		t.Errorf("%d predicates, want 2", n)
	}

	src = "function.function == no_such"
	e, _ = ParseFilter("-f", src)
	bf, err = BindFilter("-f", src, e, f)
	if err != nil {
		t.Fatal(err)
	}
	err = bf.ResolveFunctions(resolve)
	var pe *Error
	if !errors.As(err, &pe) || pe.Caret() != "-f:1:22: Function not found: no kernel function \"no_such\"\n  function.function == no_such\n                       ^~~~~~~\n  hint: the value of .function is a kernel function's name or an address in one" {
		t.Errorf("unknown function: %v\n%s", err, pe.Caret())
	}
	if err := bf.ResolveFunctions(nil); err == nil || !strings.Contains(err.Error(), "no kernel symbols") {
		t.Errorf("nil resolver: %v", err)
	}
	src = "function == 1"
	e, _ = ParseFilter("-f", src)
	if bf, err = BindFilter("-f", src, e, f); err != nil || bf.HasFunctions() || bf.ResolveFunctions(nil) != nil {
		t.Errorf("a filter without .function: %v, HasFunctions %v", err, bf.HasFunctions())
	}
}
