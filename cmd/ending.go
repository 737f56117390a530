package cmd

import (
	"os"
	"time"

	"github.com/gtrace/gtrace/pkg/launch"
)

// ending is how a live command (hist, record) stops: Ctrl-C or SIGTERM,
// --duration, or the exit of the command it traces.
type ending struct {
	held    *launch.Held
	done    <-chan int       // the traced command's exit status (nil: none)
	timeout <-chan time.Time // --duration (nil: none)
	timer   *time.Timer
}

// startEnding lets the held command run, if there is one, and starts the
// --duration timer. Call stop when done.
func startEnding(held *launch.Held, duration time.Duration) (*ending, error) {
	e := &ending{held: held}
	if held != nil {
		e.done = held.Done()
		if err := held.Release(); err != nil {
			return nil, err
		}
	}
	if duration > 0 {
		e.timer = time.NewTimer(duration)
		e.timeout = e.timer.C
	}
	return e, nil
}

func (e *ending) stop() {
	if e.timer != nil {
		e.timer.Stop()
	}
}

// interrupted handles Ctrl-C or SIGTERM: the traced command got the
// terminal's signal too (or gets SIGINT from here); wait for it to end and
// return its status.
func (e *ending) interrupted() int {
	if e.held == nil {
		return 0
	}
	e.held.Signal(os.Interrupt)
	return <-e.done
}

// result turns the traced command's exit status into gtrace's.
func (e *ending) result(status int) error {
	if e.held != nil && status != 0 {
		return &exitStatus{code: status}
	}
	return nil
}
