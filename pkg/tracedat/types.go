package tracedat

import (
	"errors"
	"io"
	"strconv"

	"github.com/gtrace/gtrace/pkg/parse"
)

// This file holds the types and on-disk constants shared by the reader and
// the writer of this package.
//
// Layout summary (integers in the file's byte order, offsets absolute):
//
//	header   "\x17\x08Dtracing" version "6\0"|"7\0", u8 big-endian flag,
//	         u8 sizeof(long) of the writer, u32 page size;
//	         v7 only: compression name "\0", compression version "\0",
//	         u64 offset of the first options section
//	v6       header info, ftrace formats, event formats, kallsyms, printk,
//	         cmdlines (the metadata blocks below, in this order), u32 CPU
//	         count, optional "options  \0" + options ended by a bare u16 0,
//	         "flyrecord\0", per CPU u64 offset + u64 size, clock blob (u64
//	         size + text, present when a TRACECLOCK option was given), pages
//	v7       a chain of sections, back to back to the end of the file; each
//	         starts with u16 id, u16 flags (bit 0: compressed), u32 string
//	         offset of its description, u64 size of the body. Options
//	         sections (id 0) hold options ending with DONE, whose u64 names
//	         the next options section (0: last). Options 16..21 give the
//	         offsets of the metadata sections, BUFFER options those of the
//	         CPU data.
//
// Metadata blocks: header info = "header_page\0" u64 size text
// "header_event\0" u64 size text; ftrace formats = u32 count, count x (u64
// size, text); event formats = u32 systems, per system name "\0", u32
// count, count x (u64 size, text); kallsyms = u32 size, text; printk = u32
// size, text; cmdlines = u64 size, text. A compressed v7 section body is
// u32 compressed size, u32 uncompressed size, one zstd frame. Compressed
// CPU data is u32 chunk count, then per chunk u32 compressed size, u32
// uncompressed size (whole pages) and a zstd frame.

// Labels and magic bytes of the file format.
const (
	magic             = "\x17\x08Dtracing"
	labelHeaderPage   = "header_page\x00"
	labelHeaderEvent  = "header_event\x00"
	labelOptions      = "options  \x00" // v6: options follow
	labelFlyrecord    = "flyrecord\x00" // v6: CPU table follows
	labelLatency      = "latency  \x00" // v6: latency text follows
	sectionHeaderSize = 16              // v7 section header: id, flags, description, size
	compressionNone   = "none"
	compressionZstd   = "zstd"
)

// SectionCompressed is the v7 section flag of a compressed section body.
const SectionCompressed = 1

// OptionID identifies an option; in v7 files it also identifies the
// section whose offset the option holds (section id = option id).
type OptionID uint16

// Option and section ids, as trace-cmd numbers them.
const (
	OptionDone         OptionID = 0  // DONE: v7 u64 next options offset; also the id of options sections
	OptionDate         OptionID = 1  // DATE: string, hex µs added to timestamps
	OptionCPUStat      OptionID = 2  // CPUSTAT: string, "CPU: N\n" + per_cpu/cpuN/stats
	OptionBuffer       OptionID = 3  // BUFFER: an instance's CPU data; also the id of CPU data sections
	OptionTraceClock   OptionID = 4  // TRACECLOCK: string, the trace_clock file
	OptionUname        OptionID = 5  // UNAME: string
	OptionHook         OptionID = 6  // HOOK: string
	OptionOffset       OptionID = 7  // OFFSET: string, ns added to timestamps
	OptionCPUCount     OptionID = 8  // CPUCOUNT: u32
	OptionVersion      OptionID = 9  // VERSION: string, the tracer's version
	OptionProcMaps     OptionID = 10 // PROCMAPS: string
	OptionTraceID      OptionID = 11 // TRACEID: u64
	OptionTimeShift    OptionID = 12 // TIME_SHIFT: host-guest clock sync
	OptionGuest        OptionID = 13 // GUEST: host-guest mapping
	OptionTSC2NSec     OptionID = 14 // TSC2NSEC: TSC to ns conversion
	OptionStrings      OptionID = 15 // STRINGS: id of the strings section
	OptionHeaderInfo   OptionID = 16 // HEADER_INFO: u64 section offset
	OptionFtraceEvents OptionID = 17 // FTRACE_EVENTS: u64 section offset
	OptionEventFormats OptionID = 18 // EVENT_FORMATS: u64 section offset
	OptionKallsyms     OptionID = 19 // KALLSYMS: u64 section offset
	OptionPrintk       OptionID = 20 // PRINTK: u64 section offset
	OptionCmdlines     OptionID = 21 // CMDLINES: u64 section offset
	OptionBufferText   OptionID = 22 // BUFFER_TEXT: a latency-format instance
)

var optionNames = [...]string{
	"DONE", "DATE", "CPUSTAT", "BUFFER", "TRACECLOCK", "UNAME", "HOOK", "OFFSET",
	"CPUCOUNT", "VERSION", "PROCMAPS", "TRACEID", "TIME_SHIFT", "GUEST", "TSC2NSEC",
	"STRINGS", "HEADER_INFO", "FTRACE_EVENTS", "EVENT_FORMATS", "KALLSYMS", "PRINTK",
	"CMDLINES", "BUFFER_TEXT",
}

