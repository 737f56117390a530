package stream

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/record"
	"github.com/gtrace/gtrace/pkg/report"
)

// DefaultDelay is how long the printer holds a record back, at most,
// waiting for older records of other CPUs.
const DefaultDelay = 100 * time.Millisecond

// tickEvery is how often the printer looks at the clock when no records
// arrive.
const tickEvery = 10 * time.Millisecond

// maxBatch is how many records a sink gathers before it hands them on,
// even in the middle of a look at the ring.
const maxBatch = 4096

// Options say what a Stream prints and how.
type Options struct {
	W    io.Writer // where the lines go
	JSON bool      // one NDJSON object a record instead of trace-cmd report's line
	// Printer describes the events: formats, kernel symbols, clock.
	// Cmdlines may be nil: task names come from Names.
	Printer report.PrinterOptions
	// CPUs are the CPUs whose records the stream gets: those of the
	// recording's plan.
	CPUs []int
	// Names returns the name of a task when its pid first appears; ""
	// if it is not known.
	Names func(pid int) string
	// Now reads the recording's clock, in the units of the records'
	// timestamps.
	Now func() uint64
	// Delay is how long a record is held back at most for older
	// records of other CPUs; 0: DefaultDelay.
	Delay time.Duration
}

// rec is a record a sink copied into its batch's buf. It holds no
// pointer, so that copying records costs the garbage collector nothing.
type rec struct {
	ts       uint64
	off, end int   // its bytes in the batch's buf
	missed   int64 // events lost just before it
}

// batch is what a sink hands the printer at once. The printer gives it
// back to the pool once it has printed its records.
type batch struct {
	q    int // the CPU's queue
	buf  []byte
	recs []rec
	// lost, in a CPU's last batch, counts events lost after its last
	// record.
	lost uint64
}

// batches recycles batches and their memory.
var batches = sync.Pool{New: func() any { return &batch{buf: make([]byte, 0, 64<<10), recs: make([]rec, 0, 256)} }}

// newBatch returns an empty batch for queue q.
func newBatch(q int) *batch {
	b := batches.Get().(*batch)
	b.q, b.buf, b.recs, b.lost = q, b.buf[:0], b.recs[:0], 0
	return b
}

// Stream is a record.Output that prints records as they come, ordered
// across CPUs. Create it with New; its printer goroutine ends with Finish
// or Abort.
type Stream struct {
	o      Options
	in     chan *batch
	finish chan map[int]string
	abort  chan struct{}
	done   chan struct{}
	failed atomic.Pointer[error] // the printer's write error, which sinks return

	// Owned by the printer goroutine, once New has made them.
	queues   []*queue // one per CPU, in the order of Options.CPUs
	pr       *report.Printer
	w        *bufio.Writer
	line     []byte
	known    map[int32]bool // pids looked up
	named    map[int32]bool // pids whose lookup found a name
	finalErr error
}

// New returns a Stream that prints to o.W and starts its printer.
func New(o Options) *Stream {
	if o.Delay <= 0 {
		o.Delay = DefaultDelay
	}
	s := &Stream{
		o:      o,
		in:     make(chan *batch, 64),
		finish: make(chan map[int]string),
		abort:  make(chan struct{}),
		done:   make(chan struct{}),
		pr:     report.NewPrinter(o.Printer),
		w:      bufio.NewWriterSize(o.W, 64<<10),
		known:  map[int32]bool{},
		named:  map[int32]bool{},
	}
	for _, cpu := range o.CPUs {
		s.queues = append(s.queues, &queue{cpu: cpu})
	}
	go s.run()
	return s
}

// CPU returns the sink of a CPU's records; cpu is one of Options.CPUs.
func (s *Stream) CPU(cpu int) record.PageSink {
	for i, q := range s.queues {
		if q.cpu == cpu {
			return &sink{s: s, q: i}
		}
	}
	panic(fmt.Sprintf("stream: CPU %d is not one of the stream's CPUs %v", cpu, s.o.CPUs))
}

