package cmd

import (
	"strings"
	"testing"
)

// TestTriggerList checks gtrace trigger --list against the kernel's
// listing of the same writes (parse's tests hold the kernel's files): per
// event, newest first, a removal applied, loading nothing.
func TestTriggerList(t *testing.T) {
	d, out, errb := fakeDeps(t)
	code := runDeps(d, "trigger", "--list",
		"-e", "sched:sched_switch", "traceoff:2 if prev_pid == 1", "traceon", "!traceoff", "enable_event:sched:sched_waking:0x10",
		"-e", "syscalls:sys_enter_write", "disable_event:syscalls:sys_enter_getppid if count > 3")
	want := `# sched:sched_switch
enable_event:sched:sched_waking:count=16
traceon:unlimited
# syscalls:sys_enter_write
disable_event:syscalls:sys_enter_getppid:unlimited if count > 3
`
	if code != 0 || out.String() != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errb)
	}
	d, out, _ = fakeDeps(t)
	code = runDeps(d, "trigger", "--list", "-e", "sched:sched_switch", "stacktrace:3 if prev_pid == 1", "traceoff", "-e", "sched:sched_waking", "stacktrace")
	want = `# sched:sched_switch
traceoff:unlimited
stacktrace:count=3 if prev_pid == 1
# sched:sched_waking
stacktrace:unlimited
`
	if code != 0 || out.String() != want {
		t.Errorf("stacktrace: exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
	d, out, _ = fakeDeps(t)
	if code := runDeps(d, "trigger", "--list", "-e", "sched:sched_switch", "traceoff"); code != 0 || out.String() != "traceoff:unlimited\n" {
		t.Errorf("one event: exit %d, stdout %q, want traceoff:unlimited alone", code, out)
	}
}

// TestTriggerListEvery checks that --list takes every trigger the parser
// takes, those a recording does not run too: snapshot, enable_hist,
// disable_hist and hists with their attributes, as the kernel lists them
// (hists after the others, oldest first; a paused hist; a second hist of
// a name= listed with the first one's description and its own filter).
func TestTriggerListEvery(t *testing.T) {
	d, out, errb := fakeDeps(t)
	code := runDeps(d, "trigger", "--list",
		"-e", "sched:sched_switch",
		"hist:keys=common_pid.execname,next_prio.log2:vals=hitcount,prev_state.hex:sort=hitcount.descending:size=256:pause",
		"snapshot:2 if prev_pid == 1",
		"hist:name=h:keys=common_pid:vals=hitcount.percent if next_prio < 100",
		"enable_hist:sched:sched_waking:3",
		"disable_hist:sched:sched_waking if prev_pid == 2",
		"hist:keys=next_pid.buckets=10,common_timestamp.usecs:vals=hitcount.graph,next_prio*2-prev_prio:nohitcount",
		"!hist:keys=next_pid.buckets=10,common_timestamp.usecs:vals=hitcount.graph,next_prio*2-prev_prio:nohitcount",
		"!snapshot",
		"-e", "sched:sched_waking", "hist:name=h:keys=common_pid:vals=hitcount.percent:size=128 if prio > 3")
	want := `# sched:sched_switch
disable_hist:sched:sched_waking:unlimited if prev_pid == 2
enable_hist:sched:sched_waking:count=3
hist:keys=common_pid.execname,next_prio.log2:vals=hitcount,prev_state.hex:sort=hitcount.descending:size=256 [paused]
hist:name=h:keys=common_pid:vals=hitcount,hitcount.percent:sort=hitcount:size=2048 if next_prio < 100 [active]
# sched:sched_waking
hist:name=h:keys=common_pid:vals=hitcount,hitcount.percent:sort=hitcount:size=2048 if prio > 3 [active]
`
	if code != 0 || out.String() != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errb)
	}
	d, out, errb = fakeDeps(t)
	code = runDeps(d, "trigger", "--list", "-e", "syscalls:sys_enter_write", "snapshot", "hist:keys=common_pid:vals=count.hex")
	want = "snapshot:unlimited\nhist:keys=common_pid:vals=hitcount,count.hex:sort=hitcount:size=2048 [active]\n"
	if code != 0 || out.String() != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errb)
	}
}

// TestHistEnableHistDryRun checks what --dry-run says of a hist's
// enable_hist and disable_hist triggers and of a paused hist: the
// trigger file's lines of the event that carries them, newest first, and
// the target's trigger info " [paused]", as the kernel lists them.
func TestHistEnableHistDryRun(t *testing.T) {
	d, out, errb := fakeDeps(t)
	code := runDeps(d, "hist", "--dry-run",
		"-e", "sched:sched_switch", "-k", "prev_pid",
		"-R", "enable_hist:sched:sched_waking:2 if prev_pid == 3", "-R", "disable_hist:sched:sched_waking",
		"-e", "sched:sched_waking", "hist:keys=pid:pause")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	for _, want := range []string{
		"# trigger info: hist:keys=prev_pid:vals=hitcount:sort=hitcount:size=2048 [active]\n",
		"# trigger disable_hist:sched:sched_waking:unlimited\n# trigger enable_hist:sched:sched_waking:count=2 if prev_pid == 3\n",
		"# trigger info: hist:keys=pid:vals=hitcount:sort=hitcount:size=2048 [paused]\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--dry-run output lacks %q:\n%s", want, out)
		}
	}
}

