package tracedat

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// FormatText is the text of one event's tracefs format file.
type FormatText struct {
	System string // the event's system; "ftrace" for ftrace's own events (print, function, ...)
	Text   string // events/<system>/<event>/format, verbatim
}

// Meta is what a trace.dat file says about the recording besides the
// records: the kernel's descriptions of pages and events, symbols and the
// recording's circumstances.
type Meta struct {
	PageSize    int            // ring-buffer page size in bytes (buffer_subbuf_size_kb * 1024), a power of two
	HeaderPage  string         // events/header_page, verbatim; required
	HeaderEvent string         // events/header_event, verbatim; required
	Formats     []FormatText   // formats of every event the records hold
	Kallsyms    []byte         // /proc/kallsyms, may be empty
	Printk      []byte         // printk_formats, may be empty
	Cmdlines    map[int]string // pid -> comm known when the recording starts; see SetCmdlines
	Clock       string         // trace_clock file text, the selected clock in []; "" means "[local]"
	Uname       string         // "sysname nodename release machine"
	Version     string         // the recorder's version
	CPUs        int            // CPUs of the system: CPU ids run from 0 to CPUs-1
	TraceID     uint64         // random id of the recording session
}

// WriteOptions selects the format of the file Close writes.
type WriteOptions struct {
	Version     int    // trace.dat version, 6 or 7; 0 means 7
	Compression string // "none" (or "") or "zstd"; version 6 is never compressed
}

// Writer records a trace.dat file, streaming the pages of each CPU to a
// spool file next to it until Close assembles the final file.
//
// While recording, the files on disk are:
//
//   - PATH: a version 7 trace.dat file with the metadata and no CPU data,
//     the "recording form": the initial header (compression as requested
//     for version 7, "none" for version 6), sections HEADER_INFO,
//     FTRACE_EVENTS, EVENT_FORMATS, KALLSYMS, PRINTK, CMDLINES (the
//     cmdlines of Meta) and STRINGS, and last one OPTIONS section, pointed
//     to by the header, holding options 16..20 (the CMDLINES section is
//     not named), TRACECLOCK, UNAME, VERSION, TRACEID, CPUCOUNT and a DONE
//     whose next offset is 0. It has no BUFFER option.
//   - PATH.cpuN for N from 0 to CPUCOUNT-1: the pages of CPU N, whole
//     pages of Meta.PageSize bytes back to back, exactly as the final
//     file stores them uncompressed. A final partial page, from a process
//     killed in the middle of a write, is to be ignored.
//
// Such a pair is an interrupted recording: OpenSpooled reads it and
// Recover completes it. The pages a PageWriter still buffers (up to 64
// KiB per CPU, see FlushPages) are lost if the process is killed.
//
// Close completes the recording form the same way for version 7: it
// appends to PATH a CMDLINES section (if SetCmdlines was called), a
// second OPTIONS section (CMDLINES, CPUSTAT, BUFFER for the CPUs with
// data, DONE 0) and the BUFFER section with the pages (page-aligned;
// zstd: in chunks of 10 pages), then points the first section's DONE at
// the second, syncs, and removes the spool files. The options come
// before the pages they name, so that a copy of the file cut anywhere in
// the pages still reads up to the cut. For version 6 it writes the
// whole file anew next to PATH and renames it over PATH. Until then, a
// Close cut short leaves an interrupted recording. Every file is created
// new with mode 0600 (see Create).
//
// The methods of a Writer must not be called concurrently, except that
// the PageWriters of different CPUs may be used by different goroutines.
type Writer struct {
	path   string
	f      *os.File // PATH
	meta   Meta
	opts   WriteOptions
	form   recordingForm
	cpus   []*PageWriter
	spools []*os.File
	stats  []string // CPUSTAT text per CPU, "" if not set

	cmdlines    map[int]string
	cmdlinesSet bool // SetCmdlines was called
	closed      bool // Close was called
	done        bool // Close succeeded
}

