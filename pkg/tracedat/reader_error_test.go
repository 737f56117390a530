package tracedat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testDataFile returns a small v7 file with two CPUs of data.
func testDataFile(t *testing.T, mod func(*testFile)) []byte {
	t.Helper()
	tf := testBaseFile(t, 7)
	tf.buffers = []testBuffer{{"", []testCPU{
		{0, testSchedPages(binary.LittleEndian, 4096, 2, 100, 10)},
		{1, testSchedPages(binary.LittleEndian, 4096, 2, 105, 10)},
	}}}
	if mod != nil {
		mod(tf)
	}
	return tf.build(t)
}

func TestReadErrors(t *testing.T) {
	le := binary.LittleEndian
	patch := func(b []byte, fn func(b []byte)) []byte {
		b = bytes.Clone(b)
		fn(b)
		return b
	}
	none := testDataFile(t, nil)
	zst := testDataFile(t, func(tf *testFile) { tf.zstd = true })
	firstOpts := int(le.Uint64(none[24:])) // v7 "none" header: first options offset at 24
	tests := []struct {
		name string
		data []byte
		want string
		is   error
	}{
		{"empty", nil, "empty file", ErrEmpty},
		{"not trace.dat", []byte("hello, world, this is text"), `not a trace.dat file (it starts with "hello, wor")`, ErrNotTraceDat},
		{"short text", []byte("hello\n"), `not a trace.dat file (it starts with "hello\n")`, ErrNotTraceDat},
		{"cut in the magic", []byte("\x17\x08Dtr"), "read header: at offset 0x0: magic: 10 bytes needed, 5 left: file truncated", ErrTruncated},
		{"version 5", patch(none, func(b []byte) { b[10] = '5' }), `file version "5"`, errors.ErrUnsupported},
		{"endianness", patch(none, func(b []byte) { b[12] = 2 }), "at offset 0xc: endianness byte 2", nil},
		{"page size", patch(none, func(b []byte) { le.PutUint32(b[14:], 0) }), "at offset 0xe: page size 0 out of range", nil},
		{"zlib", patch(zst, func(b []byte) { copy(b[18:], "zlib") }), `compression "zlib"`, errors.ErrUnsupported},
		{"options past the end", patch(none, func(b []byte) { le.PutUint64(b[24:], 1<<40) }), "options section offset 0x10000000000 is past the end", ErrTruncated},
		{"options loop", patch(none, func(b []byte) {
			// The last DONE is just before the 24-byte strings section.
			le.PutUint64(b[len(b)-24-8:], uint64(firstOpts))
		}), "loops back to", nil},
		{"no DONE", patch(none, func(b []byte) {
			le.PutUint64(b[firstOpts+8:], le.Uint64(b[firstOpts+8:])-14)
		}), "no DONE option before the end of the section", nil},
		{"no HEADER_INFO", patch(none, func(b []byte) { le.PutUint16(b[firstOpts+16:], 200) }), "no HEADER_INFO option", nil},
		{"section id", patch(none, func(b []byte) { le.PutUint16(b[32:], 17) }), "at offset 0x20: section id 17 (FTRACE_EVENTS), want 16 (HEADER_INFO)", nil},
		{"compressed section without compression", patch(none, func(b []byte) { le.PutUint16(b[34:], 1) }), `compressed section in a file with compression "none"`, nil},
		{"section size", patch(none, func(b []byte) { le.PutUint64(b[40:], 1<<50) }), "section size 1125899906842624 runs past the end of the file", ErrTruncated},
		{"header_page label", patch(none, func(b []byte) { b[48] = 'X' }), `found "Xeader_page\x00" where "header_page\x00" belongs`, nil},
		{"corrupt zstd section", patch(zst, func(b []byte) {
			for i := 37 + 16 + 8 + 4; i < 37+16+8+40; i++ {
				b[i] ^= 0x5a
			}
		}), "read HEADER_INFO section at 0x25: at offset 0x3d: zstd:", nil},
		{"cpu listed twice", testDataFile(t, func(tf *testFile) { tf.buffers[0].cpus[1].cpu = 0 }), "cpu 0 listed twice", nil},
		{"BUFFER_TEXT", testDataFile(t, func(tf *testFile) { tf.options = []Option{{OptionBufferText, make([]byte, 10)}} }), "latency-format trace data", errors.ErrUnsupported},
		{"v6 latency", func() []byte {
			tf := testBaseFile(t, 6)
			tf.v6Latency = true
			return tf.build(t)
		}(), "latency-format trace data", errors.ErrUnsupported},
		{"v6 cpu count", func() []byte {
			tf := testBaseFile(t, 6)
			tf.cpuCount = maxCPUs + 1
			return tf.build(t)
		}(), "read cpu count: at offset 0x9cb: 65537 is out of range", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Read(bytes.NewReader(tt.data), int64(len(tt.data)))
			if err == nil || f != nil {
				t.Fatalf("Read = %v, %v; want error %q", f, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Read error = %q, want it to contain %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Read error = %q, want errors.Is %v", err, tt.is)
			}
		})
	}
}