// TestTriggerBadInput is the table of bad triggers, on record's -R and
// gtrace trigger: the exact message and caret, exit 2, nothing loaded
// (the formats are fixtures: nothing could be).
func TestTriggerBadInput(t *testing.T) {
	for _, tc := range []badInput{
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "traceoff:2 if prev_pd == 1"}, 2,
			"^gtrace: -R:1:15: Field not found: \"prev_pd\" in sched:sched_switch\n  traceoff:2 if prev_pd == 1\n                \\^~~~~~~\n  hint: did you mean \"prev_pid\"\\?\n$", true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "stacktrace:2", "stacktrace"}, 2,
			"^gtrace: -R:1:1: File exists: the event already has a trigger stacktrace:count=2\n  stacktrace\n  \\^~~~~~~~~~\n  hint: one stacktrace per event; remove the other first with !stacktrace:2\n$", true},
		{[]string{"trigger", "--dry-run", "-e", "sched:sched_switch", "snapshot"}, 2,
			"^gtrace: -R:1:1: the snapshot trigger writes trace.dat files: it runs on gtrace record\n  snapshot\n  \\^~~~~~~~\n  hint: gtrace record -e sched:sched_switch -R 'snapshot' writes FILE.snapshot-N.dat at each firing\n$", true},
		{[]string{"filter", "--dry-run", "-e", "sched:sched_switch", "-R", "snapshot:1 if prev_pid == 1"}, 2,
			"^gtrace: -R:1:1: the snapshot trigger writes trace.dat files: it runs on gtrace record\n", true},
		{[]string{"hist", "--dry-run", "-e", "sched:sched_switch", "-k", "prev_pid", "-R", "snapshot"}, 2,
			"^gtrace: -R:1:1: a snapshot trigger writes the records kept up to it, and a hist keeps none\n  snapshot\n  \\^~~~~~~~\n  hint: record the events with gtrace record -R 'snapshot': it writes FILE.snapshot-N.dat at each firing\n$", true},
		{[]string{"trigger", "--dry-run", "-e", "sched:sched_switch", "enable_hist:sched:sched_waking"}, 2,
			"^gtrace: -R:1:13: sched:sched_waking has no hist here\n  enable_hist:sched:sched_waking\n              \\^~~~~~~~~~~~~~~~~~\n" +
				"  hint: enable_hist continues or pauses the hists of a hist trigger: give sched:sched_waking one, -e sched:sched_waking -R 'hist:keys=...'\n$", true},
		{[]string{"record", "--dry-run", "-e", "sched:sched_switch", "-R", "hist:keys=prev_pid", "-R", "disable_hist:sched:sched_switch", "-R", "disable_hist:sched:sched_waking:2"}, 2,
			"^gtrace: -R:1:14: sched:sched_waking has no hist here\n", true},
		{[]string{"record", "--dry-run", "-e", "sched:sched_switch", "-R", "hist:keys=prev_pd"}, 2,
			"^gtrace: -R:1:11: unknown field \"prev_pd\" in sched:sched_switch\n  hist:keys=prev_pd\n            \\^~~~~~~\n  hint: did you mean \"prev_pid\"\\?\n$", true},
		{[]string{"filter", "--dry-run", "-e", "sched:sched_switch", "-R", "hist:keys=prev_pid", "-R", "hist:keys=prev_pid:size=4096"}, 2,
			"^gtrace: -R:1:1: Hist trigger already exists: hist:keys=prev_pid:vals=hitcount:sort=hitcount:size=2048\n  hist:keys=prev_pid:size=4096\n  \\^~~~", true},
		{[]string{"trigger", "--dry-run", "-e", "sched:sched_switch", "hist:keys=prev_pid:clock=local:vals=common_timestamp"}, 2,
			"^gtrace: -R:1:20: clock \"local\" cannot be read from BPF\n", true},
		{[]string{"trigger", "--dry-run", "-e", "sched:sched_switch", "hist:keys=prev_pid if next_pd == 1"}, 2, "^gtrace: -R:1:23: Field not found: \"next_pd\" in sched:sched_switch\n  hist:keys=prev_pid if next_pd == 1\n                        \\^~~~~~~\n", true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "hist:keys=prev_pd"}, 2,
			"^gtrace: -R:1:11: unknown field \"prev_pd\" in sched:sched_switch\n  hist:keys=prev_pd\n            \\^~~~~~~\n", true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "hist:keys=prev_pid:vals=prev_comm"}, 2, `-R:1:25: field "prev_comm"`, true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "hist:keys=prev_pid if prev_pd == 1"}, 2, `Field not found: "prev_pd" in sched:sched_switch`, true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "hist:keys=prev_pid", "hist:keys=prev_pid:size=4096"}, 2, `Hist trigger already exists`, true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "hist:name=h:keys=prev_pid", "-e", "sched:sched_waking", "hist:name=h:keys=pid"}, 2,
			`named hist trigger doesn't match existing named trigger`, true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "enable_hist:sched:no_such"}, 2, `-R:1:13: no event sched:no_such`, true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "snapshot if prev_pd == 1"}, 2, `-R:1:13: Field not found: "prev_pd"`, true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "hist:keys=prev_pid:clear"}, 2, `clear empties a hist already there`, true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "traceoff", "traceoff:3"}, 2,
			"-R:1:1: File exists: the event already has a trigger traceoff:unlimited\n  traceoff:3\n  \\^~~~~~~~\n", true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "!traceon"}, 2, `-R:1:1: no trigger to remove: the event has no traceon`, true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "enable_event:sched:no_such"}, 2, `-R:1:14: no event sched:no_such`, true},
		{[]string{"trigger", "--list", "-e", "sched:sched_switch", "traceon 5"}, 2, `^gtrace: -R:1:`, true},
		{[]string{"trigger", "--list", "traceon", "-e", "sched:sched_switch"}, 2, `trigger "traceon" comes before any -e`, false},
		{[]string{"record", "-R", "traceon", "-e", "sched:sched_switch"}, 2, `a trigger must follow the -e EVENT it is on`, false},
		{[]string{"record", "--dry-run", "-e", "sched:sched_switch", "-R", "traceoff if next_pid ==", "-o", "x.dat"}, 2, `^gtrace: -R:1:`, true},
		{[]string{"hist", "--dry-run", "-e", "sched:sched_switch", "-k", "prev_pid", "-R", "enable_event:sched:sched_waking"}, 2,
			"-R:1:14: sched:sched_waking has no hist here\n  enable_event:sched:sched_waking\n               \\^~~~~~~~~~~~~~~~~~\n  hint: enable_event turns the counting of a hist of this command on or off: give sched:sched_waking its own -e\n", true},
		{[]string{"hist", "--dry-run", "-e", "sched:sched_switch", "-k", "prev_pid", "-R", "disable_hist:sched:sched_waking:2"}, 2,
			"-R:1:14: sched:sched_waking has no hist here\n  disable_hist:sched:sched_waking:2\n               \\^~~~~~~~~~~~~~~~~~\n  hint: disable_hist turns the counting of a hist of this command on or off: give sched:sched_waking its own -e\n", true},
		{[]string{"hist", "--dry-run", "-e", "sched:sched_switch", "hist:keys=prev_pid:clear"}, 2,
			"^gtrace: hist:1:20: clear empties a hist already there\n  hist:keys=prev_pid:clear\n                     \\^~~~~\n  hint: a hist of gtrace starts empty", true},
		{[]string{"hist", "--dry-run", "-e", "sched:sched_switch", "-k", "prev_pid", "-R", "stacktrace"}, 2,
			"^gtrace: -R:1:1: a stacktrace trigger writes a stack after a record, and a hist has no records\n  stacktrace\n  \\^~~~~~~~~~\n  hint: count the event by its kernel stack: -k common_stacktrace\n$", true},
		{[]string{"hist", "-i", "x.dat", "-e", "sched:sched_switch", "-k", "prev_pid", "-R", "traceoff"}, 2, `-R runs triggers in BPF, on live events: not with -i`, false},
	} {
		t.Run(tc.args[len(tc.args)-1], func(t *testing.T) {
			d, _, errb := fakeDeps(t)
			checkBadInput(t, d, errb, tc)
		})
	}
}

