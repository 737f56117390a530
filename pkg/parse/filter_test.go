package parse

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFilter(t *testing.T) {
	tests := []struct {
		src  string
		want string // canonical text
	}{
		{"fd == 1", "fd == 1"},
		{"fd==1", "fd == 1"},
		{"  fd\t>=\n0x1F  ", "fd >= 0x1F"},
		{"a == 1 && b == 2 && c == 3", "a == 1 && b == 2 && c == 3"},
		{"a == 1 && (b == 2 && c == 3)", "a == 1 && (b == 2 && c == 3)"},
		{"(a == 1 && b == 2) && c == 3", "a == 1 && b == 2 && c == 3"},
		{"a == 1 || b == 2 && c == 3", "a == 1 || b == 2 && c == 3"},
		{"(a == 1 || b == 2) && c == 3", "(a == 1 || b == 2) && c == 3"},
		{"a == 1 && (b == 2 || c == 3)", "a == 1 && (b == 2 || c == 3)"},
		{"a == 1 || (b == 2 || c == 3)", "a == 1 || (b == 2 || c == 3)"},
		{"a == 1 || (b == 2 && c == 3)", "a == 1 || b == 2 && c == 3"},
		{"!a == 1", "!a == 1"},
		{"!!a == 1", "!!a == 1"},
		{"! (a == 1 || b == 2)", "!(a == 1 || b == 2)"},
		{"!(a == 1)", "!a == 1"},
		{"((((a == 1))))", "a == 1"},
		{"a != 1", "a != 1"},
		{"a < -1", "a < -1"},
		{"a <= 010", "a <= 010"},
		{"a > 0", "a > 0"},
		{"a & 4", "a & 4"},
		{`comm ~ "ba*"`, `comm ~ "ba*"`},
		{`comm~'ba*'`, `comm ~ "ba*"`},
		{`comm == 'say "hi"'`, `comm == 'say "hi"'`},
		{`comm == "it's"`, `comm == "it's"`},
		{`comm == ""`, `comm == ""`},
		{`comm ~ "!bash"`, `comm ~ "!bash"`},
		{"comm != bash", "comm != bash"},
		{"comm==bash&&pid==1", "comm == bash && pid == 1"},
		{"cpu & CPUS{0-3,7}", "cpu & CPUS{0-3,7}"},
		{"cpu==CPUS{1}", "cpu == CPUS{1}"},
		{"filename.ustring ~ \"*.so\"", "filename.ustring ~ \"*.so\""},
		{"call_site.function == kmalloc_trace", "call_site.function == kmalloc_trace"},
		{"call_site.function != 0xffffffff81000000", "call_site.function != 0xffffffff81000000"},
		{"fd == 18446744073709551615", "fd == 18446744073709551615"},
		{"fd == 0xffffffffffffffff", "fd == 0xffffffffffffffff"},
		{"fd == 01777777777777777777777", "fd == 01777777777777777777777"},
		{"x == -9223372036854775808", "x == -9223372036854775808"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := ParseFilter("f", tt.src)
			if err != nil {
				t.Fatalf("ParseFilter(%q) = %+v", tt.src, err)
			}
			if got := e.String(); got != tt.want {
				t.Errorf("ParseFilter(%q).String() = %q, want %q", tt.src, got, tt.want)
			}
			checkRoundTrip(t, tt.src, e)
		})
	}
}

func TestParseFilterTree(t *testing.T) {
	e, err := ParseFilter("f", `a == 1 || !(b > -0x10 && c ~ 'x*')`)
	if err != nil {
		t.Fatal(err)
	}
	or, ok := e.(*Logical)
	if !ok || or.Op != OpOr {
		t.Fatalf("root = %#v, want ||", e)
	}
	a := or.L.(*Pred)
	if a.Field != "a" || a.Op != CmpEQ || a.Value.Kind != ValNumber || a.Value.Num != 1 || a.FieldOff != 0 || a.FieldEnd != 1 || a.OpOff != 2 {
		t.Errorf("a = %+v", a)
	}
	not := or.R.(*Not)
	if not.Off != 10 {
		t.Errorf("not.Off = %d, want 10", not.Off)
	}
	and := not.X.(*Logical)
	b := and.L.(*Pred)
	if b.Value.Num != 16 || !b.Value.Neg || b.Value.Text != "-0x10" || b.Value.Off != 16 || b.Value.End != 21 {
		t.Errorf("b = %+v", b)
	}
	c := and.R.(*Pred)
	if c.Op != CmpGlob || c.Value.Kind != ValString || c.Value.Str != "x*" || c.Value.Text != "'x*'" {
		t.Errorf("c = %+v", c)
	}
	if off, end := e.Span(); off != 0 || end != len(`a == 1 || !(b > -0x10 && c ~ 'x*'`) {
		t.Errorf("Span() = %d, %d", off, end)
	}
}

