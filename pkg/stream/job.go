package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gtrace/gtrace/pkg/record"
	"github.com/gtrace/gtrace/pkg/report"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// JobOptions say where a stream goes and what it tells the user.
type JobOptions struct {
	Out  io.Writer // the events' lines
	JSON bool      // NDJSON instead of trace-cmd report's lines
	// Output, when not "", is a trace.dat file that gets the records
	// too, written as record writes it, with File's version and
	// compression.
	Output string
	File   record.FileOptions
	// Err receives warnings and the statistics at the end.
	Err io.Writer
	// Fired has Tick and Stop print a line on Err for each trigger
	// of the plan that fired since the last: gtrace trigger's report.
	Fired bool
}

// Job is a stream run by package live's runner: the plan's programs
// attached, each matching event printed as it happens, the statistics
// printed at the end. The plan should be a streaming one
// (record.Options.Stream): a batching plan leaves an event in the batch
// of a CPU until its next event.
type Job struct {
	plan   *record.Plan
	fs     *tracefs.FS
	o      JobOptions
	sess   *record.Session
	comms  record.Comms
	stream *Stream
	fired  []uint64 // what Tick last saw of Session.Fired
}

// NewJob returns the job that streams the events of p to o.Out.
func NewJob(fs *tracefs.FS, p *record.Plan, o JobOptions) *Job {
	return &Job{plan: p, fs: fs, o: o}
}

// Attach starts the printer (and creates the file of -o), loads and
// attaches the programs and starts reading the rings.
func (j *Job) Attach() error {
	j.stream = New(Options{
		W: j.o.Out, JSON: j.o.JSON, Printer: printerOptions(j.fs, j.plan), CPUs: j.plan.CPUs,
		Names: j.comms.Comm, Now: ClockNow(j.plan.Clock),
	})
	var out record.Output = j.stream
	if j.o.Output != "" {
		file, err := record.Create(j.o.Output, j.fs, j.plan, j.o.File)
		if err != nil {
			j.stream.Abort()
			return err
		}
		out = record.Tee(file, j.stream)
	}
	var err error
	skip := func(ev *record.Event, err error) {
		fmt.Fprintf(j.o.Err, "gtrace: warning: not streaming %s: %v\n", ev.Format.FullName(), err)
	}
	if j.sess, err = record.Start(j.plan, out, record.StartOptions{Skip: skip, Comms: &j.comms}); err != nil {
		return err
	}
	return nil
}

// Attached says what the job streams, for the run's attach line:
// "streaming sched:sched_switch if prev_pid == 0", and what its hist
// triggers count.
func (j *Job) Attached() string {
	s := "streaming " + eventList(j.plan)
	if h := j.sess.HistsAttached(); h != "" {
		s += ", " + h
	}
	return s
}

// Follow adds a process to those a plan made with record.Options.Follow
// streams, with every process it forks: the command of
// live.Options.Follow, held at its exec. Call it before Attach.
func (j *Job) Follow(pid int) { j.plan.FollowPIDs = append(j.plan.FollowPIDs, uint32(pid)) }

// Tick prints, with JobOptions.Fired, the triggers that fired since the
// last Tick; the events print as they come.
func (j *Job) Tick() error {
	if !j.o.Fired {
		return nil
	}
	fired, err := j.sess.Fired()
	if err != nil {
		return err
	}
	for i, t := range j.plan.Triggers() {
		var last uint64
		if i < len(j.fired) {
			last = j.fired[i]
		}
		if i < len(fired) && fired[i] != last {
			fmt.Fprintf(j.o.Err, "gtrace: %s: %s fired (%d in all)\n", t.Event, t.Trigger, fired[i])
		}
	}
	j.fired = fired
	return nil
}

// Failed is closed when writing the stream or the file failed.
func (j *Job) Failed() <-chan struct{} { return j.sess.Failed() }

// Stop stops the recording, prints what the stream still holds and the
// statistics: events printed, lost, and missed.
func (j *Job) Stop() error {
	terr := j.Tick()
	st, err := j.sess.Stop()
	err = errors.Join(terr, err)
	if st != nil {
		fmt.Fprintf(j.o.Err, "gtrace: %d events, %d lost", st.Events(), st.Lost())
		if st.Missed > 0 {
			fmt.Fprintf(j.o.Err, ", %d missed (another BPF program was running on their CPU)", st.Missed)
		}
		if j.o.Output != "" && err == nil {
			fmt.Fprintf(j.o.Err, "; written to %s", j.o.Output)
		}
		fmt.Fprintln(j.o.Err)
	}
	return err
}

// eventList names the plan's events, the first few.
func eventList(p *record.Plan) string {
	var names []string
	for i, ev := range p.Events {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more events", len(p.Events)-i))
			break
		}
		name := ev.Format.FullName()
		if ev.Filter != nil {
			name += " if " + ev.Filter.String()
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// printerOptions describes the plan's events, and the ftrace stack
// events of its stacktrace triggers, to the printer as the file record
// writes describes them to report: formats, kernel symbols and
// printk formats (when readable), the trace clock.
func printerOptions(fs *tracefs.FS, p *record.Plan) report.PrinterOptions {
	po := report.PrinterOptions{
		Formats:   map[int]report.EventFormat{},
		Clock:     p.Clock.String(),
		LongSize:  strconv.IntSize / 8,
		BigEndian: binary.NativeEndian.Uint16([]byte{0, 1}) == 1,
	}
	for _, ev := range append(append(p.Events[:len(p.Events):len(p.Events)], p.Synth...), p.Stacks...) {
		po.Formats[ev.Format.ID] = report.EventFormat{Format: ev.Format, Text: ev.Text}
	}
	// As in a file: symbols and printk formats help print addresses
	// and bprint records; the events print without them.
	if b, err := fs.ReadFile("printk_formats"); err == nil {
		po.Printk = string(b)
	}
	if s, err := fs.Kallsyms(); err == nil {
		po.Kallsyms = s
	}
	return po
}
