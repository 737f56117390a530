package record

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/tracedat"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// Flight is a recording's flight recorder: an Output that keeps the last
// records of each CPU in memory, about Size bytes of samples per CPU
// (older ones are dropped, as an overwriting ring buffer drops them),
// and writes what it holds as a complete trace.dat file at each firing
// of a snapshot trigger (FILE.snapshot-N.dat), as the kernel's snapshot
// trigger swaps its ring buffer with a spare that then holds the events
// up to the firing; with a final file (record --snapshot), also at the
// end.
//
// A CPU's records live in up to three segments of Size/2 bytes each,
// oldest first: a new segment takes the place of the oldest when the
// three are full, so that between Size and 1.5 Size bytes are kept and
// no record is copied twice. The samples are laid out as the readers'
// chunks: a 16-byte header (timestamp, length) and the record padded to
// 8 bytes; a lost mark's timestamp field counts the events lost.
//
// A firing's mark reaches the flight in the writer of the CPU it fired
// on (Session): that CPU's records up to the mark are all in, and its
// part of the snapshot is cut at once. Another CPU's part is cut when
// its writer meets a record past the mark, or when the session has had
// every reader look at its ring once more (a barrier), whichever comes
// first; the snapshot file is written then. A CPU that records more than
// Size/2 bytes between the firing and its cut (a storm of some
// milliseconds) loses the oldest of its part.
type Flight struct {
	meta  tracedat.Meta
	opts  tracedat.WriteOptions
	final string // the file written at Finish; "": none
	base  string // snapshot N goes to base.snapshot-N.dat
	size  int    // bytes of samples kept per CPU
	names func(pid int) string

	mu      sync.Mutex
	cpus    []*flightCPU // by CPU number, nil for a CPU not recorded
	pending []*flightSnap
	taken   int      // snapshots numbered so far
	skipped int      // firings left out: too many snapshots pending
	files   []string // snapshot files written, in order

	finalEvents, finalBytes uint64 // what Finish wrote to the final file
}

// maxPending is the most snapshots that wait for their file at once;
// firings beyond are counted and left out.
const maxPending = 16

// flightSnap is a snapshot being cut: one part per CPU.
type flightSnap struct {
	n     int
	ts    uint64
	parts map[int][]byte // CPU -> its samples up to ts, copied
}

// FlightOptions say what a Flight keeps and writes.
type FlightOptions struct {
	// Final, if not "", is the file written at the end with what the
	// flight holds then (record --snapshot); "" when the recording
	// writes its own file beside the flight (Tee).
	Final string
	// Base names the snapshot files: Base.snapshot-N.dat, N from 1.
	Base string
	// Size is the bytes of samples kept per CPU, at least 64 KiB.
	Size int
	File FileOptions
	// Names names a pid for the files' saved command lines ("" for
	// none): Comms.Comm of the session's Comms.
	Names func(pid int) string
}

// SnapshotBase returns the base of the snapshot files of a recording to
// file: the name without its .dat suffix.
func SnapshotBase(file string) string { return strings.TrimSuffix(file, ".dat") }

// SnapshotFile returns the name of snapshot n of base.
func SnapshotFile(base string, n int) string { return fmt.Sprintf("%s.snapshot-%d.dat", base, n) }

// NewFlight returns the flight recorder of a plan's recording, with the
// metadata of the running kernel for its files.
func NewFlight(fs *tracefs.FS, p *Plan, o FlightOptions) (*Flight, error) {
	if o.Size < 64<<10 {
		return nil, fmt.Errorf("flight recorder: %d bytes per CPU, want at least 64 KiB", o.Size)
	}
	m, err := meta(fs, p, o.File.Tracer)
	if err != nil {
		return nil, err
	}
	names := o.Names
	if names == nil {
		names = func(pid int) string { return procComm(uint32(pid)) }
	}
	return &Flight{
		meta: *m, opts: tracedat.WriteOptions{Version: o.File.Version, Compression: o.File.Compression},
		final: o.Final, base: o.Base, size: o.Size, names: names,
		cpus: make([]*flightCPU, p.FileCPUs),
	}, nil
}

// CPU returns the sink that keeps the records of cpu.
func (f *Flight) CPU(cpu int) PageSink {
	c := &flightCPU{f: f, cpu: cpu}
	f.mu.Lock()
	f.cpus[cpu] = c
	f.mu.Unlock()
	return c
}

// Finish writes the final file, if any, with what the flight holds.
func (f *Flight) Finish(st *Stats, cmdlines map[int]string) error {
	if f.final == "" {
		return nil
	}
	f.mu.Lock()
	parts := map[int][]byte{}
	for _, c := range f.cpus {
		if c != nil {
			parts[c.cpu] = c.cut(math.MaxUint64)
		}
	}
	f.mu.Unlock()
	var err error
	f.finalEvents, f.finalBytes, err = f.write(f.final, parts, func(pid int) string { return cmdlines[pid] })
	return err
}

