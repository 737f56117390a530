package catalog

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

func TestCheckPattern(t *testing.T) {
	tests := []struct {
		pattern  string
		off, end int // -1: valid
	}{
		{"sched:*", -1, -1},
		{"sched_[sw]*", -1, -1},
		{"*:sys_e[!n]*", -1, -1},
		{"sched:[", 6, 7},
		{"sched:sw[z-", 8, 11},
		{"sch[ed:switch", 3, 6},
		{`sched\`, 5, 6},
		{"sched:sw[]", 8, 10},
	}
	for _, tc := range tests {
		err := CheckPattern("pattern", tc.pattern)
		var pe *parse.Error
		switch {
		case tc.off < 0 && err != nil:
			t.Errorf("CheckPattern(%q) = %v, want nil", tc.pattern, err)
		case tc.off >= 0 && (!errors.As(err, &pe) || pe.Off != tc.off || pe.End != tc.end):
			t.Errorf("CheckPattern(%q) = %#v, want a *parse.Error at %d-%d", tc.pattern, err, tc.off, tc.end)
		}
	}
}

func TestMatchAll(t *testing.T) {
	live, _ := fakeLive(t)
	evs, err := MatchAll(live, "pattern", []string{"sched:sched_switch", "raw_syscalls:*", "sched_switch"})
	if want := []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit", "sched:sched_switch"}; err != nil || !reflect.DeepEqual(names(evs), want) {
		t.Errorf("MatchAll = %v, %v, want %v", names(evs), err, want)
	}
	evs, err = MatchAll(live, "pattern", []string{"sched:sched_switch", "nosuch", "sched:sched_swich"})
	var nm *NoMatchError
	if !errors.As(err, &nm) || errors.Is(err, ErrNoEvent) || !reflect.DeepEqual(names(evs), []string{"sched:sched_switch"}) ||
		err.Error() != `no event matches "nosuch", "sched:sched_swich" (did you mean "sched:sched_switch", "sched:sched_waking"?)` {
		t.Errorf("MatchAll with patterns that match nothing = %v, %v", names(evs), err)
	}
	_, file := openSample(t)
	if _, err := MatchAll(file, "pattern", []string{"x"}); err == nil || err.Error() != `no event of trace.dat file `+sample+` matches "x"` {
		t.Errorf("MatchAll(file) = %v", err)
	}
	var pe *parse.Error
	if evs, err := MatchAll(live, "pattern", []string{"sched:*", "[x"}); evs != nil || !errors.As(err, &pe) {
		t.Errorf("MatchAll with a bad glob = %v, %v, want a *parse.Error", evs, err)
	}
}
