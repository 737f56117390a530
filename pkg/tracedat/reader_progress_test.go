package tracedat

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestProgress: while Iterators read, Done only grows and stays within
// Total, Total is the stored size of the CPUs they read, and Done
// reaches it at the end: uncompressed and zstd, every CPU or some, and a
// file cut in the middle of its data.
func TestProgress(t *testing.T) {
	le := binary.LittleEndian
	build := func(version int, zstd bool) []byte {
		tf := testBaseFile(t, version)
		tf.zstd = zstd
		var cpus []testCPU
		for cpu := range 3 {
			cpus = append(cpus, testCPU{cpu, testSchedPages(le, 4096, 40+cpu*10, uint64(cpu*37), 1000)})
		}
		tf.buffers = []testBuffer{{"", cpus}}
		return tf.build(t)
	}
	for _, tc := range []struct {
		name string
		zstd bool
		cut  bool
		cpus []int
	}{
		{name: "none"},
		{name: "zstd", zstd: true},
		{name: "cpu 1", cpus: []int{1}},
		{name: "zstd cpus 0,2", zstd: true, cpus: []int{0, 2}},
		{name: "cut", cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := build(7, tc.zstd)
			if tc.cut { // a version 6 file ends with its CPUs' data
				data = build(6, false)
				data = data[:len(data)-3*4096-100]
			}
			f, err := Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if p := f.Progress(); p != (Progress{}) {
				t.Fatalf("Progress before reading = %+v, want zero", p)
			}
			var want int64
			for _, cd := range f.CPUs {
				if len(tc.cpus) == 0 || cd.CPU == tc.cpus[0] || len(tc.cpus) > 1 && cd.CPU == tc.cpus[1] {
					want += cd.Size
				}
			}
			it := f.Records(tc.cpus...)
			last := f.Progress()
			if last.Total != want || last.Done <= 0 || last.Done > want {
				t.Fatalf("Progress after the Iterator is made = %+v, want Total %d and 0 < Done <= Total", last, want)
			}
			n := 0
			for it.Next() {
				n++
				p := f.Progress()
				if p.Done < last.Done || p.Done > p.Total || p.Total != want {
					t.Fatalf("record %d: Progress %+v after %+v: want Done growing up to Total %d", n, p, last, want)
				}
				last = p
			}
			if err := it.Err(); (err != nil) != tc.cut {
				t.Fatalf("Err() = %v, want an error only for the cut file", err)
			}
			if p := f.Progress(); p.Done != want || p.Total != want {
				t.Errorf("Progress at the end = %+v, want Done = Total = %d", p, want)
			}
			// A second Iterator adds its CPUs to both.
			it = f.Records(tc.cpus...)
			for it.Next() {
			}
			if p := f.Progress(); p.Done != 2*want || p.Total != 2*want {
				t.Errorf("Progress after a second pass = %+v, want Done = Total = %d", p, 2*want)
			}
		})
	}
}
