package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

// selected is what a test wants of one Selected.
type selected struct {
	event    string
	filter   string // the bound filter's expression, "" for none
	optional bool
}

func summary(sel []*Selected) []selected {
	out := make([]selected, len(sel))
	for i, s := range sel {
		out[i] = selected{event: s.Event().String(), optional: s.Optional}
		if s.Filter != nil {
			out[i].filter = s.Filter.Expr.String()
		}
	}
	return out
}

func TestSelect(t *testing.T) {
	live, _ := fakeLive(t)
	tests := []struct {
		name string
		sels []Selector
		want []selected
	}{
		{"one event", []Selector{{Pattern: "sched:sched_switch"}}, []selected{{event: "sched:sched_switch"}}},
		{"with filter", []Selector{{Pattern: "sched_switch", Filter: "prev_pid == 1"}},
			[]selected{{event: "sched:sched_switch", filter: "prev_pid == 1"}}},
		{"glob", []Selector{{Pattern: "raw_syscalls:*", Filter: "id == 1"}},
			[]selected{{"raw_syscalls:sys_enter", "id == 1", true}, {"raw_syscalls:sys_exit", "id == 1", true}}},
		{"system", []Selector{{Pattern: "raw_syscalls"}},
			[]selected{{"raw_syscalls:sys_enter", "", true}, {"raw_syscalls:sys_exit", "", true}}},
		{"named twice: first place, last filter", []Selector{
			{Pattern: "raw_syscalls:*", Filter: "id == 1"},
			{Pattern: "sched:sched_switch"},
			{Pattern: "raw_syscalls:sys_exit", Filter: "ret < 0"},
		}, []selected{{"raw_syscalls:sys_enter", "id == 1", true}, {"raw_syscalls:sys_exit", "ret < 0", false}, {event: "sched:sched_switch"}}},
		{"named twice: last filter may be none", []Selector{
			{Pattern: "sched:sched_switch", Filter: "prev_pid == 1"},
			{Pattern: "sched:sched_switch"},
		}, []selected{{event: "sched:sched_switch"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, warns, err := Select(live, tc.sels, SelectOptions{})
			if err != nil || len(warns) != 0 {
				t.Fatalf("Select() = %v, %v", warns, err)
			}
			if got := summary(sel); !equal(got, tc.want) {
				t.Errorf("Select() = %+v, want %+v", got, tc.want)
			}
			for _, s := range sel {
				if s.Text == "" || s.Format.System == "" || s.Filter != nil && s.Filter.Format != s.Format {
					t.Errorf("Select() %s: text %q, filter bound to %v", s.Event(), s.Text, s.Filter.Format)
				}
			}
		})
	}
}

func equal(a, b []selected) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSelectFunctions(t *testing.T) {
	live, _ := fakeLive(t)
	_, file := openSample(t)
	for _, c := range []Catalog{live, file} {
		sel, _, err := Select(c, []Selector{{Pattern: "kmem:kmalloc", Filter: "call_site.function == schedule"}}, SelectOptions{})
		if err != nil {
			t.Fatalf("Select(%s) = %v", c.Where(), err)
		}
		want, _, _ := Funcs(c)("schedule", 0)
		parse.WalkPreds(sel[0].Filter.Root, func(p *parse.BoundPred) {
			if p.FuncLo != want || p.FuncHi <= p.FuncLo {
				t.Errorf("Select(%s): .function range [%#x, %#x), want it to start at %#x", c.Where(), p.FuncLo, p.FuncHi, want)
			}
		})
	}
	// Options.Funcs replaces the catalog's symbols.
	funcs := func(name string, addr uint64) (uint64, uint64, error) { return 0x1000, 0x2000, nil }
	sel, _, err := Select(live, []Selector{{Pattern: "kmem:kmalloc", Filter: "call_site.function == nosuchfunc"}}, SelectOptions{Funcs: funcs})
	if err != nil {
		t.Fatal(err)
	}
	parse.WalkPreds(sel[0].Filter.Root, func(p *parse.BoundPred) {
		if p.FuncLo != 0x1000 || p.FuncHi != 0x2000 {
			t.Errorf("Select(Funcs): .function range [%#x, %#x), want [0x1000, 0x2000)", p.FuncLo, p.FuncHi)
		}
	})
}

func TestSelectWarnings(t *testing.T) {
	live, _ := fakeLive(t)
	sel, warns, err := Select(live, []Selector{{Pattern: "raw_syscalls:*", Filter: "id == 010", FilterName: "-f"}}, SelectOptions{})
	if err != nil || len(sel) != 2 {
		t.Fatalf("Select() = %v, %v", sel, err)
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0].Error(), "-f:1:7: ") {
		t.Errorf("Select() warnings = %v, want one, at -f:1:7", warns)
	}
	src := "raw_syscalls:*: id == 010"
	_, warns, err = Select(live, []Selector{{Pattern: "raw_syscalls:*", Filter: "id == 010", FilterName: "-F", FilterSrc: src, FilterOff: 16}}, SelectOptions{})
	if err != nil || len(warns) != 1 || warns[0].Src != src || !strings.HasPrefix(warns[0].Error(), "-F:1:23: ") {
		t.Errorf("Select(FilterSrc) warnings = %v, %v, want one, at -F:1:23", warns, err)
	}
}

