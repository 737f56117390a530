package parse

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseFilter checks the parser's promises on any input: no panic; a
// tree or an *Error, never both; error offsets inside the input; the
// canonical text parses to the same tree. Trees are also bound to a
// format, whose errors must keep the same promises.
func FuzzParseFilter(f *testing.F) {
	ins, _ := filepath.Glob(filepath.Join("testdata", "filter", "*.in"))
	for _, in := range ins {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		_, src, _ := strings.Cut(string(b), "\n")
		f.Add(strings.TrimSuffix(src, "\n"))
	}
	for _, s := range []string{
		"fd == 1 && (count > 0x10 || !(comm ~ \"*sh\"))",
		"cpu & CPUS{0-3,7} || common_pid != -1",
		"buf.ustring ~ 'a?[!b-c]\\\\*'",
		"((((fd == 010))))",
		"comm == bash&&count<=-5",
	} {
		f.Add(s)
	}
	format := readTestFormat(f, "syscalls.sys_enter_write")
	f.Fuzz(func(t *testing.T, src string) {
		e, err := ParseFilter("f", src)
		if (e == nil) == (err == nil) {
			t.Fatalf("ParseFilter(%q) = %v, %v: want exactly one", src, e, err)
		}
		if err != nil {
			checkErrorSpan(t, src, err)
			return
		}
		checkRoundTrip(t, src, e)
		bf, err := BindFilter("f", src, e, format)
		if (bf == nil) == (err == nil) {
			t.Fatalf("BindFilter(%q) = %v, %v: want exactly one", src, bf, err)
		}
		if err != nil {
			checkErrorSpan(t, src, err)
		}
	})
}

func checkErrorSpan(t *testing.T, src string, err error) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("%q: error %v is not a *parse.Error", src, err)
	}
	if pe.Off < 0 || pe.Off > pe.End || pe.End > len(src) {
		t.Fatalf("%q: error %q at [%d, %d) is outside the input", src, pe.Msg, pe.Off, pe.End)
	}
	if pe.Msg == "" || strings.ToLower(pe.Msg[:1]) != pe.Msg[:1] {
		t.Fatalf("%q: error message %q should start in lowercase", src, pe.Msg)
	}
}
