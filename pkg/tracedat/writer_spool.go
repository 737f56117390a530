package tracedat

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"syscall"
)

// ErrNotSpooled is returned by OpenSpooled and Recover for a file that is
// not an interrupted recording: a complete trace.dat file, or not a
// trace.dat file at all.
var ErrNotSpooled = errors.New("not an interrupted recording")

// maxRecordingOptions bounds the options section of a recording form.
const maxRecordingOptions = 1 << 20

// interrupted describes an interrupted recording found on disk.
type interrupted struct {
	path     string
	pageSize int
	comp     string // compression of the metadata sections
	form     recordingForm
	cpus     int    // CPUCOUNT
	clock    string // selected trace clock
}

// OpenSpooled opens the interrupted recording at path (see Writer): the
// metadata in path and the whole pages of the spool files path.cpuN. The
// File reads them as they are on disk when OpenSpooled is called, as if
// the recording had been closed then without cmdlines or CPU statistics;
// it works on a recording still running too. A file that is not an
// interrupted recording returns an error wrapping ErrNotSpooled: open it
// with Open.
//
// The File reopens path and the spool files for each read, so nothing
// needs closing, and the recording must not be closed or recovered while
// the File is in use.
func OpenSpooled(path string) (*File, error) {
	in, err := readInterrupted(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	spools, err := in.spools()
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	v := in.view(spools)
	f, err := Read(v, v.size)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	f.Interrupted = true
	return f, nil
}

// Recover completes the interrupted recording at path in place, as Close
// would have (without cmdlines gathered at the end or CPU statistics),
// and removes its spool files. Pages the recording held in memory when it
// was killed are lost, and so is a final partial page of a spool file.
// A file that is not an interrupted recording returns an error wrapping
// ErrNotSpooled.
func Recover(path string) error {
	in, err := readInterrupted(path)
	if err != nil {
		return fmt.Errorf("recover %s: %w", path, err)
	}
	if err := in.recover(); err != nil {
		return fmt.Errorf("recover %s: %w", path, err)
	}
	if err := removeSpools(path, in.cpus); err != nil {
		return fmt.Errorf("recover %s: remove spool files: %w", path, err)
	}
	return nil
}

// RecoverTo writes the interrupted recording at path, completed as
// Recover completes it, to a new file out (mode 0600), and leaves path
// and its spool files as they are. trace-cmd reads out. out must not
// exist; if the recovery fails, out is removed. A file that is not an
// interrupted recording returns an error wrapping ErrNotSpooled.
func RecoverTo(path, out string) error {
	in, err := readInterrupted(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == path {
			return pe // not "recover X: open X: ..."
		}
		return fmt.Errorf("recover %s: %w", path, err)
	}
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("recover %s: %s already exists: %w (give a new file name)", path, out, fs.ErrExist)
	}
	f, err := createFile(out)
	if err != nil {
		return fmt.Errorf("recover %s: %w", path, err)
	}
	err = in.copyForm(f)
	if err == nil {
		err = in.complete(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		return fmt.Errorf("recover %s to %s: %w", path, out, err)
	}
	return nil
}

// copyForm copies the recording form of in's file to the start of f.
func (in *interrupted) copyForm(f *os.File) error {
	src, err := os.Open(in.path)
	if err != nil {
		return err
	}
	defer src.Close()
	n, err := io.Copy(f, io.NewSectionReader(src, 0, in.form.end))
	if err == nil && n != in.form.end {
		err = fmt.Errorf("copy metadata: %d of %d bytes: %w", n, in.form.end, ErrTruncated)
	}
	return err
}

func (in *interrupted) recover() error {
	// Complete only a regular file of the running user, not what a link
	// points to.
	f, err := openNoFollow(in.path, os.O_RDWR)
	if err != nil {
		return err
	}
	defer f.Close()
	// A Close killed half way may have left part of a tail.
	if err := f.Truncate(in.form.end); err != nil {
		return err
	}
	return in.complete(f)
}

// complete writes the tail of the recording to f, which holds the
// recording form and nothing after it, and syncs f.
func (in *interrupted) complete(f *os.File) error {
	data, err := in.spools()
	if err != nil {
		return err
	}
	z, err := newCompressor(in.comp)
	if err != nil {
		return err
	}
	defer z.close()
	t := &tail{base: in.form.end, pageSize: in.pageSize, clock: in.clock, cmdOff: in.form.cmdlinesOff, cpus: data}
	if err := writeTail(f, t, z); err != nil {
		return err
	}
	return f.Sync()
}

// readInterrupted reads the recording form at path.
func readInterrupted(path string) (*interrupted, error) {
	if st, err := os.Stat(path); err == nil && streamed(st.Mode()) {
		return nil, ErrNotSpooled // not opened: a writer would lose its reader
	}
	f, st, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	in := &interrupted{path: path}
	if err := in.parse(f, st.Size()); err != nil {
		return nil, err
	}
	return in, nil
}

// parse checks the initial header, walks the sections up to the options
// section the header points to and reads that section's options.
func (in *interrupted) parse(r io.ReaderAt, size int64) error {
	head := make([]byte, min(size, 512))
	if _, err := r.ReadAt(head, 0); err != nil {
		return fmt.Errorf("read header: %w", err)
	}
	h := head
	if len(h) < len(magic) || string(h[:len(magic)]) != magic {
		return fmt.Errorf("%w: not a trace.dat file", ErrNotSpooled)
	}
	h = h[len(magic):]
	if len(h) < 8 || string(h[:2]) != "7\x00" {
		return fmt.Errorf("%w: not a version 7 file", ErrNotSpooled)
	}
	if h[2] != 0 {
		return fmt.Errorf("%w: big-endian file", ErrNotSpooled)
	}
	in.pageSize = int(binary.LittleEndian.Uint32(h[4:]))
	if in.pageSize < minPageSize || in.pageSize > maxPageSize {
		return fmt.Errorf("page size %d out of range", in.pageSize)
	}
	h = h[8:]
	var ok bool
	if in.comp, h, ok = cutString(h); ok {
		_, h, ok = cutString(h) // compression version
	}
	if !ok || len(h) < 8 {
		return fmt.Errorf("initial header: %w", ErrTruncated)
	}
	if in.comp != compressionNone && in.comp != compressionZstd {
		return fmt.Errorf("compression %q: %w", in.comp, errors.ErrUnsupported)
	}
	first := int64(len(head) - len(h) + 8)
	optOff := int64(binary.LittleEndian.Uint64(h))

	// The sections before the options: find CMDLINES.
	var sh [sectionHeaderSize]byte
	for off := first; off != optOff; {
		if off > optOff || off+sectionHeaderSize > size {
			return fmt.Errorf("%w: section chain at %#x misses the options section at %#x", ErrNotSpooled, off, optOff)
		}
		if _, err := r.ReadAt(sh[:], off); err != nil {
			return fmt.Errorf("read section header at %#x: %w", off, err)
		}
		if OptionID(binary.LittleEndian.Uint16(sh[:])) == OptionCmdlines {
			in.form.cmdlinesOff = off
		}
		n := binary.LittleEndian.Uint64(sh[8:])
		if n > uint64(size) {
			return fmt.Errorf("section at %#x: size %d: %w", off, n, ErrTruncated)
		}
		off += sectionHeaderSize + int64(n)
	}
	if optOff+sectionHeaderSize > size {
		return fmt.Errorf("options section at %#x: %w", optOff, ErrTruncated)
	}
	if _, err := r.ReadAt(sh[:], optOff); err != nil {
		return fmt.Errorf("read options section at %#x: %w", optOff, err)
	}
	n := binary.LittleEndian.Uint64(sh[8:])
	if OptionID(binary.LittleEndian.Uint16(sh[:])) != OptionDone || n > maxRecordingOptions || n > uint64(size-optOff-sectionHeaderSize) {
		return fmt.Errorf("%w: bad options section at %#x", ErrNotSpooled, optOff)
	}
	body := make([]byte, n)
	if _, err := r.ReadAt(body, optOff+sectionHeaderSize); err != nil {
		return fmt.Errorf("read options section at %#x: %w", optOff, err)
	}
	in.form.end = optOff + sectionHeaderSize + int64(n)
	return in.options(body)
}

// options reads the options of the recording form. The last one must be
// a DONE that ends the chain, and none may name CPU data.
func (in *interrupted) options(b []byte) error {
	in.clock = "local"
	for len(b) >= 6 {
		id := OptionID(binary.LittleEndian.Uint16(b))
		size := binary.LittleEndian.Uint32(b[2:])
		if uint64(size) > uint64(len(b)-6) {
			break
		}
		data := b[6 : 6+size]
		b = b[6+size:]
		switch id {
		case OptionDone:
			if size != 8 || len(b) != 0 || binary.LittleEndian.Uint64(data) != 0 {
				return fmt.Errorf("%w: the options go on past the first section", ErrNotSpooled)
			}
			if in.cpus == 0 {
				return errors.New("no CPUCOUNT option")
			}
			return nil
		case OptionBuffer, OptionBufferText:
			return fmt.Errorf("%w: the file has CPU data", ErrNotSpooled)
		case OptionCPUCount:
			if size >= 4 {
				in.cpus = int(min(binary.LittleEndian.Uint32(data), maxCPUs))
			}
		case OptionTraceClock:
			s, _, _ := cutString(data)
			in.clock = selectedClock(s)
		}
	}
	return fmt.Errorf("%w: options section without DONE", ErrNotSpooled)
}

// cutString splits b after its first NUL.
func cutString(b []byte) (string, []byte, bool) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), b[i+1:], true
		}
	}
	return string(b), nil, false
}

