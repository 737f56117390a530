package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// Options select and shape what Text, JSON and NDJSON print.
type Options struct {
	// CPUs limits the output to the records of these CPUs (all if empty).
	// In a file with several instances, CPUs are numbered as trace-cmd
	// report --cpu numbers them: the top instance's from 0 to N-1 (N as
	// in its "cpus=N" line), then each other instance's after those of
	// the instance before it.
	CPUs []int
	// NsTimestamps prints nanoseconds instead of microseconds
	// (trace-cmd report -t).
	NsTimestamps bool
	// Raw prints every field as name=value instead of the event's print
	// format (trace-cmd report -R).
	Raw bool
	// Events, if set, keeps only the records that report's -F arguments
	// select (see ParseEventFilters).
	Events *EventFilter
	// Filter, if set, is asked about every record Events keeps; those it
	// rejects are not printed. The format is nil for a record of an
	// unknown event. The record's Data is only valid during the call.
	Filter func(f *parse.Format, r *tracedat.Record) bool
}

// printer holds what libtraceevent's tep handle holds for printing: the
// kernel's symbols, strings and task names, and the compiled events.
type printer struct {
	longSize  int
	order     binary.ByteOrder
	bigEndian bool
	funcs     *funcMap // built from kallsyms on first use
	kallsyms  string
	printk    printkMap
	comms     *comms
	cmdlines  map[int]string // the saved task names, which filters see
	formats   map[int]EventFormat
	events    []*event // by ID, once compiled
	compiled  []bool
	fstacks   []*funcStack
	insn      []byte // the kvm plugin's instruction bytes buffer
	// bprintFormats holds the printk formats bprint records used, by
	// address.
	bprintFormats map[uint64]bprintFormat
	nul           bool // a handler printed a NUL
	src           *recSource
	// next and usedNext stand in for src when a Printer's caller gives
	// the record after the current one.
	next     func() (Record, bool)
	usedNext bool
	rec      rec             // the record being printed
	tr       tracedat.Record // the record Filter sees
	raw      bool            // print fields as name=value
	ns       bool            // nanosecond timestamps
	usecs    bool            // timestamps are shown in seconds.microseconds
	stop     int             // where the event's text must end in the line (see full)
}

func newPrinter(o PrinterOptions) *printer {
	long := o.LongSize
	if long != 4 {
		long = 8
	}
	var order binary.ByteOrder = binary.LittleEndian
	if o.BigEndian {
		order = binary.BigEndian
	}
	return &printer{
		longSize:  long,
		order:     order,
		bigEndian: o.BigEndian,
		kallsyms:  o.Kallsyms,
		printk:    newPrintkMap(o.Printk),
		comms:     newComms(o.Cmdlines),
		cmdlines:  o.Cmdlines,
		formats:   o.Formats,
		events:    make([]*event, 1<<16),
		compiled:  make([]bool, 1<<16),
		raw:       o.Raw,
		ns:        o.NsTimestamps,
		usecs:     o.Clock == "" || usecClockName(o.Clock),
	}
}

// filePrinter returns the printer of a file's records.
func filePrinter(f *tracedat.File, o Options) *printer {
	formats := make(map[int]EventFormat, len(f.Events))
	for id, e := range f.Events {
		formats[id] = EventFormat{Format: e.Format, Text: e.Text}
	}
	p := newPrinter(PrinterOptions{
		Formats:      formats,
		Kallsyms:     f.Kallsyms,
		Printk:       f.Printk,
		Cmdlines:     f.Cmdlines,
		LongSize:     f.LongSize,
		BigEndian:    f.BigEndian,
		NsTimestamps: o.NsTimestamps,
		Raw:          o.Raw,
	})
	p.usecs = usecClock(f)
	return p
}

// syms returns the kernel symbols, parsing kallsyms the first time.
func (p *printer) syms() *funcMap {
	if p.funcs == nil {
		p.funcs = newFuncMap(p.kallsyms)
	}
	return p.funcs
}

