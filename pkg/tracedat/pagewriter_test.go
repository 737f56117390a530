package tracedat

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

var wrLayout = PageLayout{Size: 4096, LongSize: 8, DataOffset: 16}

// wrHex decodes hex digits, ignoring spaces and newlines.
func wrHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wrDecode decodes pages with the reader's PageReader.
func wrDecode(t testing.TB, l PageLayout, data []byte) []Record {
	t.Helper()
	if len(data)%l.Size != 0 {
		t.Fatalf("%d bytes of pages are not a multiple of the page size %d", len(data), l.Size)
	}
	pr, err := NewPageReader(l)
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for off := 0; off < len(data); off += l.Size {
		if err := pr.Reset(data[off : off+l.Size]); err != nil {
			t.Fatalf("page %d: %v", off/l.Size, err)
		}
		for {
			var r Record
			ok, err := pr.Next(&r)
			if err != nil {
				t.Fatalf("page %d: %v", off/l.Size, err)
			}
			if !ok {
				break
			}
			r.Data = bytes.Clone(r.Data)
			recs = append(recs, r)
		}
	}
	return recs
}

// TestPageWriterKernelPage encodes the two trace_marker writes of the
// worked page in trace-dat.md §6, captured from a 6.18 kernel, and wants
// the kernel's bytes: type_len 6, a TIME_EXTEND, then type_len 0 with
// array[0] = 148.
func TestPageWriterKernelPage(t *testing.T) {
	want := wrHex(t, `
		ba1b81d9b5000000 bc00000000000000
		06000000
		0500 00 01 ea3b0000 1aab4981ffffffff 68656c6c6f0a0000
		5ec99881 01000000
		00000000 94000000
		0500 00 01 ea3b0000 1aab4981ffffffff`)
	long := "long-" + strings.Repeat("x", 100) + "\n"
	want = append(want, long...)
	want = append(want, make([]byte, 4096-len(want))...)

	first := wrHex(t, "0500 00 01 ea3b0000 1aab4981ffffffff 68656c6c6f0a00") // 23 bytes
	second := append(wrHex(t, "0500 00 01 ea3b0000 1aab4981ffffffff"), long...)
	second = append(second, make([]byte, 144-len(second))...)

	var buf bytes.Buffer
	p := NewPageWriter(&buf, 4096)
	if err := p.Add(781038197690, first); err != nil {
		t.Fatal(err)
	}
	if err := p.Add(781240361476, second); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := buf.Bytes(); !bytes.Equal(got, want) {
		t.Errorf("page =\n%s\nwant\n%s", hex.Dump(got[:0xe0]), hex.Dump(want[:0xe0]))
	}
	if p.Pages() != 1 {
		t.Errorf("Pages() = %d, want 1", p.Pages())
	}
}