// recordingForm says where the parts of PATH's recording form are.
type recordingForm struct {
	end         int64 // end of the recording form, where the tail goes
	cmdlinesOff int64 // CMDLINES section header, 0 if none
}

// Create creates the trace.dat file path (mode 0600) and its spool files
// path.cpuN, one per CPU, and writes the metadata of m into path. Feed
// the records of CPU n to w.CPU(n), then call Close to write the final
// file, or Abort to remove everything.
//
// Each file is new, created without following a symbolic link. An old
// regular file of the running user at one of the names is removed
// first; anything else there (a symbolic link, a named pipe, a device,
// a directory, another user's file) makes Create fail, before it
// creates or removes anything, with an error wrapping
// ErrNotReplaceable.
func Create(path string, m Meta, o WriteOptions) (*Writer, error) {
	if err := o.normalize(); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	w := &Writer{path: path, meta: m, opts: o, cmdlines: m.Cmdlines, stats: make([]string, m.CPUs)}
	if err := w.create(); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// create creates the files; its errors name the file they are about.
func (w *Writer) create() error {
	names := []string{w.path}
	for cpu := range w.meta.CPUs {
		names = append(names, spoolPath(w.path, cpu))
	}
	// Replace nothing if one of the names is refused.
	for _, name := range names {
		if err := checkReplaceable(name); err != nil {
			return err
		}
	}
	f, err := createFile(w.path)
	if err != nil {
		return err
	}
	w.f = f
	for _, name := range names[1:] {
		sf, err := createFile(name)
		if err != nil {
			return err
		}
		w.spools = append(w.spools, sf)
		w.cpus = append(w.cpus, NewPageWriter(sf, w.meta.PageSize))
	}
	comp := w.opts.Compression
	if w.opts.Version == 6 {
		comp = compressionNone
	}
	z, err := newCompressor(comp)
	if err != nil {
		return fmt.Errorf("create %s: %w", w.path, err)
	}
	defer z.close()
	form, b, err := encodeRecordingForm(&w.meta, z)
	if err != nil {
		return fmt.Errorf("create %s: %w", w.path, err)
	}
	w.form = form
	if _, err := f.Write(b); err != nil {
		return fileError("write metadata to", w.path, err)
	}
	return nil
}

// spoolPath returns the name of CPU cpu's spool file.
func spoolPath(path string, cpu int) string {
	return path + ".cpu" + strconv.Itoa(cpu)
}

func (o *WriteOptions) normalize() error {
	switch o.Version {
	case 0:
		o.Version = 7
	case 6, 7:
	default:
		return fmt.Errorf("file version %d: %w (want 6 or 7)", o.Version, errors.ErrUnsupported)
	}
	switch o.Compression {
	case "", compressionNone:
		o.Compression = compressionNone
	case compressionZstd:
		if o.Version == 6 {
			return errors.New("compression zstd needs file version 7")
		}
	default:
		return fmt.Errorf("compression %q: %w (want none or zstd)", o.Compression, errors.ErrUnsupported)
	}
	return nil
}

func (m *Meta) check() error {
	switch {
	case m.PageSize < minPageSize || m.PageSize > maxPageSize || m.PageSize&(m.PageSize-1) != 0:
		return fmt.Errorf("page size %d: want a power of two from %d to %d", m.PageSize, minPageSize, maxPageSize)
	case m.CPUs < 1 || m.CPUs > maxCPUs:
		return fmt.Errorf("cpu count %d out of range", m.CPUs)
	case m.HeaderPage == "" || m.HeaderEvent == "":
		return errors.New("header_page or header_event text missing")
	}
	return nil
}

// CPU returns the page encoder of CPU cpu, which writes to its spool
// file. cpu must be in [0, Meta.CPUs). Call its FlushPages now and then
// (from the goroutine that adds its records) so that a killed recording
// loses little.
func (w *Writer) CPU(cpu int) *PageWriter { return w.cpus[cpu] }

// SetCPUStat sets the text of CPU cpu's per_cpu/cpuN/stats file, stored
// by Close in a CPUSTAT option ("CPU: N\n" + text). cpu must be in [0,
// Meta.CPUs).
func (w *Writer) SetCPUStat(cpu int, text string) { w.stats[cpu] = text }

// SetCmdlines sets the pid -> comm table Close stores, replacing
// Meta.Cmdlines.
func (w *Writer) SetCmdlines(m map[int]string) {
	w.cmdlines, w.cmdlinesSet = m, true
}

// Close writes the pages still buffered and the final file, then removes
// the spool files. If it fails, path and its spool files are left as an
// interrupted recording (see Recover), and Abort removes them.
func (w *Writer) Close() error {
	if w.closed {
		return errors.New("close: writer already closed")
	}
	w.closed = true
	err := w.finish()
	// The final file is synced: errors of closing tell nothing more.
	for _, sf := range w.spools {
		sf.Close()
	}
	w.f.Close()
	if err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	w.done = true
	if err := removeSpools(w.path, w.meta.CPUs); err != nil {
		return fmt.Errorf("close %s: remove spool files: %w", w.path, err)
	}
	return nil
}

func (w *Writer) finish() error {
	for cpu, pw := range w.cpus {
		if err := pw.Flush(); err != nil {
			return fmt.Errorf("cpu %d: %w", cpu, err)
		}
	}
	data, err := spoolData(w.spools, w.meta.PageSize)
	if err != nil {
		return err
	}
	if w.opts.Version == 6 {
		return w.finishV6(data)
	}
	z, err := newCompressor(w.opts.Compression)
	if err != nil {
		return err
	}
	defer z.close()
	t := &tail{
		base:     w.form.end,
		pageSize: w.meta.PageSize,
		clock:    selectedClock(clockText(&w.meta)),
		cmdOff:   w.form.cmdlinesOff,
		stats:    cpuStats(w.stats),
		cpus:     data,
	}
	if w.cmdlinesSet {
		t.cmdlines = cmdlinesBlock(w.cmdlines)
	}
	if err := writeTail(w.f, t, z); err != nil {
		return err
	}
	return w.f.Sync()
}

// finishV6 writes the version 6 file next to path and renames it over
// path.
func (w *Writer) finishV6(data []spool) error {
	tmp, err := createTemp(w.path)
	if err != nil {
		return err
	}
	err = writeV6(tmp, &w.meta, w.cmdlines, cpuStats(w.stats), data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), w.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// cpuStats returns the CPUSTAT payloads of the CPUs whose stats are set.
func cpuStats(stats []string) []string {
	var out []string
	for cpu, s := range stats {
		if s != "" {
			out = append(out, "CPU: "+strconv.Itoa(cpu)+"\n"+s)
		}
	}
	return out
}

// removeSpools removes the spool files of path's CPUs.
func removeSpools(path string, cpus int) error {
	var errs []error
	for cpu := range cpus {
		if err := os.Remove(spoolPath(path, cpu)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Abort stops the recording and removes path and its spool files, those
// that Create made. After
// a successful Close it does nothing, so it can be deferred right after
// Create.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.closed = true
	// Remove only what Create made: a refused file stays.
	for cpu, sf := range w.spools {
		sf.Close()
		os.Remove(spoolPath(w.path, cpu))
	}
	if w.f != nil {
		w.f.Close()
		os.Remove(w.path)
	}
}

// spool is the data of one CPU: whole pages at the start of a file.
type spool struct {
	cpu  int
	r    io.ReaderAt
	size int64 // bytes of whole pages
}

// spoolData returns the CPUs whose spool files hold at least one page.
func spoolData(files []*os.File, pageSize int) ([]spool, error) {
	var out []spool
	for cpu, f := range files {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if n := st.Size() / int64(pageSize) * int64(pageSize); n > 0 {
			out = append(out, spool{cpu: cpu, r: f, size: n})
		}
	}
	return out, nil
}