func TestSelectErrors(t *testing.T) {
	live, _ := fakeLive(t)
	_, file := openSample(t)
	tests := []struct {
		name  string
		c     Catalog
		sels  []Selector
		caret string // the *parse.Error's Caret, or the error's text
	}{
		{"unknown field", live, []Selector{{Pattern: "sched:sched_switch", Filter: "prevpid == 0", FilterName: "-f"}},
			"-f:1:1: Field not found: \"prevpid\" in sched:sched_switch\n  prevpid == 0\n  ^~~~~~~\n  hint: did you mean \"prev_pid\"?"},
		{"syntax", live, []Selector{{Pattern: "sched:sched_switch", Filter: "prev_pid =="}},
			"filter:1:10: Invalid value (did you forget quotes)? missing value after \"==\""},
		{"unknown event", live, []Selector{{Pattern: "sched:sched_swich", Filter: "prev_pid == 1"}},
			`unknown event "sched:sched_swich" (did you mean "sched:sched_switch", "sched:sched_waking"?); gtrace list shows the events`},
		{"unknown field in src", file, []Selector{{Pattern: "sched_switch", Filter: " prevpid == 0", FilterName: "-F",
			FilterSrc: "sched_switch: prevpid == 0", FilterOff: 13}},
			"-F:1:15: Field not found: \"prevpid\" in sched:sched_switch\n  sched_switch: prevpid == 0\n                ^~~~~~~\n  hint: did you mean \"prev_pid\"?"},
		{"unknown event in src", file, []Selector{{Pattern: "sched_swich", FilterName: "-F", FilterSrc: "sched_waking,sched_swich", PatternOff: 13}},
			"-F:1:14: no event \"sched_swich\" in the file\n  sched_waking,sched_swich\n               ^~~~~~~~~~~\n" +
				"  hint: did you mean \"sched:sched_switch\"? events are NAME, SYSTEM:NAME, SYSTEM or a glob; gtrace list -i " + sample + " shows them"},
		{"unknown function", file, []Selector{{Pattern: "kmem:kmalloc", Filter: "call_site.function == nosuchfunc", FilterName: "-F",
			FilterSrc: "kmem:kmalloc:call_site.function == nosuchfunc", FilterOff: 13}},
			"-F:1:36: Function not found: no kernel function \"nosuchfunc\"\n  kmem:kmalloc:call_site.function == nosuchfunc\n                                     ^~~~~~~~~~"},
		{"bad offsets", file, []Selector{{Pattern: "kmem:kmalloc", Filter: "x == 1", FilterSrc: "kmem:kmalloc: x == 2", FilterOff: 14}},
			`selector "kmem:kmalloc": its pattern and filter are not at their offsets in "kmem:kmalloc: x == 2"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, warns, err := Select(tc.c, tc.sels, SelectOptions{})
			if err == nil || sel != nil || warns != nil {
				t.Fatalf("Select() = %v, %v, %v, want an error", sel, warns, err)
			}
			got := err.Error()
			var pe *parse.Error
			if errors.As(err, &pe) {
				got = pe.Caret()
			}
			if !strings.HasPrefix(got, tc.caret) {
				t.Errorf("Select() error:\n%s\nwant\n%s", got, tc.caret)
			}
		})
	}
}