// Final returns the events and bytes of records written to the final
// file, once Finish has written it.
func (f *Flight) Final() (events, bytes uint64) { return f.finalEvents, f.finalBytes }

// Abort drops what the flight holds.
func (f *Flight) Abort() {
	f.mu.Lock()
	f.cpus, f.pending = nil, nil
	f.mu.Unlock()
}

// Files returns the snapshot files written so far, and the firings left
// out because too many snapshots were waiting for their files.
func (f *Flight) Files() (files []string, skipped int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.files...), f.skipped
}

// mark starts snapshot n at ts, fired on cpu, whose writer calls it: the
// CPU's part is cut at once. ok is false when the firing is left out.
func (f *Flight) mark(cpu int, ts uint64) (n int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pending) >= maxPending {
		f.skipped++
		return 0, false
	}
	f.taken++
	s := &flightSnap{n: f.taken, ts: ts, parts: map[int][]byte{}}
	f.pending = append(f.pending, s)
	for _, c := range f.cpus {
		if c == nil {
			continue
		}
		if c.cpu == cpu {
			s.parts[cpu] = c.cut(ts)
			continue
		}
		if next := c.next.Load(); next == 0 || ts < next {
			c.next.Store(ts)
		}
	}
	return s.n, true
}

// take cuts the parts of snapshot n not cut yet and writes its file.
// The session calls it once every reader has looked at its ring after
// the mark.
func (f *Flight) take(n int) error {
	f.mu.Lock()
	var s *flightSnap
	for i, p := range f.pending {
		if p.n == n {
			s = p
			f.pending = append(f.pending[:i:i], f.pending[i+1:]...)
			break
		}
	}
	if s == nil {
		f.mu.Unlock()
		return fmt.Errorf("snapshot %d: not pending", n)
	}
	for _, c := range f.cpus {
		if c == nil {
			continue
		}
		if _, done := s.parts[c.cpu]; !done {
			s.parts[c.cpu] = c.cut(s.ts)
		}
		c.next.Store(f.nextFor(c.cpu))
	}
	f.mu.Unlock()
	name := SnapshotFile(f.base, n)
	if _, _, err := f.write(name, s.parts, f.names); err != nil {
		return fmt.Errorf("snapshot %d: %w", n, err)
	}
	f.mu.Lock()
	f.files = append(f.files, name)
	f.mu.Unlock()
	return nil
}

// nextFor returns the earliest mark of a pending snapshot whose part of
// cpu is not cut yet; 0: none. Call it with f.mu held.
func (f *Flight) nextFor(cpu int) uint64 {
	var next uint64
	for _, s := range f.pending {
		if _, done := s.parts[cpu]; !done && (next == 0 || s.ts < next) {
			next = s.ts
		}
	}
	return next
}

// cutBefore cuts the parts of cpu of the pending snapshots marked before
// ts: the CPU's writer is about to add a record past them.
func (f *Flight) cutBefore(c *flightCPU, ts uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.pending {
		if _, done := s.parts[c.cpu]; !done && s.ts < ts {
			s.parts[c.cpu] = c.cut(s.ts)
		}
	}
	c.next.Store(f.nextFor(c.cpu))
}

// write writes the samples of parts as a trace.dat file, naming the
// pids of its records with names, and returns the events and bytes of
// records written.
func (f *Flight) write(path string, parts map[int][]byte, names func(int) string) (events, bytes uint64, err error) {
	m := f.meta
	m.TraceID = rand.Uint64()
	w, err := tracedat.Create(path, m, f.opts)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if err != nil {
			w.Abort()
		}
	}()
	cmdlines := map[int]string{}
	for cpu, b := range parts {
		pw := w.CPU(cpu)
		var st CPUStats
		err := eachSample(b, func(ts uint64, rec []byte, lost uint64) error {
			if rec == nil {
				pw.Lost(lost)
				st.Lost += lost
				return nil
			}
			if st.First == 0 {
				st.First = ts
			}
			st.Last = ts
			st.Events++
			events++
			bytes += uint64(len(rec))
			if len(rec) >= 8 {
				if pid := int(binary.LittleEndian.Uint32(rec[4:])); pid != 0 {
					if _, ok := cmdlines[pid]; !ok {
						cmdlines[pid] = names(pid)
					}
				}
			}
			return pw.Add(ts, rec)
		})
		if err == nil {
			err = pw.Flush()
		}
		if err != nil {
			return 0, 0, err
		}
		w.SetCPUStat(cpu, cpuStat(st))
	}
	for pid, name := range cmdlines {
		if name == "" {
			delete(cmdlines, pid)
		}
	}
	w.SetCmdlines(cmdlines)
	return events, bytes, w.Close()
}

