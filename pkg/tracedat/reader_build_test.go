package tracedat

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// This file builds small trace.dat files for tests: a test-only writer
// that follows the layout in types.go and makes every part optional or
// variable, so that the reader can be checked against unusual but valid
// files (sparse CPUs, several options sections, instances, big endian).

// testCPU is one CPU's pages.
type testCPU struct {
	cpu   int
	pages [][]byte
}

// testBuffer is an instance.
type testBuffer struct {
	name string
	cpus []testCPU
}

// testSystem is one system of the event formats block.
type testSystem struct {
	name    string
	formats []string
}

// testFile describes a file to build.
type testFile struct {
	version     int
	bigEndian   bool
	zstd        bool // v7: compress sections and CPU data
	chunkPages  int  // v7 zstd: pages per chunk (default 10)
	pageSize    int  // default 4096
	headerPage  string
	headerEvent string
	ftrace      []string
	systems     []testSystem
	kallsyms    string
	printk      string
	cmdlines    string
	options     []Option // extra options, in order
	// optionSections splits the v7 options over this many sections
	// (default 1); the metadata offsets go to the first.
	optionSections int
	buffers        []testBuffer // the first is the top instance if named ""
	cpuCount       int          // v6: CPU count after the metadata (default: max cpu + 1)
	v6Latency      bool         // v6: write "latency" instead of "flyrecord"
}

// readTestdata reads a file of testdata.
func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testBaseFile returns a v7 description with the real header texts and the
// sched_switch and print formats, and no data.
func testBaseFile(t testing.TB, version int) *testFile {
	return &testFile{
		version:     version,
		headerPage:  readTestdata(t, "header_page"),
		headerEvent: readTestdata(t, "header_event"),
		ftrace:      []string{readTestdata(t, "print.format")},
		systems:     []testSystem{{"sched", []string{readTestdata(t, "sched_switch.format")}}},
		kallsyms:    "ffffffff81000000 T _stext\n",
		printk:      "0xffffffff82000000 : \"hello\\n\"\n",
		cmdlines:    "1 init\n42 my prog\n",
	}
}

// testEnc appends integers in the file's byte order.
type testEnc struct {
	b     []byte
	order testOrder
}

// testOrder is what the builder needs of a byte order.
type testOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func (e *testEnc) u16(v uint16)           { e.b = e.order.AppendUint16(e.b, v) }
func (e *testEnc) u32(v uint32)           { e.b = e.order.AppendUint32(e.b, v) }
func (e *testEnc) u64(v uint64)           { e.b = e.order.AppendUint64(e.b, v) }
func (e *testEnc) str(s string)           { e.b = append(append(e.b, s...), 0) }
func (e *testEnc) raw(s string)           { e.b = append(e.b, s...) }
func (e *testEnc) put64(at int, v uint64) { e.order.PutUint64(e.b[at:], v) }
func (e *testEnc) padTo(align int) {
	for len(e.b)%align != 0 {
		e.b = append(e.b, 0)
	}
}

