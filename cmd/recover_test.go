package cmd

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testtrace"
	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// interruptedRecording writes the records of the sample into a recording
// that is never closed, as gtrace record leaves it when it is killed: the
// metadata file and its per-CPU spool files. It returns the path.
func interruptedRecording(t *testing.T) string {
	t.Helper()
	f, err := tracedat.Open(sample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := testtrace.Meta(f, nil)
	m.Version = "gtrace test"
	path := filepath.Join(t.TempDir(), "killed.dat")
	w, err := tracedat.Create(path, m, tracedat.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Only to close the files: the test has read them.
		w.Abort()
	})
	it := f.Records()
	for it.Next() {
		r := it.Record()
		if err := w.CPU(r.CPU).Add(r.TS-uint64(f.TSOffset), r.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	for cpu := range m.CPUs {
		if err := w.CPU(cpu).Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestRecoverCmd: report, list -i and hist -i read an interrupted
// recording with a note that says how to recover it; gtrace recover
// writes a new file, leaving the recording alone, that gtrace and
// trace-cmd report as gtrace reported the recording.
func TestRecoverCmd(t *testing.T) {
	in := interruptedRecording(t)
	d, out, errb := fakeDeps(t)
	if code := runDeps(d, "report", in); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errb)
	}
	report := out.String()
	note := "gtrace: note: " + in + " is an interrupted recording"
	if !strings.HasPrefix(errb.String(), note) || !strings.Contains(errb.String(), "'gtrace recover "+in+" OUT'") || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("report stderr = %q, want one line %q... naming gtrace recover", errb, note)
	}
	if want := readGolden(t, "sched_switch.report.txt"); report != want {
		t.Errorf("report of the interrupted recording differs from trace-cmd's of the sample:\n%s", testutil.FirstDiff(report, want))
	}
	for _, args := range [][]string{{"list", "-i", in, "sched:*"}, {"hist", "-i", in, "-e", "sched:sched_switch", "-k", "prev_pid"}} {
		d, _, errb := fakeDeps(t)
		if code := runDeps(d, args...); code != 0 || !strings.HasPrefix(errb.String(), note) {
			t.Errorf("gtrace %v: exit %d, stderr %q; want 0 and the note", args, code, errb)
		}
	}

	before := snapshot(t, in)
	rec := filepath.Join(t.TempDir(), "recovered.dat")
	d, out, errb = fakeDeps(t)
	if code := runDeps(d, "recover", in, rec); code != 0 || out.Len() != 0 || errb.Len() != 0 {
		t.Fatalf("recover: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	if after := snapshot(t, in); after != before {
		t.Errorf("recover changed the recording")
	}
	d, out, errb = fakeDeps(t)
	if code := runDeps(d, "report", rec); code != 0 || errb.Len() != 0 || out.String() != report {
		t.Errorf("report of the recovered file: exit %d, stderr %q, differs:\n%s", code, errb, testutil.FirstDiff(out.String(), report))
	}
	t.Run("trace-cmd", func(t *testing.T) {
		bin, err := exec.LookPath("trace-cmd")
		if err != nil {
			t.Skip("trace-cmd is not installed")
		}
		got, err := exec.Command(bin, "report", "-i", rec).Output()
		if err != nil {
			t.Fatalf("trace-cmd report: %v", err)
		}
		if string(got) != report {
			t.Errorf("trace-cmd report of the recovered file differs from gtrace report of the recording:\n%s", testutil.FirstDiff(string(got), report))
		}
	})

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"recover", in, rec}, 1, "already exists"},
		{[]string{"recover", rec, rec + "2"}, 1, "not an interrupted recording"},
		{[]string{"recover", filepath.Join(t.TempDir(), "nope.dat"), rec + "3"}, 1, "no such file"},
		{[]string{"recover", in}, 2, "accepts 2 arg(s)"},
	} {
		d, _, errb := fakeDeps(t)
		if code := runDeps(d, tc.args...); code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("gtrace %v: exit %d, stderr %q; want %d and %q", tc.args, code, errb, tc.code, tc.want)
		}
	}
}

// snapshot returns the contents of path and its spool files.
func snapshot(t *testing.T, path string) string {
	t.Helper()
	names, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(n + "\x00" + string(data) + "\x00")
	}
	return b.String()
}

// TestReportDamaged: an event format damaged in its field list (kept
// with the fields before the damage) and a page with a bad header
// (skipped) get one warning each; the rest prints and the exit status is
// 0. hist -i says how many damaged pages it leaves out.
func TestReportDamaged(t *testing.T) {
	in := interruptedRecording(t)
	path := filepath.Join(t.TempDir(), "damaged.dat")
	d, _, errb := fakeDeps(t)
	if code := runDeps(d, "recover", in, path); code != 0 {
		t.Fatalf("recover: exit %d: %s", code, errb)
	}
	clean := gtraceReport(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The format of sched_switch: a bad field line.
	i := bytes.Index(data, []byte("name: sched_switch\n"))
	j := bytes.Index(data[i:], []byte("offset:24;"))
	if i < 0 || j < 0 {
		t.Fatal("no sched_switch format in the file")
	}
	copy(data[i+j:], "offset;24:")
	// The first page of the data: a commit past the page.
	f, err := tracedat.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	page := f.CPUs[0].Offset
	f.Close()
	binary.LittleEndian.PutUint64(data[page+8:], 1<<20)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	d, out, errb := fakeDeps(t)
	if code := runDeps(d, "report", path); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errb)
	}
	warns := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	if len(warns) != 2 || !strings.Contains(warns[0], "sched:sched_switch (ID ") || !strings.Contains(warns[1], "cpu 0: page at offset") {
		t.Errorf("stderr = %q, want a warning naming sched:sched_switch and one about the page", errb)
	}
	lines := strings.Split(out.String(), "\n")
	failed := strings.Count(out.String(), "sched_switch:         <CANT FIND FIELD prev_pid>![FAILED TO PARSE] prev_comm=")
	if failed == 0 || len(lines) >= len(strings.Split(clean, "\n")) || len(lines) < 10 {
		t.Errorf("report: %d lines, %d sched_switch failed to parse; want fewer lines than the clean file's, its sched_switch records failed to parse:\n%s", len(lines), failed, out)
	}

	d, _, errb = fakeDeps(t)
	if code := runDeps(d, "hist", "-i", path, "-e", "sched:sched_wakeup", "-k", "pid"); code != 0 {
		t.Fatalf("hist -i: exit %d: %s", code, errb)
	}
	warns = strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	if len(warns) != 3 || !strings.HasSuffix(warns[2], ": the hist leaves out the records of 1 damaged page") {
		t.Errorf("hist -i stderr = %q, want the two warnings and the damaged page count", errb)
	}
}

// gtraceReport returns gtrace report's output for path.
func gtraceReport(t *testing.T, path string) string {
	t.Helper()
	d, out, errb := fakeDeps(t)
	if code := runDeps(d, "report", path); code != 0 {
		t.Fatalf("report %s: exit %d: %s", path, code, errb)
	}
	return out.String()
}