// keep reports whether the options let a record through: the format is
// that of its event, nil if unknown.
func (p *printer) keep(o *Options, fm *parse.Format, r *tracedat.Record) bool {
	if o.Events != nil && !o.Events.match(p, fm, r) {
		return false
	}
	if o.Filter != nil {
		p.tr = *r
		return o.Filter(fm, &p.tr)
	}
	return true
}

// usecClock reports whether trace-cmd shows the file's timestamps as
// seconds.microseconds: for the clocks that count nanoseconds.
func usecClock(f *tracedat.File) bool {
	return hasOption(f, tracedat.OptionTSC2NSec) || usecClockName(f.Clock)
}

// usecClockName reports whether trace-cmd shows the timestamps of a trace
// clock as seconds.microseconds: those of the clocks it knows to count
// nanoseconds (not boot's, in trace-cmd 3.1.6).
func usecClockName(c string) bool {
	switch c {
	case "local", "global", "uptime", "perf", "tai", "tsc2nsec":
		return true
	default:
		return len(c) >= 4 && c[:4] == "mono"
	}
}

// cpuCount is what trace-cmd prints as cpus=N: the CPUs of the traced
// system, or more if the top instance's data names a higher CPU. The data
// of other instances does not count.
func cpuCount(f *tracedat.File) int {
	n := 0
	if f.Version < 7 || hasOption(f, tracedat.OptionCPUCount) {
		n = f.CPUCount
	}
	if top := topBuffer(f); top != nil {
		for _, c := range top.CPUs {
			n = max(n, c.CPU+1)
		}
	}
	return n
}

// hasOption reports whether f holds an option of that id.
func hasOption(f *tracedat.File, id tracedat.OptionID) bool {
	for _, o := range f.Options {
		if o.ID == id {
			return true
		}
	}
	return false
}