func TestParseFilterNumbers(t *testing.T) {
	tests := []struct {
		text string
		num  uint64
		neg  bool
	}{
		{"0", 0, false},
		{"00", 0, false},
		{"010", 8, false},
		{"0x10", 16, false},
		{"0X1f", 31, false},
		{"-010", 8, true},
		{"-0", 0, true},
		{"4294967296", 1 << 32, false},
		{"18446744073709551615", 1<<64 - 1, false},
	}
	for _, tt := range tests {
		e, err := ParseFilter("f", "x == "+tt.text)
		if err != nil {
			t.Errorf("ParseFilter(%q) = %v", tt.text, err)
			continue
		}
		if v := e.(*Pred).Value; v.Num != tt.num || v.Neg != tt.neg {
			t.Errorf("ParseFilter(%q) value = %d neg %v, want %d neg %v", tt.text, v.Num, v.Neg, tt.num, tt.neg)
		}
	}
}

func TestParseFilterErrors(t *testing.T) {
	tests := []struct {
		src      string
		msg      string
		off, end int
	}{
		{"", "No filter found: the filter is empty", 0, 0},
		{"   ", "No filter found: the filter is empty", 3, 3},
		{"fd == 1 &&", `Meaningless filter expression: "&&" at the end of the filter has no operand`, 8, 10},
		{"fd == 1 ||  ", `Meaningless filter expression: "||" at the end of the filter has no operand`, 8, 10},
		{"!", `Meaningless filter expression: "!" at the end of the filter has no operand`, 0, 1},
		{"(", `Meaningless filter expression: "(" at the end of the filter has no operand`, 0, 1},
		{"(fd == 1", `Too many '(': this '(' is never closed`, 0, 1},
		{"((fd == 1) && x == 2", `Too many '(': this '(' is never closed`, 0, 1},
		{"fd == 1)", `Too few '(': this ')' closes nothing`, 7, 8},
		{"(fd == 1))", `Too few '(': this ')' closes nothing`, 9, 10},
		{"fd =< 1", `Invalid operator: "=<"`, 3, 5},
		{"fd = 1", `Invalid operator: "="`, 3, 4},
		{"fd !~ 1", `Invalid operator: "!~"`, 3, 5},
		{"fd <> 1", `Invalid operator: "<>"`, 3, 5},
		{"fd ==~ 1", `Invalid operator: "==~"`, 3, 6},
		{"fd", `Invalid operator: missing operator after "fd"`, 0, 2},
		{"fd.ustring", `Invalid operator: missing operator after "fd.ustring"`, 0, 10},
		{"fd && x == 1", `Invalid operator: expected an operator after "fd", found "&&"`, 3, 5},
		{"fd 1", `Invalid operator: expected an operator after "fd", found "1"`, 3, 4},
		{"fd ==", `Invalid value (did you forget quotes)? missing value after "=="`, 3, 5},
		{"fd == )", `Invalid value (did you forget quotes)? expected a value after "==", found ")"`, 6, 7},
		{"fd == 08", `Illegal integer value: "08"`, 6, 8},
		{"fd == 0x", `Illegal integer value: "0x"`, 6, 8},
		{"fd == 0xfg", `Illegal integer value: "0xfg"`, 6, 10},
		{"fd == -", `Illegal integer value: "-"`, 6, 7},
		{"fd == 1.5", `Illegal integer value: "1.5"`, 6, 9},
		{"fd == 12abc && x == 1", `Illegal integer value: "12abc"`, 6, 11},
		{"fd == 18446744073709551616", `Illegal integer value: "18446744073709551616" does not fit in 64 bits`, 6, 26},
		{"fd == 0x10000000000000000", `Illegal integer value: "0x10000000000000000" does not fit in 64 bits`, 6, 25},
		{"fd == 1 & x == 2", `Too many terms in predicate expression: unexpected "&"`, 8, 9},
		{"fd == 1 | x == 2", `Too many terms in predicate expression: unexpected "|"`, 8, 9},
		{"fd == 1 x == 2", `Too many terms in predicate expression: unexpected "x"`, 8, 9},
		{"fd == 1 'x'", `Too many terms in predicate expression: unexpected "'x'"`, 8, 11},
		{"&& fd == 1", `Field not found: expected a field name, found "&&"`, 0, 2},
		{"fd == 1 && || x == 1", `Field not found: expected a field name, found "||"`, 11, 13},
		{"()", `Field not found: expected a field name, found ")"`, 1, 2},
		{"!= 1", `Field not found: expected a field name, found "!="`, 0, 2},
		{"é == 1", `Field not found: expected a field name, found "é"`, 0, 2},
		{"fd.foo == 1", `Invalid operator: unknown field modifier ".foo"`, 2, 6},
		{"fd. == 1", `Invalid operator: unknown field modifier "."`, 2, 3},
		{"fd.ustring.function == 1", `Invalid operator: modifiers .ustring and .function cannot be combined`, 10, 19},
		{`comm == "abc`, `Missing matching quote: this " is never closed`, 8, 12},
		{`comm == 'abc"`, `Missing matching quote: this ' is never closed`, 8, 13},
		{`comm == "` + strings.Repeat("x", 256) + `"`, `Operand too long: the string has 256 bytes, max 255`, 8, 266},
		{"comm == \"a\x00b\"", "Error: the string contains a NUL byte", 10, 11},
		{"cpu & CPUS{1-", `Missing '}': CPUS{ is never closed`, 6, 13},
		{"cpu & CPUS{3-1}", `Invalid cpulist: "3-1": range "3-1" is backwards`, 6, 15},
		{"cpu & CPUS{}", `Invalid cpulist: "": empty list`, 6, 12},
		{"cpu & CPUS{1,,2}", `Invalid cpulist: "1,,2": "" is not a CPU number or range`, 6, 16},
		{"cpu & CPUS{8192}", `Invalid cpulist: "8192": "8192" is not a CPU number or range`, 6, 16},
		{"cpu & CPUS{a}", `Invalid cpulist: "a": "a" is not a CPU number or range`, 6, 13},
		{"cpu & CPUS", `Missing '{': CPUS needs a list in braces`, 6, 10},
		{strings.Repeat("(", MaxFilterDepth+1) + "a == 1", "Too many '(': the filter is nested too deeply (max 512 levels of '(' and '!')", MaxFilterDepth, MaxFilterDepth + 1},
		{strings.Repeat("!", MaxFilterDepth+1) + "a == 1", "Too many '(': the filter is nested too deeply (max 512 levels of '(' and '!')", MaxFilterDepth, MaxFilterDepth + 1},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := ParseFilter("f", tt.src)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("ParseFilter(%q) = %v, %v; want *Error", tt.src, e, err)
			}
			if e != nil {
				t.Errorf("ParseFilter(%q) returned a tree with an error", tt.src)
			}
			if pe.Msg != tt.msg || pe.Off != tt.off || pe.End != tt.end {
				t.Errorf("ParseFilter(%q) = %q at [%d, %d), want %q at [%d, %d)", tt.src, pe.Msg, pe.Off, pe.End, tt.msg, tt.off, tt.end)
			}
			if pe.Src != tt.src || pe.Name != "f" {
				t.Errorf("error names %q, %q", pe.Name, pe.Src)
			}
		})
	}
}

