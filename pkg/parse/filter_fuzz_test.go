package parse

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseFilter checks the parser's promises on any input: no panic; a
// tree or an *Error, never both; error offsets inside the input; the
// canonical text parses to the same tree. Trees are also bound to a
// format, whose errors must keep the same promises.
func FuzzParseFilter(f *testing.F) {
	seedFiles(f, "filter", func(text string) []string {
		_, src, _ := strings.Cut(text, "\n")
		return []string{strings.TrimSuffix(src, "\n")}
	})
	for _, s := range []string{
		"fd == 1 && (count > 0x10 || !(comm ~ \"*sh\"))",
		"cpu & CPUS{0-3,7} || common_pid != -1",
		"buf.ustring ~ 'a?[!b-c]\\\\*'",
		"((((fd == 010))))",
		"comm == bash&&count<=-5",
		"fd == 0X1F || count & 0777 || count > -010",
		"COMM ~ \"[!a-c]*x?\" && common_cpu == CPUS{1} || CPU != CPUS{0,2-3}",
		"buf.ustring == \"/etc/passwd\" || !(buf.ustring ~ \"*[0-9]\")",
		"fd.function == vfs_write || fd.function != 0xffffffff81000000",
		"(comm ~ 'a*b*c' || comm ~ \"!*x\") && fd == 08",
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
			checkFilterError(t, src, err)
			return
		}
		checkRoundTrip(t, src, e)
		bf, err := BindFilter("f", src, e, format)
		if (bf == nil) == (err == nil) {
			t.Fatalf("BindFilter(%q) = %v, %v: want exactly one", src, bf, err)
		}
		if err != nil {
			checkFilterError(t, src, err)
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

// checkFilterError is checkErrorSpan for filter errors, which start with
// the kernel's words.
func checkFilterError(t *testing.T, src string, err error) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("%q: error %v is not a *parse.Error", src, err)
	}
	if pe.Off < 0 || pe.Off > pe.End || pe.End > len(src) {
		t.Fatalf("%q: error %q at [%d, %d) is outside the input", src, pe.Msg, pe.Off, pe.End)
	}
	if !startsWithKernelWords(pe.Msg) {
		t.Fatalf("%q: error message %q does not start with the kernel's words", src, pe.Msg)
	}
}

// kernelWords are the kernel's filter error messages (grammar.md §2.4)
// that gtrace's start with.
var kernelWords = []string{
	kInvalidOperator, kTooManyOpen, kTooFewOpen, kMissingQuote, kMissingLBrace, kMissingRBrace,
	kOperandTooLong, kExpectString, kExpectNumber, kIllegalOperation, kFieldNotFound,
	kIllegalInteger, kTooManyTerms, kMeaningless, kInvalidCPUList, kInvalidValue,
	kFunctionNotFound, kError, kNoFilter,
}

// startsWithKernelWords reports whether msg is one of the kernel's
// messages followed by ": " (" " after the '?' of "Invalid value (did you
// forget quotes)?") and a detail.
func startsWithKernelWords(msg string) bool {
	for _, w := range kernelWords {
		sep := ": "
		if strings.HasSuffix(w, "?") {
			sep = " "
		}
		if strings.HasPrefix(msg, w+sep) && len(msg) > len(w+sep) {
			return true
		}
	}
	return false
}
