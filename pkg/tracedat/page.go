package tracedat

import (
	"encoding/binary"
	"fmt"
)

// Ring-buffer page and record header constants (kernel ring_buffer.c,
// libtraceevent kbuffer-parse.c).
const (
	commitMask     = 1<<27 - 1 // bytes of record data in the page
	missingEvents  = 1 << 31   // commit flag: events were lost before this page
	missingStored  = 1 << 30   // commit flag: the lost count follows the data
	tsShift        = 27        // TIME_EXTEND/TIME_STAMP: array[0] << 27 + time_delta
	deltaMask      = 1<<27 - 1
	tsMSB          = uint64(0xf8) << 56 // TIME_STAMP keeps these bits of the running time
	typeDataMax    = 28
	typePadding    = 29
	typeTimeExtend = 30
	typeTimeStamp  = 31
)

// PageLayout describes the ring-buffer pages of a kernel: their size and
// where their header fields are.
type PageLayout struct {
	Size       int  // bytes per page
	LongSize   int  // width of the commit field: 4 or 8
	DataOffset int  // offset of the first record: 8 + LongSize on every kernel so far
	BigEndian  bool // byte order of the kernel
}

// Layout returns the page layout of the file's top instance.
func (f *File) Layout() PageLayout {
	return PageLayout{Size: f.PageSize, LongSize: f.LongSize, DataOffset: f.dataOff, BigEndian: f.BigEndian}
}

func (l PageLayout) check() error {
	if l.LongSize != 4 && l.LongSize != 8 {
		return fmt.Errorf("page layout: long size %d, want 4 or 8", l.LongSize)
	}
	if l.DataOffset < 8+l.LongSize || l.DataOffset+l.LongSize > l.Size {
		return fmt.Errorf("page layout: data offset %d does not fit a %d-byte page with %d-byte longs", l.DataOffset, l.Size, l.LongSize)
	}
	return nil
}

// PageReader decodes the records of ring-buffer pages, one page at a time,
// exactly as they were copied from trace_pipe_raw: a page timestamp, the
// commit word (27 bits of data size, bit 31 "events lost", bit 30 "lost
// count stored after the data"), then records whose 5-bit type_len says
// data (1..28 words, or 0: length in the next word), padding (29),
// TIME_EXTEND (30) or TIME_STAMP (31).
//
// The zero value is not usable; make one with NewPageReader.
type PageReader struct {
	data   []byte // the page's record bytes (commit size)
	rest   []byte // the page from the first record to its end
	pos    int    // offset in data of the next record header
	off    int    // DataOffset, to report page-relative offsets
	t      uint64 // running timestamp
	missed int64  // lost events to report on the next record
	err    error  // the damage that ended the page after the record returned last
	be     bool
	layout PageLayout
}

// NewPageReader returns a reader for pages of the given layout.
func NewPageReader(l PageLayout) (*PageReader, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	return &PageReader{layout: l, off: l.DataOffset, be: l.BigEndian}, nil
}

// Reset starts decoding page, which must be exactly one page long. The
// page's lost-events mark goes to its first record; if the page has no
// record, it is kept for the first record of the next page.
func (p *PageReader) Reset(page []byte) error {
	l := p.layout
	p.data, p.rest, p.pos, p.err = nil, nil, 0, nil
	if len(page) != l.Size {
		return fmt.Errorf("page is %d bytes, want %d", len(page), l.Size)
	}
	var commit uint64
	if p.be {
		p.t = binary.BigEndian.Uint64(page)
		if l.LongSize == 8 {
			commit = binary.BigEndian.Uint64(page[8:])
		} else {
			commit = uint64(binary.BigEndian.Uint32(page[8:]))
		}
	} else {
		p.t = binary.LittleEndian.Uint64(page)
		if l.LongSize == 8 {
			commit = binary.LittleEndian.Uint64(page[8:])
		} else {
			commit = uint64(binary.LittleEndian.Uint32(page[8:]))
		}
	}
	// The kernel ORs the flags in as an int: with bit 31 set the upper
	// half of a 64-bit commit is all ones, so only the low bits count.
	size := int(commit & commitMask)
	if size > l.Size-l.DataOffset {
		return fmt.Errorf("page commit %#x: data size %d exceeds the page's %d bytes", commit, size, l.Size-l.DataOffset)
	}
	if commit&missingEvents != 0 {
		lost := int64(-1)
		if end := l.DataOffset + size + l.LongSize; commit&missingStored != 0 && end <= l.Size {
			lost = int64(p.readLong(page[l.DataOffset+size:]))
		}
		p.missed = addMissed(p.missed, lost)
	}
	p.data = page[l.DataOffset : l.DataOffset+size]
	p.rest = page[l.DataOffset:]
	return nil
}

// Timestamp returns the running timestamp: after Reset the page's
// timestamp, after Next the timestamp of the record returned.
func (p *PageReader) Timestamp() uint64 { return p.t }

