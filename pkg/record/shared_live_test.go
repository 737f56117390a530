package record

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// TestPrivilegedSharedMatchesClassic records events whose records have the
// same layout, which share one program told apart by the attach cookie,
// and the same events each on a program of its own: the records must be
// the same, and exactly the helper's calls.
func TestPrivilegedSharedMatchesClassic(t *testing.T) {
	testutil.RequirePrivileged(t)
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Fewer than a syscall group takes: classic tracepoint programs.
	// sys_exit_getppid, sys_enter_close and sys_exit_close all have
	// 24-byte records.
	events := []string{"syscalls:sys_enter_getppid", "syscalls:sys_exit_getppid", "syscalls:sys_enter_close", "syscalls:sys_exit_close"}
	p, err := NewPlan(fs, &Options{Events: []EventSpec{{Pattern: events[0]}, {Pattern: events[1]}, {Pattern: events[2]}, {Pattern: events[3]}}})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Program.Recorders
	if r[0].Shared() || !r[1].Shared() || r[1].Prog != r[2].Prog || r[2].Prog != r[3].Prog || r[0].Prog == r[1].Prog {
		t.Fatalf("recorders %+v: want the three 24-byte events on one shared program", r)
	}
	ids := map[uint16]string{}
	for _, ev := range p.Events {
		ids[uint16(ev.Format.ID)] = ev.Format.Name
	}
	keep := helperCalls(ids)
	const n = 500
	t.Setenv(workloadEnv, fmt.Sprintf("close %d", n))
	shared := recordHelper(t, fs, []string{self}, events, false, keep)
	classic := recordHelper(t, fs, []string{self}, events, true, keep)
	if !slices.Equal(shared, classic) {
		t.Errorf("records of the shared program differ from the classic ones:\n%s", testutil.FirstDiff(strings.Join(shared, "\n"), strings.Join(classic, "\n")))
	}
	count := map[string]int{}
	for _, rec := range shared {
		var id uint16
		fmt.Sscanf(rec[:4], "%04x", &id)
		count[ids[id>>8|id<<8]]++
	}
	for _, name := range []string{"sys_enter_close", "sys_exit_close"} {
		if count[name] != n {
			t.Errorf("%d %s records, want %d: %v", count[name], name, n, count)
		}
	}
	if count["sys_enter_getppid"] < n || count["sys_enter_getppid"] != count["sys_exit_getppid"] {
		t.Errorf("getppid: %v, want at least %d entries and as many exits", count, n)
	}
}
