package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/parse"
)

func TestSplitEventFilter(t *testing.T) {
	tests := []struct {
		in, events, filter string
	}{
		{"sched_switch", "sched_switch", ""},
		{"sched_switch: prev_pid == 0", "sched_switch", " prev_pid == 0"},
		{"sched:sched_switch: prev_pid == 0", "sched:sched_switch", " prev_pid == 0"},
		{"sched:sched_switch:prev_pid==0", "sched:sched_switch", "prev_pid==0"},
		{"sched:sched_switch", "sched:sched_switch", ""},
		{"sched:sched_sw*", "sched:sched_sw*", ""},
		{"sched_waking,sched:sched_switch", "sched_waking,sched:sched_switch", ""},
		{"sched_switch:prev_pid < 5", "sched_switch", "prev_pid < 5"},
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
		for _, sel := range selectors(s) {
			if sel.Pattern != s[sel.PatternOff:sel.PatternOff+len(sel.Pattern)] ||
				sel.Filter != "" && sel.Filter != s[sel.FilterOff:sel.FilterOff+len(sel.Filter)] {
				t.Fatalf("selectors(%q): %+v: pattern or filter not at its offset", s, sel)
			}
		}
	})
}

// countLines counts the events Text prints with -F specs.
func countEvents(t *testing.T, specs ...string) int {
	t.Helper()
	f := openDat(t, sampleDat)
	ef, _, err := ParseEventFilters(catalog.File(f), specs)
	if err != nil {
		t.Fatalf("ParseEventFilters(%q) = %v", specs, err)
	}
	return bytes.Count(text(t, f, Options{Events: ef}), []byte("\n")) - 1
}

// TestEventFilters: the counts are trace-cmd report's for the same -F
// arguments on the sample, which has 95 sched_switch records.
func TestEventFilters(t *testing.T) {
	tests := []struct {
		specs []string
		want  int
	}{
		{nil, 95},
		{[]string{"sched_switch"}, 95},
		{[]string{"sched:sched_switch"}, 95},
		{[]string{"sched"}, 95},
		{[]string{"sched:sched_sw*"}, 95},
		{[]string{"sched_waking"}, 0},
		{[]string{"sched_switch: prev_pid == 0"}, 26},
		{[]string{"sched_switch: next_pid == 0"}, 63},
		{[]string{"sched_switch: prev_pid == 0", "sched_switch: next_pid == 0"}, 89},
		{[]string{"sched_switch: next_pid == 0", "sched_switch"}, 95},
		{[]string{"sched_waking,sched_switch: common_pid == 0"}, 26},
		{[]string{"sched:sched_switch:prev_comm ~ \"swapper*\""}, 26},
		{[]string{"sched_switch: cpu == 1 && next_comm == \"rcu_preempt\""}, 0},
		{[]string{"sched_switch: cpu == 0 && next_comm == \"rcu_preempt\""}, 5},
		{[]string{"sched_switch: comm == \"capture.sh\""}, 2},
		{[]string{"sched_switch,sched:sched_waking"}, 95},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.specs, " -F "), func(t *testing.T) {
			if got := countEvents(t, tc.specs...); got != tc.want {
				t.Errorf("-F %q printed %d events, want %d", tc.specs, got, tc.want)
			}
		})
	}
}

func TestEventFilterErrors(t *testing.T) {
	f := openDat(t, sampleDat)
	tests := []struct {
		spec, caret string
	}{
		{"sched_switch: prevpid == 0",
			"-F:1:15: Field not found: \"prevpid\" in sched:sched_switch\n  sched_switch: prevpid == 0\n                ^~~~~~~\n  hint: did you mean \"prev_pid\"?"},
		{"sched_swich", "-F:1:1: no event \"sched_swich\" in the file\n  sched_swich\n  ^~~~~~~~~~~\n" +
			"  hint: did you mean \"sched:sched_switch\"? events are NAME, SYSTEM:NAME, SYSTEM or a glob; gtrace list -i FILE shows them"},
		{"sched_waking, nosuch : pid == 1", "-F:1:15: no event \"nosuch\" in the file\n  sched_waking, nosuch : pid == 1\n                ^~~~~~\n"},
		{"sched_switch: prev_pid ==", "-F:1:24: Invalid value (did you forget quotes)? missing value after \"==\""},
		{"sched_switch:", "-F:1:14: empty filter\n  sched_switch:\n               ^"},
		{"sched_switch:  ", "-F:1:16: empty filter"},
		{"kmem:kmalloc: call_site.function == nosuchfunc", "-F:1:37: Function not found: no kernel function \"nosuchfunc\""},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			ef, _, err := ParseEventFilters(catalog.File(f), []string{"sched_switch", tc.spec})
			var pe *parse.Error
			if !errors.As(err, &pe) || ef != nil {
				t.Fatalf("ParseEventFilters(%q) = %v, %v, want a *parse.Error", tc.spec, ef, err)
			}
			if !strings.HasPrefix(pe.Caret(), tc.caret) {
				t.Errorf("ParseEventFilters(%q) error:\n%s\nwant\n%s", tc.spec, pe.Caret(), tc.caret)
			}
		})
	}
}

func TestEventFilterWarnings(t *testing.T) {
	f := openDat(t, sampleDat)
	_, warns, err := ParseEventFilters(catalog.File(f), []string{"sched_switch: prev_pid == 010", "sched:*: common_pid == 010"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 2 || warns[0].Src != "sched_switch: prev_pid == 010" || !strings.HasPrefix(warns[1].Error(), "-F:1:24: ") {
		t.Errorf("warnings = %v, want one per -F, pointing into it", warns)
	}
}