func (p *PageReader) readLong(b []byte) uint64 {
	switch {
	case p.layout.LongSize == 4 && p.be:
		return uint64(binary.BigEndian.Uint32(b))
	case p.layout.LongSize == 4:
		return uint64(binary.LittleEndian.Uint32(b))
	case p.be:
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

// addMissed combines two lost-events counts (-1: unknown).
func addMissed(a, b int64) int64 {
	if a < 0 || b < 0 {
		return -1
	}
	return a + b
}

// Next decodes the next data record of the page into rec (TS, Data and
// Missed; CPU is left alone) and reports whether there was one. At the
// end of the page it returns false and a nil error; a malformed record
// returns false and an error naming its page offset, and ends the page.
// A data record whose length runs past the data is returned first, with
// the bytes the page holds from its payload on, as trace-cmd reads it;
// the next call returns the error. rec.Data aliases the page.
func (p *PageReader) Next(rec *Record) (bool, error) {
	if err := p.err; err != nil {
		p.err = nil
		return false, err
	}
	data := p.data
	for pos := p.pos; pos < len(data); {
		if len(data)-pos < 4 {
			p.pos = len(data)
			return false, fmt.Errorf("record header at page offset %#x: %d bytes left in the data", p.off+pos, len(data)-pos)
		}
		var w uint32
		var typeLen int
		var delta uint64
		if p.be {
			w = binary.BigEndian.Uint32(data[pos:])
			typeLen, delta = int(w>>27), uint64(w&deltaMask)
		} else {
			w = binary.LittleEndian.Uint32(data[pos:])
			typeLen, delta = int(w&0x1f), uint64(w>>5)
		}
		switch {
		case typeLen >= 1 && typeLen <= typeDataMax:
			end := pos + 4 + typeLen*4
			p.pos = end
			if end > len(data) {
				// A damaged commit cuts the record: read it from
				// the page, as trace-cmd does, and end the page.
				if end > len(p.rest) {
					return p.bad(pos, "%d-byte payload runs past the data", typeLen*4)
				}
				p.pos = len(data)
			}
			p.t += delta
			rec.TS, rec.Data = p.t, p.rest[pos+4:end]
			rec.Missed, p.missed = p.missed, 0
			return true, nil
		case typeLen == 0:
			array, err := p.array(pos)
			if err != nil {
				return false, err
			}
			// The payload's length in 32-bit unsigned arithmetic, as
			// libtraceevent's kbuffer computes it: a damaged word
			// below 4 wraps to a huge length (0) or to none (1 to 3).
			n := int64((array - 4 + 3) &^ 3)
			p.t += delta
			rec.Missed, p.missed = p.missed, 0
			if n > int64(len(data)-pos-8) {
				// A damaged length runs past the data: as trace-cmd
				// does, return the record with what the page holds,
				// then end the page with the damage.
				p.pos, p.err = len(data), p.fault(pos, "%d-byte payload runs past the data", n)
				rec.TS, rec.Data = p.t, p.rest[pos+8:min(int64(len(p.rest)), int64(pos)+8+n)]
				return true, nil
			}
			end := pos + 8 + int(n)
			p.pos = end
			rec.TS, rec.Data = p.t, data[pos+8:end]
			return true, nil
		case typeLen == typePadding:
			if delta == 0 {
				// Filler up to the end of the page.
				p.pos = len(data)
				return false, nil
			}
			// A discarded record: skip it, keep its delta.
			array, err := p.array(pos)
			if err != nil {
				return false, err
			}
			if int64(array) > int64(len(data)-pos-4) {
				return p.bad(pos, "%d-byte padding runs past the data", array)
			}
			p.t += delta
			pos += 4 + int(array)
		case typeLen == typeTimeExtend:
			array, err := p.array(pos)
			if err != nil {
				return false, err
			}
			p.t += uint64(array)<<tsShift + delta
			pos += 8
		default: // typeTimeStamp
			array, err := p.array(pos)
			if err != nil {
				return false, err
			}
			p.t = (uint64(array)<<tsShift + delta) | p.t&tsMSB
			pos += 8
		}
	}
	p.pos = len(data)
	return false, nil
}

// array reads array[0] of the record at pos.
func (p *PageReader) array(pos int) (uint32, error) {
	if pos+8 > len(p.data) {
		_, err := p.bad(pos, "no room for its length word")
		return 0, err
	}
	if p.be {
		return binary.BigEndian.Uint32(p.data[pos+4:]), nil
	}
	return binary.LittleEndian.Uint32(p.data[pos+4:]), nil
}

// bad ends the page with an error about the record at pos.
func (p *PageReader) bad(pos int, format string, args ...any) (bool, error) {
	err := p.fault(pos, format, args...)
	p.pos = len(p.data)
	return false, err
}

// fault returns the error about the record at pos.
func (p *PageReader) fault(pos int, format string, args ...any) error {
	return fmt.Errorf("record at page offset %#x (type_len %d, %d data bytes): %s",
		p.off+pos, p.typeLen(pos), len(p.data), fmt.Sprintf(format, args...))
}

func (p *PageReader) typeLen(pos int) int {
	if p.be {
		return int(binary.BigEndian.Uint32(p.data[pos:]) >> 27)
	}
	return int(binary.LittleEndian.Uint32(p.data[pos:]) & 0x1f)
}
