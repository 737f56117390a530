package catalog

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	live, _ := fakeLive(t, "sched2:sched_switch")
	tests := []struct {
		pattern string
		want    []string
	}{
		{"sched:sched_switch", []string{"sched:sched_switch"}},
		{"sched:*", []string{"sched:sched_process_exec", "sched:sched_switch", "sched:sched_waking"}},
		{"*:sys_e*", []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit", "syscalls:sys_enter_getppid", "syscalls:sys_enter_openat", "syscalls:sys_enter_write", "syscalls:sys_exit_openat"}},
		{"raw_syscalls:sys_e*", []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"}},
		{"sys_enter", []string{"raw_syscalls:sys_enter"}},
		{"sched_switch", []string{"sched:sched_switch", "sched2:sched_switch"}},
		{"raw_syscalls", []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"}},
		{"raw_sys*", []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"}},
		{"sched_[sw]*", []string{"sched:sched_switch", "sched:sched_waking", "sched2:sched_switch"}},
		{"*:*", nil}, // every event
	}
	all, _ := live.Events()
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			got, err := Match(live, tc.pattern)
			want := tc.want
			if want == nil {
				want = names(all)
			}
			if err != nil || !reflect.DeepEqual(names(got), want) {
				t.Errorf("Match(%q) = %v, %v, want %v", tc.pattern, names(got), err, want)
			}
		})
	}
}

func TestMatchErrors(t *testing.T) {
	live, _ := fakeLive(t)
	_, file := openSample(t)
	tests := []struct {
		c       Catalog
		pattern string
		want    string
	}{
		{live, "sched:sched_swich", `unknown event "sched:sched_swich" (did you mean "sched:sched_switch", "sched:sched_waking"?); gtrace list shows the events`},
		{live, "nosuchthing", `unknown event "nosuchthing"; gtrace list shows the events`},
		{live, "sched:[", `unknown event "sched:["; gtrace list shows the events`},
		{live, "", `unknown event ""; gtrace list shows the events`},
		{file, "sched_swich", `unknown event "sched_swich" in trace.dat file ` + sample + ` (did you mean "sched:sched_switch"?); gtrace list -i ` + sample + ` shows the events`},
	}
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			evs, err := Match(tc.c, tc.pattern)
			if evs != nil || !errors.Is(err, ErrNoEvent) || err.Error() != tc.want {
				t.Errorf("Match(%q) = %v, %v, want error %q", tc.pattern, evs, err, tc.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	live, _ := fakeLive(t, "sched2:sched_switch", "raw_syscalls:sched")
	_, file := openSample(t)
	tests := []struct {
		c       Catalog
		name    string
		want    Event
		wantErr string
		is      error
	}{
		{c: live, name: "sched:sched_switch", want: Event{"sched", "sched_switch"}},
		{c: live, name: "sys_enter", want: Event{"raw_syscalls", "sys_enter"}},
		{c: live, name: "sched", want: Event{"raw_syscalls", "sched"}}, // an event's name, not the system
		{c: file, name: "sched_switch", want: Event{"sched", "sched_switch"}},
		{c: file, name: "ftrace:function", want: Event{"ftrace", "function"}},
		{c: live, name: "sched_switch", wantErr: `event "sched_switch" is ambiguous: sched:sched_switch, sched2:sched_switch`, is: ErrAmbiguous},
		{c: live, name: "sched:*", wantErr: `event "sched:*": a single event is needed here, not a pattern`},
		{c: live, name: "raw_syscalls", wantErr: `unknown event "raw_syscalls"; gtrace list shows the events`, is: ErrNoEvent},
		{c: live, name: "sched:sys_enter", wantErr: `unknown event "sched:sys_enter"`, is: ErrNoEvent},
		{c: file, name: "sched_swich", wantErr: `unknown event "sched_swich" in trace.dat file`, is: ErrNoEvent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Lookup(tc.c, tc.name)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Errorf("Lookup(%q) = %v, %v, want %v", tc.name, got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Lookup(%q) = %v, %v, want error %q (%v)", tc.name, got, err, tc.wantErr, tc.is)
			}
		})
	}
}

// FuzzMatch: no panic; either events, each one the pattern names and in
// the catalog's order, or an *EventError.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{"sched:sched_switch", "sched:*", "*:sys_e*", "sched", "sched_[sw]*", "[", "a:b:c", "", ":", "*"} {
		f.Add(s)
	}
	_, c := openSample(f)
	all, err := c.Events()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		evs, err := Match(c, pattern)
		var ee *EventError
		if err != nil {
			if evs != nil || !errors.As(err, &ee) || ee.Pattern != pattern {
				t.Fatalf("Match(%q) = %v, %v: want only an *EventError", pattern, evs, err)
			}
			return
		}
		if len(evs) == 0 {
			t.Fatalf("Match(%q) = no events, no error", pattern)
		}
		at := 0
		for _, e := range evs {
			for at < len(all) && all[at] != e {
				at++
			}
			if at == len(all) {
				t.Fatalf("Match(%q) = %v: %s not in the catalog or out of order", pattern, names(evs), e)
			}
		}
		if one, err := Lookup(c, evs[0].String()); err != nil || one != evs[0] {
			t.Fatalf("Lookup(%s) = %v, %v after Match(%q)", evs[0], one, err, pattern)
		}
	})
}
