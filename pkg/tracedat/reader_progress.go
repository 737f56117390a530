package tracedat

import "sync/atomic"

// Progress is how far the Iterators of a File have read: Done bytes of
// ring-buffer data, as stored in the file (compressed chunks count their
// compressed bytes), of the Total bytes that they set out to read.
type Progress struct {
	Done, Total int64
}

// progress counts the bytes of every Iterator of a File: an Iterator adds
// the stored size of its CPUs to total when it is made and its reads to
// done as it reads; a CPU that ends (at its end, or cut short by damage)
// adds what is left of it, so that done reaches total when every
// Iterator has read to its end.
type progress struct {
	done, total atomic.Int64
}

// Progress returns how far the File's Iterators have read so far. It
// costs two atomic loads and may be called from any goroutine while
// they read, for a progress line: Done and Total only grow, and Done
// reaches Total when every Iterator made so far has read to its end.
func (f *File) Progress() Progress {
	if f.progress == nil {
		return Progress{}
	}
	// done first: an Iterator adds to total before it reads, so the
	// total loaded next is at least done.
	done := f.progress.done.Load()
	return Progress{Done: done, Total: f.progress.total.Load()}
}

// counted tells the File's progress that the stream has read its data up
// to offset off.
func (s *cpuStream) counted(off int64) {
	off = min(off, s.end)
	if off > s.seen {
		s.it.progress.done.Add(off - s.seen)
		s.seen = off
	}
}
