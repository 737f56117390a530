package live

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/gtrace/gtrace/pkg/launch"
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

// Options say how a live command runs.
type Options struct {
	// Command, when not empty, is started held at its exec, released once
	// the job is attached; the run ends when it exits.
	Command            []string
	Stdin              io.Reader
	Stdout, Stderr     io.Writer
	Duration, Interval time.Duration // 0: none
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
// that Run sends it when gtrace is interrupted, before the next, stronger
// one: the signal gtrace got, then SIGTERM, then SIGKILL.
const escalateAfter = 250 * time.Millisecond

// Run runs job until ctx is done (Ctrl-C, SIGTERM: see NotifyContext),
// o.Duration, the end of the traced command, or the job's failure,
// calling Tick every o.Interval, and stops it. The traced command's
// non-zero exit status comes back as *ExitError.
//
// When ctx is done, the traced command gets the signal that cancelled it
// (SIGINT if none did), then SIGTERM and SIGKILL, each after
// escalateAfter if it is still running; the job stops once it has
// exited, within a second of the signal even for a command that ignores
// SIGINT and SIGTERM. A command's children that outlive it are not
// signalled.
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
	status := -1
	for status < 0 {
		select {
		case <-ctx.Done():
			status = 0
			if held != nil {
				status = stopCommand(ctx, held, done)
			}
		case <-timeout:
			status = 0
		case status = <-done:
		case <-job.Failed():
			status = 0
		case <-tick:
			if err := job.Tick(); err != nil {
				_ = job.Stop()
				return err
			}
		}
	}
	if err := job.Stop(); err != nil {
		return err
	}
	if held != nil && status != 0 {
		return &ExitError{Code: status}
	}
	return nil
}

// stopCommand ends the traced command of an interrupted run and returns
// its exit status: it sends the signal that interrupted gtrace (the
// command got it too if it came from the terminal), then SIGTERM, then
// SIGKILL, each escalateAfter after the one before while the command
// runs.
func stopCommand(ctx context.Context, held *launch.Held, done <-chan int) int {
	var first os.Signal = syscall.SIGINT
	if se := Interrupted(ctx); se != nil {
		first = se.Signal
	}
	steps := []os.Signal{first, syscall.SIGTERM, syscall.SIGKILL}
	for i, sig := range steps {
		if i > 0 && sig == steps[i-1] {
			continue
		}
		held.Signal(sig)
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
