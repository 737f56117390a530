package tracedat

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
)

// BenchmarkRecords measures merged iteration over 4 CPUs of sched_switch
// pages (60 64-byte records a page), uncompressed and zstd-compressed,
// and over the sample.
func BenchmarkRecords(b *testing.B) {
	le := binary.LittleEndian
	build := func(zstd bool) []byte {
		tf := testBaseFile(b, 7)
		tf.zstd = zstd
		var cpus []testCPU
		for cpu := range 4 {
			cpus = append(cpus, testCPU{cpu, testSchedPages(le, 4096, 512, uint64(cpu*37), 1000)})
		}
		tf.buffers = []testBuffer{{"", cpus}}
		return tf.build(b)
	}
	sample, err := os.ReadFile(sampleFile)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"none", build(false)},
		{"zstd", build(true)},
		{"sample", sample},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f, err := Read(bytes.NewReader(bc.data), int64(len(bc.data)))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			n := 0
			var sum uint64
			for b.Loop() {
				it := f.Records()
				for it.Next() {
					sum += uint64(it.Record().Data[0])
					n++
				}
				if err := it.Err(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
		})
	}
}

// BenchmarkOpen measures reading the sample's metadata: 2323 formats, 2.7
// MB of kallsyms, all zstd-compressed.
func BenchmarkOpen(b *testing.B) {
	data, err := os.ReadFile(sampleFile)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}
