package tracedat

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// This file encodes what the Writer writes, in the layout types.go
// describes, little endian, for a kernel with 8-byte longs.

const (
	chunkPages   = 10                   // pages per zstd chunk of CPU data, as trace-cmd
	zstdVersion  = "klauspost/compress" // compression version string of zstd files
	defaultClock = "[local]"
	copyBufBytes = 1 << 20
)

// Section descriptions: offsets into the STRINGS section.
var (
	sectionStrings = []string{"headers", "ftrace events", "events format", "kallsyms",
		"printk", "command lines", "options", "buffer flyrecord ", "strings"}
	sectionDesc = func() map[OptionID]uint32 {
		ids := []OptionID{OptionHeaderInfo, OptionFtraceEvents, OptionEventFormats, OptionKallsyms,
			OptionPrintk, OptionCmdlines, OptionDone, OptionBuffer, OptionStrings}
		m := map[OptionID]uint32{}
		off := 0
		for i, s := range sectionStrings {
			m[ids[i]] = uint32(off)
			off += len(s) + 1
		}
		return m
	}()
)

// enc appends little-endian values to a byte slice.
type enc struct{ b []byte }

func (e *enc) u16(v uint16)      { e.b = binary.LittleEndian.AppendUint16(e.b, v) }
func (e *enc) u32(v uint32)      { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64)      { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *enc) str(s string)      { e.b = append(e.b, s...) }
func (e *enc) cstr(s string)     { e.b = append(append(e.b, s...), 0) }
func (e *enc) bytes(b []byte)    { e.b = append(e.b, b...) }
func (e *enc) pos() int64        { return int64(len(e.b)) }
func (e *enc) put64(at, v int64) { binary.LittleEndian.PutUint64(e.b[at:], uint64(v)) }

// option appends an option record.
func (e *enc) option(id OptionID, data []byte) {
	e.u16(uint16(id))
	e.u32(uint32(len(data)))
	e.bytes(data)
}

// stringOption appends an option whose payload is a C string.
func (e *enc) stringOption(id OptionID, s string) {
	e.option(id, append([]byte(s), 0))
}

// u64Option appends an option whose payload is a u64.
func (e *enc) u64Option(id OptionID, v uint64) {
	e.option(id, binary.LittleEndian.AppendUint64(nil, v))
}

// initialHeader appends the initial header up to the page size (v7:
// through the compression version).
func (e *enc) initialHeader(version int, pageSize int, comp string) {
	e.str(magic)
	e.cstr(strconv.Itoa(version))
	e.b = append(e.b, 0, 8) // little endian, 8-byte long
	e.u32(uint32(pageSize))
	if version == 7 {
		e.cstr(comp)
		if comp == compressionZstd {
			e.cstr(zstdVersion)
		} else {
			e.cstr("")
		}
	}
}

// compressor compresses section bodies and CPU data with zstd; a nil
// *compressor stands for no compression.
type compressor struct{ z *zstd.Encoder }

func newCompressor(name string) (*compressor, error) {
	if name != compressionZstd {
		return nil, nil
	}
	z, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return &compressor{z: z}, nil
}

func (c *compressor) close() {
	if c != nil {
		c.z.Close()
	}
}

// frame appends u32 compressed size, u32 uncompressed size and the zstd
// frame of src to dst: a compressed section body or one chunk of pages.
func (c *compressor) frame(dst, src []byte) []byte {
	at := len(dst)
	dst = append(dst, make([]byte, 8)...)
	dst = c.z.EncodeAll(src, dst)
	binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at-8))
	binary.LittleEndian.PutUint32(dst[at+4:], uint32(len(src)))
	return dst
}

// section appends a v7 section with the given body, compressed if c is
// not nil, and returns the offset of its header.
func (e *enc) section(id OptionID, body []byte, c *compressor) int64 {
	off := e.pos()
	var flags uint16
	if c != nil {
		flags = SectionCompressed
		body = c.frame(nil, body)
	}
	e.sectionHeader(id, flags, uint64(len(body)))
	e.bytes(body)
	return off
}

func (e *enc) sectionHeader(id OptionID, flags uint16, size uint64) {
	e.u16(uint16(id))
	e.u16(flags)
	e.u32(sectionDesc[id])
	e.u64(size)
}

// Metadata blocks (types.go).