func (tf *testFile) order() testOrder {
	if tf.bigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

func (tf *testFile) ps() int {
	if tf.pageSize == 0 {
		return 4096
	}
	return tf.pageSize
}

// metadata blocks, as functions appending to an encoder.
func (tf *testFile) headerInfo(e *testEnc) {
	e.raw(labelHeaderPage)
	e.u64(uint64(len(tf.headerPage)))
	e.raw(tf.headerPage)
	e.raw(labelHeaderEvent)
	e.u64(uint64(len(tf.headerEvent)))
	e.raw(tf.headerEvent)
}

func (tf *testFile) ftraceBlock(e *testEnc) {
	e.u32(uint32(len(tf.ftrace)))
	for _, f := range tf.ftrace {
		e.u64(uint64(len(f)))
		e.raw(f)
	}
}

func (tf *testFile) eventsBlock(e *testEnc) {
	e.u32(uint32(len(tf.systems)))
	for _, s := range tf.systems {
		e.str(s.name)
		e.u32(uint32(len(s.formats)))
		for _, f := range s.formats {
			e.u64(uint64(len(f)))
			e.raw(f)
		}
	}
}

func (tf *testFile) kallsymsBlock(e *testEnc) { e.u32(uint32(len(tf.kallsyms))); e.raw(tf.kallsyms) }
func (tf *testFile) printkBlock(e *testEnc)   { e.u32(uint32(len(tf.printk))); e.raw(tf.printk) }
func (tf *testFile) cmdlinesBlock(e *testEnc) { e.u64(uint64(len(tf.cmdlines))); e.raw(tf.cmdlines) }

// header writes the initial header; for v7 it returns where the first
// options offset goes.
func (tf *testFile) header(e *testEnc) int {
	e.raw(magic)
	e.str(string(rune('0' + tf.version)))
	if tf.bigEndian {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
	e.b = append(e.b, 8)
	e.u32(uint32(tf.ps()))
	if tf.version == 6 {
		return 0
	}
	if tf.zstd {
		e.str("zstd")
		e.str("1.5.4")
	} else {
		e.str("none")
		e.str("")
	}
	at := len(e.b)
	e.u64(0)
	return at
}

func testZstd(t testing.TB, b []byte) []byte {
	t.Helper()
	w, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	return w.EncodeAll(b, nil)
}

// section appends a v7 section with the given body.
func (tf *testFile) section(t testing.TB, e *testEnc, id OptionID, body []byte, compress bool) int {
	at := len(e.b)
	e.u16(uint16(id))
	if compress {
		z := testZstd(t, body)
		e.u16(SectionCompressed)
		e.u32(0)
		e.u64(uint64(8 + len(z)))
		e.u32(uint32(len(z)))
		e.u32(uint32(len(body)))
		e.b = append(e.b, z...)
		return at
	}
	e.u16(0)
	e.u32(0)
	e.u64(uint64(len(body)))
	e.b = append(e.b, body...)
	return at
}

func (tf *testFile) maxCPU() int {
	n := -1
	for _, b := range tf.buffers {
		for _, c := range b.cpus {
			n = max(n, c.cpu)
		}
	}
	return n
}

// build returns the file's bytes.
func (tf *testFile) build(t testing.TB) []byte {
	t.Helper()
	if tf.version == 6 {
		return tf.buildV6(t)
	}
	return tf.buildV7(t)
}

func (tf *testFile) buildV7(t testing.TB) []byte {
	e := &testEnc{order: tf.order()}
	optAt := tf.header(e)
	blocks := []struct {
		id OptionID
		fn func(*testEnc)
	}{
		{OptionHeaderInfo, tf.headerInfo},
		{OptionFtraceEvents, tf.ftraceBlock},
		{OptionEventFormats, tf.eventsBlock},
		{OptionKallsyms, tf.kallsymsBlock},
		{OptionPrintk, tf.printkBlock},
		{OptionCmdlines, tf.cmdlinesBlock},
	}
	var opts []Option
	for _, bl := range blocks {
		body := &testEnc{order: e.order}
		bl.fn(body)
		at := tf.section(t, e, bl.id, body.b, tf.zstd)
		opts = append(opts, Option{ID: bl.id, Data: e.order.AppendUint64(nil, uint64(at))})
	}
	opts = append(opts, tf.options...)
	// CPU data sections, one per instance.
	for _, b := range tf.buffers {
		secAt := len(e.b)
		e.u16(uint16(OptionBuffer))
		if tf.zstd {
			e.u16(SectionCompressed)
		} else {
			e.u16(0)
		}
		e.u32(0)
		sizeAt := len(e.b)
		e.u64(0)
		type entry struct {
			cpu       int
			off, size uint64
		}
		var entries []entry
		for _, c := range b.cpus {
			e.padTo(tf.ps())
			off := len(e.b)
			if tf.zstd {
				per := tf.chunkPages
				if per == 0 {
					per = 10
				}
				e.u32(uint32((len(c.pages) + per - 1) / per))
				for i := 0; i < len(c.pages); i += per {
					var raw []byte
					for _, p := range c.pages[i:min(i+per, len(c.pages))] {
						raw = append(raw, p...)
					}
					z := testZstd(t, raw)
					e.u32(uint32(len(z)))
					e.u32(uint32(len(raw)))
					e.b = append(e.b, z...)
				}
				entries = append(entries, entry{c.cpu, uint64(off), uint64(len(e.b) - off - 4)})
			} else {
				for _, p := range c.pages {
					e.b = append(e.b, p...)
				}
				entries = append(entries, entry{c.cpu, uint64(off), uint64(len(e.b) - off)})
			}
		}
		e.put64(sizeAt, uint64(len(e.b)-secAt-sectionHeaderSize))
		o := &testEnc{order: e.order}
		o.u64(uint64(secAt))
		o.str(b.name)
		o.str("local")
		o.u32(uint32(tf.ps()))
		o.u32(uint32(len(entries)))
		for _, en := range entries {
			o.u32(uint32(en.cpu))
			o.u64(en.off)
			o.u64(en.size)
		}
		opts = append(opts, Option{ID: OptionBuffer, Data: o.b})
	}
	// Options sections: split opts into n parts, chained by DONE.
	n := max(tf.optionSections, 1)
	per := (len(opts) + n - 1) / n
	prevDone := optAt
	for i := 0; i < n; i++ {
		part := opts[min(i*per, len(opts)):min((i+1)*per, len(opts))]
		body := &testEnc{order: e.order}
		for _, o := range part {
			body.u16(uint16(o.ID))
			body.u32(uint32(len(o.Data)))
			body.b = append(body.b, o.Data...)
		}
		body.u16(0)
		body.u32(8)
		body.u64(0)
		at := tf.section(t, e, OptionDone, body.b, false)
		e.put64(prevDone, uint64(at))
		prevDone = len(e.b) - 8
	}
	// A strings section, as trace-cmd writes last.
	tf.section(t, e, OptionStrings, []byte("options\x00"), tf.zstd)
	return e.b
}

func (tf *testFile) buildV6(t testing.TB) []byte {
	e := &testEnc{order: tf.order()}
	tf.header(e)
	tf.headerInfo(e)
	tf.ftraceBlock(e)
	tf.eventsBlock(e)
	tf.kallsymsBlock(e)
	tf.printkBlock(e)
	tf.cmdlinesBlock(e)
	cpus := tf.cpuCount
	if cpus == 0 {
		cpus = tf.maxCPU() + 1
	}
	e.u32(uint32(cpus))
	hasClock := false
	// BUFFER options of instances point at tables written later.
	var bufAt []int
	if len(tf.options) > 0 || len(tf.buffers) > 1 {
		e.raw(labelOptions)
		for _, o := range tf.options {
			hasClock = hasClock || o.ID == OptionTraceClock
			e.u16(uint16(o.ID))
			e.u32(uint32(len(o.Data)))
			e.b = append(e.b, o.Data...)
		}
		for _, b := range tf.buffers[1:] {
			e.u16(uint16(OptionBuffer))
			e.u32(uint32(8 + len(b.name) + 1))
			bufAt = append(bufAt, len(e.b))
			e.u64(0)
			e.str(b.name)
		}
		e.u16(0)
	}
	if tf.v6Latency {
		e.raw(labelLatency)
		e.raw("# tracer: nop\n")
		return e.b
	}
	// Tables, then data; table entries are patched once the data is placed.
	type slot struct {
		at  int
		cpu testCPU
	}
	var slots []slot
	table := func(b testBuffer) {
		e.raw(labelFlyrecord)
		byCPU := map[int]testCPU{}
		for _, c := range b.cpus {
			byCPU[c.cpu] = c
		}
		for cpu := 0; cpu < cpus; cpu++ {
			if c, ok := byCPU[cpu]; ok {
				slots = append(slots, slot{len(e.b), c})
			}
			e.u64(0)
			e.u64(0)
		}
	}
	if len(tf.buffers) > 0 {
		table(tf.buffers[0])
	} else {
		table(testBuffer{})
	}
	if hasClock {
		e.u64(7)
		e.raw("[local]")
	}
	for i, b := range tf.buffers[min(1, len(tf.buffers)):] {
		e.put64(bufAt[i], uint64(len(e.b)))
		table(b)
	}
	for _, s := range slots {
		e.padTo(tf.ps())
		off := len(e.b)
		for _, p := range s.cpu.pages {
			e.b = append(e.b, p...)
		}
		e.put64(s.at, uint64(off))
		e.put64(s.at+8, uint64(len(e.b)-off))
	}
	return e.b
}

// testPage builds one ring-buffer page record by record.
type testPage struct {
	order testOrder
	be    bool
	data  []byte // records
}

func newTestPage(be bool) *testPage {
	p := &testPage{order: binary.LittleEndian, be: be}
	if be {
		p.order = binary.BigEndian
	}
	return p
}

// header appends a record header word.
func (p *testPage) header(typeLen int, delta uint32) {
	w := uint32(typeLen) | delta<<5
	if p.be {
		w = uint32(typeLen)<<27 | delta&deltaMask
	}
	p.data = p.order.AppendUint32(p.data, w)
}

// event appends a data record; payload is padded to 4 bytes. Payloads
// up to 112 bytes use type_len 1..28 unless long is set.
func (p *testPage) event(delta uint32, payload []byte, long bool) *testPage {
	n := (len(payload) + 3) &^ 3
	if n <= 4*typeDataMax && n > 0 && !long {
		p.header(n/4, delta)
	} else {
		p.header(0, delta)
		p.data = p.order.AppendUint32(p.data, uint32(n+4))
	}
	p.data = append(p.data, payload...)
	for len(p.data)%4 != 0 {
		p.data = append(p.data, 0)
	}
	return p
}

// extend appends a TIME_EXTEND of delta.
func (p *testPage) extend(delta uint64) *testPage {
	p.header(typeTimeExtend, uint32(delta&deltaMask))
	p.data = p.order.AppendUint32(p.data, uint32(delta>>tsShift))
	return p
}

// stamp appends a TIME_STAMP of abs.
func (p *testPage) stamp(abs uint64) *testPage {
	p.header(typeTimeStamp, uint32(abs&deltaMask))
	p.data = p.order.AppendUint32(p.data, uint32(abs>>tsShift))
	return p
}

// discard appends a discarded record (padding with a delta): header,
// length word (n + 4: the record is 4 + length bytes long), n bytes.
func (p *testPage) discard(delta uint32, n int) *testPage {
	p.header(typePadding, delta)
	p.data = p.order.AppendUint32(p.data, uint32(n+4))
	p.data = append(p.data, make([]byte, n)...)
	return p
}

// fill appends end-of-page padding (type 29, delta 0).
func (p *testPage) fill() *testPage {
	p.header(typePadding, 0)
	return p
}

// bytes returns the page: ts, commit (with flags), records, the lost count
// if stored, zeros up to size.
func (p *testPage) bytes(size int, ts uint64, flags uint64, lost uint64) []byte {
	page := make([]byte, 16, size)
	p.order.PutUint64(page, ts)
	commit := uint64(len(p.data)) | flags
	if flags&missingEvents != 0 {
		commit |= 0xffffffff << 32 // the kernel's sign extension
	}
	p.order.PutUint64(page[8:], commit)
	page = append(page, p.data...)
	if flags&missingStored != 0 {
		page = p.order.AppendUint64(page, lost)
	}
	return page[:size]
}

// testSchedSwitch returns a 64-byte sched_switch payload.
func testSchedSwitch(order binary.ByteOrder, pid int32, prev, next string) []byte {
	b := make([]byte, 64)
	order.PutUint16(b, 372)
	order.PutUint32(b[4:], uint32(pid))
	copy(b[8:24], prev)
	order.PutUint32(b[24:], uint32(pid))
	order.PutUint32(b[28:], 120)
	copy(b[40:56], next)
	order.PutUint32(b[56:], uint32(pid+1))
	order.PutUint32(b[60:], 120)
	return b
}

// testSchedPages returns n pages of sched_switch records, timestamps starting
// at ts with step ns between records.
func testSchedPages(order testOrder, size, n int, ts, step uint64) [][]byte {
	var pages [][]byte
	for range n {
		p := newTestPage(order == binary.BigEndian)
		start := ts
		for len(p.data)+68 <= size-16 {
			delta := uint32(0)
			if len(p.data) > 0 {
				delta = uint32(step)
				ts += step
			}
			p.event(delta, testSchedSwitch(order, int32(ts%30000), "a", "b"), false)
		}
		pages = append(pages, p.bytes(size, start, 0, 0))
		ts += step
	}
	return pages
}
