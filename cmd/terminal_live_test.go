package cmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestPrivilegedTerminal runs gtrace record in a terminal, a tmux pane:
// the attach line, then the status line redrawn in place, and Ctrl-C
// (send-keys C-c) stops it with the statistics and a file that trace-cmd
// reads.
func TestPrivilegedTerminal(t *testing.T) {
	testutil.RequirePrivileged(t)
	requireTraceCmd(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "t.dat")
	args, err := json.Marshal([]string{"record", "-e", "sched:sched_switch", "-o", file})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "run.sh")
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	// Ctrl-C reaches the pane's whole foreground group: the shell traps
	// it to live on and print gtrace's status (a trap, unlike an ignored
	// signal, is not inherited).
	body := "#!/bin/sh\ntrap true INT\n" + workloadEnv + "=main " + argsEnv + "=" + quote(string(args)) + " " + quote(self) +
		"\necho EXIT=$?\nexec sleep 600\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tm := tmuxPane(t, dir, script)
	// waitFor polls the pane until re matches; attaching can take
	// seconds on a loaded machine.
	waitFor := func(what string, re *regexp.Regexp) string {
		t.Helper()
		var screen string
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			screen = tm("capture-pane", "-p")
			if re.MatchString(screen) {
				return screen
			}
		}
		t.Fatalf("no %s in the pane after a minute:\n%s", what, screen)
		return ""
	}
	attach := regexp.MustCompile(`(?m)^gtrace: recording 1 event \(3 programs\) to ` + regexp.QuoteMeta(file) + `; Ctrl-C to stop$`)
	waitFor("attach line", attach)
	waitFor("status line", regexp.MustCompile(`(?m)^\d+ events/s, \d+ events, [\d.]+ MB, 0 lost$`))
	tm("send-keys", "C-c")
	screen := waitFor("exit status", regexp.MustCompile(`(?m)^EXIT=\d+$`))
	if !strings.Contains(screen, "\nEXIT=130\n") {
		t.Errorf("exit status after Ctrl-C, want 130:\n%s", screen)
	}
	// The status line is cleared: the statistics follow the attach line,
	// whole.
	end := regexp.MustCompile(`(?m)^gtrace: recording .*\n(CPU \d+: \d+ events, \d+ lost\n)+` + regexp.QuoteMeta(file) + `: \d+ events \([\d.]+ MB of records\), \d+ lost\nEXIT=130$`)
	if !end.MatchString(screen) {
		t.Errorf("the pane does not end with the attach line, the statistics and the exit status:\n%s", screen)
	}
	if !strings.Contains(traceCmdReport(t, file), "sched_switch:") {
		t.Error("no sched_switch records in the file")
	}
}

// tmuxPane starts script in a detached tmux session of its own (200x50)
// that the test's cleanup kills, and returns a function that runs tmux
// commands on that session's server. It skips the test when tmux is not
// installed, or fails it under GTRACE_REQUIRE_BPF=1 (.ci/run installs
// tmux).
func tmuxPane(t *testing.T, dir, script string) func(a ...string) string {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("GTRACE_REQUIRE_BPF") == "1" {
			t.Fatal("tmux is not installed (apt-get install tmux); GTRACE_REQUIRE_BPF=1 forbids skipping")
		}
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	sock := filepath.Join(dir, "tmux")
	tm := func(a ...string) string {
		out, err := exec.Command(tmux, append([]string{"-S", sock}, a...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v: %s", strings.Join(a, " "), err, out)
		}
		return string(out)
	}
	tm("-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", script)
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })
	return tm
}
