package live

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// SignalError is the cause of a run's context that a signal cancelled:
// every command stops, completes its output and exits with Code.
type SignalError struct{ Signal syscall.Signal }

func (e *SignalError) Error() string { return "interrupted by signal: " + e.Signal.String() }

// Code is the exit status of a run that the signal interrupted: 128+N,
// as a shell reports a command that the signal killed (SIGINT 130,
// SIGTERM 143).
func (e *SignalError) Code() int { return 128 + int(e.Signal) }

// Interrupted returns the signal that cancelled ctx, or nil.
func Interrupted(ctx context.Context) *SignalError {
	var se *SignalError
	if errors.As(context.Cause(ctx), &se) {
		return se
	}
	return nil
}

// NotifyContext returns a copy of parent that the first SIGINT or SIGTERM
// cancels, with a *SignalError as its cause. The signals then get their
// default action back: a second one ends the process at once, as a shell
// reports a command it killed. stop releases the signals and cancels the
// context.
func NotifyContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			signal.Reset(syscall.SIGINT, syscall.SIGTERM)
			cancel(&SignalError{Signal: s.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(context.Canceled)
	}
}