// spools returns the CPUs whose spool files hold whole pages.
func (in *interrupted) spools() ([]spool, error) {
	var out []spool
	for cpu := range in.cpus {
		p := spoolPath(in.path, cpu)
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("spool file %s is %s", p, fileKind(st.Mode()))
		}
		if n := st.Size() / int64(in.pageSize) * int64(in.pageSize); n > 0 {
			out = append(out, spool{cpu: cpu, r: spoolReaderAt(p), size: n})
		}
	}
	return out, nil
}

// view returns the final file Recover would write, uncompressed CPU
// data, as an io.ReaderAt over the recording form and the spool files.
func (in *interrupted) view(spools []spool) *spoolView {
	t := &tail{base: in.form.end, pageSize: in.pageSize, clock: in.clock, cmdOff: in.form.cmdlinesOff}
	optOff := t.base
	bufOff := optOff + int64(len(t.optionsTail(t.cmdOff, 0, make([]bufferEntry, len(spools)))))
	pos := bufOff + sectionHeaderSize
	v := &spoolView{}
	v.add(0, in.form.end-8, pathReaderAt(in.path))
	var entries []bufferEntry
	for _, sp := range spools {
		pos = alignUp(pos, in.pageSize)
		v.add(pos, sp.size, sp.r)
		entries = append(entries, bufferEntry{cpu: sp.cpu, off: pos, size: sp.size})
		pos += sp.size
	}
	var h enc
	h.sectionHeader(OptionBuffer, 0, uint64(pos-bufOff-sectionHeaderSize))
	v.add(bufOff, sectionHeaderSize, bytes.NewReader(h.b))
	var next enc
	next.u64(uint64(optOff))
	v.add(in.form.end-8, 8, bytes.NewReader(next.b))
	opts := t.optionsTail(t.cmdOff, bufOff, entries)
	v.add(optOff, int64(len(opts)), bytes.NewReader(opts))
	slices.SortFunc(v.segs, func(a, b viewSegment) int { return cmp.Compare(a.off, b.off) })
	v.size = pos
	return v
}

