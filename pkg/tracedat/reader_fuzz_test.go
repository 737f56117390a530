package tracedat

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

// FuzzRead feeds arbitrary bytes to Read and reads every record of every
// instance. Properties: no panic; (f == nil) == (err != nil); every error
// locates the problem (a file offset) unless it is about the file as a
// whole; records fit in a page.
func FuzzRead(f *testing.F) {
	data, err := os.ReadFile(sampleFile)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	le := binary.LittleEndian
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
		f.Add(tf.build(f))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
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
