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
	"unicode/utf8"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// badInput is a command line gtrace must refuse: its exit status (2 for
// bad input, 1 for a genuine failure such as a missing file), a pattern
// its message matches, and whether it points at a token with a caret.
type badInput struct {
	args  []string
	code  int
	msg   string // a regexp that stderr matches
	caret bool   // stderr has a caret line (^ or ^~~)
}

// maxBadInputStderr bounds what gtrace prints about bad input, however
// big the input.
const maxBadInputStderr = 4096

var caretLine = regexp.MustCompile(`(?m)^  +\^~*$`)

// checkBadInput runs tc through the root command, as Main does, and
// checks the exit status, the message, the caret and that stderr is
// small and has no control bytes.
func checkBadInput(t *testing.T, d *Deps, errb fmt.Stringer, tc badInput) {
	t.Helper()
	args := fmt.Sprintf("%.200q", tc.args)
	code := func() (code int) {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("gtrace %s panics: %v", args, r)
				code = -1
			}
		}()
		return runDeps(d, tc.args...)
	}()
	stderr := errb.String()
	if code != tc.code {
		t.Errorf("gtrace %s: exit %d, want %d; stderr:\n%s", args, code, tc.code, stderr)
	}
	if !regexp.MustCompile(tc.msg).MatchString(stderr) {
		t.Errorf("gtrace %s: stderr does not match %q:\n%s", args, tc.msg, stderr)
	}
	if has := caretLine.MatchString(stderr); has != tc.caret {
		t.Errorf("gtrace %s: caret line %v, want %v:\n%s", args, has, tc.caret, stderr)
	}
	if len(stderr) > maxBadInputStderr {
		t.Errorf("gtrace %s: %d bytes of stderr, want at most %d:\n%.500s", args, len(stderr), maxBadInputStderr, stderr)
	}
	if !utf8.ValidString(stderr) {
		t.Errorf("gtrace %s: stderr is not UTF-8: %q", args, stderr)
	}
	for _, r := range stderr {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			t.Errorf("gtrace %s: control character %U on stderr: %q", args, r, stderr)
			break
		}
	}
}

// deadPID returns the id of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(self)
	c.Env = append(os.Environ(), workloadEnv+"=exit 0")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// threadID returns the id of a thread of this process other than its
// main thread.
func threadID(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, e := range tasks {
		if id, err := strconv.Atoi(e.Name()); err == nil && id != os.Getpid() {
			return id
		}
	}
	t.Skip("the test process has a single thread")
	return 0
}