// TestReadSkipsBadFormat checks that an event format that does not parse
// is skipped with a warning naming it, as trace-cmd skips it, and that
// the rest of the file reads.
func TestReadSkipsBadFormat(t *testing.T) {
	data := testDataFile(t, func(tf *testFile) {
		tf.systems[0].formats = append(tf.systems[0].formats, "name: x\x1b[31m\nID: -9\nformat:\n")
	})
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("Read() = %v, want the file read without the bad format", err)
	}
	if f.Events[9] != nil || f.Events[372] == nil {
		t.Errorf("Events = %v, want 372 and not 9", f.Events)
	}
	w := f.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], `event sched:x\x1b[31m (ID -9)`) || !strings.Contains(w[0], "bad event ID") {
		t.Errorf("Warnings() = %q, want one naming sched:x (escaped) and the parse error", w)
	}
	recs, err := readAllRecords(t, f.Records())
	if err != nil || len(recs) != 240 {
		t.Errorf("records: %d, %v; want 240, nil", len(recs), err)
	}
}

// TestReadKeepsDamagedFields reads formats damaged in their field list:
// as libtraceevent does, the event is kept with the fields before the
// damaged line and no print fmt, so that its records print as "[FAILED
// TO PARSE]" and those fields.
func TestReadKeepsDamagedFields(t *testing.T) {
	head := "name: x\nID: 9\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n"
	tests := []struct {
		name, damaged string
		fields        int
	}{
		{"bad key", "\tfield:int b;\toffset:12;\tsi\\~v4;\tsigned:1;\n", 2},
		{"bogus line", "bogus line\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := head + tt.damaged + "\tfield:int c;\toffset:16;\tsize:4;\tsigned:1;\n\nprint fmt: \"a=%d\", REC->a\n"
			data := testDataFile(t, func(tf *testFile) {
				tf.systems[0].formats = append(tf.systems[0].formats, text)
			})
			f, err := Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			e := f.Events[9]
			if e == nil || len(e.Format.Fields) != tt.fields || e.Format.PrintFmt != "" || e.Text != head {
				t.Fatalf("Events[9] = %+v, want the event with %d fields, no print fmt, the text before the damage", e, tt.fields)
			}
			if w := f.Warnings(); len(w) != 1 || !strings.Contains(w[0], "event sched:x (ID 9)") || !strings.Contains(w[0], "[FAILED TO PARSE] with the 2 fields before the damage") {
				t.Errorf("Warnings() = %q, want one about the damaged fields", w)
			}
		})
	}
}

