package record

import (
	"fmt"
	"io"

	"github.com/gtrace/gtrace/pkg/tracefs"
)

// JobOptions say where a recording goes and what it tells the user.
type JobOptions struct {
	Output string      // the trace.dat file
	File   FileOptions // its version and compression
	// Status, when not nil, receives a status line every second: give it
	// a terminal.
	Status io.Writer
	// Err receives warnings (events left out) and the statistics at the
	// end.
	Err io.Writer
}

// Job is a recording run by package live's runner: the plan's programs
// attached, the file written, the statistics printed at the end.
type Job struct {
	plan *Plan
	fs   *tracefs.FS
	o    JobOptions
	sess *Session
}

// NewJob returns the job that records p into o.Output.
func NewJob(fs *tracefs.FS, p *Plan, o JobOptions) *Job { return &Job{plan: p, fs: fs, o: o} }

// Follow adds a process to those a plan made with Options.Follow
// records from the start, with every process it forks: the command of
// live.Options.Follow, held at its exec. Call it before Attach.
func (j *Job) Follow(pid int) { j.plan.FollowPIDs = append(j.plan.FollowPIDs, uint32(pid)) }

// Attach creates the file, loads and attaches the programs and starts
// reading the rings.
func (j *Job) Attach() error {
	out, err := Create(j.o.Output, j.fs, j.plan, j.o.File)
	if err != nil {
		return err
	}
	skip := func(ev *Event, err error) {
		fmt.Fprintf(j.o.Err, "gtrace: warning: not recording %s: %v\n", ev.Format.FullName(), err)
	}
	j.sess, err = Start(j.plan, out, StartOptions{Status: j.o.Status, Skip: skip})
	return err
}

// Tick does nothing: a recording has no periodic output.
func (j *Job) Tick() error { return nil }

// Failed is closed when writing the file failed.
func (j *Job) Failed() <-chan struct{} { return j.sess.Failed() }

// Stop stops the recording, completes the file and prints, per CPU, the
// events written and lost, then the totals.
func (j *Job) Stop() error {
	st, err := j.sess.Stop()
	if st != nil {
		w := j.o.Err
		for _, c := range st.CPUs {
			fmt.Fprintf(w, "CPU %d: %d events, %d lost\n", c.CPU, c.Events, c.Lost)
		}
		if st.Missed > 0 {
			fmt.Fprintf(w, "%d events were missed: another BPF program was running on their CPU\n", st.Missed)
		}
		if err == nil {
			fmt.Fprintf(w, "%s: %d events (%.1f MB of records), %d lost\n", j.o.Output, st.Events(), float64(st.Bytes())/1e6, st.Lost())
		}
	}
	return err
}
