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
	// Flight records into a flight recorder that keeps the last records
	// of each CPU, as many bytes as a CPU's ring, and writes them to
	// Output at the end (record --snapshot); without it, a plan with
	// snapshot triggers has a flight beside the file.
	Flight bool
}

// Job is a recording run by package live's runner: the plan's programs
// attached, the file written, the statistics printed at the end.
type Job struct {
	plan *Plan
	fs   *tracefs.FS
	o    JobOptions
	sess *Session
	// flight takes the snapshots and, with JobOptions.Flight, is the
	// output; nil: none.
	flight *Flight
	comms  Comms

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
	var out Output
	if j.o.Flight || j.plan.Snapshots {
		fo := FlightOptions{Base: SnapshotBase(j.o.Output), Size: j.plan.RingSize, File: j.o.File, Names: j.comms.Comm}
		if j.o.Flight {
			fo.Final = j.o.Output
		}
		var err error
		if j.flight, err = NewFlight(j.fs, j.plan, fo); err != nil {
			return err
		}
		out = j.flight
	}
	if !j.o.Flight {
		file, err := Create(j.o.Output, j.fs, j.plan, j.o.File)
		if err != nil {
			return err
		}
		if out != nil {
			file = Tee(file, out)
		}
		out = file
	}
	skip := func(ev *Event, err error) {
		fmt.Fprintf(j.o.Err, "gtrace: warning: not recording %s: %v\n", ev.Format.FullName(), err)
	}
	var err error
	j.sess, err = Start(j.plan, out, StartOptions{Skip: skip, Flight: j.flight, Comms: &j.comms})
	j.prevTime = time.Now()
	return err
}

// Attached says what the job records, for the run's attach line:
// "recording 3 events (5 programs) to trace.dat", and what its hist
// triggers count.
func (j *Job) Attached() string {
	events, progs := j.sess.Attached()
	s := fmt.Sprintf("recording %s (%s) to %s", plural(events, "event"), plural(progs, "program"), j.o.Output)
	if j.o.Flight {
		s = fmt.Sprintf("recording %s (%s) into a flight recorder (the last %d KiB of each CPU), written to %s at the end",
			plural(events, "event"), plural(progs, "program"), j.plan.RingSize>>10, j.o.Output)
	}
	if j.plan.Snapshots {
		s += ", snapshots to " + SnapshotBase(j.o.Output) + ".snapshot-N.dat"
	}
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
		if j.flight != nil {
			files, skipped := j.flight.Files()
			for i, f := range files {
				fmt.Fprintf(w, "snapshot %d: %s\n", i+1, f)
			}
			if skipped > 0 {
				fmt.Fprintf(w, "%d snapshot firings were left out: %d snapshots were still being written\n", skipped, maxPending)
			}
		}
		switch {
		case err != nil:
		case j.o.Flight:
			ev, bytes := j.flight.Final()
			fmt.Fprintf(w, "%s: the last %d events (%.1f MB of records) of %d recorded, %d lost\n", j.o.Output, ev, float64(bytes)/1e6, st.Events(), st.Lost())
		default:
			fmt.Fprintf(w, "%s: %d events (%.1f MB of records), %d lost\n", j.o.Output, st.Events(), float64(st.Bytes())/1e6, st.Lost())
		}
	}
	return err
}