// Finish prints every record still held back, in order, naming the
// tasks that had no name yet from cmdlines, and the events lost at the
// end of each CPU; it returns the first error writing the output.
func (s *Stream) Finish(_ *record.Stats, cmdlines map[int]string) error {
	select {
	case s.finish <- cmdlines:
		<-s.done
		return s.finalErr
	case <-s.done:
		return s.finalErr
	}
}

// Abort stops the printer; records held back are not printed.
func (s *Stream) Abort() {
	select {
	case s.abort <- struct{}{}:
		<-s.done
	case <-s.done:
	}
}

// fail records the printer's first write error for the sinks to return.
func (s *Stream) fail(err error) {
	s.failed.CompareAndSwap(nil, &err)
}

// err returns the printer's write error, nil if none.
func (s *Stream) err() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// send hands b to the printer; it returns the printer's error, or an
// error if the printer has ended.
func (s *Stream) send(b *batch) error {
	if err := s.err(); err != nil {
		return err
	}
	select {
	case <-s.done:
		return errors.New("the stream's printer has ended")
	default:
	}
	select {
	case s.in <- b:
		return nil
	case <-s.done:
		return errors.New("the stream's printer has ended")
	}
}

// sink gathers one CPU's records and hands them to the printer at the
// end of each look at the ring.
type sink struct {
	s    *Stream
	q    int    // the CPU's queue
	b    *batch // the records gathered; nil if none
	lost uint64 // events lost since the last record
}

// Add copies a record.
func (k *sink) Add(ts uint64, payload []byte) error {
	if k.b == nil {
		k.b = newBatch(k.q)
	}
	b := k.b
	off := len(b.buf)
	b.buf = append(b.buf, payload...)
	r := rec{ts: ts, off: off, end: len(b.buf)}
	if k.lost > 0 {
		r.missed, k.lost = int64(k.lost), 0
	}
	b.recs = append(b.recs, r)
	if len(b.recs) >= maxBatch {
		return k.handOn()
	}
	return nil
}

// Lost notes that n events were lost before the next record.
func (k *sink) Lost(n uint64) { k.lost += n }

// EndChunk hands the records of a look at the ring to the printer.
func (k *sink) EndChunk() error { return k.handOn() }

// FlushPages hands the records so far to the printer.
func (k *sink) FlushPages() error { return k.handOn() }

// Flush hands the last records to the printer, with the events lost
// after them.
func (k *sink) Flush() error {
	if k.b == nil {
		k.b = newBatch(k.q)
	}
	k.b.lost, k.lost = k.lost, 0
	err := k.s.send(k.b)
	k.b = nil
	return err
}

func (k *sink) handOn() error {
	if k.b == nil {
		return k.s.err()
	}
	err := k.s.send(k.b)
	k.b = nil
	return err
}

// queue is the records of one CPU that the printer holds.
type queue struct {
	cpu     int
	batches []*batch // in order; the first's records before next are printed
	next    int
	last    uint64 // timestamp of the last record received
	seen    bool   // a record was received
	lost    uint64 // events lost after the last record, known at the end
}

// head returns the queue's next record and its batch; nil if none.
func (q *queue) head() (*rec, *batch) {
	for len(q.batches) > 0 {
		b := q.batches[0]
		if q.next < len(b.recs) {
			return &b.recs[q.next], b
		}
		q.batches[0] = nil
		q.batches = q.batches[1:]
		q.next = 0
		batches.Put(b)
	}
	return nil, nil
}

// run is the printer goroutine.
func (s *Stream) run() {
	defer close(s.done)
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case b := <-s.in:
			s.take(b)
		case <-t.C:
		case names := <-s.finish:
			s.drainIn()
			s.end(names)
			return
		case <-s.abort:
			return
		}
		s.release(s.bound())
	}
}