// TestBadInput: every bad command line exits 2 with a clear message and
// a caret where there is a token, or 1 for a genuine failure; none panics
// or floods the terminal. The events come from the format files of
// internal/testutil, so no privileges are needed.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.dat")
	evilName := filepath.Join(dir, "no\x1b[2J\x07such.dat")
	corrupt := filepath.Join(dir, "corrupt.dat")
	if err := os.WriteFile(corrupt, []byte("\x17\x08\x44tracing\x1b[31m6\x00\x00\x08\x00\x00\x10\x00\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	dead, thread := deadPID(t), threadID(t)
	huge := strings.Repeat("x", 128<<10)
	sw := []string{"hist", "-e", "sched:sched_switch", "-k", "prev_pid"}
	hist := func(args ...string) []string { return append(append([]string(nil), sw...), args...) }
	rec := func(args ...string) []string { return append([]string{"record", "-e", "sched:sched_switch"}, args...) }
	tests := []badInput{
		// The root command.
		{[]string{"nosuchcommand"}, 2, `unknown command "nosuchcommand"`, false},
		{[]string{"hist", "--bogus"}, 2, `unknown flag: --bogus`, false},

		// hist: numeric flags, each with a caret on its value.
		{hist("-P", "-1"), 2, `-P:1:1: process id -1 out of range`, true},
		{hist("-P", "1,0"), 2, `-P:1:3: process id 0 out of range`, true},
		{hist("-P", "1,x"), 2, `-P:1:3: invalid process id "x"`, true},
		{hist("--follow"), 2, `--follow:1:1: nothing to follow`, true},
		{hist("-i", "x.dat", "-P", "1", "--follow"), 2, `-i reads a recorded file: .*--follow`, false},
		{hist("-P", "1,,2"), 2, `-P:1:3: missing process id`, true},
		{hist("-P", "99999999999999999999"), 2, `process id 9+ out of range`, true},
		{hist("-P", strconv.Itoa(dead)), 2, fmt.Sprintf(`-P:1:1: no process %d\n`, dead), true},
		{hist("-P", "1,"+strconv.Itoa(thread)), 2, fmt.Sprintf(`-P:1:3: %d is a thread of process %d, not a process`, thread, os.Getpid()), true},
		{hist("--size", "0"), 2, `--size:1:1: size 0 out of range`, true},
		{hist("--size", "-1"), 2, `--size:1:1: invalid size "-1"`, true},
		{hist("--size", "99999999999"), 2, `--size:1:1: size 99999999999 out of range`, true},
		{hist("--size", "1:vals=x"), 2, `--size:1:2: unexpected ":"`, true},
		{hist("--size", ""), 2, `--size:1:1: missing size`, true},
		{[]string{"hist", "-e", "sched:sched_switch", "hist:keys=prev_pid:size=0"}, 2, `hist:1:25: size 0 out of range`, true},
		{hist("--duration", "0s"), 2, `--duration:1:1: duration 0s is not positive`, true},
		{hist("--duration", "-5s"), 2, `--duration:1:1: duration -5s is not positive`, true},
		{hist("--interval", "0s"), 2, `--interval:1:1: duration 0s is not positive`, true},
		{hist("--interval", "1us"), 2, `--interval:1:1: duration 1µs is shorter than 1ms`, true},
		{hist("--interval", "10x"), 2, `--interval:1:1: invalid duration`, true},
		{hist("--format", "xml"), 2, `--format:1:1: invalid format "xml"\n(.*\n)*  hint: want one of text, json, csv, table`, true},

		// hist: events, fields, filters and hist strings.
		{hist("-e", "sched:sched_switch", "-k", "prev_pid", "--size", "256"), 2, `--keys:1:1: hist trigger already exists\n  prev_pid\n  \^~~~~~~~\n  hint: sched:sched_switch has this hist already`, true},
		{[]string{"hist", "-e", "sched:sched_switch", "hist:name=a:keys=prev_pid", "-e", "sched:sched_waking", "hist:keys=pid:name=a"}, 2, `hist:1:20: named hist trigger doesn't match existing named trigger\n  hist:keys=pid:name=a\n {21}\^\n  hint: the hists named a share one table`, true},
		{[]string{"hist", "--name", "a", "-k", "common_pid", "-e", "sched:sched_switch", "-e", "sched:sched_waking", "-k", "pid"}, 2, `--name:1:1: named hist trigger doesn't match existing named trigger`, true},
		{[]string{"hist", "-e", "sched:*", "-k", "prev_pid"}, 2, `--keys:1:1: unknown field "prev_pid" in sched:sched_process_exec`, true},
		{[]string{"hist", "-e", "sched:*", "-k", "common_pid", "--vals", "prev_prio"}, 2, `--vals:1:1: unknown field "prev_prio" in sched:sched_process_exec`, true},
		{[]string{"hist", "-e", "sched:*", "-k", "common_pid", "-f", "next_pid == 1"}, 2, `--filter:1:1: Field not found: "next_pid" in sched:sched_process_exec`, true},
		{[]string{"hist", "-e", "sched:sched_swich", "-k", "prev_pid"}, 2, `unknown event "sched:sched_swich" \(did you mean "sched:sched_switch"`, false},
		{[]string{"hist", "-e", "sched:[", "-k", "prev_pid"}, 2, `unknown event "sched:\["`, false},
		{[]string{"hist", "-e", "nosys:*", "-k", "prev_pid"}, 2, `unknown event "nosys:\*"`, false},
		{[]string{"hist", "-e", "", "-k", "prev_pid"}, 2, `empty event name`, false},
		{[]string{"hist", "-e", huge, "-k", "prev_pid"}, 2, `unknown event "xxx+ \.\.\. x+"`, false},
		{hist("-f", "prev_pid =="), 2, `--filter:1:10: Invalid value \(did you forget quotes\)\? missing value after "=="`, true},
		{hist("-f", huge+" && prev_pid =="), 2, `--filter:1:131074: Invalid operator: expected an operator after "x+ \.\.\. x+", found "&&"\n  \.\.\.x+ && prev_pid ==\n`, true},
		{hist("-f", "prev_pid == 1 &&"+strings.Repeat(" ", 128<<10)+"next_pid =="), 2, `--filter:1:\d+: Invalid value \(did you forget quotes\)\? missing value after "=="\n  \.\.\. + next_pid ==\n`, true},
		{hist("-f", "prev_comm == \"\x1b[2J\" &&"), 2, `--filter:1:\d+: .*\n  prev_comm == "\\x1b\[2J" &&\n`, true},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "hist:keys=id:vals=args"}, 2, `hist:1:19: field "args" \(array\) cannot be a value`, true},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter", "hist:keys=id:bogus=1"}, 2, `hist:1:20: a constant alone cannot be a variable`, true},

		// hist: conflicting and missing flags.
		{[]string{"hist", "-k", "id"}, 2, `hist needs an event`, false},
		{[]string{"hist", "-e", "raw_syscalls:sys_enter"}, 2, `hist needs keys`, false},
		{hist("hist:keys=id"), 2, `not both`, false},
		{hist("--clear"), 2, `--clear needs --interval`, false},
		{hist("a", "b"), 2, `-e sched:sched_switch already has a 'hist:\.\.\.' string: .*after --`, false},
		{hist("-i", sample, "--duration", "1s"), 2, `-i reads a recorded file`, false},

		// hist -i: files.
		{hist("-i", missing), 1, `^gtrace: open \S+missing.dat: no such file or directory\n$`, false},
		{hist("-i", dir), 1, `is a directory`, false},
		{hist("-i", evilName), 1, `no\\x1b\[2J\\x07such.dat: no such file or directory`, false},
		{hist("-i", corrupt), 1, `file version "\\x1b\[31m6"`, false},
		{[]string{"hist", "-i", sample, "-e", "sched:*", "-k", "prev_pid"}, 2, `unknown field "prev_pid" in sched:\w+`, true},
		{[]string{"hist", "-i", sample, "-e", "nosys:nosuch", "-k", "prev_pid"}, 2, `nosys:nosuch`, false},
		{[]string{"hist", "-i", sample, "-e", "sched:sched_switch", "hist:keys=prev_pid:pause"}, 2,
			"^gtrace: hist:1:20: a paused hist over a file would count nothing\n  hist:keys=prev_pid:pause\n                     \\^~~~~\n  hint: pause waits for an enable_hist trigger \\(-R\\), which runs on live events: drop pause\n$", true},
		{[]string{"hist", "-i", sample, "-e", "sched:*", "-k", "common_stacktrace"}, 2, `--keys:1:1: a stack key needs a live hist: a trace.dat's records hold no stacks\n  common_stacktrace\n  \^~+\n`, true},
		{[]string{"hist", "-i", sample, "--synth", "block_lat pid_t pid; u64 delta; unsigned long[] stack;",
			"-e", "sched:sched_switch", "-R", "hist:keys=next_pid:ts=common_timestamp.usecs,st=common_stacktrace if prev_state == 2",
			"-R", "hist:keys=prev_pid:delta=common_timestamp.usecs-$ts,s=$st:onmax($delta).trace(block_lat,prev_pid,$delta,$s)",
			"-e", "synthetic:block_lat", "-R", "hist:keys=delta.buckets=100,stack.stacktrace:sort=delta"}, 2,
			`-R:1:49: a stack variable needs a live hist: a trace.dat's records hold no stacks\n  .*\n {50}\^~{16}\n`, true},

		// record.
		{rec("-b", "99999999999"), 2, `-b:1:1: buffer size 99999999999 out of range\n(.*\n)*  hint: the ring buffer per CPU is 1 to 4194304 KiB`, true},
		{rec("-b", "0"), 2, `-b:1:1: buffer size 0 out of range`, true},
		{rec("-b", "-8"), 2, `-b:1:1: buffer size -8 out of range`, true},
		{rec("-b", "1k"), 2, `-b:1:1: invalid buffer size: not a number`, true},
		{rec("-P", "-5"), 2, `-P:1:1: process id -5 out of range`, true},
		{rec("--follow"), 2, `--follow:1:1: nothing to follow\n  --follow\n  \^~~~~~~~\n  hint: --follow needs -- CMD ARGS or -P PID`, true},
		{rec("-P", strconv.Itoa(dead)), 2, fmt.Sprintf(`-P:1:1: no process %d\n`, dead), true},
		{rec("-C", "local"), 2, `-C:1:1: invalid clock "local"\n(.*\n)*  hint: want one of mono, boot, tai`, true},
		{rec("--compression", "gzip"), 2, `--compression:1:1: invalid compression "gzip"`, true},
		{rec("--file-version", "5"), 2, `--file-version:1:1: file version 5 out of range`, true},
		{rec("--file-version", "6", "--compression", "zstd"), 2, `--compression zstd needs --file-version 7`, false},
		{rec("--duration", "0s"), 2, `--duration:1:1: duration 0s is not positive`, true},
		{rec("-o", ""), 2, `-o needs a file name`, false},
		{rec("stray"), 2, `record takes no arguments, got "stray"`, false},
		{[]string{"record"}, 2, `record needs an event`, false},
		{[]string{"record", "-e", ""}, 2, `empty event name`, false},
		{[]string{"record", "-f", "x == 1", "-e", "a:b"}, 2, `a filter must follow the -e EVENT it filters`, false},
		{rec("-f", "x == 1", "-f", "y == 2"), 2, `already has a filter`, false},
		{rec("-f", "prev_pdi == 1", "--dry-run"), 2, `-f:1:1: Field not found: "prev_pdi"`, true},
		{[]string{"record", "-e", "nosuch:event", "--dry-run"}, 2, `unknown event "nosuch:event"`, false},

		// report.
		{[]string{"report", "-i", missing}, 1, `^gtrace: open \S+missing.dat: no such file or directory\n$`, false},
		{[]string{"report", "-i", dir}, 1, `is a directory`, false},
		{[]string{"report", "-i", corrupt}, 1, `file version "\\x1b\[31m6"`, false},
		{[]string{"report", "-i", sample, sample}, 2, `either with -i or as an argument`, false},
		{[]string{"report", sample, "b"}, 2, `accepts at most 1 arg`, false},
		{[]string{"report", "-i", sample, "--format", "xml"}, 2, `--format:1:1: invalid format "xml"`, true},
		{[]string{"report", "-i", sample, "--cpu", "-1"}, 2, `--cpu:1:1: invalid CPU list item "-1"`, true},
		{[]string{"report", "-i", sample, "--cpu", "99999999999"}, 2, `--cpu:1:1: invalid CPU list item`, true},
		{[]string{"report", "-i", sample, "--cpu", ""}, 2, `empty CPU list`, true},
		{[]string{"report", "-i", sample, "-F", "sched_switch: prev_pdi == 1"}, 2, `-F:1:15: Field not found: "prev_pdi"`, true},
		{[]string{"report", "-i", sample, "-F", "nosuch"}, 2, `nosuch`, true},

		// list.
		{[]string{"list", "-i", ""}, 2, `-i needs a trace.dat file`, false},
		{[]string{"list", "-i", missing}, 1, `^gtrace: open \S+missing.dat: no such file or directory\n$`, false},
		{[]string{"list", "a", "sched:sw[z-"}, 2, `^gtrace: pattern:1:9: bad glob "sw\[z-"\n  sched:sw\[z-\n {10}\^~~\n`, true},
	}
	for _, tc := range tests {
		name := strings.Join(tc.args, " ")
		if len(name) > 80 {
			name = name[:80]
		}
		t.Run(name, func(t *testing.T) {
			d, _, errb := fakeDeps(t)
			checkBadInput(t, d, errb, tc)
		})
	}
}

