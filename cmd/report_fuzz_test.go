package cmd

import (
	"errors"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"", "0", "0,2-3", "1-0", "x", "0,,1", "3-", "-1", "65536"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := parseCPUList(s)
		if err != nil {
			var pe *parse.Error
			if !errors.As(err, &pe) || pe.Off < 0 || pe.End > len(s) || pe.Off > pe.End {
				t.Fatalf("parseCPUList(%q) = %v: want a *parse.Error inside the input", s, err)
			}
			return
		}
		for _, c := range cpus {
			if c < 0 || c > 1<<16 {
				t.Fatalf("parseCPUList(%q) gave CPU %d", s, c)
			}
		}
	})
}

func FuzzSplitEventFilter(f *testing.F) {
	for _, s := range []string{"sched_switch", "sched_switch: prev_pid == 0", "sched:sched_switch: x == 1", "a:b:c", "sched_switch:prev_pid==0", ":", "a,b: x ~ \"y:z\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		events, off := splitEventFilter(s)
		if len(events) > len(s) || s[:len(events)] != events {
			t.Fatalf("splitEventFilter(%q) events %q is not a prefix", s, events)
		}
		if off != -1 && (off <= len(events) || off > len(s)) {
			t.Fatalf("splitEventFilter(%q) filter offset %d outside (%d, %d]", s, off, len(events), len(s))
		}
	})
}

func TestSplitEventFilter(t *testing.T) {
	tests := []struct {
		in, events, filter string
	}{
		{"sched_switch", "sched_switch", ""},
		{"sched_switch: prev_pid == 0", "sched_switch", " prev_pid == 0"},
		{"sched:sched_switch: prev_pid == 0", "sched:sched_switch", " prev_pid == 0"},
		{"sched:sched_switch:prev_pid==0", "sched:sched_switch", "prev_pid==0"},
		{"sched_switch:prev_pid==0", "sched_switch", "prev_pid==0"},
		{"sched_switch,sched_wakeup: pid == 1", "sched_switch,sched_wakeup", " pid == 1"},
	}
	for _, tc := range tests {
		events, off := splitEventFilter(tc.in)
		filter := ""
		if off >= 0 {
			filter = tc.in[off:]
		}
		if events != tc.events || filter != tc.filter {
			t.Errorf("splitEventFilter(%q) = %q, %q; want %q, %q", tc.in, events, filter, tc.events, tc.filter)
		}
	}
}
