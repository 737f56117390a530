package cmd

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// fieldSession is an inter-event session whose values are fields, not
// timestamps: a sched_waking saves the woken task's prio, the switch to
// it emits fev with that prio, the task and the task switched out, and a
// hist counts fev. Two programs that see the same events count the same
// bytes (a timestamp session cannot: each program reads the clock).
func fieldSession(synthHist string) []string {
	return []string{"--synth", "fev int prio; pid_t pid; pid_t prev",
		"-e", "sched:sched_waking", "-R", "hist:keys=pid:p=prio",
		"-e", "sched:sched_switch", "-R", "hist:keys=next_pid:onmatch(sched.sched_waking).fev($p,next_pid,prev_pid)",
		"-e", "synthetic:fev", "-R", synthHist}
}

// histBlocks splits the hists that gtrace prints into their blocks.
func histBlocks(out string) []string {
	var blocks []string
	for _, b := range strings.Split(out, "# event histogram\n")[1:] {
		blocks = append(blocks, strings.TrimRight(b, "\n"))
	}
	return blocks
}

// blockHits is the Hits: of a hist block.
func blockHits(t *testing.T, block string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^    Hits: (\d+)$`).FindStringSubmatch(block)
	if m == nil {
		t.Fatalf("no Hits: line in\n%s", block)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestPrivilegedRecordSynth records a field-value session's events with
// the session run as the recording's hist triggers, in BPF, on the very
// same events, and its synthetic event fev: trace-cmd report prints the
// file, fev included, with nothing on stderr, and gtrace report prints
// the same bytes; the session's hists are those gtrace hist -i prints
// with the same session over the file, byte for byte; the fev records
// are the engine's (a hist of every field of them over the file is the
// live one); -f on the synthetic event records those it lets through.
func TestPrivilegedRecordSynth(t *testing.T) {
	testutil.RequirePrivileged(t)
	requireTraceCmd(t)
	dir := t.TempDir()
	t.Setenv(pidFileEnv, filepath.Join(dir, "pid"))
	const synthHist = "hist:keys=pid,prio,prev"
	for _, tc := range []struct {
		name, filter, liveHist string
	}{
		{"all", "", synthHist},
		// The live hist counts what the -f lets through.
		{"filtered", "prio >= 120", synthHist + " if prio >= 120"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name+".dat")
			session := fieldSession(tc.liveHist)
			args := append([]string{"record", "-q", "-o", file, "--follow"}, session...)
			if tc.filter != "" {
				args = append(args, "-f", tc.filter)
			}
			args = append(args, workload(t, "sleeps 5 10")...)
			out, errOut, code := run(t, args...)
			if code != 0 {
				t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
			}
			if strings.Contains(errOut, " lost") && !strings.Contains(errOut, " 0 lost") {
				t.Fatalf("the recording lost events:\n%s", errOut)
			}
			blocks := histBlocks(out)
			if len(blocks) != 3 {
				t.Fatalf("record printed %d hists, want 3:\n%s", len(blocks), out)
			}
			fevs := blockHits(t, blocks[2])
			if fevs == 0 {
				t.Fatalf("no fev emitted:\n%s", out)
			}

			want := traceCmd(t, "report", file)
			got, errOut, code := run(t, "report", file)
			if code != 0 || got != want {
				t.Fatalf("gtrace report: exit %d, %s\nwant trace-cmd's bytes:\n%s\ngot:\n%s", code, errOut, want, got)
			}
			lines := regexp.MustCompile(`(?m)^.* fev: +prio=(\d+), pid=\d+, prev=\d+$`).FindAllStringSubmatch(got, -1)
			if len(lines) != fevs {
				t.Errorf("the report has %d fev lines, the live hist of fev %d hits", len(lines), fevs)
			}
			for _, l := range lines {
				if p, _ := strconv.Atoi(l[1]); tc.filter != "" && p < 120 {
					t.Errorf("-f %s recorded %s", tc.filter, l[0])
				}
			}

			// The same session over the file: the same hists.
			fileOut, errOut, code := run(t, append([]string{"hist", "-q", "-i", file}, session...)...)
			if code != 0 {
				t.Fatalf("gtrace hist -i: exit %d\n%s", code, errOut)
			}
			if fileOut != out {
				t.Errorf("the session live in the recording:\n%s\nover its file:\n%s", out, fileOut)
			}
			// The recorded fev records: the live hist of fev.
			rec, errOut, code := run(t, "hist", "-q", "-i", file, "-e", "synthetic:fev", "-R", synthHist)
			if code != 0 {
				t.Fatalf("gtrace hist -i -e synthetic:fev: exit %d\n%s", code, errOut)
			}
			recBlocks := histBlocks(rec)
			if len(recBlocks) != 1 || stripInfo(recBlocks[0]) != stripInfo(blocks[2]) {
				t.Errorf("the recorded fev events count\n%s\nthe live hist of fev\n%s", rec, blocks[2])
			}
		})
	}
}

// stripInfo is a hist block without its trigger info line.
func stripInfo(block string) string {
	return regexp.MustCompile(`(?m)^# trigger info: .*$`).ReplaceAllString(block, "")
}

// TestPrivilegedFilterSynth streams a synthetic event: gtrace filter
// prints each fev that the session emits, as many as its hist counts.
func TestPrivilegedFilterSynth(t *testing.T) {
	testutil.RequirePrivileged(t)
	t.Setenv(pidFileEnv, filepath.Join(t.TempDir(), "pid"))
	args := append(append([]string{"filter", "-q", "--follow"}, fieldSession("hist:keys=prio")...), workload(t, "sleeps 5 10")...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	blocks := histBlocks(out)
	if len(blocks) != 3 {
		t.Fatalf("filter printed %d hists, want 3:\n%s", len(blocks), out)
	}
	n := len(regexp.MustCompile(`(?m)^.* fev: +prio=\d+, pid=\d+, prev=\d+$`).FindAllString(out, -1))
	if hits := blockHits(t, blocks[2]); n != hits || n == 0 {
		t.Errorf("filter printed %d fev events, the hist of fev counts %d:\n%s", n, hits, out)
	}
}
