package live

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gtrace/gtrace/pkg/launch"
	"github.com/gtrace/gtrace/pkg/status"
)

// Job is the work of one live command.
type Job interface {
	// Attach loads and attaches the programs. The command to trace, if
	// any, runs none of its code before Attach returns.
	Attach() error
	// Tick is called every Options.Interval.
	Tick() error
	// Failed, when not nil, is closed when the job cannot go on (a
	// recording that cannot write); Stop then says why.
	Failed() <-chan struct{}
	// Stop ends the job: the final print, the file's completion.
	Stop() error
}

// Describer is a Job that says what it traces, for the attach line:
// "recording 3 events (5 programs) to trace.dat". It is called once
// Attach has returned.
type Describer interface{ Attached() string }

// Statuser is a Job with a status line of its own (events per second,
// ...), which Run shows beside the time left.
type Statuser interface{ Status() string }

// Options say how a live command runs.
type Options struct {
	// Command, when not empty, is started held at its exec, released once
	// the job is attached; the run ends when it exits.
	Command []string
	Stdin   io.Reader
	// Stdout and Stderr are the command's; Stderr is also where Run
	// prints the attach line and, when it is a terminal, the status line
	// (nil: the command's output is discarded, and Run prints nothing).
	Stdout, Stderr     io.Writer
	Duration, Interval time.Duration // 0: none
	// Quiet leaves out the attach line and the status line.
	Quiet bool
	// NoStatus leaves out the status line: for a job that prints as
	// events come, whose lines it would cut.
	NoStatus bool
	// Follow, when not nil, is given the command's pid once it is
	// started, before Attach: a job that follows a process tree
	// (--follow) traces it and every process it forks.
	Follow func(pid int)
}

// ExitError is the traced command's exit status, when not 0: gtrace
// exits with it, as a shell does (128+N for a signal).
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// escalateAfter is how long the traced command has, after each signal
// that Run sends it when gtrace is interrupted or --duration ends, before
// the next, stronger one: the signal gtrace got (SIGINT at the end of
// --duration), then SIGTERM, then SIGKILL.
const escalateAfter = 250 * time.Millisecond

// Run runs job until ctx is done (Ctrl-C, SIGTERM: see NotifyContext),
// o.Duration, the end of the traced command, or the job's failure,
// calling Tick every o.Interval, and stops it. The traced command's
// non-zero exit status comes back as *ExitError.
//
// Once the job is attached, Run prints the attach line on o.Stderr (what
// is traced, until when, how to stop it) and, when o.Stderr is a
// terminal, redraws a status line every second (the job's Status, the
// time left of o.Duration), cleared before each Tick and before Stop;
// o.Quiet leaves both out.
//
// When ctx is done or o.Duration ends, the traced command gets the
// signal that cancelled ctx (SIGINT if none did), then SIGTERM and
// SIGKILL, each after escalateAfter if it is still running; the job
// stops once it has exited, within a second of the signal even for a
// command that ignores SIGINT and SIGTERM, and its status is the run's
// (128+N if signal N killed it). The command's descendants get each
// signal with it; those that have left its tree (daemons) do not.
func Run(ctx context.Context, job Job, o Options) error {
	var held *launch.Held
	if len(o.Command) > 0 {
		var err error
		if held, err = launch.Start(o.Command, o.Stdin, o.Stdout, o.Stderr); err != nil {
			return err
		}
		if o.Follow != nil {
			o.Follow(held.Pid())
		}
	}
	if err := job.Attach(); err != nil {
		if held != nil {
			held.Kill()
		}
		return err
	}
	if ctx.Err() != nil {
		// Interrupted while attaching: the command never runs.
		if held != nil {
			held.Kill()
		}
		return job.Stop()
	}
	var done <-chan int
	if held != nil {
		done = held.Done()
		if err := held.Release(); err != nil {
			_ = job.Stop()
			return err
		}
	}
	var line *status.Line // nil: no status line
	if !o.Quiet && o.Stderr != nil {
		fmt.Fprintf(o.Stderr, "gtrace: %s%s\n", describe(job), until(o))
		if w := status.Terminal(o.Stderr); w != nil && !o.NoStatus {
			line = status.NewLine(w)
		}
	}
	start := time.Now()
	var show <-chan time.Time
	if _, ok := job.(Statuser); (ok || o.Duration > 0) && line != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		show = t.C
	}
	var timeout <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		timeout = t.C
	}
	var tick <-chan time.Time
	if o.Interval > 0 {
		t := time.NewTicker(o.Interval)
		defer t.Stop()
		tick = t.C
	}
	// end stops the command, if it still runs, and returns its status.
	end := func() int {
		if held == nil {
			return 0
		}
		return stopCommand(ctx, held, done)
	}
	exit := -1
	for exit < 0 {
		select {
		case <-ctx.Done():
			exit = end()
		case <-timeout:
			exit = end()
		case exit = <-done:
		case <-job.Failed():
			exit = end()
		case now := <-show:
			line.Show(statusText(job, o.Duration-now.Sub(start)))
		case <-tick:
			line.Clear()
			if err := job.Tick(); err != nil {
				end()
				_ = job.Stop()
				return err
			}
		}
	}
	line.Clear()
	if err := job.Stop(); err != nil {
		return err
	}
	if held != nil && exit != 0 {
		return &ExitError{Code: exit}
	}
	return nil
}

// describe is what job traces, for the attach line.
func describe(job Job) string {
	if d, ok := job.(Describer); ok {
		return d.Attached()
	}
	return "tracing"
}

// until is the rest of the attach line: until when the run goes on and
// how to stop it.
func until(o Options) string {
	switch {
	case len(o.Command) > 0 && o.Duration > 0:
		return fmt.Sprintf(" while %s runs, for at most %v; Ctrl-C to stop", filepath.Base(o.Command[0]), o.Duration)
	case len(o.Command) > 0:
		return fmt.Sprintf(" while %s runs; Ctrl-C to stop", filepath.Base(o.Command[0]))
	case o.Duration > 0:
		return fmt.Sprintf(" for %v; Ctrl-C to stop sooner", o.Duration)
	}
	return "; Ctrl-C to stop"
}

// statusText is the status line: the job's status and, with a
// --duration, the whole seconds left.
func statusText(job Job, left time.Duration) string {
	var s string
	if st, ok := job.(Statuser); ok {
		s = st.Status()
	}
	if left > 0 {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%v left", left.Round(time.Second))
	}
	return s
}

// stopCommand ends the traced command of an interrupted or timed-out run
// and returns its exit status: it sends the signal that interrupted
// gtrace (the command got it too if it came from the terminal; SIGINT at
// the end of --duration), then SIGTERM, then SIGKILL, each escalateAfter
// after the one before while the command runs, to the command and the
// processes it started (see signalTree).
func stopCommand(ctx context.Context, held *launch.Held, done <-chan int) int {
	first := syscall.SIGINT
	if se := Interrupted(ctx); se != nil {
		first = se.Signal
	}
	steps := []syscall.Signal{first, syscall.SIGTERM, syscall.SIGKILL}
	for i, sig := range steps {
		if i > 0 && sig == steps[i-1] {
			continue
		}
		signalTree(held.Pid(), sig)
		t := time.NewTimer(escalateAfter)
		select {
		case st := <-done:
			t.Stop()
			return st
		case <-t.C:
		}
	}
	// Killed but not reaped yet (a process in uninterruptible sleep): it
	// died of SIGKILL, as far as the run is concerned.
	return 128 + int(syscall.SIGKILL)
}
