package tracedat

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// FuzzRead damages a small valid file (a v6 or v7 file built by the
// tests: plain, zstd, big-endian, several instances) as edits say
// (testutil.Damage), cuts it at cut, gives it to Read and reads every
// record of every instance; with base past the built files it reads edits
// as the file itself. Properties: no panic; (f == nil) == (err != nil); every error
// locates the problem (a file offset) unless it is about the file as a
// whole; records fit in a page.
func FuzzRead(f *testing.F) {
	bases := fuzzBases(f)
	f.Add(uint8(0), uint32(0), []byte{})
	for i := range bases {
		f.Add(uint8(i), uint32(0), []byte{})
		f.Add(uint8(i), uint32(len(bases[i])/2), []byte{})
		f.Add(uint8(i), uint32(0), []byte{0x40, 0, 2, 0xff, 0x10, 1, 1, 0x80})
	}
	f.Add(uint8(len(bases)), uint32(0), []byte("\x17\x08\x44tracing6\x00"))
	f.Fuzz(func(t *testing.T, base uint8, cut uint32, edits []byte) {
		var data []byte
		if int(base) < len(bases) {
			data = testutil.Damage(bases[base], edits)
		} else {
			data = edits
		}
		if cut > 0 && int64(cut) < int64(len(data)) {
			data = data[:cut]
		}
		file, err := Read(bytes.NewReader(data), int64(len(data)))
		if (file == nil) == (err == nil) {
			t.Fatalf("Read = %v, %v", file, err)
		}
		if err != nil {
			checkLocated(t, err)
			return
		}
		for _, b := range file.Buffers {
			it := file.BufferRecords(b)
			for it.Next() {
				if r := it.Record(); len(r.Data) > b.PageSize {
					t.Fatalf("record of %d bytes in %d-byte pages", len(r.Data), b.PageSize)
				}
			}
			if err := it.Err(); err != nil {
				checkLocated(t, err)
			}
		}
	})
}

// fuzzBases are the files FuzzRead damages.
func fuzzBases(f *testing.F) [][]byte {
	le := binary.LittleEndian
	var out [][]byte
	for _, mod := range []func(*testFile){
		func(tf *testFile) {},
		func(tf *testFile) { tf.zstd, tf.chunkPages = true, 2 },
		func(tf *testFile) { tf.version = 6; tf.options = []Option{{OptionTraceClock, testCString("[local]")}} },
		func(tf *testFile) { tf.bigEndian, tf.optionSections = true, 2 },
		func(tf *testFile) {
			tf.buffers = append(tf.buffers, testBuffer{"inst", []testCPU{{4, tf.buffers[0].cpus[0].pages}}})
		},
	} {
		tf := testBaseFile(f, 7)
		tf.kallsyms, tf.printk = "", ""
		tf.buffers = []testBuffer{{"", []testCPU{
			{0, testSchedPages(le, 256, 3, 0, 100)},
			{2, [][]byte{newTestPage(false).event(0, []byte{1, 2}, false).extend(1<<28).discard(3, 4).
				stamp(1<<35).event(1, make([]byte, 130), true).fill().bytes(256, 9, missingEvents|missingStored, 3)}},
		}}}
		tf.pageSize = 256
		mod(tf)
		out = append(out, tf.build(f))
	}
	return out
}

// checkLocated fails unless err names a file offset or is about the file
// as a whole.
func checkLocated(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	for _, s := range []string{"offset", "byte 0x", "not a trace.dat file", "no HEADER_INFO option", "page layout"} {
		if strings.Contains(msg, s) {
			return
		}
	}
	t.Fatalf("error does not say where: %v", err)
}