// eachSample calls fn for each sample of b: a record (lost 0), or a lost
// mark (rec nil).
func eachSample(b []byte, fn func(ts uint64, rec []byte, lost uint64) error) error {
	for off := 0; off+bpfgen.SampleHeader <= len(b); {
		ts := binary.LittleEndian.Uint64(b[off:])
		size := binary.LittleEndian.Uint32(b[off+8:])
		off += bpfgen.SampleHeader
		if size == lostMark {
			if err := fn(0, nil, ts); err != nil {
				return err
			}
			continue
		}
		rec := b[off : off+int(size)]
		off += (int(size) + 7) &^ 7
		if err := fn(ts, rec, 0); err != nil {
			return err
		}
	}
	return nil
}

// flightCPU is the sink of one CPU of a Flight.
type flightCPU struct {
	f   *Flight
	cpu int
	// next is the earliest mark of a pending snapshot whose part of this
	// CPU is not cut yet; 0: none. A record past it cuts the part first.
	next atomic.Uint64

	mu   sync.Mutex
	segs [][]byte // oldest first, at most three
}

// Add keeps a record, cutting first the parts of snapshots marked
// before it.
func (c *flightCPU) Add(ts uint64, payload []byte) error {
	if next := c.next.Load(); next != 0 && ts > next {
		c.f.cutBefore(c, ts)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seg := c.room(bpfgen.SampleHeader + (len(payload)+7)&^7)
	var h [bpfgen.SampleHeader]byte
	binary.LittleEndian.PutUint64(h[:], ts)
	binary.LittleEndian.PutUint32(h[8:], uint32(len(payload)))
	seg = append(append(seg, h[:]...), payload...)
	seg = append(seg, make([]byte, (8-len(payload)%8)%8)...)
	c.segs[len(c.segs)-1] = seg
	return nil
}

// Lost keeps a mark of n events lost.
func (c *flightCPU) Lost(n uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seg := c.room(bpfgen.SampleHeader)
	var h [bpfgen.SampleHeader]byte
	binary.LittleEndian.PutUint64(h[:], n)
	binary.LittleEndian.PutUint32(h[8:], lostMark)
	c.segs[len(c.segs)-1] = append(seg, h[:]...)
}

// FlushPages does nothing: the flight writes files only when asked.
func (c *flightCPU) FlushPages() error { return nil }

// Flush does nothing, as FlushPages.
func (c *flightCPU) Flush() error { return nil }

// room returns the newest segment with room for n more bytes, starting
// a new one (in place of the oldest, when three are kept) if it has not.
// Call it with c.mu held.
func (c *flightCPU) room(n int) []byte {
	half := c.f.size / 2
	if k := len(c.segs); k > 0 && len(c.segs[k-1])+n <= max(half, n) {
		return c.segs[k-1]
	}
	var seg []byte
	if len(c.segs) == 3 {
		seg = c.segs[0][:0]
		c.segs = append(c.segs[:0], c.segs[1:]...)
	} else {
		seg = make([]byte, 0, half)
	}
	c.segs = append(c.segs, seg)
	return seg
}

// cut returns a copy of the last samples up to ts, at most the flight's
// size in bytes of them. Call it with c.mu not held.
func (c *flightCPU) cut(ts uint64) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	type span struct{ seg, off, end int }
	var kept []span
	for i, seg := range c.segs {
		more := eachSampleAt(seg, func(off, end int, sts uint64, lost bool) bool {
			if !lost && sts > ts {
				return false
			}
			kept = append(kept, span{i, off, end})
			return true
		})
		if !more {
			break
		}
	}
	// The last samples that fit in size bytes.
	bytes, first := 0, len(kept)
	for first > 0 && bytes+kept[first-1].end-kept[first-1].off <= c.f.size {
		first--
		bytes += kept[first].end - kept[first].off
	}
	out := make([]byte, 0, bytes)
	for _, s := range kept[first:] {
		out = append(out, c.segs[s.seg][s.off:s.end]...)
	}
	return out
}

// eachSampleAt calls fn with the bounds of each sample of b, its
// timestamp and whether it is a lost mark, while fn returns true.
func eachSampleAt(b []byte, fn func(off, end int, ts uint64, lost bool) bool) bool {
	for off := 0; off+bpfgen.SampleHeader <= len(b); {
		ts := binary.LittleEndian.Uint64(b[off:])
		size := binary.LittleEndian.Uint32(b[off+8:])
		end := off + bpfgen.SampleHeader
		lost := size == lostMark
		if !lost {
			end += (int(size) + 7) &^ 7
		}
		if !fn(off, end, ts, lost) {
			return false
		}
		off = end
	}
	return true
}
