package parse

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParsePrintFmt(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"no args", `"hello"`, `"hello"`},
		{"joined strings", `"a=%d " "b=%d", REC->a, REC->b`, `"a=%d b=%d", REC->a, REC->b`},
		{"field and cast", `"%lx", (unsigned long)REC->ip`, `"%lx", (unsigned long)REC->ip`},
		{"pointer cast", `"%ps", (void *)REC->ip`, `"%ps", (void *)REC->ip`},
		{"REC in parentheses", `"%d", (REC)->pid`, `"%d", REC->pid`},
		{"precedence", `"%d", REC->a + REC->b * 2`, `"%d", (REC->a + (REC->b * 2))`},
		{"looser operator climbs", `"%d", REC->a * 2 + 1`, `"%d", ((REC->a * 2) + 1)`},
		// libtraceevent groups equal precedence to the right.
		{"right associative", `"%d", REC->a - REC->b - 1`, `"%d", (REC->a - (REC->b - 1))`},
		// ... and rotates a parenthesised looser right operand.
		{"parentheses rotate", `"%d", REC->a * (REC->b + 1)`, `"%d", ((REC->a * REC->b) + 1)`},
		{"shift and mask", `"%d", (REC->dev >> 20) & 0xff`, `"%d", ((REC->dev >> 20) & 0xff)`},
		{"prefix", `"%d", -REC->a + ~REC->b`, `"%d", ((- REC->a) + (~ REC->b))`},
		{"rotated prefix", `"%d", 2 * -REC->a`, `"%d", ((2 * ) - REC->a)`},
		{"ternary", `"%s", REC->a ? "yes" : "no"`, `"%s", (REC->a ? "yes" : "no")`},
		{"ternary with a condition", `"%s", REC->a & 4 ? "x" : ""`, `"%s", ((REC->a & 4) ? "x" : "")`},
		{"ternary last arm is a primary", `"%d", REC->a ? 1 : 2 + 3`, `"%d", ((REC->a ? 1 : 2) + 3)`},
		{"index", `"%lx", REC->args[1]`, `"%lx", (REC->args[1])`},
		{"index of a cast", `"%lx", (u32)REC->args[1]`, `"%lx", ((u32)REC->args[1])`},
		{"char literal", `"%d", REC->c == 'a'`, `"%d", (REC->c == "a")`},
		{"several words", `"%d", (unsigned long long)REC->x`, `"%d", (unsigned long long)REC->x`},
		{"pointer type alone", `"%d", (char *) + 1`, `"%d", ((char *) + 1)`},
		{"flags", `"%s", __print_flags(REC->f, "|", { 0x01, "A" }, { 2, "B" }, { 1 << 2, "C" }, { -1, "ALL" })`,
			`"%s", __print_flags(REC->f, "|", { 0x01, "A" }, { 2, "B" }, { 4, "C" }, { -1, "ALL" })`},
		{"flags without a delimiter", `"%s", __print_flags(REC->f, , { 1, "A" })`, `"%s", __print_flags(REC->f, "", { 1, "A" })`},
		{"flags of an expression", `"%s", __print_flags(REC->f & ~3, "|", {4, "X"})`,
			`"%s", __print_flags((REC->f & (~ 3)), "|", { 4, "X" })`},
		{"symbolic", `"%s", __print_symbolic(REC->t, { 0, "ZERO" }, { HRTIMER_RESTART, "R" },)`,
			`"%s", __print_symbolic(REC->t, { 0, "ZERO" }, { HRTIMER_RESTART, "R" })`},
		{"symbolic without symbols", `"%s", __print_symbolic(REC->t, )`, `"%s", __print_symbolic(REC->t, )`},
		{"hex", `"%s", __print_hex(__get_dynamic_array(buf), __get_dynamic_array_len(buf) - 1)`,
			`"%s", __print_hex(__get_dynamic_array(buf), (__get_dynamic_array_len(buf) - 1))`},
		{"hex str", `"%s", __print_hex_str(REC->mac, 6)`, `"%s", __print_hex_str(REC->mac, 6)`},
		{"array", `"%s", __print_array(__get_dynamic_array(v), __get_dynamic_array_len(v) / 4, 4)`,
			`"%s", __print_array(__get_dynamic_array(v), (__get_dynamic_array_len(v) / 4), 4)`},
		{"strings", `"%s %s %s", __get_str(name), __get_rel_str(x), __get_bitmask(m)`, `"%s %s %s", __get_str(name), __get_rel_str(x), __get_bitmask(m)`},
		{"cpumask and sockaddr", `"%s %pISpc", __get_cpumask(c), __get_sockaddr(sa)`, `"%s %pISpc", __get_cpumask(c), __get_sockaddr(sa)`},
		{"dynamic array index", `"%d", __get_dynamic_array(v)[2]`, `"%d", (__get_dynamic_array(v)[2])`},
		{"sizeof", `"%d %d %d %d %d", sizeof(int), sizeof(unsigned), sizeof(unsigned long), sizeof(long long), sizeof(REC->x)`,
			`"%d %d %d %d %d", sizeof(int), sizeof(int), sizeof(long), sizeof(long long), sizeof(REC->x)`},
		{"builtin expect", `"%d", __builtin_expect(!!(REC->x), 0)`, `"%d", (! ! REC->x)`},
		{"plugin function", `"%s %lu", jbd2_dev_to_name(REC->dev), jiffies_to_msecs(REC->t)`,
			`"%s %lu", jbd2_dev_to_name(REC->dev), jiffies_to_msecs(REC->t)`},
		{"function of no arguments", `"%d", f()`, `"%d", f()`},
		{"mac80211 names", `LOCAL_PR_FMT VIF_PR_FMT " x", REC->a, REC->b, REC->c`, `"%s vif:%p(%d) x", REC->a, REC->b, REC->c`},
		{"escapes kept", `"a\n\"b\" \\ c", REC->x`, `"a\n\"b\" \\ c", REC->x`},
		{"newline in string", "\"a\nb\", REC->x", "\"a\nb\", REC->x"},
		// libtraceevent stops at the first argument not followed by ','.
		{"trailing garbage", `"%d", REC->a REC->b`, `"%d", REC->a`},
		{"operator chain then anything", `"%d %d", REC->a + 1 ) REC->b`, `"%d %d", (REC->a + 1), REC->b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pf, err := ParsePrintFmt("t", tt.src)
			if err != nil {
				t.Fatalf("ParsePrintFmt(%q) = %v", tt.src, err)
			}
			if got := pf.String(); got != tt.want {
				t.Fatalf("ParsePrintFmt(%q).String() = %q, want %q", tt.src, got, tt.want)
			}
		})
	}
}

func TestParsePrintFmtNodes(t *testing.T) {
	src := `"%s", REC->a ? __print_symbolic(REC->b, { 1, "one" }) : "x"`
	pf, err := ParsePrintFmt("t", src)
	if err != nil {
		t.Fatal(err)
	}
	q, ok := pf.Args[0].(*PrintOp)
	if !ok || q.Op != "?" {
		t.Fatalf("arg 0 = %#v, want ?:", pf.Args[0])
	}
	arms := q.R.(*PrintOp)
	sym := arms.L.(*PrintSymbolic)
	if want := []PrintSym{{"1", "one"}}; !reflect.DeepEqual(sym.Syms, want) {
		t.Errorf("symbols = %v, want %v", sym.Syms, want)
	}
	if off, end := q.Span(); src[off:end] != src[6:] {
		t.Errorf("span of ?: = %q", src[off:end])
	}
	if off, end := sym.Span(); src[off:end] != `__print_symbolic(REC->b, { 1, "one" })` {
		t.Errorf("span of __print_symbolic = %q", src[off:end])
	}
	if pf.Format != "%s" || src[pf.FormatOff:pf.FormatEnd] != `"%s"` {
		t.Errorf("format %q at [%d, %d)", pf.Format, pf.FormatOff, pf.FormatEnd)
	}
}

func TestParsePrintFmtErrors(t *testing.T) {
	tests := []struct {
		src, msg, at string
	}{
		{`REC->a`, "want the quoted format", "REC"},
		{`"x" REC->a`, `want ","`, "REC"},
		{`"%d", `, "unexpected end of input", ""},
		{`"%d", REC->`, "want a field name", ""},
		{`"%d", REC.a`, `want "->"`, "."},
		{`"%d", (REC->a`, `want ")"`, ""},
		{`"%d", *REC->a`, `bad prefix operator "*"`, "*"},
		{`"%d", REC->a ? 1`, `want ":"`, ""},
		{`"%d", REC->a[1 + 2]`, `want "]"`, "+"},
		{`"%d", (REC->a)REC->b`, "a cast needs a type name", "(REC->a)"},
		{`"%d", ({ int x; x; })`, `bad prefix operator "{"`, "{"},
		{`"%s", __print_flags(REC->f, "|", { REC->x, "A" })`, "must be a constant", "REC->x"},
		{`"%s", __print_flags(REC->f, "|", { 1, "A" )`, `want "}"`, ")"},
		{`"%s", __print_symbolic(REC->f { 1, "A" })`, `unknown operator "{"`, "{"},
		// A tab ends a string; a backslash before the closing quote
		// escapes it, even after another backslash.
		{"\"a\tb\", REC->x", `want ","`, "b"},
		{`"a\\", REC->x`, "unterminated string", `"a\\", REC->x`},
		{`"%d", sizeof(u64)`, "want int, unsigned, long or REC->field", "u64"},
		{`"%d", sizeof(unsigned char)`, "want int, unsigned, long or REC->field", "char"},
		{`"%s", __get_str(REC->name)`, `want ")"`, "->"},
		{`"%d", f(REC->a + 1)`, `want ","`, "+"},
		{`"%d", __builtin_expect(REC->a, 0`, `want ")"`, ""},
		{`"abc`, "unterminated string", `"abc`},
		{`"%d", REC->a ? 1 : 2 }`, `unknown operator "}"`, "}"},
		{`"%d", REC->a ->`, `unknown operator "->"`, "->"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			pf, err := ParsePrintFmt("t", tt.src)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("ParsePrintFmt(%q) = %v, %v, want an error", tt.src, pf, err)
			}
			if !strings.Contains(pe.Msg, tt.msg) {
				t.Errorf("ParsePrintFmt(%q) = %q, want %q", tt.src, pe.Msg, tt.msg)
			}
			if got := tt.src[pe.Off:pe.End]; got != tt.at {
				t.Errorf("ParsePrintFmt(%q) points at %q, want %q", tt.src, got, tt.at)
			}
		})
	}
}

func TestParseFormatPieces(t *testing.T) {
	tests := []struct {
		format string
		want   []string // text pieces as {text}, conversions as their Spec
	}{
		{"a=%d b=%s", []string{"{a=}", "%d", "{ b=}", "%s"}},
		{"100%% %-08lx%5.3s%.*s", []string{"{100% }", "%-08lx", "%5.3s", "%.*s"}},
		{`tab\there\nnl \\ \q`, []string{"{tab\there\nnl \\ q}"}},
		{"%pS %ps %pISpc %pI4 %pI6c %pM %pMR %pU %pUb %ph %phC %px %pB", []string{
			"%pS", "{ }", "%ps", "{ }", "%pISpc", "{ }", "%pI4", "{ }", "%pI6c", "{ }", "%pM", "{ }",
			"%pMR", "{ }", "%pU", "{ }", "%pUb", "{ }", "%ph", "{ }", "%phC", "{ }", "%p", "{x }", "%p", "{B}"}},
		{"%c%+d% i%hhx%zu%lld%*d", []string{"%c", "%+d", "% i", "%hhx", "%zu", "%lld", "%*d"}},
		{"%5!x", []string{"%5!", "{x}"}},
		{"end %", []string{"{end }", "%"}},
		{"end %-5", []string{"{end }", "%-5"}},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range ParseFormatPieces(tt.format) {
			if p.Conv {
				got = append(got, p.Spec)
				if tt.format[p.Off:p.End] != p.Spec {
					t.Errorf("%q: spec %q at [%d, %d)", tt.format, p.Spec, p.Off, p.End)
				}
			} else {
				got = append(got, "{"+p.Text+"}")
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseFormatPieces(%q) = %q, want %q", tt.format, got, tt.want)
		}
	}
}

func TestParseFormatPiecesFields(t *testing.T) {
	tests := []struct {
		spec string
		want FmtPiece
	}{
		{"%-08lx", FmtPiece{Flags: "-0", Width: 8, Length: "l", Verb: 'x'}},
		{"%.*s", FmtPiece{HasPrec: true, PrecStar: true, Verb: 's'}},
		{"%*d", FmtPiece{WidthStar: true, Verb: 'd'}},
		{"%#5.3llX", FmtPiece{Flags: "#", Width: 5, HasPrec: true, Prec: 3, Length: "ll", Verb: 'X'}},
		{"%pISpc", FmtPiece{Verb: 'p', Ext: "ISpc"}},
		{"%l5d", FmtPiece{Verb: 'd', Odd: true}},
		{"%", FmtPiece{}},
	}
	for _, tt := range tests {
		ps := ParseFormatPieces(tt.spec)
		if len(ps) != 1 {
			t.Fatalf("ParseFormatPieces(%q) = %d pieces", tt.spec, len(ps))
		}
		got := ps[0]
		tt.want.Conv, tt.want.Spec, tt.want.End = true, tt.spec, len(tt.spec)
		if got.Odd {
			got.Length = ""
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseFormatPieces(%q) = %+v, want %+v", tt.spec, got, tt.want)
		}
	}
}

func TestCStrto(t *testing.T) {
	tests := []struct {
		s  string
		ll int64
		ul uint64
	}{
		{"42", 42, 42},
		{"0x1F", 31, 31},
		{"010", 8, 8},
		{"-1", -1, ^uint64(0)},
		{"  +7x", 7, 7},
		{"abc", 0, 0},
		{"0x", 0, 0},
		{"99999999999999999999", 1<<63 - 1, ^uint64(0)},
		{"-99999999999999999999", -1 << 63, ^uint64(0)},
	}
	for _, tt := range tests {
		if got := CStrtoll(tt.s); got != tt.ll {
			t.Errorf("CStrtoll(%q) = %d, want %d", tt.s, got, tt.ll)
		}
		if got := CStrtoull(tt.s); got != tt.ul {
			t.Errorf("CStrtoull(%q) = %d, want %d", tt.s, got, tt.ul)
		}
	}
}

func TestCastValue(t *testing.T) {
	v := uint64(0xfffffffffffffffe)
	tests := []struct {
		typ  string
		want uint64
	}{
		{"u8", 0xfe}, {"s16", 0xfffe}, {"int", 0xfffffffe}, {"unsigned int", 0xfffffffe},
		{"unsigned char", 0xfe}, {"short", 0xfffe}, {"long", v}, {"u64", v}, {"void *", v},
		{"struct foo", v}, {"x", v}, {"bool", v},
	}
	for _, tt := range tests {
		if got := CastValue(v, tt.typ); got != tt.want {
			t.Errorf("CastValue(%#x, %q) = %#x, want %#x", v, tt.typ, got, tt.want)
		}
	}
}

// TestParsePrintFmtNewline checks print fmts as format files end them,
// with a newline, also after an operator chain.
func TestParsePrintFmtNewline(t *testing.T) {
	for _, tt := range []struct {
		src  string
		args int
	}{
		{"\"%d\", REC->a\n", 1},
		{"\"%d %d\", REC->a, REC->a == REC->b\n", 2},
		{"\"%d %d\", REC->a, 1UL << REC->b\n", 2},
	} {
		pf, err := ParsePrintFmt("t", tt.src)
		if err != nil {
			t.Errorf("ParsePrintFmt(%q) = %v", tt.src, err)
			continue
		}
		if len(pf.Args) != tt.args {
			t.Errorf("ParsePrintFmt(%q) has %d arguments, want %d", tt.src, len(pf.Args), tt.args)
		}
	}
}
