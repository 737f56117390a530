package parse

import (
	"errors"
	"testing"
)

// FuzzParseSynth checks, for any input: no panic; an error exactly when
// no definition; errors are *Error with offsets inside the input; the
// listing parses back to the same listing; and the derived format parses.
func FuzzParseSynth(f *testing.F) {
	seedFiles(f, "synth", func(text string) []string { return []string{text} })
	for _, tt := range synthErrorTests {
		f.Add(tt.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		d, err := ParseSynth("--synth", src)
		if (d == nil) == (err == nil) {
			t.Fatalf("ParseSynth(%q) = %v, %v: want exactly one of definition and error", src, d, err)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Src != src || e.Off < 0 || e.Off > e.End || e.End > len(src) {
				t.Fatalf("ParseSynth(%q) = %v, want an *Error inside the input", src, err)
			}
			return
		}
		list := d.String()
		again, err := ParseSynth("--synth", list)
		if err != nil {
			t.Fatalf("ParseSynth(%q) lists %q; ParseSynth(%q) = %v", src, list, list, err)
		}
		if got := again.String(); got != list {
			t.Fatalf("ParseSynth(%q) lists %q; that lists %q", src, list, got)
		}
		if _, err := ParseFormat(d.Name, d.FormatFile(1)); err != nil {
			t.Fatalf("ParseSynth(%q): the derived format does not parse: %v", src, err)
		}
	})
}
