package parse

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseFuncEvent checks, for any input: no panic; an error exactly
// when no event; errors are *Error with offsets inside the input; the
// listing parses back to the same listing; the derived format parses;
// the equivalent probe is a definition or an *Error inside the input.
func FuzzParseFuncEvent(f *testing.F) {
	seedFiles(f, "funcevent", func(text string) []string { return []string{strings.TrimSuffix(text, "\n")} })
	for _, tt := range funcEventErrorTests {
		f.Add(tt.src)
	}
	opt := ProbeOptions{Arch: "amd64"}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := ParseFuncEvent("--funcevent", src, opt)
		if (e == nil) == (err == nil) {
			t.Fatalf("ParseFuncEvent(%q) = %v, %v: want exactly one of event and error", src, e, err)
		}
		inside := func(err error) {
			var pe *Error
			if !errors.As(err, &pe) || pe.Src != src || pe.Off < 0 || pe.Off > pe.End || pe.End > len(src) {
				t.Fatalf("ParseFuncEvent(%q): %v, want an *Error inside the input", src, err)
			}
		}
		if err != nil {
			inside(err)
			return
		}
		list := e.String()
		again, err := ParseFuncEvent("--funcevent", list, opt)
		if err != nil {
			t.Fatalf("ParseFuncEvent(%q) lists %q; ParseFuncEvent(%q) = %v", src, list, list, err)
		}
		if got := again.String(); got != list {
			t.Fatalf("ParseFuncEvent(%q) lists %q; that lists %q", src, list, got)
		}
		if _, err := ParseFormat(e.Func, e.FormatFile(1)); err != nil {
			t.Fatalf("ParseFuncEvent(%q): the derived format does not parse: %v", src, err)
		}
		if _, err := e.Probe("--funcevent"); err != nil {
			inside(err)
		}
	})
}