func TestParseFilterTooManyPredicates(t *testing.T) {
	src := strings.Repeat("a == 1 && ", MaxPredicates-1) + "a == 1"
	e, err := ParseFilter("f", src)
	if err != nil {
		t.Fatalf("%d predicates: %v", MaxPredicates, err)
	}
	if got := e.String(); got != src {
		t.Errorf("String() of %d predicates differs", MaxPredicates)
	}
	_, err = ParseFilter("f", src+" || b == 2")
	var pe *Error
	if !errors.As(err, &pe) || pe.Msg != "Too many terms in predicate expression: more than 16384 predicates" || pe.Off != len(src)+4 {
		t.Errorf("%d predicates: %v", MaxPredicates+1, err)
	}
}

// checkRoundTrip checks that the canonical text of e parses to the same
// tree.
func checkRoundTrip(t testing.TB, src string, e Expr) {
	t.Helper()
	text := e.String()
	e2, err := ParseFilter("f", text)
	if err != nil {
		t.Fatalf("ParseFilter(%q) = %v; it is the canonical form of %q", text, err, src)
	}
	if !sameExpr(e, e2) {
		t.Fatalf("ParseFilter(%q) = %s, a different tree than %q gave", text, e2, src)
	}
}

// sameExpr compares trees, ignoring offsets and how values were quoted.
func sameExpr(a, b Expr) bool {
	switch a := a.(type) {
	case *Logical:
		b, ok := b.(*Logical)
		return ok && a.Op == b.Op && sameExpr(a.L, b.L) && sameExpr(a.R, b.R)
	case *Not:
		b, ok := b.(*Not)
		return ok && sameExpr(a.X, b.X)
	case *Pred:
		b, ok := b.(*Pred)
		if !ok || a.Field != b.Field || a.Mod != b.Mod || a.Op != b.Op {
			return false
		}
		v, w := a.Value, b.Value
		return v.Kind == w.Kind && v.Str == w.Str && v.Num == w.Num && v.Neg == w.Neg
	}
	return false
}
