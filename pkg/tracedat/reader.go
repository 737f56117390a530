package tracedat

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Limits on values that size allocations or loops.
const (
	maxPageSize = 1 << 27 // the commit field has 27 bits of size
	maxCPUs     = 1 << 16 // CPU table entries (the kernel's NR_CPUS is at most 8192)
	maxSections = 1 << 12 // options sections in one chain
)

// Open opens the trace.dat file at path and reads its metadata. The file
// stays open for (*File).Records until Close. A pipe or a character
// device at path (as /dev/stdin is in a pipeline) is read to its end
// first, with ReadStream.
func Open(path string) (*File, error) {
	fh, st, err := openInput(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		defer fh.Close()
		f, err := ReadStream(fh)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		return f, nil
	}
	f, err := Read(fh, st.Size())
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	f.closer = fh
	return f, nil
}

// ReadStream reads a trace.dat file from r, a stream such as a pipe: a
// trace.dat file is read at any offset, so r is copied to its end into
// a new file in the temporary directory (created as the writer creates
// files, mode 0600, never through a link), which is unlinked at once:
// nothing is left behind, and Close frees it.
func ReadStream(r io.Reader) (*File, error) {
	tmp, err := createTemp(filepath.Join(os.TempDir(), "gtrace-stream"))
	if err != nil {
		return nil, err
	}
	if err := os.Remove(tmp.Name()); err != nil {
		tmp.Close()
		return nil, err
	}
	n, err := io.Copy(tmp, r)
	if err != nil {
		tmp.Close()
		return nil, fmt.Errorf("copy to a temporary file: %w", err)
	}
	f, err := Read(tmp, n)
	if err != nil {
		tmp.Close()
		return nil, err
	}
	f.closer = tmp
	return f, nil
}

// streamed reports whether a file of mode m is read as a stream, by
// ReadStream: a pipe or a character device.
func streamed(m fs.FileMode) bool {
	return m&fs.ModeNamedPipe != 0 || m&fs.ModeCharDevice != 0
}

// openInput opens path for reading if it is a regular file, a pipe or a
// character device. A pipe is opened without waiting for a writer (one
// without a writer reads as an empty file).
func openInput(path string) (*os.File, fs.FileInfo, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := fh.Stat()
	if err == nil && !st.Mode().IsRegular() && !streamed(st.Mode()) {
		err = &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("is %s: a trace.dat file is a regular file or a pipe", fileKind(st.Mode()))}
	}
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	return fh, st, nil
}

// openRegular opens path for reading if it is a regular file: the parts
// of an interrupted recording are read at any offset, in place.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	fh, st, err := openInput(path)
	if err == nil && !st.Mode().IsRegular() {
		fh.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("is %s: an interrupted recording is a regular file", fileKind(st.Mode()))}
	}
	return fh, st, err
}

// Close closes the file opened by Open. It does nothing for a File made
// by Read. Iterators must not be used after Close.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c.Close()
}

// Read reads the metadata of the trace.dat file held by r, which is size
// bytes long. r must stay readable while records are read.
func Read(r io.ReaderAt, size int64) (*File, error) {
	rd := &reader{
		f: &File{
			Events:   map[int]*Event{},
			Cmdlines: map[int]string{},
			r:        r,
			size:     size,
			topIndex: -1,
			damage:   &damageLog{},
			progress: &progress{},
		},
		r:        r,
		size:     size,
		sections: map[OptionID]int64{},
	}
	if err := rd.read(); err != nil {
		return nil, err
	}
	return rd.f, nil
}

// reader holds the state of one Read.
type reader struct {
	f     *File
	r     io.ReaderAt
	size  int64
	order binary.ByteOrder

	headerLong int                // sizeof(long) byte of the initial header
	cpus       int                // v6: CPU count after the metadata
	cpuCount   int                // CPUCOUNT option, -1 if none
	clock      string             // [word] of the TRACECLOCK option
	sawClock   bool               // a TRACECLOCK option was seen (v6: the clock blob follows the CPU table)
	sections   map[OptionID]int64 // v7: offsets of the metadata sections
	v6Buffers  []v6Buf            // v6 BUFFER options
	metaEnd    int64
}

// v6Buf is a v6 BUFFER option: an instance's CPU table is at off.
type v6Buf struct {
	name string
	off  uint64
}

