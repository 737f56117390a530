package tracedat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Page layout written by PageWriter: a 64-bit little-endian kernel.
const (
	pageHeaderSize  = 16        // u64 timestamp, u64 commit
	maxSmallPayload = 4 * 28    // larger payloads use type_len 0 and a length word
	maxDelta        = 1<<27 - 1 // largest time_delta of a record header
	maxExtend       = 1<<59 - 1 // largest delta of a TIME_EXTEND record

	// The kernel adds RB_MISSED_EVENTS and RB_MISSED_STORED to the commit
	// field as ints: bit 31 sign-extends into the upper half.
	commitMissed = 0xffffffff80000000 // events were lost before this page
	commitStored = 1 << 30            // their count follows the data

	minPageSize   = 64       // smallest page NewPageWriter accepts
	writeBufBytes = 64 << 10 // PageWriter buffers this much before writing
)

// ErrRecordTooLarge is returned by (*PageWriter).Add for a record that
// does not fit in one page.
var ErrRecordTooLarge = errors.New("record does not fit in a page")

// PageWriter encodes the event records of one CPU into ring-buffer pages
// as a 64-bit little-endian kernel lays them out in trace_pipe_raw, and
// writes the pages, whole, to an io.Writer.
//
// A page starts with the u64 timestamp of its first record and the u64
// commit word (bytes of record data; bit 31, sign-extended, marks events
// lost before the page; bit 30 says their count follows the data as a
// u64). Records follow: a u32 header holding type_len (5 bits) and the
// time delta to the previous record (27 bits), then the payload padded to
// 4 bytes. Payloads of up to 112 bytes have type_len = words of payload;
// longer ones have type_len 0 and a length word (padded payload + 4).
// A delta of 2^27 ns or more is carried by a TIME_EXTEND record, a
// timestamp earlier than the previous one by a TIME_STAMP record. Records
// never cross pages, the first record of a page has delta 0, and the
// bytes after the data are zero.
//
// Pages are buffered, 64 KiB at a time: Flush writes everything,
// FlushPages only the finished pages. A PageWriter is not safe for
// concurrent use. Add allocates nothing but the buffer, on the first
// call.
type PageWriter struct {
	w        io.Writer
	pageSize int
	buf      []byte // finished pages, then the page being filled
	page     []byte // the page being filled, a slice of buf; nil if none
	next     int    // offset in buf of the page being filled (= bytes of finished pages)
	off      int    // offset in page of the next record
	limit    int    // end of the room for records in page
	last     uint64 // timestamp of the previous record in page
	lost     uint64 // events lost before the next page
	lostSet  bool   // Lost was called since the last page was opened
	pageLost uint64 // events lost before page
	pageMark bool   // page carries the lost-events mark
	pages    int
	err      error // first write error; it sticks
}

// NewPageWriter returns a PageWriter of pageSize-byte pages (the kernel's
// ring-buffer sub-buffer size, 4096 on most systems) writing to w. It
// panics if pageSize is below 64 or above 2^27.
func NewPageWriter(w io.Writer, pageSize int) *PageWriter {
	if pageSize < minPageSize || pageSize > maxPageSize {
		panic(fmt.Sprintf("tracedat: page size %d out of range [%d, %d]", pageSize, minPageSize, maxPageSize))
	}
	return &PageWriter{w: w, pageSize: pageSize}
}

// recordSize returns the bytes a record with an n-byte payload takes.
func recordSize(n int) int {
	if n > maxSmallPayload {
		return 8 + (n+3)&^3
	}
	return 4 + (n+3)&^3
}

// Add appends a record with timestamp ts (trace clock units, ns for the
// local clock) and payload, the raw event record starting with its u16
// common_type. A record that does not fit in an empty page returns an
// error wrapping ErrRecordTooLarge and is not written; so is an empty
// payload. Errors from the io.Writer stick: Add, Flush and FlushPages
// return them from then on.
func (p *PageWriter) Add(ts uint64, payload []byte) error {
	if p.err != nil {
		return p.err
	}
	size := recordSize(len(payload))
	if p.page != nil {
		// The common case: the record follows the previous one closely
		// and fits in the page.
		if delta := ts - p.last; delta <= maxDelta && p.off+size <= p.limit && len(payload) != 0 {
			p.put(uint32(delta), payload, size)
			p.last = ts
			return nil
		}
	}
	return p.addSlow(ts, payload, size)
}

// addSlow handles the records that need a time record, a new page or an
// error.
func (p *PageWriter) addSlow(ts uint64, payload []byte, size int) error {
	if len(payload) == 0 {
		return errors.New("add record: empty payload")
	}
	if p.page != nil {
		delta := ts - p.last
		switch {
		case ts >= p.last && delta <= maxExtend:
			if p.off+8+size <= p.limit {
				p.putTime(typeTimeExtend, delta)
				p.put(0, payload, size)
				p.last = ts
				return nil
			}
		case ts < p.last && ts&tsMSB == p.last&tsMSB:
			if p.off+8+size <= p.limit {
				p.putTime(typeTimeStamp, ts)
				p.put(0, payload, size)
				p.last = ts
				return nil
			}
		}
		if err := p.finish(); err != nil {
			return err
		}
	}
	// A new page, whose header carries the absolute time.
	room := p.pageSize - pageHeaderSize
	if size > room {
		return fmt.Errorf("add %d-byte record to %d-byte pages: %w", len(payload), p.pageSize, ErrRecordTooLarge)
	}
	p.open(ts)
	if p.off+size > p.limit {
		// No room left for the lost-events count: drop the count, keep
		// the mark, as the kernel does.
		p.limit = p.pageSize
	}
	p.put(0, payload, size)
	return nil
}

