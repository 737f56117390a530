package tracedat

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// wrRequireTraceCmd returns the path of trace-cmd, or skips the test when
// it is not installed (fails under GTRACE_REQUIRE_BPF=1, where CI
// expects every external check to run).
func wrRequireTraceCmd(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("trace-cmd")
	if err == nil {
		return p
	}
	if os.Getenv("GTRACE_REQUIRE_BPF") == "1" {
		t.Fatalf("GTRACE_REQUIRE_BPF=1 but trace-cmd is not installed: %v", err)
	}
	t.Skipf("trace-cmd is not installed (%v): cannot check that it reads the files written", err)
	return ""
}

// wrTraceCmd runs trace-cmd with args and returns its stdout; anything on
// stderr or a failed exit fails the test.
func wrTraceCmd(t testing.TB, bin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || stderr.Len() != 0 {
		t.Fatalf("trace-cmd %s: %v, stderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// wrReportLine matches an event line of trace-cmd report:
// "comm-pid [cpu] sec.usec: event: text" (report -t: sec.nsec).
var wrReportLine = regexp.MustCompile(`^\s*(.*)-(\d+)\s+\[(\d{3})\]\s+(\d+\.\d+): (\w+):\s+(.*)$`)

// wrCheckReport compares the output of trace-cmd report (with nsec,
// report -t) with the events written, in merge order: a "CPU:N [K EVENTS
// DROPPED]" line before each event that followed a loss, then one line
// per event with its comm, pid, CPU, timestamp (report: rounded to the
// µs), name and decoded fields.
func wrCheckReport(t testing.TB, out string, nsec bool, cpus int, want []wrEvent) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) == 0 || lines[0] != fmt.Sprintf("cpus=%d", cpus) {
		t.Fatalf("report starts with %q, want cpus=%d", lines[0], cpus)
	}
	lines = lines[1:]
	var wantLines int
	for _, e := range want {
		wantLines++
		if e.lost != 0 {
			wantLines++
		}
	}
	if len(lines) != wantLines {
		t.Errorf("report has %d lines after cpus=, want %d", len(lines), wantLines)
	}
	i := 0
	next := func() string {
		if i >= len(lines) {
			t.Fatalf("report ends after %d lines", i)
		}
		i++
		return lines[i-1]
	}
	for n, e := range want {
		if e.lost != 0 {
			if l, w := next(), fmt.Sprintf("CPU:%d [%d EVENTS DROPPED]", e.cpu, e.lost); l != w {
				t.Fatalf("report line %d = %q, want %q", i, l, w)
			}
		}
		l := next()
		m := wrReportLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("report line %d = %q: not an event line", i, l)
		}
		ts := fmt.Sprintf("%d.%09d", e.ts/1e9, e.ts%1e9)
		if !nsec {
			us := (e.ts + 500) / 1000
			ts = fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
		}
		got := fmt.Sprintf("%s-%s [%s] %s: %s", m[1], m[2], m[3], m[4], m[5])
		if w := fmt.Sprintf("%s-%d [%03d] %s: %s", e.comm, e.pid, e.cpu, ts, e.name); got != w {
			t.Fatalf("report line %d (event %d) = %q, want %q", i, n, got, w)
		}
		if w := e.text(); m[6] != w {
			t.Fatalf("report line %d (event %d) fields = %q, want %q", i, n, m[6], w)
		}
	}
}

// text returns what trace-cmd report prints for the event's fields.
func (e wrEvent) text() string {
	switch e.name {
	case "print":
		// ip resolved through kallsyms, then the text.
		return "tracing_mark_write: " + string(bytes.TrimRight(e.payload[16:], "\x00"))
	case "sched_wakeup":
		return fmt.Sprintf("%s:%d [120] CPU:%03d", e.comm, e.pid, e.cpu)
	}
	return fmt.Sprintf("%s:%d [120] S ==> next:7 [120]", e.comm, e.pid)
}

// TestWriterTraceCmd writes files in every format and checks that
// trace-cmd 3.1 finds them valid and reports exactly the events written.
func TestWriterTraceCmd(t *testing.T) {
	bin := wrRequireTraceCmd(t)
	evs := wrEvents(2, 1500, 2)
	m := wrMeta(t, 2)
	for _, v := range wrVariants {
		t.Run(v.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.dat")
			wrWriteFile(t, path, m, v.opts, evs)
			out := wrTraceCmd(t, bin, "dump", "-v", "-i", path)
			if want := "File " + path + " is a valid trace-cmd file"; !strings.Contains(out, want) {
				t.Errorf("trace-cmd dump -v says %q, want %q", out, want)
			}
			want := wrMerged(evs)
			wrCheckReport(t, wrTraceCmd(t, bin, "report", "-i", path), false, 2, want)
			wrCheckReport(t, wrTraceCmd(t, bin, "report", "-t", "-i", path), true, 2, want)
		})
	}
}

// TestWriterTraceCmdEmpty checks files without records: no CPU has data.
func TestWriterTraceCmdEmpty(t *testing.T) {
	bin := wrRequireTraceCmd(t)
	m := wrMeta(t, 4)
	for _, v := range wrVariants {
		t.Run(v.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.dat")
			wrWriteFile(t, path, m, v.opts, nil)
			wrTraceCmd(t, bin, "dump", "-v", "-i", path)
			if out := wrTraceCmd(t, bin, "report", "-i", path); out != "cpus=4\n" {
				t.Errorf("trace-cmd report = %q, want cpus=4 and nothing else", out)
			}
			f, err := Open(path)
			if err != nil {
				t.Fatalf("Open() = %v", err)
			}
			defer f.Close()
			if recs := wrReadAll(t, f); len(recs) != 0 || f.CPUCount != 4 {
				t.Errorf("read %d records, %d cpus; want 0, 4", len(recs), f.CPUCount)
			}
		})
	}
}