func (rd *reader) read() error {
	if rd.size < 0 {
		return fmt.Errorf("negative file size %d", rd.size)
	}
	rd.cpuCount = -1
	d, err := rd.readHeader()
	if errors.Is(err, ErrEmpty) || errors.Is(err, ErrNotTraceDat) {
		return err // about the file as a whole
	}
	if err != nil {
		return fmt.Errorf("read header: %w", err)
	}
	if rd.f.Version == 6 {
		err = rd.readV6(d)
	} else {
		err = rd.readV7(d)
	}
	if err != nil {
		return err
	}
	return rd.finish()
}

// readHeader reads the initial header and returns a decoder placed after it.
func (rd *reader) readHeader() (*decoder, error) {
	f := rd.f
	if rd.size == 0 {
		return nil, ErrEmpty
	}
	d := newFileDecoder(rd.r, rd.size, 0, binary.LittleEndian)
	if rd.size < int64(len(magic)) {
		// Cut short in its magic, or not a trace.dat file at all.
		b := make([]byte, rd.size)
		if _, err := rd.r.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if !strings.HasPrefix(magic, string(b)) {
			return nil, fmt.Errorf("%w (it starts with %q)", ErrNotTraceDat, b)
		}
	}
	if b := d.need(int64(len(magic)), "magic"); b != nil && string(b) != magic {
		return nil, fmt.Errorf("%w (it starts with %q)", ErrNotTraceDat, b)
	}
	vpos := d.pos
	ver := d.cstring("version")
	if d.err != nil {
		return nil, d.err
	}
	v, err := strconv.Atoi(ver)
	if err != nil || (v != 6 && v != 7) {
		return nil, fmt.Errorf("at offset %#x: file version %q: %w (want 6 or 7)", vpos, ver, errors.ErrUnsupported)
	}
	f.Version = v
	epos := d.pos
	b := d.need(2, "endianness and long size")
	if b == nil {
		return nil, d.err
	}
	switch b[0] {
	case 0:
		rd.order = binary.LittleEndian
	case 1:
		rd.order = binary.BigEndian
		f.BigEndian = true
	default:
		return nil, fmt.Errorf("at offset %#x: endianness byte %d, want 0 or 1", epos, b[0])
	}
	rd.headerLong = int(b[1])
	d.order = rd.order
	ppos := d.pos
	ps := d.u32("page size")
	if d.err != nil {
		return nil, d.err
	}
	if ps == 0 || ps > maxPageSize {
		return nil, fmt.Errorf("at offset %#x: page size %d out of range", ppos, ps)
	}
	f.PageSize = int(ps)
	f.Compression = compressionNone
	if v == 7 {
		cpos := d.pos
		f.Compression = d.cstring("compression name")
		f.CompressionVersion = d.cstring("compression version")
		if d.err != nil {
			return nil, d.err
		}
		if f.Compression != compressionNone && f.Compression != compressionZstd {
			return nil, fmt.Errorf("at offset %#x: compression %q: %w (want none or zstd)", cpos, f.Compression, errors.ErrUnsupported)
		}
	}
	rd.metaEnd = d.pos
	return d, nil
}

// readV7 follows the chain of options sections; the options name the
// metadata sections and the CPU data.
func (rd *reader) readV7(d *decoder) error {
	pos := d.pos
	next := d.u64("first options offset")
	if d.err != nil {
		return fmt.Errorf("read header: %w", d.err)
	}
	rd.metaEnd = d.pos
	seen := map[uint64]bool{}
	for next != 0 {
		if seen[next] || len(seen) >= maxSections {
			return fmt.Errorf("options chain from offset %#x loops back to %#x", pos, next)
		}
		seen[next] = true
		off, err := rd.offset(next, "options section")
		if err != nil {
			return fmt.Errorf("read options: at offset %#x: %w", pos, err)
		}
		pos = off
		next, err = rd.readOptionsSection(off)
		if err != nil {
			return fmt.Errorf("read options section at %#x: %w", off, err)
		}
	}
	if _, ok := rd.sections[OptionHeaderInfo]; !ok {
		return errors.New("no HEADER_INFO option: the file has no header_page")
	}
	return rd.readMetaSections()
}

// offset converts a u64 file offset read at some position.
func (rd *reader) offset(v uint64, what string) (int64, error) {
	if v > uint64(rd.size) {
		return 0, fmt.Errorf("%s offset %#x is past the end of the file (%d bytes): %w", what, v, rd.size, ErrTruncated)
	}
	return int64(v), nil
}