func headerInfoBlock(m *Meta) []byte {
	var e enc
	e.str(labelHeaderPage)
	e.u64(uint64(len(m.HeaderPage)))
	e.str(m.HeaderPage)
	e.str(labelHeaderEvent)
	e.u64(uint64(len(m.HeaderEvent)))
	e.str(m.HeaderEvent)
	return e.b
}

func ftraceBlock(m *Meta) []byte {
	var e enc
	var n uint32
	e.u32(0)
	for _, f := range m.Formats {
		if f.System == "ftrace" {
			e.u64(uint64(len(f.Text)))
			e.str(f.Text)
			n++
		}
	}
	binary.LittleEndian.PutUint32(e.b, n)
	return e.b
}

// eventsBlock stores the formats of every system but ftrace, systems in
// the order they first appear in m.Formats.
func eventsBlock(m *Meta) []byte {
	var systems []string
	bySystem := map[string][]string{}
	for _, f := range m.Formats {
		if f.System == "ftrace" {
			continue
		}
		if _, ok := bySystem[f.System]; !ok {
			systems = append(systems, f.System)
		}
		bySystem[f.System] = append(bySystem[f.System], f.Text)
	}
	var e enc
	e.u32(uint32(len(systems)))
	for _, s := range systems {
		e.cstr(s)
		e.u32(uint32(len(bySystem[s])))
		for _, t := range bySystem[s] {
			e.u64(uint64(len(t)))
			e.str(t)
		}
	}
	return e.b
}

// u32Block is a block of a u32 size and text (kallsyms, printk).
func u32Block(what string, text []byte) ([]byte, error) {
	if len(text) > math.MaxUint32 {
		return nil, fmt.Errorf("%s: %d bytes do not fit the u32 size field", what, len(text))
	}
	var e enc
	e.u32(uint32(len(text)))
	e.bytes(text)
	return e.b, nil
}

// cmdlinesBlock stores m as saved_cmdlines text, "pid comm" lines by pid.
func cmdlinesBlock(m map[int]string) []byte {
	var sb strings.Builder
	for _, pid := range slices.Sorted(maps.Keys(m)) {
		sb.WriteString(strconv.Itoa(pid))
		sb.WriteByte(' ')
		sb.WriteString(m[pid])
		sb.WriteByte('\n')
	}
	var e enc
	e.u64(uint64(sb.Len()))
	e.str(sb.String())
	return e.b
}

// selectedClock returns the clock selected in a trace_clock text (the
// word in []), "local" if there is none.
func selectedClock(text string) string {
	_, rest, ok := strings.Cut(text, "[")
	if w, _, ok2 := strings.Cut(rest, "]"); ok && ok2 && w != "" {
		return w
	}
	return "local"
}

// clockText returns the TRACECLOCK text of m.
func clockText(m *Meta) string {
	if m.Clock == "" {
		return defaultClock
	}
	return m.Clock
}

// infoOptions appends the options about the recording that are known
// when it starts.
func (e *enc) infoOptions(m *Meta) {
	e.stringOption(OptionTraceClock, clockText(m))
	if m.Uname != "" {
		e.stringOption(OptionUname, m.Uname)
	}
	if m.Version != "" {
		e.stringOption(OptionVersion, m.Version)
	}
	e.u64Option(OptionTraceID, m.TraceID)
}

func (e *enc) cpuStatOptions(stats []string) {
	for _, s := range stats {
		e.stringOption(OptionCPUStat, s)
	}
}

func (e *enc) cpuCountOption(cpus int) {
	e.option(OptionCPUCount, binary.LittleEndian.AppendUint32(nil, uint32(cpus)))
}

// encodeRecordingForm returns the recording form of m (see Writer).
func encodeRecordingForm(m *Meta, c *compressor) (recordingForm, []byte, error) {
	kallsyms, err := u32Block("kallsyms", m.Kallsyms)
	if err != nil {
		return recordingForm{}, nil, err
	}
	printk, err := u32Block("printk formats", m.Printk)
	if err != nil {
		return recordingForm{}, nil, err
	}
	comp := compressionNone
	if c != nil {
		comp = compressionZstd
	}
	var e enc
	e.initialHeader(7, m.PageSize, comp)
	optPtr := e.pos()
	e.u64(0)
	offs := []int64{
		e.section(OptionHeaderInfo, headerInfoBlock(m), c),
		e.section(OptionFtraceEvents, ftraceBlock(m), c),
		e.section(OptionEventFormats, eventsBlock(m), c),
		e.section(OptionKallsyms, kallsyms, c),
		e.section(OptionPrintk, printk, c),
	}
	form := recordingForm{cmdlinesOff: e.section(OptionCmdlines, cmdlinesBlock(m.Cmdlines), c)}
	var s enc
	for _, str := range sectionStrings {
		s.cstr(str)
	}
	e.section(OptionStrings, s.b, c)

	var o enc
	for i, off := range offs {
		o.u64Option(OptionHeaderInfo+OptionID(i), uint64(off))
	}
	o.infoOptions(m)
	o.cpuCountOption(m.CPUs)
	o.u64Option(OptionDone, 0)
	e.put64(optPtr, e.section(OptionDone, o.b, nil))
	form.end = e.pos()
	return form, e.b, nil
}

