package tracedat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// locatedRecord is a record and the file offset where the data holding
// it ends: its page (uncompressed) or its chunk (compressed).
type locatedRecord struct {
	Record
	end int64
}

func locatedRecords(t *testing.T, f *File) []locatedRecord {
	t.Helper()
	var recs []locatedRecord
	it := f.Records()
	for it.Next() {
		s := it.last
		end := s.bufOff + int64(s.pageOff+s.pageSize)
		if s.compressed {
			end = s.off
		}
		r := it.Record()
		r.Data = bytes.Clone(r.Data)
		recs = append(recs, locatedRecord{r, end})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// checkCuts reads data cut at each offset and checks the prefix property:
// a cut inside the metadata fails with ErrTruncated; any other cut reads,
// yields exactly the records of the pages (chunks) that end before the
// cut, in the same order, and reports ErrTruncated if data is missing.
func checkCuts(t *testing.T, data []byte, cuts []int64) {
	t.Helper()
	full, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	all := locatedRecords(t, full)
	var dataEnd int64
	for _, c := range full.CPUs {
		dataEnd = max(dataEnd, c.Offset+c.Size)
		if full.Buffers[full.topIndex].Compressed {
			dataEnd = max(dataEnd, c.Offset+c.Size+4)
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	for _, cut := range cuts {
		if cut < 0 || cut > int64(len(data)) {
			continue
		}
		f, err := Read(bytes.NewReader(data[:cut]), cut)
		if cut < full.metaEnd {
			want := ErrTruncated
			if cut == 0 {
				want = ErrEmpty
			}
			if err == nil || !errors.Is(err, want) {
				t.Fatalf("cut at %#x (metadata ends at %#x): Read error = %v, want %v", cut, full.metaEnd, err, want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut at %#x (metadata ends at %#x): Read error = %v", cut, full.metaEnd, err)
		}
		var want []Record
		for _, r := range all {
			if r.end <= cut {
				want = append(want, r.Record)
			}
		}
		got, err := readAllRecords(t, f.Records())
		if len(got) != len(want) {
			t.Fatalf("cut at %#x: %d records, want %d (err %v)", cut, len(got), len(want), err)
		}
		checkSameRecords(t, got, want)
		switch {
		case cut >= dataEnd && err != nil:
			t.Fatalf("cut at %#x after all data (%#x): Err() = %v", cut, dataEnd, err)
		case cut < dataEnd && !errors.Is(err, ErrTruncated):
			t.Fatalf("cut at %#x before the end of the data (%#x): Err() = %v, want ErrTruncated", cut, dataEnd, err)
		}
	}
}

// cutsAround returns offsets near each of the given ones, and every
// stride bytes.
func cutsAround(size int64, stride int64, at ...int64) []int64 {
	var cuts []int64
	for _, a := range at {
		for d := int64(-2); d <= 2; d++ {
			cuts = append(cuts, a+d)
		}
	}
	for c := int64(0); c <= size; c += stride {
		cuts = append(cuts, c)
	}
	return append(cuts, size)
}

// dataBoundaries lists the metadata end and where the pages or chunks of
// every CPU start and end.
func dataBoundaries(t *testing.T, data []byte) []int64 {
	t.Helper()
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	at := []int64{f.metaEnd}
	for _, r := range locatedRecords(t, f) {
		at = append(at, r.end)
	}
	for _, c := range f.CPUs {
		at = append(at, c.Offset, c.Offset+4, c.Offset+c.Size)
	}
	return at
}

func TestCutSample(t *testing.T) {
	data, err := os.ReadFile(sampleFile)
	if err != nil {
		t.Fatal(err)
	}
	checkCuts(t, data, cutsAround(int64(len(data)), 9973, append(dataBoundaries(t, data), 0x25, 0x9753f, 0x9777b, 0x9920c, 0x9926f)...))
}

func TestCutConverted(t *testing.T) {
	for name, path := range convertedSamples(t) {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			checkCuts(t, data, cutsAround(int64(len(data)), 99991, dataBoundaries(t, data)...))
		})
	}
}

// TestCutBuilt cuts small files with many pages per CPU at every page
// boundary: v6 and v7 put the CPU tables on different sides of the data.
func TestCutBuilt(t *testing.T) {
	le := binary.LittleEndian
	for _, version := range []int{6, 7} {
		for _, zstd := range []bool{false, true} {
			if version == 6 && zstd {
				continue
			}
			tf := testBaseFile(t, version)
			tf.zstd, tf.chunkPages = zstd, 3
			tf.options = []Option{{OptionTraceClock, testCString("[local]")}}
			tf.buffers = []testBuffer{{"", []testCPU{
				{0, testSchedPages(le, 4096, 7, 0, 100)},
				{1, testSchedPages(le, 4096, 4, 50, 170)},
				{3, testSchedPages(le, 4096, 9, 20, 70)},
			}}}
			data := tf.build(t)
			checkCuts(t, data, cutsAround(int64(len(data)), 331, dataBoundaries(t, data)...))
		}
	}
}

// TestCutOpen opens a cut file from disk.
func TestCutOpen(t *testing.T) {
	tf := testBaseFile(t, 6)
	tf.buffers = []testBuffer{{"", []testCPU{{0, testSchedPages(binary.LittleEndian, 4096, 3, 0, 100)}}}}
	data := tf.build(t)
	path := filepath.Join(t.TempDir(), "cut.dat")
	if err := os.WriteFile(path, data[:len(data)-4096-10], 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := readAllRecords(t, f.Records())
	if len(recs) != 60 || !errors.Is(err, ErrTruncated) {
		t.Errorf("cut file: %d records, Err %v; want 60 and ErrTruncated", len(recs), err)
	}
}

// TestCutWritten cuts files of the Writer at every page or chunk
// boundary and in between: the options that name the CPU data come
// before it, so a file cut anywhere in the data reads up to the cut.
func TestCutWritten(t *testing.T) {
	for _, comp := range []string{compressionNone, compressionZstd} {
		t.Run(comp, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "w.dat")
			wrWriteFile(t, path, wrMeta(t, 3), WriteOptions{Compression: comp}, wrEvents(3, 400, 7))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if len(f.CPUs) != 3 || f.metaEnd > f.CPUs[0].Offset {
				t.Fatalf("metadata ends at %#x, CPU data %+v: want 3 CPUs after the metadata", f.metaEnd, f.CPUs)
			}
			checkCuts(t, data, cutsAround(int64(len(data)), 1999, dataBoundaries(t, data)...))
		})
	}
}
