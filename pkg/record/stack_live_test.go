package record

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/launch"
	"github.com/gtrace/gtrace/pkg/report"
	"github.com/gtrace/gtrace/pkg/tracedat"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// recordStacks records syscalls:sys_enter_getppid of a helper that makes
// calls getppid calls, with the -R triggers trig, into a trace.dat file,
// and returns its path.
func recordStacks(t *testing.T, calls int, user bool, trig ...string) string {
	t.Helper()
	return recordWorkload(t, fmt.Sprintf("getppid %d", calls), user, EventSpec{Pattern: "syscalls:sys_enter_getppid", Triggers: trig})
}

// recordWorkload records the events of specs of a helper running
// workload (workloadEnv) into a trace.dat file, with the user stacks if
// user, and returns its path.
func recordWorkload(t *testing.T, workload string, user bool, specs ...EventSpec) string {
	t.Helper()
	testutil.RequirePrivileged(t)
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(workloadEnv, workload)
	held, err := launch.Start([]string{self}, nil, os.Stderr, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(fs, &Options{
		Events:    specs,
		PIDs:      []int{held.Pid()},
		UserStack: user,
	})
	if err != nil {
		held.Kill()
		t.Fatal(err)
	}
	dat := filepath.Join(t.TempDir(), "trace.dat")
	out, err := Create(dat, fs, p, FileOptions{Tracer: "gtrace test"})
	if err != nil {
		held.Kill()
		t.Fatal(err)
	}
	s, err := Start(p, out, StartOptions{})
	if err != nil {
		held.Kill()
		t.Fatal(err)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if code := <-held.Done(); code != 0 {
		t.Fatalf("helper exited with %d", code)
	}
	st, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if st.Lost() != 0 {
		t.Errorf("%d events lost", st.Lost())
	}
	return dat
}

// reports returns trace-cmd report's output of a file, failing on
// anything it writes to stderr, and gtrace's.
func reports(t *testing.T, dat string) (traceCmd, gtrace string) {
	t.Helper()
	if _, err := exec.LookPath("trace-cmd"); err != nil {
		t.Skip("no trace-cmd")
	}
	cmd := exec.Command("trace-cmd", "report", "-i", dat)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	want, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("trace-cmd report: %v\n%s", err, stderr.Bytes())
	}
	f, err := tracedat.Open(dat)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got bytes.Buffer
	if err := report.Text(context.Background(), &got, f, report.Options{}); err != nil {
		t.Fatal(err)
	}
	return string(want), got.String()
}

// TestPrivilegedStacktrace records a helper's 2 getppid calls with a
// stacktrace trigger: each sys_enter_getppid record is followed by a
// kernel_stack record, as the kernel's trigger writes it, which trace-cmd report reads without a word on
// stderr and prints as a "<stack trace >" block through the system call's
// entry, and gtrace report prints the same bytes.
func TestPrivilegedStacktrace(t *testing.T) {
	dat := recordStacks(t, 2, false, "stacktrace")
	want, got := reports(t, dat)
	t.Logf("trace-cmd report:\n%s", want)
	if got != want {
		t.Errorf("gtrace report differs from trace-cmd report:\n%s", testutil.FirstDiff(got, want))
	}
	checkStacks(t, want, 2, 2)
	checkLayout(t, dat)
}

// checkLayout checks the kernel_stack records of a file against the
// kernel's layout (as a 6.18 kernel's trigger writes it): int size, the
// number of frames, a zero word, then exactly size callers.
func checkLayout(t *testing.T, dat string) {
	t.Helper()
	f, err := tracedat.Open(dat)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := -1
	for eid, ev := range f.Events {
		if ev.Format.System == "ftrace" && ev.Format.Name == "kernel_stack" {
			id = eid
		}
	}
	if id < 0 {
		t.Fatal("no ftrace:kernel_stack format in the file")
	}
	n := 0
	for it := f.Records(); it.Next(); {
		d := it.Record().Data
		if int(binary.LittleEndian.Uint16(d)) != id {
			continue
		}
		n++
		size := int(int32(binary.LittleEndian.Uint32(d[8:])))
		if pad := binary.LittleEndian.Uint32(d[12:]); size < 1 || len(d) != 16+8*size || pad != 0 {
			t.Errorf("kernel_stack record of %d bytes, size %d, padding %#x: want 16 + 8*size bytes, zero padding", len(d), size, pad)
		}
	}
	if n == 0 {
		t.Error("no kernel_stack record in the file")
	}
}

// TestPrivilegedStacktraceCount: stacktrace:3 on 5 getppid calls writes
// exactly 3 stacks, after the first 3 events.
func TestPrivilegedStacktraceCount(t *testing.T) {
	dat := recordStacks(t, 5, false, "stacktrace:3")
	want, got := reports(t, dat)
	if got != want {
		t.Errorf("gtrace report differs from trace-cmd report:\n%s", testutil.FirstDiff(got, want))
	}
	checkStacks(t, want, 5, 3)
}

// checkStacks checks a report of events sys_enter_getppid records, the
// first stacks of them each followed by a stack block.
func checkStacks(t *testing.T, text string, events, stacks int) {
	t.Helper()
	var want []string
	for i := range events {
		want = append(want, "event")
		if i < stacks {
			want = append(want, "stack")
		}
	}
	checkSequence(t, text, "sys_enter_getppid:", strings.Join(want, " "))
	checkFrames(t, text, stacks)
}

// checkSequence checks the sequence of records of a report: "event" for
// a line with event, "stack" for a stack block.
func checkSequence(t *testing.T, text, event, want string) {
	t.Helper()
	var seq []string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.Contains(line, event):
			seq = append(seq, "event")
		case strings.Contains(line, "<stack trace >"):
			seq = append(seq, "stack")
		}
	}
	if strings.Join(seq, " ") != want {
		t.Errorf("records %v, want %s:\n%s", seq, want, text)
	}
}

