package parse

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseHist checks, for any input: no panic; an error exactly when no
// spec; errors are *Error with offsets inside the input; and the canonical
// string parses back to the same canonical string.
func FuzzParseHist(f *testing.F) {
	seedFiles(f, "hist", func(text string) []string { return []string{strings.TrimSuffix(text, "\n")} })
	for _, tt := range histErrorTests {
		f.Add(tt.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		spec, err := ParseHist("hist", src)
		if (spec == nil) == (err == nil) {
			t.Fatalf("ParseHist(%q) = %v, %v: want exactly one of spec and error", src, spec, err)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("ParseHist(%q) = %T %v, want *Error", src, err, err)
			}
			if e.Src != src || e.Off < 0 || e.Off > e.End || e.End > len(src) {
				t.Fatalf("ParseHist(%q) = %v at %d:%d of %q, want offsets into the input", src, e, e.Off, e.End, e.Src)
			}
			return
		}
		canon := spec.String()
		again, err := ParseHist("hist", canon)
		if err != nil {
			t.Fatalf("ParseHist(%q) = %v; ParseHist(%q) = %v", src, canon, canon, err)
		}
		if got := again.String(); got != canon {
			t.Fatalf("ParseHist(%q) = %q; ParseHist(%q) = %q", src, canon, canon, got)
		}
	})
}

// FuzzHistFromFlags checks that an error names one of the flags and points
// into its text, and that a spec equals ParseHist of its Src.
func FuzzHistFromFlags(f *testing.F) {
	f.Add("common_pid.execname,id.syscall", "count", "hitcount.descending", "256", "id == 1", "n")
	f.Add("pid", "a.log2", "pid.up", "7", "pid == ", "a b")
	f.Add("pid,", "", "", "", "", "")
	f.Add("pid", "", "", "0", "", "")
	f.Add("pid", "", "", "1:vals=x", "", "")
	f.Fuzz(func(t *testing.T, keys, vals, sort, size, filter, name string) {
		split := func(list string) []string {
			if list == "" {
				return nil
			}
			return strings.Split(list, ",")
		}
		flags := HistFlags{Keys: split(keys), Vals: split(vals), Sort: split(sort), Size: size, Filter: filter, Name: name}
		texts := map[string]string{
			"--keys": keys, "--vals": vals, "--sort": sort, "--size": size, "--filter": filter, "--name": name,
		}
		spec, err := HistFromFlags(flags)
		if (spec == nil) == (err == nil) {
			t.Fatalf("HistFromFlags(%+v) = %v, %v: want exactly one of spec and error", flags, spec, err)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("HistFromFlags(%+v) = %T %v, want *Error", flags, err, err)
			}
			text, ok := texts[e.Name]
			if !ok || e.Src != text || e.Off < 0 || e.Off > e.End || e.End > len(text) {
				t.Fatalf("HistFromFlags(%+v) = %v at %d:%d of %q, want offsets into a flag", flags, e, e.Off, e.End, e.Src)
			}
			return
		}
		again, err := ParseHist("hist", spec.Src)
		if err != nil || again.String() != spec.String() {
			t.Fatalf("HistFromFlags(%+v) = %q; ParseHist(%q) = %v, %v", flags, spec, spec.Src, again, err)
		}
	})
}