// TestRecordErrors damages the data of one CPU: a damaged page or chunk
// is skipped with a warning and the CPU goes on; data past the end of
// the file stops the CPU and Err reports it. The other CPU still yields
// all its records.
func TestRecordErrors(t *testing.T) {
	le := binary.LittleEndian
	tests := []struct {
		name   string
		zstd   bool
		damage func(b []byte, cpu CPUData)
		warn   string // the warning of the skipped page or chunk
		err    string // Err(), "" for none
		keep   int    // records of cpu 0 still yielded
		pages  int    // SkippedPages()
	}{
		{"commit past the page", false, func(b []byte, c CPUData) { le.PutUint64(b[c.Offset+4096+8:], 5000) },
			"cpu 0: page at offset 0x", "", 60, 1},
		{"commit of the first page", false, func(b []byte, c CPUData) { le.PutUint64(b[c.Offset+8:], 5000) },
			"data size 5000 exceeds the page's 4080 bytes (skipped the rest of the page)", "", 60, 1},
		{"corrupt record", false, func(b []byte, c CPUData) { // read itself with the rest of the page, as trace-cmd reads it
			le.PutUint64(b[c.Offset+16+68*3:], 0xffff<<32) // type_len 0, length 0xffff
		},
			"cpu 0: page at offset 0x", "", 64, 1},
		{"corrupt chunk", true, func(b []byte, c CPUData) {
			for i := c.Offset + 12; i < c.Offset+40; i++ {
				b[i] ^= 0xff
			}
		}, "cpu 0: chunk at offset 0x", "", 0, 2},
		{"chunk size", true, func(b []byte, c CPUData) { le.PutUint32(b[c.Offset+8:], 4095) },
			"uncompressed size 4095 is not a whole number of 4096-byte pages (skipped the chunk)", "", 0, 1},
		{"chunk past the end", true, func(b []byte, c CPUData) { le.PutUint32(b[c.Offset+4:], 1<<30) },
			"", "compressed bytes run past the end of the file", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := testDataFile(t, func(tf *testFile) { tf.zstd = tt.zstd })
			f, err := Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			tt.damage(data, f.CPUs[0])
			recs, err := readAllRecords(t, f.Records())
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("Err() = %v, want %q", err, tt.err)
			}
			w := f.Warnings()
			if tt.warn == "" && len(w) != 0 || tt.warn != "" && (len(w) != 1 || !strings.Contains(w[0], tt.warn)) {
				t.Errorf("Warnings() = %q, want one with %q", w, tt.warn)
			}
			// A second read warns no more.
			readAllRecords(t, f.Records())
			if n := len(f.Warnings()); n != len(w) {
				t.Errorf("second read: %d warnings, want %d", n, len(w))
			}
			if n := f.SkippedPages(); n != tt.pages {
				t.Errorf("SkippedPages() = %d after two reads, want %d", n, tt.pages)
			}
			n := map[int]int{}
			for _, r := range recs {
				n[r.CPU]++
			}
			if n[0] != tt.keep || n[1] != 120 {
				t.Errorf("records per CPU = %v, want cpu0 %d, cpu1 120", n, tt.keep)
			}
		})
	}
	// A trailing partial page.
	tf := testBaseFile(t, 6)
	tf.buffers = []testBuffer{{"", []testCPU{{0, append(testSchedPages(le, 4096, 1, 0, 1), make([]byte, 100))}}}}
	data := tf.build(t)
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readAllRecords(t, f.Records())
	if len(recs) != 60 || err == nil || !strings.Contains(err.Error(), "100 bytes at offset 0x") {
		t.Errorf("partial page: %d records, Err %v; want 60 and a partial page error", len(recs), err)
	}
}

func TestOpen(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing.dat")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want ErrNotExist", err)
	}
	path := filepath.Join(t.TempDir(), "bad.dat")
	if err := os.WriteFile(path, []byte("not a trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "bad.dat: not a trace.dat file") {
		t.Errorf("Open(bad) = %v, want an error naming the file", err)
	}
	f, err := Open(sampleFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
}

// TestWarningsBounded damages every page: the warnings stop at 20 and
// count the rest, and the iterator still ends.
func TestWarningsBounded(t *testing.T) {
	le := binary.LittleEndian
	data := testDataFile(t, func(tf *testFile) {
		tf.buffers[0].cpus[0].pages = testSchedPages(le, 4096, 40, 0, 10)
	})
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	c := f.CPUs[0]
	for off := c.Offset; off < c.Offset+c.Size; off += 4096 {
		le.PutUint64(data[off+8:], 5000)
	}
	recs, err := readAllRecords(t, f.Records())
	if err != nil || len(recs) != 120 {
		t.Fatalf("records: %d, %v; want cpu 1's 120, nil", len(recs), err)
	}
	w := f.Warnings()
	if len(w) != maxWarnings+1 || w[maxWarnings] != "and 20 more damaged parts skipped" {
		t.Errorf("Warnings() = %d: %q, want %d and a count of 20 more", len(w), w, maxWarnings+1)
	}
}

// TestReadSkipsBadKallsyms damages the compressed KALLSYMS section: the
// file reads without symbols, with a warning, as trace-cmd reads it.
func TestReadSkipsBadKallsyms(t *testing.T) {
	data := testDataFile(t, func(tf *testFile) {
		tf.zstd = true
		tf.kallsyms = strings.Repeat("ffffffff81000000 T _stext\n", 100)
	})
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var off int64 = -1
	for _, o := range f.Options {
		if o.ID == OptionKallsyms {
			off = int64(binary.LittleEndian.Uint64(o.Data))
		}
	}
	if off < 0 {
		t.Fatal("no KALLSYMS option")
	}
	for i := off + 16 + 8 + 4; i < off+16+8+12; i++ {
		data[i] ^= 0x5a
	}
	f, err = Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("Read() = %v, want the file read without kallsyms", err)
	}
	if w := f.Warnings(); f.Kallsyms != "" || len(w) != 1 || !strings.Contains(w[0], "skipped the KALLSYMS section") {
		t.Errorf("kallsyms %q, Warnings() = %q; want none and one warning", f.Kallsyms, w)
	}
	if recs, err := readAllRecords(t, f.Records()); err != nil || len(recs) != 240 {
		t.Errorf("records: %d, %v; want 240, nil", len(recs), err)
	}
}
