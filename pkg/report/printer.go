package report

import (
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// EventFormat is an event's parsed format and the text of its format file
// (the printer reads the print fmt from the text, where it may span
// lines).
type EventFormat struct {
	Format *parse.Format
	Text   string
}

// PrinterOptions is what a Printer knows of the traced kernel, and how it
// prints.
type PrinterOptions struct {
	// Formats are the formats of the events by ID (common_type). A record
	// of an ID not here prints as trace-cmd prints an unknown event.
	Formats map[int]EventFormat
	// Kallsyms is the kernel's symbols as /proc/kallsyms lists them, for
	// %pS and the plugins' function names; "" for none.
	Kallsyms string
	// Printk is the printk_formats text: the kernel's constant strings,
	// which bprint records and %s of a pointer refer to; "" for none.
	Printk string
	// Cmdlines maps pids to task names, as saved_cmdlines does. The
	// printer learns more from the sched_switch and sched_wakeup records
	// it prints, as trace-cmd does.
	Cmdlines map[int]string
	// LongSize is the traced kernel's sizeof(long): 4, or 8 (any other
	// value).
	LongSize int
	// BigEndian says that the records are big endian.
	BigEndian bool
	// Clock is the trace clock of the timestamps: those of a clock that
	// counts nanoseconds ("local", the default, "global", "mono", "perf",
	// "tai", ...) print as seconds.microseconds, others (such as "boot" or
	// "counter") as trace-cmd prints them: the raw count.
	Clock string
	// NsTimestamps prints nanoseconds instead of microseconds
	// (trace-cmd report -t).
	NsTimestamps bool
	// Raw prints every field as name=value instead of the event's print
	// format (trace-cmd report -R).
	Raw bool
}

// Record is one event record: what a CPU's ring buffer holds.
type Record struct {
	CPU int    // the CPU whose buffer held it
	TS  uint64 // its timestamp, in the trace clock's units
	// Data is the record, from its common_type on. Like trace-cmd, a
	// Printer reads a string that lacks its NUL on into the bytes after
	// the record, up to cap(Data): leave the rest of the ring-buffer
	// page there to print what trace-cmd prints.
	Data []byte
	// Missed is set on the first record after lost events: the number
	// lost, or -1 if not known. It is 0 otherwise.
	Missed int64
}

// Printer prints event records one at a time as trace-cmd report prints
// them, from formats, kernel symbols and task names, whether they come
// from a trace.dat file or a live stream. Like trace-cmd it keeps state
// from record to record: the task names sched events teach it and the
// function tracer's call stacks. A Printer must not be used concurrently.
type Printer struct {
	p *printer
}

// NewPrinter returns a printer of records of the events o describes.
func NewPrinter(o PrinterOptions) *Printer {
	return &Printer{p: newPrinter(o)}
}

// SetComm names task pid, as a saved cmdline does: for a live stream,
// whose task names become known as their pids appear.
func (pr *Printer) SetComm(pid int, comm string) {
	if pid != 0 {
		pr.p.comms.m[int32(pid)] = comm
	}
}

// AppendText appends to b the line trace-cmd report prints for r, and its
// newline, after a "CPU:N [K EVENTS DROPPED]" line when r.Missed says that
// events were lost (there is no "cpus=N" line and no instance name).
//
// next, if not nil, returns the record that follows r: a function graph
// entry whose return follows it prints, as trace-cmd prints it, as one
// "func();" line with the return's duration. AppendText then reports that
// it used that record, which the caller skips. next is called at most
// once, and only for a function graph entry.
func (pr *Printer) AppendText(b []byte, r Record, next func() (Record, bool)) (out []byte, usedNext bool) {
	p := pr.p
	p.src, p.next, p.usedNext = nil, next, false
	tr := tracedat.Record(r)
	b = p.line(b, &tr, p.eventFor(p.recordType(r.Data)))
	used := p.usedNext
	p.next, p.usedNext = nil, false
	return b, used
}

// AppendJSON appends to b the JSON object of r and a newline, as NDJSON
// prints it.
func (pr *Printer) AppendJSON(b []byte, r Record) []byte {
	p := pr.p
	tr := tracedat.Record(r)
	id := p.recordType(r.Data)
	return p.jsonRecord(b, "", &tr, p.eventFor(id), id)
}

// peekNext returns the record after the current one, from the file's
// records or from a Printer's caller.
func (p *printer) peekNext() (tracedat.Record, bool) {
	switch {
	case p.src != nil:
		return p.src.peek()
	case p.next != nil && !p.usedNext:
		r, ok := p.next()
		p.next = nil
		if ok {
			// Keep it for a second look, as recSource does.
			p.next = func() (Record, bool) { return r, true }
		}
		return tracedat.Record(r), ok
	}
	return tracedat.Record{}, false
}

// skipNext drops the record peekNext returned: it was printed with the
// current one.
func (p *printer) skipNext() {
	if p.src != nil {
		p.src.skip()
		return
	}
	p.usedNext = true
}