// spoolView is an io.ReaderAt over pieces placed at offsets; bytes
// between them read as zeros.
type spoolView struct {
	segs []viewSegment // sorted by offset, not overlapping
	size int64
}

type viewSegment struct {
	off, size int64
	r         io.ReaderAt // read from offset 0
}

func (v *spoolView) add(off, size int64, r io.ReaderAt) {
	v.segs = append(v.segs, viewSegment{off: off, size: size, r: r})
}

// ReadAt implements io.ReaderAt.
func (v *spoolView) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= v.size {
		return 0, io.EOF
	}
	want := len(b)
	b = b[:min(int64(len(b)), v.size-off)]
	clear(b)
	for _, s := range v.segs {
		lo, hi := max(off, s.off), min(off+int64(len(b)), s.off+s.size)
		if lo >= hi {
			continue
		}
		n, err := s.r.ReadAt(b[lo-off:hi-off], lo-s.off)
		if n < int(hi-lo) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return int(lo - off), err
		}
	}
	if len(b) < want {
		return len(b), io.EOF
	}
	return len(b), nil
}

// spoolReaderAt reads the spool file at its path, opening it for each
// read: never through a symbolic link, and never blocking on a named
// pipe put in its place.
type spoolReaderAt string

func (p spoolReaderAt) ReadAt(b []byte, off int64) (int, error) {
	f, err := os.OpenFile(string(p), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("spool file %s is %s", p, fileKind(st.Mode()))
	}
	return f.ReadAt(b, off)
}

// pathReaderAt reads the file at its path, opening it for each read.
type pathReaderAt string

func (p pathReaderAt) ReadAt(b []byte, off int64) (int, error) {
	f, err := os.Open(string(p))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.ReadAt(b, off)
}
