package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

// fixed is a catalog of some events, each with the same small format.
type fixed []Event

func (c fixed) Events() ([]Event, error) { return append([]Event(nil), c...), nil }
func (c fixed) Format(e Event) (*parse.Format, string, error) {
	for _, x := range c {
		if x == e {
			return &parse.Format{System: e.System, Name: e.Name, ID: 7}, "", nil
		}
	}
	return nil, "", &EventError{Pattern: e.String()}
}
func (c fixed) Kallsyms() (string, error) { return "", nil }
func (c fixed) Where() string             { return "test" }

func synthDefs(t *testing.T, srcs ...string) []*parse.SynthDef {
	t.Helper()
	var defs []*parse.SynthDef
	for _, s := range srcs {
		d, err := parse.ParseSynth("--synth", s)
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, d)
	}
	return defs
}

func TestWithSynth(t *testing.T) {
	base := fixed{{"sched", "sched_switch"}, {"synthetic", "old"}}
	c, err := WithSynth(base, synthDefs(t, "wakeup_latency u64 lat; pid_t pid; int prio", "a_first char comm[16]"), "--synth")
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := c.Events()
	want := []Event{{"sched", "sched_switch"}, {"synthetic", "a_first"}, {"synthetic", "old"}, {"synthetic", "wakeup_latency"}}
	if len(evs) != len(want) {
		t.Fatalf("Events() = %v, want %v", evs, want)
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Fatalf("Events() = %v, want %v", evs, want)
		}
	}
	f, text, err := c.Format(Event{"synthetic", "wakeup_latency"})
	if err != nil || f.ID != SynthIDTop || f.System != "synthetic" || f.Field("prio") == nil || text == "" {
		t.Fatalf("Format(wakeup_latency) = %+v, %q, %v", f, text, err)
	}
	if f, _, err := c.Format(Event{"synthetic", "a_first"}); err != nil || f.ID != SynthIDTop-1 {
		t.Fatalf("Format(a_first) = %+v, %v, want ID %d", f, err, SynthIDTop-1)
	}
	if f, _, err := c.Format(Event{"sched", "sched_switch"}); err != nil || f.ID != 7 {
		t.Fatalf("Format(sched_switch) = %+v, %v: want the base's", f, err)
	}
	if _, _, err := c.Format(Event{"sched", "wakeup_latency"}); err == nil {
		t.Fatalf("Format(sched:wakeup_latency) found a synthetic event in another system")
	}
}

func TestWithSynthExists(t *testing.T) {
	base := fixed{{"synthetic", "old"}}
	for _, defs := range [][]string{
		{"ev u64 a", "ev u64 b"},
		{"old u64 a"},
	} {
		_, err := WithSynth(base, synthDefs(t, defs...), "--synth")
		var pe *parse.Error
		if !errors.As(err, &pe) || pe.Msg != "Event already exists" || pe.Src != defs[len(defs)-1] || pe.Off != 0 || pe.End != strings.IndexByte(pe.Src, ' ') {
			t.Errorf("WithSynth(%q) = %v, want Event already exists on the last", defs, err)
		}
	}
}

// TestWithSynthRecorded checks that a definition takes the place of the
// recorded synthetic event of the same derived format, listed once, and
// that another of its name is "Event already exists".
func TestWithSynthRecorded(t *testing.T) {
	rec, err := WithSynth(fixed{{"sched", "sched_switch"}}, synthDefs(t, "ev u64 a; int b"), "--synth")
	if err != nil {
		t.Fatal(err)
	}
	c, err := WithSynthRecorded(rec, synthDefs(t, "ev u64 a; int b"), "--synth")
	if err != nil {
		t.Fatalf("WithSynthRecorded of the recorded definition: %v", err)
	}
	evs, err := c.Events()
	if err != nil || len(evs) != 2 || evs[1] != (Event{"synthetic", "ev"}) {
		t.Errorf("Events() = %v, %v, want sched_switch and ev once", evs, err)
	}
	for _, defs := range [][]string{{"ev u64 a; long b"}, {"other u64 x", "ev u64 a; int b"}} {
		_, err = WithSynthRecorded(rec, synthDefs(t, defs...), "--synth")
		var pe *parse.Error
		if !errors.As(err, &pe) || pe.Msg != "Event already exists" {
			t.Errorf("WithSynthRecorded(%q) = %v, want Event already exists (another format, or another ID)", defs, err)
		}
	}
}
