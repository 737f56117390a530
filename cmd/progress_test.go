package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testtrace"
)

// bigFile writes a trace.dat file of the sample's records n times over
// (95 records each) into dir.
func bigFile(t *testing.T, dir string, n int) string {
	t.Helper()
	if testing.Short() {
		t.Skip("writes a large trace.dat")
	}
	p := filepath.Join(dir, "big.dat")
	testtrace.RepeatTrace(t, sample, p, n)
	return p
}

// TestProgressNotOnPipe: report and hist -i of a file that takes them
// several progress periods to read (the test logs how long) write no
// progress line, no carriage return nor escape, to a stderr that is a
// pipe.
func TestProgressNotOnPipe(t *testing.T) {
	dir := t.TempDir()
	dat := bigFile(t, dir, 10000) // 950,000 records, 65 MB
	hist := []string{"hist", "-i", dat}
	for i := range 4 { // four hists: each its own filter, as one event takes no hist twice
		hist = append(hist, "-e", "sched:sched_switch", "-k", "prev_comm,next_comm", "-f", fmt.Sprintf("prev_pid >= %d", i))
	}
	for _, args := range [][]string{{"report", "-i", dat, "--format", "json"}, hist} {
		c := gtraceCommand(t, args...)
		out, err := os.Create(filepath.Join(dir, "out"))
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		c.Stdout, c.Stderr = out, &stderr
		start := time.Now()
		err = c.Run()
		took := time.Since(start)
		out.Close()
		if err != nil {
			t.Fatalf("gtrace %s: %v: %s", args[0], err, stderr.Bytes())
		}
		if stderr.Len() > 0 {
			t.Errorf("gtrace %s wrote %q to a stderr that is a pipe, want nothing", args[0], stderr.Bytes())
		}
		t.Logf("gtrace %s: %v", args[0], took.Round(time.Millisecond))
	}
}

// TestTerminalProgress runs report in a terminal, a tmux pane, whose
// every byte goes to a log (pipe-pane): with stdout redirected, the
// progress line is drawn in place on the pane while the file is read
// and erased at the end; with stdout the terminal too, or with -q, not
// a byte of it.
func TestTerminalProgress(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dat := bigFile(t, dir, 20000) // 1.9 M records, 130 MB: more than a second of JSON
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	gtrace := func(args ...string) string {
		a, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		return workloadEnv + "=main " + argsEnv + "=" + quote(string(a)) + " " + quote(self)
	}
	start := filepath.Join(dir, "start")
	script := filepath.Join(dir, "run.sh")
	body := "#!/bin/sh\nwhile [ ! -e " + quote(start) + " ]; do sleep 0.1; done\n" +
		gtrace("report", "-i", dat, "--format", "json") + " >/dev/null\necho EXIT1=$?\n" +
		gtrace("report", "-i", dat, "-F", "sched_switch: prev_pid == 1234567") + "\necho EXIT2=$?\n" +
		gtrace("report", "-q", "-i", dat) + " >/dev/null\necho EXIT3=$?\n" +
		"exec sleep 600\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tm := tmuxPane(t, dir, script)
	logFile := filepath.Join(dir, "pane.log")
	tm("pipe-pane", "-o", "cat >> "+quote(logFile))
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^reading ` + regexp.QuoteMeta(dat) + `: [\d.]+ (B|kB|MB|GB) of 1\d\d MB \(\d+%\)$`)
	var screen string
	sawLine := false
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		screen = tm("capture-pane", "-p")
		sawLine = sawLine || line.MatchString(screen)
		if strings.Contains(screen, "EXIT3=") {
			break
		}
	}
	if !sawLine {
		t.Error("no progress line seen on the pane")
	}
	if want := "EXIT1=0\ncpus=2\nEXIT2=0\nEXIT3=0\n"; !strings.HasPrefix(strings.TrimLeft(screen, "\n"), want) {
		t.Errorf("the pane is not the exit statuses and report's header alone (want %q):\n%s", want, screen)
	}
	// The log: the progress line redrawn in place and erased, before
	// the first exit status only.
	var log []byte
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if log, err = os.ReadFile(logFile); err == nil && bytes.Contains(log, []byte("EXIT3=")) {
			break
		}
	}
	first, rest, ok := bytes.Cut(log, []byte("EXIT1="))
	if !ok {
		t.Fatalf("no EXIT1 in the pane's log:\n%q", log)
	}
	draw := regexp.MustCompile(`^(\rreading ` + regexp.QuoteMeta(dat) + `: [\d.]+ (B|kB|MB|GB) of 1\d\d MB \(\d+%\)\x1b\[K)+\r\x1b\[K$`)
	if !draw.Match(first) {
		t.Errorf("before EXIT1 the pane got %q, want the progress line redrawn and erased", first)
	}
	if bytes.Contains(rest, []byte("reading")) {
		t.Errorf("after EXIT1 (stdout a terminal, then -q) the pane got %q, want no progress line", rest)
	}
}