// take queues a batch.
func (s *Stream) take(b *batch) {
	q := s.queues[b.q]
	if n := len(b.recs); n > 0 {
		q.last, q.seen = b.recs[n-1].ts, true
	}
	q.lost += b.lost
	q.batches = append(q.batches, b)
}

// drainIn queues the batches that the sinks sent before Finish.
func (s *Stream) drainIn() {
	for {
		select {
		case b := <-s.in:
			s.take(b)
		default:
			return
		}
	}
}

// bound returns the timestamp below which every record has arrived: the
// clock's now less the delay, or the oldest of the CPUs' newest records
// when every CPU has sent one.
func (s *Stream) bound() uint64 {
	var b uint64
	if now, d := s.o.Now(), uint64(s.o.Delay); now > d {
		b = now - d
	}
	low := ^uint64(0)
	for _, q := range s.queues {
		if !q.seen {
			return b
		}
		low = min(low, q.last)
	}
	return max(b, low)
}

// release prints, in timestamp order, the records older than bound, and
// flushes the output if it printed any.
func (s *Stream) release(bound uint64) {
	n := 0
	for {
		var next *queue
		var r *rec
		var b *batch
		for _, q := range s.queues {
			if qr, qb := q.head(); qr != nil && (r == nil || qr.ts < r.ts) {
				next, r, b = q, qr, qb
			}
		}
		if r == nil || r.ts >= bound {
			break
		}
		s.print(next.cpu, r, b.buf[r.off:r.end:r.end])
		next.next++
		n++
	}
	if n > 0 {
		s.flush()
	}
}

// print prints one record.
func (s *Stream) print(cpu int, r *rec, data []byte) {
	if pid, ok := parse.CommonPID(data); ok && pid != 0 && !s.known[pid] {
		s.known[pid] = true
		if s.o.Names != nil {
			if name := s.o.Names(int(pid)); name != "" {
				s.pr.SetComm(int(pid), name)
				s.named[pid] = true
			}
		}
	}
	pr := report.Record{CPU: cpu, TS: r.ts, Data: data, Missed: r.missed}
	if s.o.JSON {
		s.line = s.pr.AppendJSON(s.line[:0], pr)
	} else {
		s.line, _ = s.pr.AppendText(s.line[:0], pr, nil)
	}
	s.write(s.line)
}

// write writes to the output unless it has failed.
func (s *Stream) write(b []byte) {
	if s.err() != nil {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.fail(fmt.Errorf("write the stream: %w", err))
	}
}

func (s *Stream) flush() {
	if s.err() != nil {
		return
	}
	if err := s.w.Flush(); err != nil {
		s.fail(fmt.Errorf("write the stream: %w", err))
	}
}

// end names the tasks still unnamed from names, prints every record held
// back and the events lost at the end of each CPU, and flushes.
func (s *Stream) end(names map[int]string) {
	for pid, name := range names {
		if !s.named[int32(pid)] {
			s.pr.SetComm(pid, name)
			s.known[int32(pid)], s.named[int32(pid)] = true, true
		}
	}
	s.release(^uint64(0))
	for _, q := range s.queues {
		if q.lost == 0 {
			continue
		}
		if s.o.JSON {
			s.line = append(s.line[:0], `{"cpu":`...)
			s.line = strconv.AppendInt(s.line, int64(q.cpu), 10)
			s.line = append(s.line, `,"missed":`...)
			s.line = strconv.AppendUint(s.line, q.lost, 10)
			s.line = append(s.line, "}\n"...)
		} else {
			s.line = append(s.line[:0], "CPU:"...)
			s.line = strconv.AppendInt(s.line, int64(q.cpu), 10)
			s.line = append(s.line, " ["...)
			s.line = strconv.AppendUint(s.line, q.lost, 10)
			s.line = append(s.line, " EVENTS DROPPED]\n"...)
		}
		s.write(s.line)
	}
	s.flush()
	s.finalErr = s.err()
}
