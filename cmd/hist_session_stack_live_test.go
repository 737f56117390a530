package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestPrivilegedHistSessionStack runs the kernel's example of a stack
// passed through a synthetic event (histogram.rst, block_lat), adapted
// to a workload: a shell, under a name of its own, that waits for K
// sleep commands in turn, so that it blocks K times in wait4. The first
// hist keeps the stack of each of its switches out in S state, the
// second, at its switch back in, passes the stack to block_lat, whose
// hist is keyed on pid and stack.stacktrace: exactly K synthetic events
// of the shell's pid, every stack in schedule and do_wait, printed as
// "stack.stacktrace:" and a newline.
func TestPrivilegedHistSessionStack(t *testing.T) {
	testutil.RequirePrivileged(t)
	const k = 4
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep")
	}
	// The task's name is the name it was run by: a link to sh.
	const comm = "gtblk"
	self := filepath.Join(t.TempDir(), comm)
	if err := os.Symlink(sh, self); err != nil {
		t.Fatal(err)
	}
	script := strings.TrimSuffix(strings.Repeat("sleep 0.02; ", k), "; ")
	out, errOut, code := run(t, "hist", "-q", "--synth", "block_lat pid_t pid; u64 delta; unsigned long[] stack;",
		"-e", "sched:sched_switch",
		"-R", fmt.Sprintf(`hist:keys=prev_pid:ts=common_timestamp.usecs,st=common_stacktrace if prev_comm == "%s" && prev_state == 1`, comm),
		"-R", fmt.Sprintf(`hist:keys=next_pid:delta=common_timestamp.usecs-$ts,s=$st:onmatch(sched.sched_switch).trace(block_lat,next_pid,$delta,$s) if next_comm == "%s"`, comm),
		"-e", "synthetic:block_lat", "-R", "hist:keys=pid,stack.stacktrace:sort=pid",
		"--", self, "-c", script)
	if code != 0 {
		t.Fatalf("gtrace hist: exit %d\n%s", code, errOut)
	}
	sections := strings.Split(out, "# event histogram")
	if len(sections) != 4 {
		t.Fatalf("%d hists, want 3:\n%s", len(sections)-1, out)
	}
	total := regexp.MustCompile(`Hits: (\d+)`)
	for i, s := range sections[1:3] {
		if m := total.FindStringSubmatch(s); m == nil || m[1] != strconv.Itoa(k) {
			t.Errorf("hist %d of sched_switch: %v hits, want %d:\n%s", i+1, m, k, s)
		}
	}
	synth := sections[3]
	entry := regexp.MustCompile(`(?s)\{ pid: +(\d+), stack\.stacktrace:\n((?: {9}\S+\n)+)\} hitcount: +(\d+)\n`)
	hits, pids := 0, map[string]bool{}
	for _, m := range entry.FindAllStringSubmatch(synth, -1) {
		n, _ := strconv.Atoi(m[3])
		hits += n
		pids[m[1]] = true
		for _, fn := range []string{"schedule+", "do_wait+"} {
			if !strings.Contains(m[2], "\n         "+fn) && !strings.HasPrefix(m[2], "         "+fn) {
				t.Errorf("a stack of the shell's waits without %s:\n%s", strings.TrimSuffix(fn, "+"), m[2])
			}
		}
	}
	if hits != k || len(pids) != 1 {
		t.Errorf("block_lat: %d events of pids %v, want %d of the shell's:\n%s", hits, pids, k, synth)
	}
	t.Logf("block_lat:%s", synth)
}
