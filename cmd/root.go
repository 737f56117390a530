// Package cmd holds gtrace's subcommands: flags, help text with examples,
// and calls into pkg/. Main runs the command line and returns the exit
// status.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtrace/gtrace/pkg/hist"
	"github.com/gtrace/gtrace/pkg/live"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// version is set at build time with -ldflags "-X github.com/gtrace/gtrace/cmd.version=...".
var version = "dev"

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// Deps is what commands need from the outside world; tests replace it.
type Deps struct {
	Out     io.Writer
	Err     io.Writer
	In      io.Reader
	TraceFS func() (*tracefs.FS, error)
}

// usageError marks bad usage: exit 2 and the command's usage.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// stopGrace is how long a run has, once a signal has arrived, to stop and
// complete its output before Main returns anyway: nothing gtrace does
// (a read blocked in the kernel, a traced command that ignores
// signals) keeps it from exiting.
const stopGrace = 1500 * time.Millisecond

// NotifyContext returns the context for Main: the first SIGINT or SIGTERM
// cancels it, the run stops and completes its output, and Main returns
// 128+N; a second signal ends gtrace at once. stop releases the signals.
func NotifyContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	return live.NotifyContext(parent)
}

// Main runs gtrace with args and returns the process exit status. When
// ctx is done, the command stops and completes its output; Main returns
// once it has, or after stopGrace. A run that a signal interrupted (see
// NotifyContext) exits 128+N for signal N.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if live.Holding() {
		// A copy of gtrace that keeps a finished recording's programs
		// attached, switched off, until gtrace has exited.
		if err := live.HoldUntilParentExits(); err != nil {
			return exitFailure
		}
		return exitOK
	}
	d := &Deps{Out: stdout, Err: stderr, In: os.Stdin, TraceFS: tracefs.Open}
	root := newRootCmd(d)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	done := make(chan int, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		done <- handleError(stderr, err)
	}()
	return finish(ctx, stderr, done)
}

// finish returns the exit status of the run that sends it to done, or,
// once ctx is done, after stopGrace if the run has not sent it by then.
func finish(ctx context.Context, stderr io.Writer, done <-chan int) int {
	select {
	case code := <-done:
		return interruptedCode(ctx, code)
	case <-ctx.Done():
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case code := <-done:
		return interruptedCode(ctx, code)
	case <-t.C:
		fmt.Fprintf(stderr, "gtrace: %v: stopped without completing its output\n", context.Cause(ctx))
		return interruptedCode(ctx, exitFailure)
	}
}

// interruptedCode is the exit status of a run that ended with code: 128+N
// if signal N interrupted it.
func interruptedCode(ctx context.Context, code int) int {
	if se := live.Interrupted(ctx); se != nil {
		return se.Code()
	}
	return code
}

func newRootCmd(d *Deps) *cobra.Command {
	root := &cobra.Command{
		Use:   "gtrace",
		Short: "The kernel's ftrace event language, run on eBPF",
		Long: `gtrace speaks the kernel's ftrace event language (event formats, filters and
hist triggers) and runs it on eBPF, so it works on kernels built without
CONFIG_HIST_TRIGGERS, and needs no compiler on the target.`,
		Example: `  gtrace list 'sched:*' -F
  gtrace hist -e raw_syscalls:sys_enter -k common_pid.execname,id.syscall
  gtrace hist -e syscalls:sys_enter_write 'hist:keys=common_pid.execname:vals=count:sort=count.descending'`,
		Version:       versionText(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err}
	})
	root.AddCommand(newListCmd(d, nil), newHistCmd(d, nil), newRecordCmd(d, nil), newReportCmd(d, nil), newRecoverCmd(d, nil), newFilterCmd(d, nil), newTriggerCmd(d, nil), newSynthCmd(d, nil), newSQLCmd(d, nil), newKprobeCmd(d, nil), newFuncEventCmd(d, nil), newVersionCmd(d))
	registerCompletions(d, root)
	return root
}

// handleError prints err the way users need it and returns the exit status.
func handleError(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var se *live.SignalError
	if errors.As(err, &se) {
		// The run stopped because of the signal, as asked.
		return se.Code()
	}
	var st *live.ExitError
	if errors.As(err, &st) {
		return st.Code
	}
	var pe *parse.Error
	if errors.As(err, &pe) {
		fmt.Fprintf(w, "gtrace: %s\n", capLines(pe.Caret()))
		return exitUsage
	}
	var ue *usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		fmt.Fprintf(w, "gtrace: %s\nRun 'gtrace --help' for usage.\n", errorText(err))
		return exitUsage
	}
	if errors.Is(err, tracefs.ErrNoEvent) || errors.Is(err, hist.ErrNoEvent) {
		fmt.Fprintf(w, "gtrace: %s\n", errorText(err))
		return exitUsage
	}
	fmt.Fprintf(w, "gtrace: %s\n", errorText(err))
	var le loadError
	if errors.As(err, &le) {
		if tail := le.VerifierTail(20); tail != "" {
			fmt.Fprintf(w, "verifier log (last lines):\n%s\n", tail)
		}
		fmt.Fprintf(w, "program:\n%s", le.ProgramListing())
	}
	return exitFailure
}

// loadError is a program the kernel refused, with the verifier's log and
// the program's listing (probe.LoadError).
type loadError interface {
	error
	VerifierTail(n int) string
	ProgramListing() string
}

// isCobraUsage recognises cobra's own argument errors (unknown command,
// wrong number of args).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
