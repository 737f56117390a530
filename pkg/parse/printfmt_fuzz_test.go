package parse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// printFmtSeeds returns the print fmts of testdata/printfmt/seeds.txt
// (taken from a 6.18 kernel), one per line.
func printFmtSeeds(tb testing.TB) []string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "printfmt", "seeds.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestPrintFmtSeeds parses every seed and checks that its canonical text
// parses to the same tree. Seeds that libtraceevent cannot parse either
// (statement expressions, sizeof(u64), a tab in the format) must fail.
func TestPrintFmtSeeds(t *testing.T) {
	for _, src := range printFmtSeeds(t) {
		pf, err := ParsePrintFmt("seed", src)
		if err != nil {
			if !strings.Contains(src, "({") && !strings.Contains(src, "sizeof(u") && !strings.Contains(src, "\t") {
				t.Errorf("ParsePrintFmt(%q) = %v", src, err)
			}
			continue
		}
		checkPrintFmtRoundTrip(t, src, pf)
	}
}

// FuzzParsePrintFmt checks the parser's promises on any input: no panic;
// a tree or an *Error, never both; error offsets inside the input; the
// canonical text parses to the same tree; the format string splits into
// pieces that cover it.
func FuzzParsePrintFmt(f *testing.F) {
	for _, s := range printFmtSeeds(f) {
		f.Add(s)
	}
	for _, s := range []string{
		`"%d", 2 * -REC->a`,
		`"%d", (REC)->a ? 1 : 2 + 3`,
		`LOCAL_PR_FMT "%s", __print_flags(REC->f, , {1, "a"})`,
		`"%s", __get_dynamic_array(x)[1]`,
		`"a\\"b" "c", 'x'`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		pf, err := ParsePrintFmt("f", src)
		if (pf == nil) == (err == nil) {
			t.Fatalf("ParsePrintFmt(%q) = %v, %v: want exactly one", src, pf, err)
		}
		if err != nil {
			checkErrorSpan(t, src, err)
			return
		}
		checkPrintFmtRoundTrip(t, src, pf)
		end := 0
		for _, p := range ParseFormatPieces(pf.Format) {
			if p.Off != end || p.End < p.Off || p.End > len(pf.Format) {
				t.Fatalf("ParseFormatPieces(%q): piece at [%d, %d) after %d", pf.Format, p.Off, p.End, end)
			}
			end = p.End
		}
		if end != len(pf.Format) {
			t.Fatalf("ParseFormatPieces(%q) ends at %d", pf.Format, end)
		}
	})
}

// checkPrintFmtRoundTrip checks that pf's text parses, and that parsing
// then settles: libtraceevent reshapes a parenthesised right operand that
// binds less tightly than its operator, so the text may parse to another
// tree, but a few rounds reach a text that parses back to itself. It also
// checks that spans lie inside src. Trees with an empty operand (which a
// rotation can make) have no text that parses back to them.
func checkPrintFmtRoundTrip(t *testing.T, src string, pf *PrintFmt) {
	t.Helper()
	for _, a := range pf.Args {
		if hasEmptyOperand(a) {
			return
		}
		if off, end := a.Span(); off < 0 || off > end || end > len(src) {
			t.Fatalf("%q: argument %s spans [%d, %d)", src, a, off, end)
		}
	}
	text := pf.String()
	for round := 0; ; round++ {
		again, err := ParsePrintFmt("again", text)
		if err != nil {
			t.Fatalf("ParsePrintFmt(%q): its text %q does not parse: %v", src, text, err)
		}
		for _, a := range again.Args {
			if hasEmptyOperand(a) {
				return
			}
		}
		got := again.String()
		if got == text {
			return
		}
		if round == 50 {
			t.Fatalf("ParsePrintFmt(%q): text %q parses back as %q", src, text, got)
		}
		text = got
	}
}

func hasEmptyOperand(a PrintArg) bool {
	switch a := a.(type) {
	case nil:
		return true
	case *PrintOp:
		if a.R == nil || (a.L == nil && a.Op != "~" && a.Op != "!" && a.Op != "-" && a.Op != "+") {
			return true
		}
		return (a.L != nil && hasEmptyOperand(a.L)) || hasEmptyOperand(a.R)
	case *PrintCast:
		return hasEmptyOperand(a.X)
	case *PrintFlags:
		return hasEmptyOperand(a.X)
	case *PrintSymbolic:
		return hasEmptyOperand(a.X)
	case *PrintFunc:
		for _, x := range a.Args {
			if hasEmptyOperand(x) {
				return true
			}
		}
	}
	return false
}