// tail is what completes a recording form into a final version 7 file.
type tail struct {
	base     int64  // end of the recording form: the tail starts here
	pageSize int    // ring-buffer page size
	clock    string // clock of the top instance
	cmdlines []byte // a CMDLINES block to append, or nil to keep cmdOff
	cmdOff   int64  // the recording form's CMDLINES section, 0 if none
	stats    []string
	cpus     []spool
}

// bufferEntry places the data of one CPU in the BUFFER section.
type bufferEntry struct {
	cpu  int
	off  int64 // page-aligned offset of the data (compressed: of the chunk count)
	size int64 // bytes of pages; compressed: sum of 8 + compressed size over the chunks
}

// alignUp rounds off up to a multiple of n.
func alignUp(off int64, n int) int64 {
	return (off + int64(n) - 1) / int64(n) * int64(n)
}

// optionsTail returns the second options section: CMDLINES, CPUSTAT,
// the top instance's BUFFER option and DONE 0.
func (t *tail) optionsTail(cmdOff, bufOff int64, entries []bufferEntry) []byte {
	var o enc
	if cmdOff != 0 {
		o.u64Option(OptionCmdlines, uint64(cmdOff))
	}
	o.cpuStatOptions(t.stats)
	var b enc
	b.u64(uint64(bufOff))
	b.cstr("") // the top instance
	b.cstr(t.clock)
	b.u32(uint32(t.pageSize))
	b.u32(uint32(len(entries)))
	for _, en := range entries {
		b.u32(uint32(en.cpu))
		b.u64(uint64(en.off))
		b.u64(uint64(en.size))
	}
	o.option(OptionBuffer, b.b)
	o.u64Option(OptionDone, 0)
	var e enc
	e.section(OptionDone, o.b, nil)
	return e.b
}

// writeTail appends the tail to f, whose recording form ends at t.base,
// then links it from the recording form's DONE option. Until that last
// write, f is still an interrupted recording.
//
// The second options section goes before the CPU data, which it names:
// the BUFFER option's size does not depend on the offsets it holds, so
// its place is known before the data is written, and a file cut anywhere
// in its data still leads to the pages before the cut.
func writeTail(f *os.File, t *tail, c *compressor) error {
	off := t.base
	cmdOff := t.cmdOff
	if t.cmdlines != nil {
		var e enc
		e.section(OptionCmdlines, t.cmdlines, c)
		if _, err := f.WriteAt(e.b, off); err != nil {
			return fmt.Errorf("write cmdlines: %w", err)
		}
		cmdOff = off
		off += e.pos()
	}
	optOff := off
	bufOff := optOff + int64(len(t.optionsTail(cmdOff, 0, make([]bufferEntry, len(t.cpus)))))
	entries, err := writeBuffer(f, t, bufOff, c)
	if err != nil {
		return fmt.Errorf("write cpu data: %w", err)
	}
	opts := t.optionsTail(cmdOff, bufOff, entries)
	if _, err := f.WriteAt(opts, optOff); err != nil {
		return fmt.Errorf("write options: %w", err)
	}
	var next [8]byte
	binary.LittleEndian.PutUint64(next[:], uint64(optOff))
	if _, err := f.WriteAt(next[:], t.base-8); err != nil {
		return fmt.Errorf("link options: %w", err)
	}
	return nil
}

