package tracedat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// readAhead is how many bytes of uncompressed pages one CPU reads at once.
const readAhead = 64 << 10

// Iterator yields the records of a ring-buffer instance, all CPUs merged
// by timestamp. Ties go to the lower CPU number, as trace-cmd orders them.
//
//	it := f.Records()
//	for it.Next() {
//		rec := it.Record()
//		...
//	}
//	if err := it.Err(); err != nil { ... }
//
// A damaged page (a bad header or record; compressed: a chunk that does
// not decompress) is skipped with what it still held from the first bad
// record on, and the CPU goes on with the next page; File.Warnings tells
// about it. A CPU whose data is cut short or unreadable stops at the last
// whole page (compressed: the last whole chunk); the other CPUs go on,
// and Err reports what happened. An Iterator is not safe for concurrent
// use; several Iterators may read one File concurrently.
type Iterator struct {
	heap []*cpuStream // min-heap by (next record's TS, CPU)
	last *cpuStream   // stream of the current record, advanced by Next
	errs []error
	zbuf []byte // compressed chunk, shared by the streams
	ts   uint64 // File.TSOffset

	damage   *damageLog // the File's, told about skipped pages
	progress *progress  // the File's, told about the bytes read
	buffer   string     // the instance's name, for warnings
}

// Records returns an iterator over the records of the top instance. With
// cpus, only the records of those CPUs are read.
func (f *File) Records(cpus ...int) *Iterator {
	if f.topIndex < 0 {
		return &Iterator{}
	}
	return f.BufferRecords(f.Buffers[f.topIndex], cpus...)
}

// BufferRecords returns an iterator over the records of one instance of
// f.Buffers. With cpus, only the records of those CPUs are read.
func (f *File) BufferRecords(b *Buffer, cpus ...int) *Iterator {
	it := &Iterator{ts: uint64(f.TSOffset), damage: f.damage, progress: f.progress, buffer: b.Name}
	if it.damage == nil {
		it.damage = &damageLog{}
	}
	if it.progress == nil {
		it.progress = &progress{}
	}
	if f.r == nil {
		it.errs = append(it.errs, errors.New("read records: the File was not made by Open or Read"))
		return it
	}
	var order binary.ByteOrder = binary.LittleEndian
	if f.BigEndian {
		order = binary.BigEndian
	}
	l := f.Layout()
	l.Size = b.PageSize
	for _, cd := range b.CPUs {
		if len(cpus) > 0 && !slices.Contains(cpus, cd.CPU) {
			continue
		}
		pr, err := NewPageReader(l)
		if err != nil {
			it.errs = append(it.errs, fmt.Errorf("cpu %d: %w", cd.CPU, err))
			continue
		}
		s := &cpuStream{
			it:         it,
			cpu:        cd.CPU,
			r:          f.r,
			fileSize:   f.size,
			pageSize:   l.Size,
			compressed: b.Compressed,
			order:      order,
			off:        cd.Offset,
			end:        cd.Offset + min(cd.Size, math.MaxInt64-cd.Offset),
			seen:       cd.Offset,
			pr:         pr,
		}
		s.rec.CPU = cd.CPU
		it.progress.total.Add(s.end - s.seen)
		if s.start() && s.advance() {
			it.heap = append(it.heap, s)
		} else {
			s.counted(s.end)
			if s.err != nil {
				it.errs = append(it.errs, s.err)
			}
		}
	}
	for i := len(it.heap)/2 - 1; i >= 0; i-- {
		it.down(i)
	}
	return it
}

// Next advances to the next record and reports whether there is one.
func (it *Iterator) Next() bool {
	if s := it.last; s != nil {
		it.last = nil
		if !s.advance() {
			s.counted(s.end)
			if s.err != nil {
				it.errs = append(it.errs, s.err)
			}
			n := len(it.heap) - 1
			it.heap[0] = it.heap[n]
			it.heap[n] = nil
			it.heap = it.heap[:n]
		}
		if len(it.heap) > 1 {
			it.down(0)
		}
	}
	if len(it.heap) == 0 {
		return false
	}
	it.last = it.heap[0]
	return true
}