// Text prints the records of f as trace-cmd report (3.1.6, with
// libtraceevent 1.7 and its plugins) does, byte for byte: "cpus=N", then
// one line per record, and "CPU:N [K EVENTS DROPPED]" where the kernel
// lost records. The records of all the file's instances are merged by
// timestamp; if it has instances besides the top one, each line (or its
// dropped-events line) starts with the instance's name, right-aligned to
// the longest name, and ": " (blanks for the top instance).
//
// When ctx is done, Text stops after a whole line, flushes what it has
// printed and returns context.Cause(ctx).
func Text(ctx context.Context, w io.Writer, f *tracedat.File, o Options) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	p := filePrinter(f, o)
	line := bw.AvailableBuffer()
	line = append(line, "cpus="...)
	line = strconv.AppendInt(line, int64(cpuCount(f)), 10)
	line = append(line, '\n')
	bw.Write(line)
	m := newMerge(ctx, f, o.CPUs)
	for m.next() {
		s := m.cur
		p.src = &s.recSource
		r := &s.cur
		ev := p.eventFor(p.recordType(r.Data))
		if o.Events != nil || o.Filter != nil {
			var fm *parse.Format
			if ev != nil {
				fm = ev.format
			}
			if !p.keep(&o, fm, r) {
				continue
			}
		}
		// Formatting into the writer's free space saves a copy.
		line = append(bw.AvailableBuffer(), s.tag...)
		line = p.line(line, r, ev)
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	if err := m.err(); err != nil {
		bw.Flush()
		return fmt.Errorf("read records: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return m.stopped()
}

// recordType is the record's common_type, 0 if it has none.
func (p *printer) recordType(data []byte) int {
	id, _ := parse.CommonTypeOrder(data, p.order)
	return id
}

// recordPid is the record's common_pid, 0 if it has none.
func (p *printer) recordPid(data []byte) int32 {
	pid, _ := parse.CommonPIDOrder(data, p.order)
	return pid
}

// line formats one record and its newline, after the dropped-events note
// that goes before it.
func (p *printer) line(b []byte, tr *tracedat.Record, ev *event) []byte {
	switch {
	case tr.Missed > 0:
		b = append(b, "CPU:"...)
		b = strconv.AppendInt(b, int64(tr.CPU), 10)
		b = append(b, " ["...)
		b = strconv.AppendInt(b, tr.Missed, 10)
		b = append(b, " EVENTS DROPPED]\n"...)
	case tr.Missed < 0:
		b = append(b, "CPU:"...)
		b = strconv.AppendInt(b, int64(tr.CPU), 10)
		b = append(b, " [EVENTS DROPPED]\n"...)
	}
	if ev == nil {
		b = append(b, "[UNKNOWN EVENT][UNKNOWN EVENT] (NULL):               [UNKNOWN EVENT]\n"...)
		return b
	}
	r := &p.rec
	*r = rec{ev: ev, data: tr.Data, cpu: tr.CPU, ts: tr.TS}
	pid := p.recordPid(tr.Data)
	comm := p.comms.find(pid)
	b = appendSpaces(b, 16-len(comm))
	b = append(b, comm...)
	b = append(b, '-')
	n := len(b)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = appendSpaces(b, 5-(len(b)-n))
	b = append(b, " ["...)
	if tr.CPU < 100 {
		b = append(b, '0')
	}
	if tr.CPU < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(tr.CPU), 10)
	b = append(b, ']')
	if p.usecs {
		b = append(b, ' ')
	}
	b = p.appendTS(b, tr.TS)
	b = append(b, ": "...)
	b = append(b, ev.name...)
	b = append(b, ": "...)
	b = appendSpaces(b, 20-len(ev.name))
	start := len(b)
	p.stop = start + textLimit(len(tr.Data))
	if p.raw {
		b = p.rawFields(b, r)
	} else {
		pretty := true
		if ev.handler != nil {
			b, pretty = ev.handler(p, b, r)
		}
		if pretty {
			b = p.pretty(b, r)
		}
	}
	// trace-cmd drops one newline that ends the event's text, and its
	// printf stops at a NUL.
	if len(b) > start && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	if p.nul {
		p.nul = false
		if i := bytes.IndexByte(b[start:], 0); i >= 0 {
			b = b[:start+i]
		}
	}
	return append(p.cut(b), '\n')
}

// appendTS appends a timestamp as trace-cmd shows it: seconds with 6
// decimals (9 with -t) for clocks in nanoseconds, else the raw count in 12
// columns (its "%12d" format; checked against trace-cmd 3.1.6 with
// libtraceevent 1.7.1 on files of the boot clock).
func (p *printer) appendTS(b []byte, ts uint64) []byte {
	switch {
	case !p.usecs:
		return appendPadded(b, ts, 12, ' ')
	case p.ns:
		return appendTime(b, ts, 9, 1)
	}
	return appendTime(b, ts, 6, 1000)
}

// appendTime is libtraceevent's print_event_time: the timestamp divided
// by div (rounded), as "%5llu.%0*llu" with prec (> 0) decimals.
func appendTime(b []byte, ts uint64, prec int, div uint64) []byte {
	if div > 0 {
		ts = (ts + div/2) / div
	}
	p10 := uint64(1)
	for i := 0; i < prec; i++ {
		p10 *= 10
	}
	sec, frac := ts/p10, ts%p10
	if sec < 100000 && prec <= 12 {
		// "%5llu.%0*llu" in one go: the common case.
		var d [18]byte
		n := 6 + prec
		for i := n - 1; i > 5; i-- {
			d[i] = byte('0' + frac%10)
			frac /= 10
		}
		d[5] = '.'
		for i := 4; i >= 0; i-- {
			if sec == 0 && i < 4 {
				d[i] = ' '
				continue
			}
			d[i] = byte('0' + sec%10)
			sec /= 10
		}
		return append(b, d[:n]...)
	}
	b = appendPadded(b, sec, 5, ' ')
	b = append(b, '.')
	return appendPadded(b, frac, prec, '0')
}

// appendPadded appends v in decimal, right-aligned in width with pad.
func appendPadded(b []byte, v uint64, width int, pad byte) []byte {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	for n := len(d) - i; n < width; n++ {
		b = append(b, pad)
	}
	return append(b, d[i:]...)
}
