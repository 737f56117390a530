package parse

import (
	"errors"
	"strings"
	"testing"
)

// FuzzTrigger checks, for any input: no panic; an error exactly when no
// trigger; errors are *Error with offsets inside the input; the canonical
// string parses back to the same trigger; and applying the trigger to a
// set never panics and fails only with an *Error inside the input.
func FuzzTrigger(f *testing.F) {
	seedFiles(f, "trigger", func(text string) []string { return strings.Split(text, "\n") })
	for _, tt := range triggerErrorTests {
		f.Add(tt.src)
	}
	f.Add("!enable_hist:kmem:kmalloc:0 if bytes_req > 10")
	f.Add("!hist:keys=pid if pid == 1")
	valid := func(t *testing.T, what, src string, err error) {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s(%q) = %T %v, want *Error", what, src, err, err)
		}
		if e.Src != src || e.Off < 0 || e.Off > e.End || e.End > len(src) {
			t.Fatalf("%s(%q) = %v at %d:%d of %q, want offsets into the input", what, src, e, e.Off, e.End, e.Src)
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		tr, err := ParseTrigger("-R", src)
		if (tr == nil) == (err == nil) {
			t.Fatalf("ParseTrigger(%q) = %v, %v: want exactly one of trigger and error", src, tr, err)
		}
		if err != nil {
			valid(t, "ParseTrigger", src, err)
			return
		}
		canon := tr.String()
		again, err := ParseTrigger("-R", canon)
		if err != nil {
			t.Fatalf("ParseTrigger(%q) = %q; ParseTrigger(%q) = %v", src, canon, canon, err)
		}
		if got, want := triggerShape(again), triggerShape(tr); got != want {
			t.Fatalf("ParseTrigger(%q) = %s; ParseTrigger(%q) = %s", src, want, canon, got)
		}
		_ = tr.Listing()
		set, err := applyFuzzSet()
		if err != nil {
			t.Fatal(err)
		}
		if err := set.Apply(tr); err != nil {
			valid(t, "Apply", src, err)
		}
		_ = set.Listing()
	})
}

// triggerShape is everything of a trigger but its source and offsets.
func triggerShape(t *Trigger) string {
	var b strings.Builder
	b.WriteString(t.String())
	b.WriteString("|" + t.Cmd.String() + "|" + t.Target.System + "|" + t.Target.Event + "|" + t.FilterText)
	if t.Remove {
		b.WriteString("|remove")
	}
	if t.HasCount {
		b.WriteString("|count")
	}
	if t.Filter != nil {
		b.WriteString("|" + exprString(t.Filter))
	}
	return b.String()
}

// applyFuzzSet is a set with one trigger of most kinds.
func applyFuzzSet() (*TriggerSet, error) {
	var s TriggerSet
	for _, w := range []string{"traceon:2 if pid == 1", "stacktrace", "enable_event:kmem:kmalloc", "hist:keys=pid"} {
		tr, err := ParseTrigger("-R", w)
		if err != nil {
			return nil, err
		}
		if err := s.Apply(tr); err != nil {
			return nil, err
		}
	}
	return &s, nil
}
