package complete

import (
	"reflect"
	"slices"
	"testing"

	"github.com/gtrace/gtrace/pkg/catalog"
)

const sample = "../tracedat/testdata/sched_switch.dat"

func openSample(t *testing.T) catalog.Catalog {
	t.Helper()
	f, c, err := catalog.OpenFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return c
}

func TestEvents(t *testing.T) {
	c := openSample(t)
	tests := []struct {
		prefix string
		want   []string
		more   bool
	}{
		{"sched:sched_sw", []string{"sched:sched_swap_numa", "sched:sched_switch"}, false},
		{"raw_syscalls:", []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"}, false},
		{"sch", []string{"sched:"}, true},
		{"raw_", []string{"raw_syscalls:"}, true},
		{"nosuch:", nil, false},
	}
	for _, tc := range tests {
		got, more := Events(c, tc.prefix)
		if !reflect.DeepEqual(got, tc.want) || more != tc.more {
			t.Errorf("Events(%q) = %q, %v, want %q, %v", tc.prefix, got, more, tc.want, tc.more)
		}
	}
	if got, _ := Events(c, ""); !slices.Contains(got, "ftrace:") || !slices.Contains(got, "sched:") {
		t.Errorf("Events(\"\") = %q, want every system", got)
	}
}

func TestFields(t *testing.T) {
	c := openSample(t)
	got := Fields(c, "sched:sched_switch")
	for _, want := range []string{"common_pid", "common_cpu", "comm", "prev_comm", "next_pid"} {
		if !slices.Contains(got, want) {
			t.Errorf("Fields(sched:sched_switch) = %q, lacks %s", got, want)
		}
	}
	if got := Fields(c, "sched:nosuch"); got != nil {
		t.Errorf("Fields(sched:nosuch) = %q, want none", got)
	}
	if got := Fields(c, "raw_syscalls:*"); !slices.Contains(got, "id") || !slices.Contains(got, "ret") {
		t.Errorf("Fields(raw_syscalls:*) = %q, want the fields of both events", got)
	}
}

func TestList(t *testing.T) {
	fields := []string{"common_pid", "id", "prev_comm", "prev_pid"}
	tests := []struct {
		kind       Kind
		toComplete string
		want       []string
	}{
		{Keys, "prev_", []string{"prev_comm", "prev_pid"}},
		{Keys, "common_pid.e", []string{"common_pid.execname"}},
		{Keys, "id.s", []string{"id.sym", "id.sym-offset", "id.syscall"}},
		{Keys, "common_pid.execname,id.sys", []string{"common_pid.execname,id.syscall"}},
		{Keys, "id,p", []string{"id,prev_comm", "id,prev_pid"}},
		{Vals, "id.", []string{"id.graph", "id.hex", "id.percent"}},
		{Sort, "h", []string{"hitcount"}},
		{Sort, "hitcount.d", []string{"hitcount.descending"}},
		{Sort, "id,", []string{"id,hitcount", "id,common_pid", "id,id", "id,prev_comm", "id,prev_pid"}},
	}
	for _, tc := range tests {
		if got := List(fields, tc.kind, tc.toComplete); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("List(%d, %q) = %q, want %q", tc.kind, tc.toComplete, got, tc.want)
		}
	}
}

func TestFilter(t *testing.T) {
	fields := []string{"common_pid", "prev_comm", "prev_pid"}
	tests := []struct {
		toComplete string
		want       []string
	}{
		{"prev_p", []string{"prev_pid"}},
		{"prev_pid == 1 && prev_c", []string{"prev_pid == 1 && prev_comm"}},
		{"(comm", []string{"(common_pid"}},
		{"", []string{"common_pid", "prev_comm", "prev_pid"}},
	}
	for _, tc := range tests {
		if got := Filter(fields, tc.toComplete); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Filter(%q) = %q, want %q", tc.toComplete, got, tc.want)
		}
	}
}