// TestPageWriterRecords checks record encodings against the reader:
// every payload length around the type_len limit, time records, page
// breaks and tails.
func TestPageWriterRecords(t *testing.T) {
	type rec struct {
		ts uint64
		n  int // payload length
	}
	tests := []struct {
		name string
		recs []rec
	}{
		{"sizes", func() []rec {
			var r []rec
			for n := 1; n <= 130; n++ {
				r = append(r, rec{uint64(1000 + n), n})
			}
			return r
		}()},
		{"time extend", []rec{{5, 8}, {5 + 1<<27 - 1, 8}, {5 + 1<<27 - 1 + 1<<27, 8}, {1 << 58, 200}, {1<<58 + 1<<40, 8}}},
		{"time stamp", []rec{{1 << 40, 8}, {1<<40 - 1, 8}, {5, 116}, {6, 8}}},
		{"msb change", []rec{{1 << 60, 8}, {1<<59 - 1, 8}, {1<<63 + 1<<62, 8}}},
		{"delta beyond extend", []rec{{1, 8}, {1 << 60, 8}}},
		{"full pages", func() []rec {
			var r []rec
			for i := range 500 {
				r = append(r, rec{uint64(i) * 1000, 60 + i%7})
			}
			return r
		}()},
		{"largest", []rec{{1, 4096 - 24}, {2, 4096 - 24}, {3, 4}}},
		{"same time", []rec{{7, 8}, {7, 8}, {7, 300}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := NewPageWriter(&buf, 4096)
			var want []Record
			for i, r := range tt.recs {
				payload := make([]byte, r.n)
				for j := range payload {
					payload[j] = byte(i + j + 1)
				}
				if err := p.Add(r.ts, payload); err != nil {
					t.Fatalf("Add(%d, %d bytes) = %v", r.ts, r.n, err)
				}
				want = append(want, Record{TS: r.ts, Data: wrPadded(payload)})
			}
			if err := p.Flush(); err != nil {
				t.Fatal(err)
			}
			got := wrDecode(t, wrLayout, buf.Bytes())
			if len(got) != len(want) {
				t.Fatalf("decoded %d records, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i].TS != want[i].TS || !bytes.Equal(got[i].Data, want[i].Data) || got[i].Missed != 0 {
					t.Fatalf("record %d = ts %d missed %d %x, want ts %d %x", i, got[i].TS, got[i].Missed, got[i].Data, want[i].TS, want[i].Data)
				}
			}
			if n := buf.Len() / 4096; n != p.Pages() {
				t.Errorf("Pages() = %d, wrote %d pages", p.Pages(), n)
			}
			wrCheckPages(t, buf.Bytes())
		})
	}
}

// wrCheckPages checks what the kernel guarantees of every page: the
// first record has delta 0 and is a data record (trace-cmd reports lost
// events only there), and the bytes after the data (and the stored lost
// count) are zero.
func wrCheckPages(t testing.TB, data []byte) {
	t.Helper()
	for off := 0; off < len(data); off += 4096 {
		page := data[off : off+4096]
		commit := binary.LittleEndian.Uint64(page[8:])
		end := 16 + int(commit&commitMask)
		if commit&commitStored != 0 {
			end += 8
		}
		if w := binary.LittleEndian.Uint32(page[16:]); commit&commitMask != 0 && (w>>5 != 0 || w&0x1f > typeDataMax) {
			t.Errorf("page %d: first record header %#x, want a data record with delta 0", off/4096, w)
		}
		if i := bytes.IndexFunc(page[end:], func(r rune) bool { return r != 0 }); i >= 0 {
			t.Errorf("page %d: byte %#x past the data is not zero", off/4096, end+i)
		}
	}
}