// TestPrivilegedBadInput runs the bad command lines that are judged
// against the kernel's own tracefs: they must be refused before anything
// is loaded or attached.
func TestPrivilegedBadInput(t *testing.T) {
	testutil.RequirePrivileged(t)
	dead := deadPID(t)
	tests := []badInput{
		{[]string{"hist", "-e", "sched:*", "-k", "prev_pid"}, 2, `--keys:1:1: unknown field "prev_pid" in sched:\w+`, true},
		{[]string{"hist", "-e", "sched:*", "-k", "common_pid", "-f", "prev_pid == 1"}, 2, `--filter:1:1: Field not found: "prev_pid" in sched:\w+`, true},
		{[]string{"hist", "-e", "sched:sched_switch", "-k", "prev_pid", "-P", strconv.Itoa(dead)}, 2, fmt.Sprintf(`-P:1:1: no process %d\n`, dead), true},
		{[]string{"record", "-e", "sched:sched_switch", "-P", strconv.Itoa(dead), "-o", filepath.Join(t.TempDir(), "x.dat")}, 2, fmt.Sprintf(`-P:1:1: no process %d\n`, dead), true},
		{[]string{"hist", "-e", "ftrace:*", "-k", "common_pid"}, 2, `names only ftrace's own events`, false},
		{[]string{"record", "-e", "sched:sched_switch", "-o", filepath.Join(t.TempDir(), "no", "x.dat"), "--duration", "1s"}, 1, `^gtrace: [^/]*\S+/no/x\.dat: no such file or directory\n$`, false},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			d, _, errb := fakeDeps(t)
			d.TraceFS = tracefs.Open
			checkBadInput(t, d, errb, tc)
		})
	}
}