// String returns trace-cmd's name of the option, e.g. "CPUSTAT".
func (id OptionID) String() string {
	if int(id) < len(optionNames) {
		return optionNames[id]
	}
	return "OptionID(" + strconv.Itoa(int(id)) + ")"
}

// Option is one option record as stored in the file, in file order. The
// DONE records that end option lists are not included.
type Option struct {
	ID   OptionID
	Data []byte // the payload, in the file's byte order
}

// Event is one event format stored in the file.
type Event struct {
	// Format is the parsed format. Its System is the event's system
	// ("ftrace" for the formats of the ftrace block).
	Format *parse.Format
	// Text is the format file's text exactly as stored; for a format
	// damaged in its field list, the text before the damaged line (see
	// File.Warnings).
	Text string
}

// Buffer is one ring-buffer instance stored in the file: the top instance
// (Name "") or one made with trace-cmd -B.
type Buffer struct {
	Name       string    // instance name, "" for the top instance
	Clock      string    // trace clock of the instance
	PageSize   int       // bytes per ring-buffer page
	Compressed bool      // CPU data is stored in zstd chunks
	CPUs       []CPUData // CPUs with data, sorted by CPU id
}

// CPUData says where one CPU's ring-buffer pages are.
//
// Uncompressed, Offset is the first page and Size covers whole pages.
// Compressed, Offset is the u32 chunk count; Size is what the file says,
// which for trace-cmd is the sum of 8 + compressed size over the chunks,
// without the count. A Size of 0 means the CPU recorded nothing.
type CPUData struct {
	CPU    int
	Offset int64
	Size   int64
}

// Record is one event record of a CPU's ring buffer.
type Record struct {
	CPU int    // CPU whose buffer held the record
	TS  uint64 // timestamp in trace clock units (ns for "local"), File.TSOffset included
	// Data is the event payload, starting with the u16 common_type. It is
	// padded to 4 bytes, so it may be a little longer than the event's
	// fields. It aliases a buffer of the reader and is valid until the
	// next call that advances the reader; copy it to keep it.
	Data []byte
	// Missed is set on the first record after events were lost (the ring
	// buffer overwrote them): the number lost, or -1 if the kernel did not
	// store the count. It is 0 otherwise.
	Missed int64
}

// ErrTruncated is wrapped by the errors of reads that ran past the end of
// the file: the file was cut short.
var ErrTruncated = errors.New("file truncated")

// ErrEmpty is returned by Read for a file of no bytes.
var ErrEmpty = errors.New("empty file")

// ErrNotTraceDat is wrapped by the error of Read for a file that does not
// start with trace.dat's magic.
var ErrNotTraceDat = errors.New("not a trace.dat file")

// File is an open trace.dat file. Its exported fields describe the
// metadata; (*File).Records reads the ring-buffer data.
type File struct {
	Version            int    // file format version: 6 or 7
	BigEndian          bool   // the file (and the traced kernel) is big endian
	LongSize           int    // kernel sizeof(long): header_page's commit field size (else the initial header's)
	PageSize           int    // ring-buffer page size of the initial header
	Compression        string // "none" or "zstd" (v6 files: "none")
	CompressionVersion string // e.g. "1.5.4"; "" when uncompressed

	HeaderPage  string // text of events/header_page
	HeaderEvent string // text of events/header_event

	// Events holds every stored event format by ID, the ftrace formats
	// included. If two formats share an ID the later one in the file wins.
	Events map[int]*Event

	Kallsyms string         // /proc/kallsyms text ("" if not stored)
	Printk   string         // printk_formats text
	Cmdlines map[int]string // saved_cmdlines: pid -> comm

	Clock         string   // selected trace clock ("[word]" of TRACECLOCK, else the top buffer's), default "local"
	Uname         string   // UNAME option
	TracerVersion string   // VERSION option, e.g. "3.1.6 not-a-git-repo"
	TraceID       uint64   // TRACEID option
	CPUCount      int      // CPUs of the traced system (CPUCOUNT, else the CPU table)
	CPUStats      []string // CPUSTAT options: "CPU: N\n" + per_cpu/cpuN/stats
	TSOffset      int64    // DATE and OFFSET options: ns added to every record's timestamp

	Options []Option // every option in file order, DONE excluded

	// Buffers lists the ring-buffer instances in file order. CPUs is the
	// top instance's CPU data (nil if the file has none).
	Buffers []*Buffer
	CPUs    []CPUData

	// Interrupted is set by OpenSpooled: the file is an interrupted
	// recording, read from its metadata and spool files.
	Interrupted bool

	r        io.ReaderAt
	size     int64
	closer   io.Closer
	damage   *damageLog // what the reader skipped
	progress *progress  // how far Iterators have read
	dataOff  int        // offset of the first record in a page (from header_page)
	metaEnd  int64      // end of the last metadata byte read
	topIndex int        // index of the top instance in Buffers, -1 if none
}