// section reads the header of the v7 section at off, which must have id
// want, and returns a decoder over its body (decompressed if need be).
func (rd *reader) section(off int64, want OptionID) (*decoder, error) {
	h := newFileDecoder(rd.r, rd.size, off, rd.order)
	id := OptionID(h.u16("section id"))
	flags := h.u16("section flags")
	h.u32("section description")
	size := h.u64("section size")
	if h.err != nil {
		return nil, h.err
	}
	if id != want {
		return nil, fmt.Errorf("at offset %#x: section id %d (%v), want %d (%v)", off, id, id, want, want)
	}
	body := h.pos
	if size > uint64(rd.size-body) {
		return nil, fmt.Errorf("at offset %#x: section size %d runs past the end of the file (%d bytes): %w", off+8, size, rd.size, ErrTruncated)
	}
	end := body + int64(size)
	rd.metaEnd = max(rd.metaEnd, end)
	b := newFileDecoder(rd.r, end, body, rd.order)
	if flags&SectionCompressed == 0 {
		return b, nil
	}
	if rd.f.Compression != compressionZstd {
		return nil, fmt.Errorf("at offset %#x: compressed section in a file with compression %q", off, rd.f.Compression)
	}
	csize := b.u32("compressed size")
	usize := b.u32("uncompressed size")
	frame := b.need(int64(csize), "compressed body")
	if b.err != nil {
		return nil, b.err
	}
	out, err := decompress(nil, frame, int(usize))
	if err != nil {
		return nil, fmt.Errorf("at offset %#x: %w", body+8, err)
	}
	return newBodyDecoder(out, rd.order, fmt.Sprintf("the decompressed %s section at %#x", sectionName(want), off)), nil
}

// sectionName names a section kind in errors.
func sectionName(id OptionID) string {
	switch id {
	case OptionDone:
		return "options"
	case OptionBuffer:
		return "buffer"
	}
	return id.String()
}

// readOptionsSection reads the options of the v7 options section at off
// and returns the offset of the next one (0: none).
func (rd *reader) readOptionsSection(off int64) (uint64, error) {
	d, err := rd.section(off, OptionDone)
	if err != nil {
		return 0, err
	}
	for d.err == nil {
		if d.left() == 0 {
			return 0, fmt.Errorf("no DONE option before the end of the section at %s", d.at(d.pos))
		}
		pos := d.pos
		id := OptionID(d.u16("option id"))
		size := d.u32("option size")
		data := d.need(int64(size), fmt.Sprintf("%v option", id))
		if d.err != nil {
			break
		}
		if id == OptionDone {
			if size < 8 {
				return 0, fmt.Errorf("at %s: DONE option of %d bytes, want 8", d.at(pos), size)
			}
			return rd.order.Uint64(data), nil
		}
		if err := rd.option(id, data, d.at(pos)); err != nil {
			return 0, err
		}
	}
	return 0, d.err
}

// readV6 reads the positional v6 layout after the initial header.
func (rd *reader) readV6(d *decoder) error {
	steps := []struct {
		what string
		fn   func(*decoder)
	}{
		{"header info", rd.readHeaderInfo},
		{"ftrace formats", rd.readFtraceFormats},
		{"event formats", rd.readEventFormats},
		{"kallsyms", rd.readKallsyms},
		{"printk formats", rd.readPrintk},
		{"cmdlines", rd.readCmdlines},
	}
	for _, s := range steps {
		if s.fn(d); d.err != nil {
			return fmt.Errorf("read %s: %w", s.what, d.err)
		}
	}
	cpos := d.pos
	cpus := d.u32("cpu count")
	if d.err != nil {
		return fmt.Errorf("read cpu count: %w", d.err)
	}
	if cpus > maxCPUs {
		return fmt.Errorf("read cpu count: at offset %#x: %d is out of range", cpos, cpus)
	}
	rd.cpus = int(cpus)
	cpuData, err := rd.readV6Data(d)
	if err != nil {
		return fmt.Errorf("read cpu data: %w", err)
	}
	if rd.sawClock {
		clock := d.text(d.u64("clock size"), "clock")
		if d.err != nil {
			return fmt.Errorf("read trace clock: %w", d.err)
		}
		if w, ok := clockWord(clock); ok {
			rd.clock = w
		}
	}
	rd.metaEnd = d.pos
	rd.addBuffer(&Buffer{Name: "", PageSize: rd.f.PageSize, CPUs: cpuData})
	for _, b := range rd.v6Buffers {
		off, err := rd.offset(b.off, "buffer "+strconv.Quote(b.name))
		if err != nil {
			return fmt.Errorf("read buffer %q: %w", b.name, err)
		}
		bd := newFileDecoder(rd.r, rd.size, off, rd.order)
		cpus, err := rd.readV6Data(bd)
		if err != nil {
			return fmt.Errorf("read buffer %q: %w", b.name, err)
		}
		rd.metaEnd = max(rd.metaEnd, bd.pos)
		rd.addBuffer(&Buffer{Name: b.name, PageSize: rd.f.PageSize, CPUs: cpus})
	}
	return nil
}

