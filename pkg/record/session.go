package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/hist"
	"github.com/gtrace/gtrace/pkg/probe"
)

// PageSink turns the records of one CPU, given in time order, into
// ring-buffer pages. A *tracedat.PageWriter is one.
type PageSink interface {
	// Add appends a record: its timestamp and its raw bytes, common
	// fields first. payload is only valid during the call.
	Add(ts uint64, payload []byte) error
	// Lost notes that n events were lost before the next record.
	Lost(n uint64)
	// FlushPages writes out the pages finished so far.
	FlushPages() error
	// Flush writes out every page, the one being filled included.
	Flush() error
}

// ChunkSink is a PageSink that is told each time the records of one look
// at the CPU's ring have all been added: a live output hands them on
// then, rather than waiting for pages to fill.
type ChunkSink interface {
	PageSink
	// EndChunk follows the Add and Lost calls of one look at the ring.
	EndChunk() error
}

// Output is where a recording goes, typically a trace.dat file.
type Output interface {
	// CPU returns the sink of a CPU's records. It is called once per CPU,
	// before any record arrives, and the sink is used by one goroutine.
	CPU(cpu int) PageSink
	// Finish completes the output once every sink is flushed, with what
	// is only known at the end.
	Finish(st *Stats, cmdlines map[int]string) error
	// Abort gives the output up; nothing more is called.
	Abort()
}

// CPUStats counts the recording of one CPU.
type CPUStats struct {
	CPU    int
	Events uint64 // records written
	Bytes  uint64 // bytes of records written
	Lost   uint64 // events the ring had no room for
	First  uint64 // timestamp of the first record written (0: none)
	Last   uint64 // timestamp of the last record written
}

// Stats counts a recording.
type Stats struct {
	CPUs []CPUStats
	// Missed counts events for which the kernel ran no program because
	// another BPF program was running on that CPU at the time.
	Missed uint64
}

// Events returns the records written on all CPUs.
func (s *Stats) Events() (n uint64) {
	for _, c := range s.CPUs {
		n += c.Events
	}
	return n
}

// Lost returns the events lost on all CPUs.
func (s *Stats) Lost() (n uint64) {
	for _, c := range s.CPUs {
		n += c.Lost
	}
	return n
}

// Bytes returns the bytes of records written on all CPUs.
func (s *Stats) Bytes() (n uint64) {
	for _, c := range s.CPUs {
		n += c.Bytes
	}
	return n
}

// StartOptions tune a session.
type StartOptions struct {
	// Skip, when not nil, is told about each optional event that could
	// not be attached and is not recorded.
	Skip func(ev *Event, err error)
	// Comms, when not nil, names tasks from the session's comm map
	// while it runs.
	Comms *Comms
	// Flight is the flight recorder that takes the snapshots of a plan
	// with snapshot triggers (Plan.Snapshots), the output or one side
	// of it (Tee).
	Flight *Flight
}

// Session is a running recording.
type Session struct {
	out     Output
	objs    *probe.Objects
	rings   []*probe.Ring
	lost    *probe.Counters
	readers []*reader
	events  int // events attached
	progs   int // programs loaded
	comms   *Comms
	control *bpfgen.Control // the control map's layout; nil: none
	hists   *hist.LiveJob   // the hist triggers' hists; nil: none

	stop     chan struct{} // closed by Stop: readers drain and end
	wg       sync.WaitGroup
	failed   chan struct{} // closed when a reader fails
	failOnce sync.Once
	err      error // the first reader error, set before failed is closed

	restore func() // sets the threads' priority back

	flight *Flight
	snaps  chan int      // snapshots marked, for takeSnapshots
	taking chan struct{} // closed when takeSnapshots has ended
}

