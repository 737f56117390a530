package record

import (
	"strings"
	"testing"
)

// TestTriggerListingEvery: a listing takes the triggers a recording does
// not run (TriggerSets refuses them), each bound to its event; one hist
// on a pattern's events goes to each, and a name= shared by them lists
// the first one's description, size included, with each its own filter.
func TestTriggerListingEvery(t *testing.T) {
	fs := fakeTraceFS(t)
	specs := []EventSpec{
		{Pattern: "syscalls:sys_enter_write", Triggers: []string{"snapshot:1", "hist:name=w:keys=common_pid:vals=hitcount:size=256 if count > 1"}},
		{Pattern: "syscalls:sys_enter_openat", Triggers: []string{"hist:name=w:keys=common_pid if flags == 0", "enable_hist:syscalls:sys_enter_write"}},
	}
	if sets, err := TriggerSets(fs, specs); err != nil || len(sets) != 2 {
		t.Errorf("TriggerSets: %d sets, %v; want 2", len(sets), err)
	}
	got, err := TriggerListing(fs, specs)
	want := `# syscalls:sys_enter_write
snapshot:count=1
hist:name=w:keys=common_pid:vals=hitcount:sort=hitcount:size=256 if count > 1 [active]
# syscalls:sys_enter_openat
enable_hist:syscalls:sys_enter_write:unlimited
hist:name=w:keys=common_pid:vals=hitcount:sort=hitcount:size=256 if flags == 0 [active]
`
	if err != nil || got != want {
		t.Errorf("TriggerListing: %v\n%s\nwant:\n%s", err, got, want)
	}
	got, err = TriggerListing(fs, []EventSpec{{Pattern: "raw_syscalls:*", Triggers: []string{"hist:keys=id.syscall:vals=hitcount:pause", "stacktrace"}}})
	want = `# raw_syscalls:sys_enter
stacktrace:unlimited
hist:keys=id.syscall:vals=hitcount:sort=hitcount:size=2048 [paused]
# raw_syscalls:sys_exit
stacktrace:unlimited
hist:keys=id.syscall:vals=hitcount:sort=hitcount:size=2048 [paused]
`
	if err != nil || got != want {
		t.Errorf("a pattern: %v\n%s\nwant:\n%s", err, got, want)
	}
	got, err = TriggerListing(fs, []EventSpec{{Pattern: "syscalls:sys_enter_write", Triggers: []string{"traceon", "!traceon"}}})
	want = "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist\n"
	if err != nil || got != want {
		t.Errorf("every trigger removed: %v\n%s\nwant:\n%s", err, got, want)
	}
	_, err = TriggerListing(fs, []EventSpec{{Pattern: "syscalls:sys_enter_write", Triggers: []string{"hist:keys=fd:vals=filename"}}})
	if err == nil || !strings.Contains(err.Error(), `unknown field "filename"`) {
		t.Errorf("a hist's value not of the event: %v", err)
	}
}