// readV6Data reads an optional options list, the "flyrecord" label and a
// CPU table.
func (rd *reader) readV6Data(d *decoder) ([]CPUData, error) {
	pos := d.pos
	b := d.need(int64(len(labelFlyrecord)), "options or flyrecord label")
	if b != nil && string(b[:7]) == labelOptions[:7] {
		for d.err == nil {
			opos := d.pos
			id := OptionID(d.u16("option id"))
			if id == OptionDone || d.err != nil {
				break
			}
			size := d.u32("option size")
			data := d.need(int64(size), fmt.Sprintf("%v option", id))
			if d.err != nil {
				break
			}
			if err := rd.option(id, data, d.at(opos)); err != nil {
				return nil, err
			}
		}
		pos = d.pos
		b = d.need(int64(len(labelFlyrecord)), "flyrecord label")
	}
	if d.err != nil {
		return nil, fmt.Errorf("read options: %w", d.err)
	}
	switch {
	case string(b[:7]) == labelLatency[:7]:
		return nil, fmt.Errorf("at offset %#x: latency-format trace data: %w", pos, errors.ErrUnsupported)
	case string(b[:9]) != labelFlyrecord[:9]:
		return nil, fmt.Errorf("at offset %#x: found %q where \"flyrecord\" belongs", pos, b)
	}
	n := rd.cpus
	if rd.cpuCount >= 0 {
		// trace-cmd sizes the table by the CPUCOUNT option when present.
		n = rd.cpuCount
	}
	var cpus []CPUData
	for cpu := 0; cpu < n && d.err == nil; cpu++ {
		off := d.u64("cpu data offset")
		size := d.u64("cpu data size")
		if d.err == nil && size != 0 {
			cpus = append(cpus, rd.cpuData(cpu, off, size))
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("read cpu table: %w", d.err)
	}
	return cpus, nil
}

// cpuData converts a CPU table entry. Values past the end of the file are
// kept (clamped to MaxInt64): reading them reports the truncation.
func (rd *reader) cpuData(cpu int, off, size uint64) CPUData {
	const maxInt64 = 1<<63 - 1
	return CPUData{CPU: cpu, Offset: int64(min(off, maxInt64)), Size: int64(min(size, maxInt64))}
}

// addBuffer adds an instance; a later top instance replaces an earlier.
func (rd *reader) addBuffer(b *Buffer) {
	slices.SortFunc(b.CPUs, func(x, y CPUData) int { return cmp.Compare(x.CPU, y.CPU) })
	f := rd.f
	if b.Name == "" && f.topIndex >= 0 {
		f.Buffers[f.topIndex] = b
		return
	}
	if b.Name == "" {
		f.topIndex = len(f.Buffers)
	}
	f.Buffers = append(f.Buffers, b)
}

// finish fills in what depends on all the metadata.
func (rd *reader) finish() error {
	f := rd.f
	f.metaEnd = rd.metaEnd
	f.LongSize, f.dataOff = rd.headerLong, 0
	if long, data, ok := parseHeaderPage(f.HeaderPage); ok {
		f.LongSize, f.dataOff = long, data
	}
	if f.dataOff == 0 {
		f.dataOff = 8 + f.LongSize
	}
	f.Clock = "local"
	if f.topIndex >= 0 {
		top := f.Buffers[f.topIndex]
		f.CPUs = top.CPUs
		if top.Clock != "" {
			f.Clock = top.Clock
		}
	}
	if rd.clock != "" {
		f.Clock = rd.clock
	}
	maxCPU := -1
	for _, b := range f.Buffers {
		if b.Clock == "" {
			b.Clock = f.Clock
		}
		if len(b.CPUs) == 0 {
			continue
		}
		maxCPU = max(maxCPU, b.CPUs[len(b.CPUs)-1].CPU)
		l := f.Layout()
		l.Size = b.PageSize
		if err := l.check(); err != nil {
			return fmt.Errorf("buffer %q: %w", b.Name, err)
		}
	}
	switch {
	case rd.cpuCount >= 0:
		f.CPUCount = rd.cpuCount
	case f.Version == 6:
		f.CPUCount = rd.cpus
	default:
		f.CPUCount = maxCPU + 1
	}
	return nil
}
