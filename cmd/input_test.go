package cmd

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// runWithStdin runs gtrace, the test binary as main.go runs it, with args
// and stdin, and returns its output and exit status.
func runWithStdin(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	c := gtraceCommand(t, args...)
	c.Env = append(c.Env, "TMPDIR="+t.TempDir())
	c.Stdin = stdin
	return runGtraceCmd(t, c)
}

// TestReportPipe: report - and report /dev/stdin read a trace.dat file
// from a pipe and print the same bytes as from the file; so do list -i -
// and hist -i -.
func TestReportPipe(t *testing.T) {
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	want, errOut, code := runWithStdin(t, nil, "report", "-i", sample)
	if code != 0 || want != readGolden(t, "sched_switch.report.txt") {
		t.Fatalf("report -i: exit %d, stderr %q, output differs from trace-cmd's", code, errOut)
	}
	for _, args := range [][]string{{"report", "-"}, {"report", "-i", "-"}, {"report", "/dev/stdin"}} {
		// A pipe, as in cat FILE | gtrace report -.
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			w.Write(data)
			w.Close()
		}()
		got, errOut, code := runWithStdin(t, r, args...)
		r.Close()
		if code != 0 || got != want {
			t.Errorf("cat sample | gtrace %q: exit %d, stderr %q, %d bytes; want the %d bytes of report -i", args, code, errOut, len(got), len(want))
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "-i", "-", "sched:*"}, "sched:sched_switch\n"},
		{[]string{"hist", "-i", "-", "-e", "sched:sched_switch", "-k", "prev_pid"}, "    Hits: 95\n"},
	} {
		out, errOut, code := runWithStdin(t, bytes.NewReader(data), tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("gtrace %q < sample: exit %d, stderr %q, stdout lacks %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestReportUnreadable: what cannot be read says why, on a file and on
// standard input.
func TestReportUnreadable(t *testing.T) {
	dir := t.TempDir()
	empty, text := dir+"/empty.dat", dir+"/notes.txt"
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(text, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"report", empty}, "", "gtrace: read " + empty + ": empty file\n"},
		{[]string{"report", text}, "", "gtrace: read " + text + `: not a trace.dat file (it starts with "hello\n")` + "\n"},
		{[]string{"report", "-"}, "", "gtrace: read -: empty file\n"},
		{[]string{"list", "-i", "-"}, "hello, this is text\n", `gtrace: read -: not a trace.dat file (it starts with "hello, thi")` + "\n"},
		{[]string{"report", dir}, "", "gtrace: open " + dir + ": is a directory: a trace.dat file is a regular file or a pipe\n"},
	} {
		out, errOut, code := runWithStdin(t, strings.NewReader(tc.stdin), tc.args...)
		if code != exitFailure || out != "" || errOut != tc.want {
			t.Errorf("gtrace %q: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestReportCPUOutOfRange: --cpu names a CPU the file does not have: bad
// input, the caret under the item, the file's CPUs in the hint.
func TestReportCPUOutOfRange(t *testing.T) {
	for _, tc := range []struct{ cpus, want string }{
		{"7", "gtrace: --cpu:1:1: no CPU 7 in " + sample + "\n  7\n  ^\n  hint: the file has CPUs 0-1\n"},
		{"0,1-9", "gtrace: --cpu:1:3: no CPU 2 in " + sample + "\n  0,1-9\n    ^~~\n  hint: the file has CPUs 0-1\n"},
	} {
		out, errOut, code := runWithStdin(t, nil, "report", "--cpu", tc.cpus, sample)
		if code != exitUsage || out != "" || errOut != tc.want {
			t.Errorf("report --cpu %s: exit %d, stdout %q, stderr\n%s\nwant exit 2 and\n%s", tc.cpus, code, out, errOut, tc.want)
		}
	}
	if out, errOut, code := runWithStdin(t, nil, "report", "--cpu", "1", sample); code != 0 || !strings.HasPrefix(out, "cpus=2\n") {
		t.Errorf("report --cpu 1: exit %d, stderr %q", code, errOut)
	}
}