// put writes a data record at p.off.
func (p *PageWriter) put(delta uint32, payload []byte, size int) {
	b := p.page[p.off : p.off+size]
	// Zero the last word first: it holds the payload's padding.
	binary.LittleEndian.PutUint32(b[size-4:], 0)
	if n := len(payload); n > maxSmallPayload {
		binary.LittleEndian.PutUint32(b, delta<<5)
		binary.LittleEndian.PutUint32(b[4:], uint32(size-4))
		copy(b[8:], payload)
	} else {
		binary.LittleEndian.PutUint32(b, delta<<5|uint32(n+3)>>2)
		copy(b[4:], payload)
	}
	p.off += size
}

// putTime writes a TIME_EXTEND (v = delta) or TIME_STAMP (v = absolute
// time) record.
func (p *PageWriter) putTime(typ uint32, v uint64) {
	b := p.page[p.off : p.off+8]
	binary.LittleEndian.PutUint32(b, uint32(v&maxDelta)<<5|typ)
	binary.LittleEndian.PutUint32(b[4:], uint32(v>>tsShift))
	p.off += 8
}

// open starts a page at buf[next:] whose first record has time ts.
func (p *PageWriter) open(ts uint64) {
	if p.buf == nil {
		p.buf = make([]byte, max(writeBufBytes/p.pageSize, 1)*p.pageSize)
	}
	p.page = p.buf[p.next : p.next+p.pageSize]
	binary.LittleEndian.PutUint64(p.page, ts)
	p.off, p.limit, p.last = pageHeaderSize, p.pageSize, ts
	p.pageMark, p.pageLost = p.lostSet, p.lost
	p.lost, p.lostSet = 0, false
	if p.pageMark {
		p.limit -= 8 // room for the count
	}
}

// finish completes the page being filled and writes the buffer out when
// it is full.
func (p *PageWriter) finish() error {
	clear(p.page[p.off:])
	commit := uint64(p.off - pageHeaderSize)
	if p.pageMark {
		commit |= commitMissed
		if p.off+8 <= p.pageSize {
			binary.LittleEndian.PutUint64(p.page[p.off:], p.pageLost)
			commit |= commitStored
		}
	}
	binary.LittleEndian.PutUint64(p.page[8:], commit)
	p.page = nil
	p.pages++
	p.next += p.pageSize
	if p.next == len(p.buf) {
		return p.write()
	}
	return nil
}

// write writes the finished pages.
func (p *PageWriter) write() error {
	if p.next == 0 {
		return nil
	}
	_, err := p.w.Write(p.buf[:p.next])
	p.next = 0
	if err != nil {
		p.err = fmt.Errorf("write pages: %w", err)
	}
	return p.err
}

// Lost records that n events were lost after the records added so far.
// The next record starts a new page marked with the count, so that
// readers report the loss just before it; trace-cmd report prints
// "CPU:N [n EVENTS DROPPED]" there. Counts of several calls before the
// next record add up. Lost(0) does nothing.
func (p *PageWriter) Lost(n uint64) {
	if n == 0 || p.err != nil {
		return
	}
	if p.page != nil && p.finish() != nil {
		return
	}
	if p.lost+n < p.lost {
		p.lost = math.MaxUint64
	} else {
		p.lost += n
	}
	p.lostSet = true
}

// Flush completes the page being filled, if any, and writes all pages.
// The next record starts a new page. Events lost after the last record
// are written as an empty page carrying the count.
func (p *PageWriter) Flush() error {
	if p.err != nil {
		return p.err
	}
	if p.page == nil && p.lostSet {
		// An empty page: its timestamp is that of the last record.
		p.open(p.last)
	}
	if p.page != nil {
		if err := p.finish(); err != nil {
			return err
		}
	}
	return p.write()
}

// FlushPages writes the pages finished so far and keeps filling the
// current page. Call it now and then while recording: pages still in the
// PageWriter's buffer are lost if the process is killed.
func (p *PageWriter) FlushPages() error {
	if p.err != nil || p.next == 0 {
		return p.err
	}
	if p.page == nil {
		return p.write()
	}
	_, err := p.w.Write(p.buf[:p.next])
	if err != nil {
		p.err = fmt.Errorf("write pages: %w", err)
		return p.err
	}
	// Move the page being filled to the front.
	copy(p.buf, p.page[:p.off])
	p.next = 0
	p.page = p.buf[:p.pageSize]
	return nil
}

// Pages returns the number of pages finished so far, written or still
// buffered; the page being filled is not counted.
func (p *PageWriter) Pages() int { return p.pages }