// TestRecordHistTriggerDryRun checks what record --dry-run says of a
// hist trigger: a paused word per hist in the control map, then each
// hist's plan and program, [paused] with :pause; trigger's too.
func TestRecordHistTriggerDryRun(t *testing.T) {
	for _, args := range [][]string{
		{"record", "--dry-run", "-e", "sched:sched_switch", "-R", "hist:keys=prev_pid:pause", "-R", "enable_hist:sched:sched_switch if next_pid == 1"},
		{"trigger", "--dry-run", "-e", "sched:sched_switch", "hist:keys=prev_pid:pause", "enable_hist:sched:sched_switch if next_pid == 1"},
	} {
		d, out, errb := fakeDeps(t)
		if code := runDeps(d, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", args[0], code, errb)
		}
		for _, want := range []string{
			"#   trigger enable_hist:sched:sched_switch:unlimited if next_pid == 1\n",
			"# control map off: 6 words (off, tracing off, a soft-disable word per event, a paused word per hist, a count and a fires word per trigger)\n",
			"# 1 hist trigger, counted whether tracing is on or off, printed at the end:\n" +
				"# trigger info: hist:keys=prev_pid:vals=hitcount:sort=hitcount:size=2048 [paused]\nevent sched:sched_switch, size 2048\n",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s --dry-run output lacks %q:\n%s", args[0], want, out)
			}
		}
	}
}