// Record returns the current record. Its Data is valid until the next
// call to Next.
func (it *Iterator) Record() Record {
	if it.last == nil {
		return Record{}
	}
	r := it.last.rec
	r.TS += it.ts
	return r
}

// Err returns the errors met so far, one per failed CPU, joined.
func (it *Iterator) Err() error { return errors.Join(it.errs...) }

// down restores the heap order from i downwards.
func (it *Iterator) down(i int) {
	h := it.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// cpuStream reads the pages of one CPU and holds its next record.
type cpuStream struct {
	it         *Iterator
	cpu        int
	r          io.ReaderAt
	fileSize   int64
	pageSize   int
	compressed bool
	order      binary.ByteOrder

	off    int64  // file offset of the next pages (uncompressed) or chunk header (compressed)
	end    int64  // end of the CPU's data
	seen   int64  // offset up to which the File's progress counts the data
	chunks uint32 // compressed: chunks left

	buf     []byte // loaded pages
	bufOff  int64  // file offset of buf (uncompressed) or of its chunk (compressed)
	next    int    // offset in buf of the next page
	pageOff int    // offset in buf of the current page

	pr  *PageReader
	rec Record  // the next record
	hdr [8]byte // chunk count or header, in the stream to stay off the heap
	err error
}

func (s *cpuStream) before(o *cpuStream) bool {
	return s.rec.TS < o.rec.TS || s.rec.TS == o.rec.TS && s.cpu < o.cpu
}

// advance moves to the CPU's next record; false at its end or on error.
func (s *cpuStream) advance() bool {
	for {
		ok, err := s.pr.Next(&s.rec)
		if ok {
			return true
		}
		if err != nil {
			// The page reader ended the page: go on with the next.
			s.skip(err)
		}
		if !s.nextPage() {
			return false
		}
	}
}

// skip warns about the current page, which is damaged and skipped.
func (s *cpuStream) skip(err error) {
	var where string
	if s.compressed {
		where = fmt.Sprintf("cpu %d: page %d of the chunk at offset %#x", s.cpu, s.pageOff/s.pageSize, s.bufOff)
	} else {
		where = fmt.Sprintf("cpu %d: page at offset %#x", s.cpu, s.bufOff+int64(s.pageOff))
	}
	s.warn(where, fmt.Sprintf("%s: %v (skipped the rest of the page)", where, err), 1)
}

// warn tells the File's damage log about damage at where, which cost
// the records of pages pages.
func (s *cpuStream) warn(where, msg string, pages int) {
	if b := s.it.buffer; b != "" {
		where = "instance " + strconv.Quote(b) + ": " + where
		msg = "instance " + strconv.Quote(b) + ": " + msg
	}
	s.it.damage.add(where, msg, pages)
}

// start prepares reading: for compressed data, it reads the chunk count.
func (s *cpuStream) start() bool {
	if !s.compressed {
		return true
	}
	if err := s.readAt(s.hdr[:4], s.off, "chunk count"); err != nil {
		s.err = err
		return false
	}
	s.chunks = s.order.Uint32(s.hdr[:])
	s.off += 4
	s.counted(s.off)
	return true
}

// nextPage loads the next page into the page reader, skipping pages
// whose header is damaged.
func (s *cpuStream) nextPage() bool {
	for {
		if s.next+s.pageSize > len(s.buf) {
			var ok bool
			if s.compressed {
				ok = s.loadChunk()
			} else {
				ok = s.loadPages()
			}
			if !ok {
				return false
			}
		}
		s.pageOff = s.next
		s.next += s.pageSize
		err := s.pr.Reset(s.buf[s.pageOff:s.next])
		if err == nil {
			return true
		}
		s.skip(err)
	}
}

// loadPages reads the next run of whole uncompressed pages.
func (s *cpuStream) loadPages() bool {
	left := s.end - s.off
	if left <= 0 {
		return false
	}
	ps := int64(s.pageSize)
	if left < ps {
		s.err = fmt.Errorf("cpu %d: %d bytes at offset %#x are less than a page (%d bytes)", s.cpu, left, s.off, ps)
		return false
	}
	want := max(readAhead/ps, 1) * ps
	want = min(want, left/ps*ps)
	if int64(cap(s.buf)) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	n, err := s.r.ReadAt(s.buf, s.off)
	n = n / s.pageSize * s.pageSize
	if n == 0 {
		if err == nil || errors.Is(err, io.EOF) {
			err = ErrTruncated
		}
		s.err = fmt.Errorf("cpu %d: read page at offset %#x (file size %d): %w", s.cpu, s.off, s.fileSize, err)
		return false
	}
	s.buf = s.buf[:n]
	s.bufOff = s.off
	s.off += int64(n)
	s.next = 0
	s.counted(s.off)
	return true
}

// loadChunk reads and decompresses the next chunk of pages, skipping
// chunks that do not decompress. The record returned last may point into
// buf: it is no longer valid, so buf can be reused.
func (s *cpuStream) loadChunk() bool {
	// Each turn moves at least 8 bytes on in the file, or stops.
	for ; s.chunks > 0; s.chunks-- {
		if err := s.readAt(s.hdr[:], s.off, "chunk header"); err != nil {
			s.err = err
			return false
		}
		csize, usize := s.order.Uint32(s.hdr[:]), s.order.Uint32(s.hdr[4:])
		if int64(csize) > s.fileSize-s.off-8 {
			s.err = fmt.Errorf("cpu %d: chunk at offset %#x: %d compressed bytes run past the end of the file (%d bytes): %w", s.cpu, s.off, csize, s.fileSize, ErrTruncated)
			return false
		}
		off := s.off
		s.off += 8 + int64(csize)
		s.counted(s.off)
		if usize == 0 || usize%uint32(s.pageSize) != 0 {
			where := fmt.Sprintf("cpu %d: chunk at offset %#x", s.cpu, off)
			s.warn(where, fmt.Sprintf("%s: uncompressed size %d is not a whole number of %d-byte pages (skipped the chunk)", where, usize, s.pageSize), int((usize+uint32(s.pageSize)-1)/uint32(s.pageSize)))
			continue
		}
		if cap(s.it.zbuf) < int(csize) {
			s.it.zbuf = make([]byte, csize)
		}
		z := s.it.zbuf[:csize]
		if err := s.readAt(z, off+8, "chunk"); err != nil {
			s.err = err
			return false
		}
		out, err := decompress(s.buf, z, int(usize))
		if err != nil {
			// Keep the whole pages decoded before the damage.
			where := fmt.Sprintf("cpu %d: chunk at offset %#x", s.cpu, off)
			n := min(len(out), int(usize)) / s.pageSize * s.pageSize
			if n == 0 {
				s.warn(where, fmt.Sprintf("%s: %v (skipped the chunk)", where, err), int(usize)/s.pageSize)
				continue
			}
			s.warn(where, fmt.Sprintf("%s: %v (skipped the chunk after its first %d pages)", where, err, n/s.pageSize), (int(usize)-n)/s.pageSize)
			out = out[:n]
		}
		s.buf, s.bufOff, s.next = out, off, 0
		s.chunks--
		return true
	}
	return false
}

// readAt fills b from offset off.
func (s *cpuStream) readAt(b []byte, off int64, what string) error {
	n, err := s.r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = ErrTruncated
	}
	return fmt.Errorf("cpu %d: read %s at offset %#x (file size %d): %w", s.cpu, what, off, s.fileSize, err)
}
