package report

import "bytes"

// A trace.dat file is untrusted input: its print formats and records
// choose widths, precisions, repeat counts and how many fields an event
// has. libtraceevent bounds none of these (its trace_seq grows until
// malloc fails; only glibc's printf refuses a width past INT_MAX), so a
// crafted "%*s" has trace-cmd write gigabytes. The kernel's own trace_seq
// holds about two pages and shows "[LINE TOO BIG]" for an event that does
// not fit. gtrace bounds each event's text the same way, at textLimit of
// its record's size, and cuts what goes past it with tooBig.
//
// line sets the limit (printer.stop) before it prints an event. Every field
// of a print format goes through printSeg, which prints nothing once the
// event is full and cuts widths and precisions to what the event can still
// hold (fit); loops that print many elements stop once the event is full;
// plugins pad through pad. So no field costs more than the room left, and
// whatever a plugin prints, line cuts at the limit. Real events stay far
// below it: the kernel prints the same print formats into its two-page
// trace_seq.
const (
	// An event's text: lineBase bytes plus linePerByte per byte of its
	// record (a hex dump prints 3 per byte, a stack trace about 10), and
	// never more than lineMax.
	lineBase    = 16 << 10
	linePerByte = 64
	lineMax     = 16 << 20
)

// tooBig replaces the text past an event's limit, as the kernel's trace
// file shows an event too big for its trace_seq.
const tooBig = "[LINE TOO BIG]"

var (
	blanks = bytes.Repeat([]byte{' '}, 4096)
	zeroes = bytes.Repeat([]byte{'0'}, 4096)
)

// appendSpaces appends n spaces, a block at a time.
func appendSpaces(b []byte, n int) []byte { return appendRun(b, blanks, n) }

// appendZeros appends n '0', a block at a time.
func appendZeros(b []byte, n int) []byte { return appendRun(b, zeroes, n) }

func appendRun(b, run []byte, n int) []byte {
	for n > 0 {
		k := min(n, len(run))
		b = append(b, run[:k]...)
		n -= k
	}
	return b
}

// textLimit is how many bytes the text of an event whose record has n
// bytes may take.
func textLimit(n int) int {
	if n >= (lineMax-lineBase)/linePerByte {
		return lineMax
	}
	return lineBase + linePerByte*n
}

// full reports whether b holds more of the event being printed than its
// limit: printers of many fields or elements stop there, and line cuts.
func (p *printer) full(b []byte) bool { return len(b) > p.stop }

// room is the most a field may add to b before the event is full: more
// would be cut anyway.
func (p *printer) room(b []byte) int { return p.stop + 1 - len(b) }

// pad appends n spaces, or as many as the event can hold.
func (p *printer) pad(b []byte, n int) []byte { return appendSpaces(b, min(n, p.room(b))) }

// fit returns spec, or a copy of it with its width and precision cut to
// the room left in the event.
func (p *printer) fit(b []byte, spec *cspec) *cspec {
	room := p.room(b)
	if spec.width <= room && spec.prec <= room {
		return spec
	}
	c := *spec
	c.width = min(c.width, room)
	c.prec = min(c.prec, room)
	return &c
}

// cut ends the event's text at its limit with tooBig.
func (p *printer) cut(b []byte) []byte {
	if !p.full(b) {
		return b
	}
	return append(b[:p.stop], tooBig...)
}
