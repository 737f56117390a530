package cmd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// completeArgs runs gtrace __complete ARGS (what the scripts of gtrace
// completion run on TAB) and returns the candidates and the directive
// line; stderr must hold only cobra's note of the directive.
func completeArgs(t *testing.T, args ...string) (cands []string, directive string) {
	t.Helper()
	out, errOut, code := runWithStdin(t, nil, append([]string{"__complete"}, args...)...)
	if code != 0 || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "Completion ended with directive:") {
		t.Fatalf("gtrace __complete %q: exit %d, stderr %q", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// Directives of cobra's __complete: 4 no file names, 6 no file names
// and no space after the candidate.
const (
	compNoFiles        = ":4"
	compNoFilesNoSpace = ":6"
)

// TestCompleteFromFile: with -i FILE, events and fields come from the
// file; word-valued flags complete their words; nothing readable gives
// no candidates and no error.
func TestCompleteFromFile(t *testing.T) {
	tests := []struct {
		args      []string
		want      []string
		directive string
	}{
		{[]string{"hist", "-i", sample, "-e", "sched:sched_sw"}, []string{"sched:sched_swap_numa", "sched:sched_switch"}, compNoFiles},
		{[]string{"hist", "-i", sample, "-e", "sch"}, []string{"sched:"}, compNoFilesNoSpace},
		{[]string{"list", "-i", sample, "raw_syscalls:"}, []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"}, compNoFiles},
		{[]string{"list", "-i", sample, "sched:*", "ftrace:pr"}, []string{"ftrace:print"}, compNoFiles},
		{[]string{"hist", "-i", sample, "-e", "sched:sched_switch", "-k", "prev_p"}, []string{"prev_pid", "prev_prio"}, compNoFiles},
		{[]string{"hist", "-i", sample, "-e", "sched:sched_switch", "-k", "next_comm,common_pid.e"}, []string{"next_comm,common_pid.execname"}, compNoFiles},
		{[]string{"hist", "-i", sample, "-e", "sched:sched_switch", "--vals", "prev_prio.p"}, []string{"prev_prio.percent"}, compNoFiles},
		{[]string{"hist", "-i", sample, "-e", "sched:sched_switch", "-s", "hitcount.d"}, []string{"hitcount.descending"}, compNoFiles},
		{[]string{"hist", "-i", sample, "-e", "raw_syscalls:sys_enter", "-e", "sched:sched_switch", "-f", "prev_pid == 0 && next_c"}, []string{"prev_pid == 0 && next_comm"}, compNoFiles},
		{[]string{"hist", "--format", ""}, []string{"text", "json", "csv", "table"}, compNoFiles},
		{[]string{"report", "--format", "nd"}, []string{"text", "json", "ndjson"}, compNoFiles}, // the shell filters
		{[]string{"record", "-C", ""}, []string{"mono", "boot", "tai"}, compNoFiles},
		{[]string{"record", "--compression", ""}, []string{"none", "zstd"}, compNoFiles},
		{[]string{"list", "--format", ""}, []string{"text", "json"}, compNoFiles},
		{[]string{"hist", "-i", "no-such-file.dat", "-e", "sch"}, nil, compNoFiles},
		{[]string{"hist", "-i", sample, "-k", "prev"}, nil, compNoFiles}, // no -e yet
	}
	for _, tc := range tests {
		got, directive := completeArgs(t, tc.args...)
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, tc.want) || directive != tc.directive {
			t.Errorf("gtrace __complete %q = %q, %s; want %q, %s", tc.args, got, directive, tc.want, tc.directive)
		}
	}
}

// TestPrivilegedCompleteLive: without -i, events and fields come from
// the running kernel's tracefs.
func TestPrivilegedCompleteLive(t *testing.T) {
	testutil.RequirePrivileged(t)
	tests := []struct {
		args []string
		want string // one of the candidates
	}{
		{[]string{"record", "-e", "sched:sched_sw"}, "sched:sched_switch"},
		{[]string{"hist", "-e", "sched:"}, "sched:sched_waking"},
		{[]string{"hist", "-e", "raw_sys"}, "raw_syscalls:"},
		{[]string{"list", "sch"}, "sched:"},
		{[]string{"hist", "-e", "sched:sched_switch", "-k", "prev_c"}, "prev_comm"},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "-k", "id.sys"}, "id.syscall"},
		{[]string{"record", "-e", "sched:sched_switch", "-f", "next_p"}, "next_pid"},
	}
	for _, tc := range tests {
		got, _ := completeArgs(t, tc.args...)
		found := false
		for _, c := range got {
			if c == tc.want {
				found = true
			}
			if !strings.HasPrefix(c, tc.args[len(tc.args)-1]) {
				t.Errorf("gtrace __complete %q: candidate %q does not begin with the word", tc.args, c)
			}
		}
		if !found {
			t.Errorf("gtrace __complete %q = %q, want %q among them", tc.args, got, tc.want)
		}
	}
}
