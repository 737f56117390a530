package record

import (
	"fmt"
	"io"
	"time"

	"github.com/gtrace/gtrace/pkg/tracefs"
)

// JobOptions say where a recording goes and what it tells the user.
type JobOptions struct {
	Output string      // the trace.dat file
	File   FileOptions // its version and compression
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

	prev     uint64    // events at the last Status
	prevTime time.Time // when
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
	j.sess, err = Start(j.plan, out, StartOptions{Skip: skip})
	j.prevTime = time.Now()
	return err
}

// Attached says what the job records, for the run's attach line:
// "recording 3 events (5 programs) to trace.dat", and what its hist
// triggers count.
func (j *Job) Attached() string {
	events, progs := j.sess.Attached()
	s := fmt.Sprintf("recording %s (%s) to %s", plural(events, "event"), plural(progs, "program"), j.o.Output)
	if h := j.sess.HistsAttached(); h != "" {
		s += ", " + h
	}
	return s
}

// Status is the run's status line: events per second since the last
// call, events and megabytes written, events lost.
func (j *Job) Status() string {
	events, bytes, lost := j.sess.Progress()
	now := time.Now()
	rate := 0.0
	if d := now.Sub(j.prevTime).Seconds(); d > 0 {
		rate = float64(events-j.prev) / d
	}
	j.prev, j.prevTime = events, now
	return fmt.Sprintf("%.0f events/s, %d events, %.1f MB, %d lost", rate, events, float64(bytes)/1e6, lost)
}

// plural is "1 event", "2 events".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
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
