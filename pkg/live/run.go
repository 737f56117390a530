package live

import (
	"context"
	"fmt"
	"io"
	"os"
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
}

// ExitError is the traced command's exit status, when not 0: gtrace
// exits with it, as a shell does (128+N for a signal).
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Run runs job until Ctrl-C (ctx done), o.Duration, the end of the traced
// command, or the job's failure, calling Tick every o.Interval, and stops
// it. The traced command's non-zero exit status comes back as *ExitError.
func Run(ctx context.Context, job Job, o Options) error {
	var held *launch.Held
	if len(o.Command) > 0 {
		var err error
		if held, err = launch.Start(o.Command, o.Stdin, o.Stdout, o.Stderr); err != nil {
			return err
		}
	}
	if err := job.Attach(); err != nil {
		if held != nil {
			held.Kill()
		}
		return err
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
				// The command got the terminal's signal too, or gets
				// SIGINT from here: wait for it to end.
				held.Signal(os.Interrupt)
				status = <-done
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
