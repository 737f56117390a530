package parse

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseProbe checks, for any input: no panic; an error exactly when
// no definition; errors are *Error with offsets inside the input; the
// listing parses back to the same listing; and the derived format parses.
func FuzzParseProbe(f *testing.F) {
	ins, err := filepath.Glob(filepath.Join("testdata", "probe", "*.in"))
	if err != nil {
		f.Fatal(err)
	}
	for _, in := range ins {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, tt := range probeErrorTests {
		f.Add(tt.src)
	}
	opt := ProbeOptions{Arch: "amd64"}
	f.Fuzz(func(t *testing.T, src string) {
		d, err := ParseProbe("--probe", src, opt)
		if (d == nil) == (err == nil) {
			t.Fatalf("ParseProbe(%q) = %v, %v: want exactly one of definition and error", src, d, err)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Src != src || e.Off < 0 || e.Off > e.End || e.End > len(src) {
				t.Fatalf("ParseProbe(%q) = %v, want an *Error inside the input", src, err)
			}
			return
		}
		list := d.String()
		again, err := ParseProbe("--probe", list, opt)
		if err != nil {
			t.Fatalf("ParseProbe(%q) lists %q; ParseProbe(%q) = %v", src, list, list, err)
		}
		if got := again.String(); got != list {
			t.Fatalf("ParseProbe(%q) lists %q; that lists %q", src, list, got)
		}
		if d.Remove {
			return
		}
		if _, err := ParseFormat(d.Event, d.FormatFile(1)); err != nil {
			t.Fatalf("ParseProbe(%q): the derived format does not parse: %v", src, err)
		}
	})
}