// Start loads the plan's programs, maps the rings, starts a reader per CPU
// and attaches the programs. The session owns out from then on; on error,
// Start has aborted it.
func Start(p *Plan, out Output, o StartOptions) (_ *Session, err error) {
	s := &Session{out: out, comms: o.Comms, stop: make(chan struct{}), failed: make(chan struct{}), restore: raisePriority(recordNice)}
	defer func() {
		if err != nil {
			s.release()
			out.Abort()
		}
	}()
	var loaded *bpfgen.Program
	s.objs, loaded, err = probe.LoadBest(p.Program, p.Fallback)
	if err != nil {
		return nil, err
	}
	p.Program, p.Fallback = loaded, nil
	s.control = loaded.Control
	if p.Follow {
		// Before any program that the follow map gates is attached.
		if err = s.objs.Follow(p.FollowPIDs); err != nil {
			return nil, err
		}
	}
	if p.histJob != nil {
		for _, pid := range p.FollowPIDs {
			p.histJob.Follow(int(pid))
		}
	}
	if p.histJob != nil && p.session == nil {
		// The hists count from before the events are recorded: a
		// hist trigger sees its event whether it is recorded or not.
		if err = p.histJob.AttachTo(s.objs); err != nil {
			return nil, err
		}
		s.hists = p.histJob
	}
	s.comms.set(s.objs)
	if p.Snapshots {
		if o.Flight == nil {
			return nil, fmt.Errorf("the recording has snapshot triggers and no flight recorder to take them")
		}
		s.flight = o.Flight
		s.snaps, s.taking = make(chan int, maxPending), make(chan struct{})
		go s.takeSnapshots()
	}
	if s.rings, err = s.objs.OpenRings(bpfgen.RingsMapName, p.CPUs, p.RingSize); err != nil {
		return nil, err
	}
	if s.lost, err = s.objs.MapCounters(bpfgen.LostMapName); err != nil {
		return nil, err
	}
	for i, cpu := range p.CPUs {
		r := newReader(cpu, s.rings[i], s.lost, out.CPU(cpu))
		if s.flight != nil {
			r.snap = s.mark
		}
		s.readers = append(s.readers, r)
		s.wg.Add(2)
		go func() {
			defer s.wg.Done()
			r.run(s.stop)
		}()
		go func() {
			defer s.wg.Done()
			if err := r.write(); err != nil {
				s.fail(fmt.Errorf("write the records of CPU %d: %w", cpu, err))
			}
		}()
	}
	// The comm program names every task that leaves a CPU, and every
	// task that exits, before its parent can reap it (gone from /proc
	// then) and before its last switch: a live output that looks a pid
	// up finds the task in /proc or in the map, never in neither.
	for prog, at := range map[string]string{bpfgen.CommProgName: "sched_switch", bpfgen.CommExitProgName: "sched_process_exit"} {
		if err = s.objs.AttachTracepoint(prog, "sched", at); err != nil {
			s.stopReaders()
			return nil, err
		}
	}
	attached := 0
	done := map[string]error{} // group programs, attached once for all their events
	for i, ev := range p.Events {
		r := p.Program.Recorders[i]
		key := r.Prog + " " + r.Point.String()
		aerr, ok := done[key]
		if !ok {
			aerr = s.objs.Attach(r.Prog, r.Point)
			for _, m := range r.More {
				if aerr == nil {
					aerr = s.objs.Attach(m.Prog, m.Point)
				}
			}
			done[key] = aerr
		}
		switch {
		case aerr == nil:
			attached++
		case ev.Optional:
			if o.Skip != nil {
				o.Skip(ev, aerr)
			}
		default:
			s.stopReaders()
			return nil, aerr
		}
	}
	if attached == 0 {
		s.stopReaders()
		return nil, fmt.Errorf("none of the %d events could be attached", len(p.Events))
	}
	if p.session != nil {
		// An inter-event session records its synthetic events into
		// the rings: it runs once they are read. It is attached after
		// the recording's programs, so that on an event that both
		// trace through the same hook (the classic tracepoint), the
		// event's record comes before the mark of a snapshot() it
		// fires: the snapshot ends with the event.
		if err = p.histJob.AttachTo(s.objs); err != nil {
			s.stopReaders()
			return nil, err
		}
		s.hists = p.histJob
	}
	s.events, s.progs = attached, len(p.Program.Collection.Programs)
	return s, nil
}

// Failed returns a channel that is closed when the session cannot go on
// (writing the output failed); Stop then returns the reason.
func (s *Session) Failed() <-chan struct{} { return s.failed }

func (s *Session) fail(err error) {
	s.failOnce.Do(func() {
		s.err = err
		close(s.failed)
	})
}