// writeBuffer writes the BUFFER section at off and returns its CPU
// entries, one per spool of t.
func writeBuffer(f *os.File, t *tail, off int64, c *compressor) ([]bufferEntry, error) {
	var flags uint16
	if c != nil {
		flags = SectionCompressed
	}
	pos := off + sectionHeaderSize
	var entries []bufferEntry
	for _, sp := range t.cpus {
		pos = alignUp(pos, t.pageSize)
		var n, size int64
		var err error
		if c != nil {
			n, size, err = writeChunks(f, pos, sp, t.pageSize, c)
		} else {
			n, size, err = copySpool(f, pos, sp)
		}
		if err != nil {
			return nil, fmt.Errorf("cpu %d: %w", sp.cpu, err)
		}
		entries = append(entries, bufferEntry{cpu: sp.cpu, off: pos, size: size})
		pos += n
	}
	var h enc
	h.sectionHeader(OptionBuffer, flags, uint64(pos-off-sectionHeaderSize))
	if _, err := f.WriteAt(h.b, off); err != nil {
		return nil, err
	}
	return entries, nil
}

// copySpool copies sp's pages to f at off.
func copySpool(f *os.File, off int64, sp spool) (n, size int64, err error) {
	buf := make([]byte, min(copyBufBytes, sp.size))
	for n < sp.size {
		b := buf[:min(int64(len(buf)), sp.size-n)]
		if _, err := sp.r.ReadAt(b, n); err != nil {
			return 0, 0, err
		}
		if _, err := f.WriteAt(b, off+n); err != nil {
			return 0, 0, err
		}
		n += int64(len(b))
	}
	return n, n, nil
}

// writeChunks writes sp's pages to f at off as a u32 chunk count and
// zstd chunks of up to chunkPages pages. It returns the bytes written and
// the size the BUFFER option states: the chunks without the count.
func writeChunks(f *os.File, off int64, sp spool, pageSize int, c *compressor) (n, size int64, err error) {
	chunk := int64(chunkPages * pageSize)
	count := (sp.size + chunk - 1) / chunk
	var e enc
	e.u32(uint32(count))
	if _, err := f.WriteAt(e.b, off); err != nil {
		return 0, 0, err
	}
	n = 4
	src := make([]byte, min(chunk, sp.size))
	var dst []byte
	for at := int64(0); at < sp.size; at += chunk {
		src = src[:min(chunk, sp.size-at)]
		if _, err := sp.r.ReadAt(src, at); err != nil {
			return 0, 0, err
		}
		dst = c.frame(dst[:0], src)
		if _, err := f.WriteAt(dst, off+n); err != nil {
			return 0, 0, err
		}
		n += int64(len(dst))
	}
	return n, n - 4, nil
}

// writeV6 writes a complete version 6 file to f.
func writeV6(f *os.File, m *Meta, cmdlines map[int]string, stats []string, cpus []spool) error {
	kallsyms, err := u32Block("kallsyms", m.Kallsyms)
	if err != nil {
		return err
	}
	printk, err := u32Block("printk formats", m.Printk)
	if err != nil {
		return err
	}
	var e enc
	e.initialHeader(6, m.PageSize, "")
	e.bytes(headerInfoBlock(m))
	e.bytes(ftraceBlock(m))
	e.bytes(eventsBlock(m))
	e.bytes(kallsyms)
	e.bytes(printk)
	e.bytes(cmdlinesBlock(cmdlines))
	e.u32(uint32(m.CPUs))
	e.str(labelOptions)
	e.infoOptions(m)
	e.cpuStatOptions(stats)
	e.cpuCountOption(m.CPUs)
	e.u16(uint16(OptionDone))
	e.str(labelFlyrecord)
	table := e.pos()
	e.b = append(e.b, make([]byte, 16*m.CPUs)...)
	clock := "[" + selectedClock(clockText(m)) + "]"
	e.u64(uint64(len(clock)))
	e.str(clock)

	pos := e.pos()
	for _, sp := range cpus {
		pos = alignUp(pos, m.PageSize)
		e.put64(table+16*int64(sp.cpu), pos)
		e.put64(table+16*int64(sp.cpu)+8, sp.size)
		if _, _, err := copySpool(f, pos, sp); err != nil {
			return fmt.Errorf("write cpu %d data: %w", sp.cpu, err)
		}
		pos += sp.size
	}
	if _, err := f.WriteAt(e.b, 0); err != nil {
		return fmt.Errorf("write metadata: %w", err)
	}
	if len(cpus) == 0 {
		// trace-cmd dump reads 10 bytes past the CPU table and clock,
		// where the pages would start.
		return f.Truncate(alignUp(pos+10, m.PageSize))
	}
	return nil
}
