package cmd

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

// TestRecordSynthDryRun checks the plan of a recording with an
// inter-event session: the synthetic event recorded where the session
// emits it, with its -f, and the session's programs.
func TestRecordSynthDryRun(t *testing.T) {
	d, out, _ := fakeDeps(t)
	args := append(fieldSession("hist:keys=prio"), "-f", "prio < 100", "--dry-run")
	if err := execRecord(d, args...); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# synthetic:fev (ID 65535), recorded by the inter-event session where a hist's action emits it, filter prio < 100\n",
		"# an inter-event session of 3 hist triggers, one collection sharing the recording's switch and rings, printed at the end:\n",
		"# program gtrace_s0 on classic tracepoint sched:sched_waking\n",
		"# program gtrace_s1 on classic tracepoint sched:sched_switch\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
}

// TestRecordSynthErrors checks what a recording refuses of synthetic
// events and sessions, with the message and the caret.
func TestRecordSynthErrors(t *testing.T) {
	const def = "fev int prio; pid_t pid; pid_t prev"
	waking := []string{"-e", "sched:sched_waking", "-R", "hist:keys=pid:p=prio"}
	switching := []string{"-e", "sched:sched_switch", "-R", "hist:keys=next_pid:onmatch(sched.sched_waking).fev($p,next_pid,prev_pid)"}
	session := slices.Concat([]string{"--synth", def}, waking, switching)
	with := func(extra ...string) []string { return slices.Concat(session, extra) }
	for _, tc := range []struct {
		name  string
		args  []string
		want  string // the message, and the caret's line when it is a *parse.Error
		caret string
	}{
		{"not a hist", with("-e", "synthetic:fev", "-R", "traceoff"),
			"-R:1:1: a traceoff trigger on synthetic event fev: not supported by gtrace", "^~~~~~~~"},
		{"enable_hist", with("-e", "sched:sched_process_exec", "-R", "enable_hist:sched:sched_switch"),
			"-R:1:1: enable_hist with an inter-event session: not supported by gtrace", "^~~~~~~~~~~"},
		{"no hist", []string{"--synth", def, "-e", "sched:sched_switch", "-e", "synthetic:fev"},
			"--synth defines synthetic events that no hist trigger emits", ""},
		{"undefined", with("-e", "synthetic:nope"),
			"no synthetic event synthetic:nope: define it with --synth 'nope TYPE FIELD[; TYPE FIELD]...'", ""},
		{"start off", with("-e", "synthetic:fev", "--start-off"),
			"--start-off with synthetic events recorded: not supported by gtrace", ""},
		{"traceoff", with("-e", "synthetic:fev", "-e", "sched:sched_process_exec", "-R", "traceoff"),
			"-R:1:1: traceoff with synthetic events recorded: not supported by gtrace", "^~~~~~~~"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _, _ := fakeDeps(t)
			err := execRecord(d, append(tc.args, "--dry-run")...)
			if err == nil {
				t.Fatalf("record %q: no error", tc.args)
			}
			msg := err.Error()
			var pe *parse.Error
			if errors.As(err, &pe) {
				msg = pe.Caret()
			}
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "\n  "+tc.caret+"\n") && tc.caret != "" {
				t.Errorf("record %q:\n%s\nwant %q with the caret %q", tc.args, msg, tc.want, tc.caret)
			}
		})
	}
}

// TestTriggerListSynth checks that trigger --list refuses --synth: it
// lists the trigger files of tracefs's events.
func TestTriggerListSynth(t *testing.T) {
	d, _, _ := fakeDeps(t)
	root := newRootCmd(d)
	root.SetArgs([]string{"trigger", "--list", "--synth", "fev int prio", "-e", "sched:sched_switch", "traceoff"})
	root.SetOut(d.Out)
	root.SetErr(d.Err)
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "--list lists the trigger files of tracefs's events") {
		t.Errorf("trigger --list --synth: %v", err)
	}
}

// TestRecordSynthStampDryRun checks that the plan says whose read of the
// clock a session's common_timestamp is: the recording's, where its
// program stamps every event the session sees, else the session's own.
func TestRecordSynthStampDryRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter []string // the recording's filter on sched_switch
		want   []string
	}{
		{"exact", nil, []string{
			"# common_timestamp of sched:sched_waking: the recording's read of the clock for the event (exact)\n",
			"# common_timestamp of sched:sched_switch: the recording's read of the clock for the event (exact)\n",
			"; the event's time, common_timestamp (mono): the recording's stamp of event ",
		}},
		{"filtered", []string{"-f", "next_prio < 200"}, []string{
			"# common_timestamp of sched:sched_waking: the recording's read of the clock for the event (exact)\n",
			"# common_timestamp of sched:sched_switch: the session's own read of the clock: the recording filters the event\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, out, _ := fakeDeps(t)
			args := wakeupSession()
			i := slices.Index(args, "sched:sched_switch")
			args = slices.Concat(args[:i+3], tc.filter, args[i+3:], []string{"--dry-run"})
			if err := execRecord(d, args...); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("dry run lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