// Stop detaches the programs, drains the rings, completes the output and
// returns what was recorded. The session is finished afterwards.
func (s *Session) Stop() (*Stats, error) {
	// Switching the programs off first makes the end of every CPU's data
	// a clean cut: the rings, then what the batches hold, once every
	// program that had passed the switch when it was thrown has returned.
	err := s.objs.SwitchOff(bpfgen.SwitchMapName)
	probe.Quiesce()
	// The events the kernel ran no program for, up to the end: those of
	// the recording's programs and of an inter-event session's, which
	// record its synthetic events. A comm program that missed a switch
	// or an exit costs a name, not a record.
	st := &Stats{Missed: s.objs.RecursionMisses(bpfgen.CommProgName, bpfgen.CommExitProgName)}
	if s.hists != nil {
		st.Missed += s.hists.RecordingMisses()
	}
	batches, berr := s.objs.PerCPUValue(bpfgen.BatchMapName)
	err = errors.Join(err, berr)
	for _, r := range s.readers {
		if r.cpu < len(batches) {
			r.tail = batchSamples(batches[r.cpu])
		}
	}
	known := comms(s.objs)
	// An output still writing (a snapshot being taken, a stream being
	// printed) names its tasks from the map as it is now.
	s.comms.stop(known)
	// The kernel detaches the programs after gtrace has exited: they
	// record nothing more.
	err = errors.Join(err, s.objs.DetachLater(), s.objs.Close())
	s.objs = nil
	s.stopReaders()
	for _, r := range s.readers {
		st.CPUs = append(st.CPUs, r.stats())
	}
	if s.err != nil {
		err = errors.Join(s.err, err)
	}
	names := cmdlines(s.readers, known)
	hists := s.hists // printed after the output is complete
	s.hists = nil
	s.release()
	if err != nil {
		s.out.Abort()
		return st, errors.Join(err, stopHists(hists))
	}
	err = s.out.Finish(st, names)
	return st, errors.Join(err, stopHists(hists))
}

// stopHists prints the hists of the hist triggers, which the off switch
// has stopped, and detaches their programs; h nil: none.
func stopHists(h *hist.LiveJob) error {
	if h == nil {
		return nil
	}
	return h.Stop()
}

// HistsAttached says what the hist triggers count, for the run's attach
// line ("counting a hist of sched:sched_switch (1 program)"); "" without
// hist triggers.
func (s *Session) HistsAttached() string {
	if s.hists == nil {
		return ""
	}
	return s.hists.Attached()
}

// batchSamples returns the samples of a batch map value.
func batchSamples(v []byte) []byte {
	if len(v) < bpfgen.BatchHeader {
		return nil
	}
	fill := int(binary.LittleEndian.Uint32(v))
	return v[bpfgen.BatchHeader:][:min(fill, len(v)-bpfgen.BatchHeader)]
}

// stopReaders tells the readers to drain their rings and waits for them,
// then for the snapshots they marked.
func (s *Session) stopReaders() {
	close(s.stop)
	s.wg.Wait()
	if s.snaps != nil {
		close(s.snaps)
		<-s.taking
		s.snaps = nil
	}
}

// mark, in the writer of cpu, starts a snapshot at a mark met at ts.
func (s *Session) mark(cpu int, ts uint64) {
	if n, ok := s.flight.mark(cpu, ts); ok {
		s.snaps <- n // never blocks: at most maxPending are pending
	}
}

// takeSnapshots writes the file of each snapshot marked, once every
// reader has had a look at its ring after the mark, until snaps is
// closed.
func (s *Session) takeSnapshots() {
	defer close(s.taking)
	for n := range s.snaps {
		s.barrier()
		if err := s.flight.take(n); err != nil {
			s.fail(err)
		}
	}
}

// barrier returns once every reader has looked at its ring and its
// writer has added what it found to the sink, or has ended.
func (s *Session) barrier() {
	acks := make([]chan struct{}, len(s.readers))
	for i, r := range s.readers {
		acks[i] = make(chan struct{})
		select {
		case r.sync <- acks[i]:
		case <-r.done:
		}
	}
	for i, r := range s.readers {
		select {
		case <-acks[i]:
		case <-r.done:
		}
	}
}

// release closes what Start opened.
func (s *Session) release() {
	if s.snaps != nil {
		close(s.snaps)
		<-s.taking
		s.snaps = nil
	}
	s.restore()
	if s.hists != nil {
		s.hists.Close()
		s.hists = nil
	}
	s.comms.set(nil)
	if s.objs != nil {
		s.objs.Close()
	}
	for _, r := range s.rings {
		r.Close()
	}
	if s.lost != nil {
		s.lost.Close()
	}
}

// Attached returns the number of events recorded, those that could be
// attached, and of the BPF programs loaded to record them.
func (s *Session) Attached() (events, programs int) { return s.events, s.progs }

// Progress returns what the session has written so far: records, bytes
// of records and events lost, on all CPUs. It may be called while the
// session runs.
func (s *Session) Progress() (events, bytes, lost uint64) {
	for _, r := range s.readers {
		events += r.events.Load()
		bytes += r.bytes.Load()
		lost += r.lostWritten.Load()
	}
	return events, bytes, lost
}