// checkFrames checks that stacks blocks of a report go through the
// system call's entry.
func checkFrames(t *testing.T, text string, stacks int) {
	t.Helper()
	for _, fn := range []string{"=> do_syscall_64 (", "=> entry_SYSCALL_64_after_hwframe ("} {
		if n := strings.Count(text, fn); n != stacks {
			t.Errorf("%d stacks through %s, want %d:\n%s", n, fn, stacks, text)
		}
	}
}

// TestPrivilegedStacktraceUser: with User, each kernel stack is followed
// by a user_stack record of the helper's tgid, whose first frame is in the
// helper's text; trace-cmd report reads it and gtrace report prints the
// same bytes.
func TestPrivilegedStacktraceUser(t *testing.T) {
	dat := recordStacks(t, 2, true, "stacktrace")
	want, got := reports(t, dat)
	t.Logf("trace-cmd report:\n%s", want)
	if got != want {
		t.Errorf("gtrace report differs from trace-cmd report:\n%s", testutil.FirstDiff(got, want))
	}
	checkStacks(t, want, 2, 2)
	if n := strings.Count(want, "user_stack:"); n != 2 {
		t.Errorf("%d user_stack records, want 2:\n%s", n, want)
	}
}

// TestPrivilegedStacktraceIf: the trigger's own filter decides which
// events fire it, the event's -f which are recorded, as the kernel's
// stacktrace trigger (a post-trigger, run whether the filter kept the
// event or not): of a helper's 5 close calls of fds closeFD+1..+5, -f
// keeps the first 2, the trigger fires on the last 2 (the fds the Go
// runtime closes are below closeFD).
func TestPrivilegedStacktraceIf(t *testing.T) {
	dat := recordWorkload(t, "close 5", false, EventSpec{
		Pattern:  "syscalls:sys_enter_close",
		Filter:   fmt.Sprintf("fd > %d && fd <= %d", closeFD, closeFD+2),
		Triggers: []string{fmt.Sprintf("stacktrace if fd >= %d", closeFD+4)},
	})
	want, got := reports(t, dat)
	t.Logf("trace-cmd report:\n%s", want)
	if got != want {
		t.Errorf("gtrace report differs from trace-cmd report:\n%s", testutil.FirstDiff(got, want))
	}
	checkSequence(t, want, "sys_enter_close:", "event event stack stack")
	checkFrames(t, want, 2)
}

// TestPrivilegedStacktraceTraceoff: traceoff on the 3rd of a helper's 5
// close calls, stacktrace on every one: the first 3 events are recorded,
// each with its stack (the traceoff's own event is in the window it
// closes, its stack too, as this kernel writes it), and nothing after.
func TestPrivilegedStacktraceTraceoff(t *testing.T) {
	dat := recordWorkload(t, "close 5", false, EventSpec{
		Pattern:  "syscalls:sys_enter_close",
		Filter:   fmt.Sprintf("fd > %d", closeFD),
		Triggers: []string{fmt.Sprintf("traceoff if fd == %d", closeFD+3), fmt.Sprintf("stacktrace if fd > %d", closeFD)},
	})
	want, got := reports(t, dat)
	if got != want {
		t.Errorf("gtrace report differs from trace-cmd report:\n%s", testutil.FirstDiff(got, want))
	}
	checkSequence(t, want, "sys_enter_close:", "event stack event stack event stack")
	checkFrames(t, want, 3)
}
