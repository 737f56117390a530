package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/launch"
)

// TestStopCommand: an interrupted run's command gets gtrace's signal,
// then SIGTERM, then SIGKILL, escalateAfter apart, and ends within a
// second whatever it ignores.
func TestStopCommand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		sig    syscall.Signal
		want   int           // the command's exit status
		after  time.Duration // how long it takes at least
	}{
		{"SIGINT", "exec sleep 30", syscall.SIGINT, 130, 0},
		{"SIGTERM", "exec sleep 30", syscall.SIGTERM, 143, 0},
		{"ignores SIGINT", `trap "" INT; exec sleep 30`, syscall.SIGINT, 143, escalateAfter},
		{"ignores SIGINT and SIGTERM", `trap "" INT TERM; exec sleep 30`, syscall.SIGINT, 137, 2 * escalateAfter},
		{"ignores SIGTERM", `trap "" TERM; exec sleep 30`, syscall.SIGTERM, 137, escalateAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// "ready" once the traps are set; exec keeps them.
			script := strings.Replace(tc.script, "exec", "echo ready; exec", 1)
			h, err := launch.Start([]string{"sh", "-c", script}, nil, w, nil)
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			done := h.Done()
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReader(r).ReadString('\n'); line != "ready\n" {
				t.Fatalf("%s: read %q, %v; want ready", script, line, err)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(&SignalError{Signal: tc.sig})
			start := time.Now()
			got := stopCommand(ctx, h, done)
			took := time.Since(start)
			if got != tc.want || took < tc.after || took > tc.after+time.Second {
				t.Errorf("stopCommand(%s) = %d after %v, want %d after %v", tc.script, got, took, tc.want, tc.after)
			}
		})
	}
}

func TestSignalError(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	if Interrupted(ctx) != nil {
		t.Error("Interrupted(running context) != nil")
	}
	cancel(&SignalError{Signal: syscall.SIGTERM})
	se := Interrupted(ctx)
	if se == nil || se.Code() != 143 || se.Error() != "interrupted by signal: terminated" {
		t.Errorf("Interrupted(canceled by SIGTERM) = %v", se)
	}
}

// orderJob is a job that notes the calls it gets.
type orderJob struct{ calls []string }

func (j *orderJob) Attach() error           { j.calls = append(j.calls, "attach"); return nil }
func (j *orderJob) Tick() error             { return nil }
func (j *orderJob) Failed() <-chan struct{} { return nil }
func (j *orderJob) Stop() error             { j.calls = append(j.calls, "stop"); return nil }

// TestRunFollow: Options.Follow gets the command's pid before the job
// attaches.
func TestRunFollow(t *testing.T) {
	j := &orderJob{}
	var out strings.Builder
	followed := 0
	err := Run(context.Background(), j, Options{
		Command: []string{"sh", "-c", "echo $$"}, Stdout: &out,
		Follow: func(pid int) { followed = pid; j.calls = append(j.calls, "follow") },
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(j.calls, " "); got != "follow attach stop" || fmt.Sprint(followed) != strings.TrimSpace(out.String()) {
		t.Errorf("calls %q, followed pid %d, the command's %q; want follow attach stop and its pid", got, followed, out.String())
	}
}

// describedJob is an orderJob that says what it traces.
type describedJob struct{ orderJob }

func (j *describedJob) Attached() string { return "counting 2 events (2 programs)" }

// TestAttachLine: once attached, Run prints one line on stderr that says
// what is traced and how it ends; Quiet leaves it out, and a stderr that
// is no terminal gets no status line.
func TestAttachLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  Job
		o    Options
		want string
	}{
		{"plain", &orderJob{}, Options{Duration: time.Millisecond}, "gtrace: tracing for 1ms; Ctrl-C to stop sooner\n"},
		{"described", &describedJob{}, Options{Duration: 2 * time.Millisecond}, "gtrace: counting 2 events (2 programs) for 2ms; Ctrl-C to stop sooner\n"},
		{"command", &describedJob{}, Options{Command: []string{"/bin/true"}}, "gtrace: counting 2 events (2 programs) while true runs; Ctrl-C to stop\n"},
		{"command and duration", &describedJob{}, Options{Command: []string{"true"}, Duration: time.Minute}, "gtrace: counting 2 events (2 programs) while true runs, for at most 1m0s; Ctrl-C to stop\n"},
		{"quiet", &describedJob{}, Options{Command: []string{"true"}, Quiet: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			tc.o.Stderr = &stderr
			if err := Run(context.Background(), tc.job, tc.o); err != nil {
				t.Fatal(err)
			}
			if stderr.String() != tc.want {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.want)
			}
		})
	}
	if got := until(Options{}); got != "; Ctrl-C to stop" {
		t.Errorf("until(no command, no duration) = %q", got)
	}
}

// TestRunDurationStopsCommand: when --duration ends, the command is
// stopped as an interrupted run's is (SIGINT, SIGTERM, SIGKILL) and its
// status is the run's: 130 for a sleep that SIGINT killed, 143 for one
// that ignores SIGINT.
func TestRunDurationStopsCommand(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"echo $$; exec sleep 30", 130},
		{`trap "" INT; echo $$; exec sleep 30`, 143},
		// The shell's child sleep: stopped with the shell, not orphaned.
		{`trap "" INT; sleep 30 & echo $!; wait`, 143},
	} {
		j := &orderJob{}
		var out strings.Builder
		start := time.Now()
		err := Run(context.Background(), j, Options{
			Command: []string{"sh", "-c", tc.script}, Stdout: &out, Stderr: io.Discard, Duration: 500 * time.Millisecond,
		})
		took := time.Since(start)
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != tc.want || took > 10*time.Second {
			t.Errorf("%s: Run = %v after %v, want exit status %d within 10s", tc.script, err, took, tc.want)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(out.String()))
		if pid <= 0 {
			t.Fatalf("%s: no pid in %q", tc.script, out.String())
		}
		if testutil.Running(pid, 5*time.Second) {
			t.Errorf("%s: process %d still running 5s after the run", tc.script, pid)
		}
		if got := strings.Join(j.calls, " "); got != "attach stop" {
			t.Errorf("%s: calls %q, want attach stop", tc.script, got)
		}
	}
}