// TestPageWriterLost checks the lost-events marks: the commit word as the
// kernel writes it (flags added as a sign-extended int), the count after
// the data, a page with no room for the count, and losses at the end.
func TestPageWriterLost(t *testing.T) {
	var buf bytes.Buffer
	p := NewPageWriter(&buf, 4096)
	add := func(ts uint64, n int) {
		t.Helper()
		if err := p.Add(ts, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	add(10, 8)
	p.Lost(3)
	p.Lost(4) // adds up
	p.Lost(0) // nothing
	add(20, 8)
	add(30, 8)
	p.Lost(1 << 40)
	add(40, 4096-24) // fills the page: no room for the count
	p.Lost(9)        // after the last record: an empty page
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if len(data) != 4*4096 {
		t.Fatalf("wrote %d bytes, want 4 pages", len(data))
	}
	commits := []uint64{12, 0xffffffffc0000000 | 24, 0xffffffff80000000 | 4080, 0xffffffffc0000000}
	for i, want := range commits {
		if got := binary.LittleEndian.Uint64(data[i*4096+8:]); got != want {
			t.Errorf("page %d commit = %#x, want %#x", i, got, want)
		}
	}
	if got := binary.LittleEndian.Uint64(data[4096+16+24:]); got != 7 {
		t.Errorf("page 1 lost count = %d, want 7", got)
	}
	if got := binary.LittleEndian.Uint64(data[3*4096+16:]); got != 9 {
		t.Errorf("page 3 lost count = %d, want 9", got)
	}
	if got := binary.LittleEndian.Uint64(data[3*4096:]); got != 40 {
		t.Errorf("empty page timestamp = %d, want 40 (the last record's)", got)
	}
	got := wrDecode(t, wrLayout, data)
	want := []int64{0, 7, 0, -1}
	if len(got) != len(want) {
		t.Fatalf("decoded %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.Missed != want[i] {
			t.Errorf("record %d missed = %d, want %d", i, r.Missed, want[i])
		}
	}
	wrCheckPages(t, data)
}

// TestPageWriterFlushPages checks that FlushPages writes the finished
// pages only and that the result is the same as without it.
func TestPageWriterFlushPages(t *testing.T) {
	var a, b bytes.Buffer
	pa, pb := NewPageWriter(&a, 4096), NewPageWriter(&b, 4096)
	payload := make([]byte, 100)
	for i := range 2000 {
		payload[0] = byte(i)
		for _, p := range []*PageWriter{pa, pb} {
			if err := p.Add(uint64(i)*10, payload); err != nil {
				t.Fatal(err)
			}
		}
		if i%97 == 0 {
			if err := pb.FlushPages(); err != nil {
				t.Fatal(err)
			}
			if b.Len() != pb.Pages()*4096 {
				t.Fatalf("after FlushPages: %d bytes written, want %d pages", b.Len(), pb.Pages())
			}
		}
		if i == 1500 {
			pa.Lost(5)
			pb.Lost(5)
		}
	}
	if err := pa.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := pb.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("pages written with FlushPages differ from those without")
	}
}

type wrFailWriter struct{ n int }

func (w *wrFailWriter) Write(b []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("disk full")
	}
	w.n--
	return len(b), nil
}

// TestPageWriterErrors checks records that cannot be written and write
// errors, which stick.
func TestPageWriterErrors(t *testing.T) {
	p := NewPageWriter(io.Discard, 4096)
	if err := p.Add(1, make([]byte, 4096-23)); !errors.Is(err, ErrRecordTooLarge) {
		t.Errorf("Add(4073 bytes) = %v, want ErrRecordTooLarge", err)
	}
	if err := p.Add(1, nil); err == nil {
		t.Errorf("Add(empty) = nil, want an error")
	}
	if err := p.Add(2, []byte{1, 2}); err != nil {
		t.Errorf("Add after refused records = %v", err)
	}
	if err := p.Add(3, nil); err == nil {
		t.Errorf("Add(empty) on an open page = nil, want an error")
	}

	p = NewPageWriter(&wrFailWriter{n: 1}, 4096)
	var err error
	for i := 0; err == nil && i < 100_000; i++ {
		err = p.Add(uint64(i), make([]byte, 64))
	}
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Add to a failing writer = %v, want the write error", err)
	}
	if err2 := p.Flush(); !errors.Is(err2, err) {
		t.Errorf("Flush after a write error = %v, want %v", err2, err)
	}
}

// TestPageWriterAllocs checks that Add allocates nothing.
func TestPageWriterAllocs(t *testing.T) {
	p := NewPageWriter(io.Discard, 4096)
	payload := make([]byte, 64)
	ts := uint64(0)
	allocs := testing.AllocsPerRun(100_000, func() {
		ts += 1000
		if ts%(1<<20) == 0 {
			ts += 1 << 28 // a TIME_EXTEND now and then
		}
		if err := p.Add(ts, payload); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Add allocates %v times per call, want 0", allocs)
	}
}

// BenchmarkPageWriterAdd measures encoding records of sched_switch size
// (64 bytes) and print size (200 bytes) into pages.
func BenchmarkPageWriterAdd(b *testing.B) {
	for _, n := range []int{64, 200} {
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			p := NewPageWriter(io.Discard, 4096)
			payload := make([]byte, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			ts := uint64(0)
			for b.Loop() {
				ts += 700
				if err := p.Add(ts, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
