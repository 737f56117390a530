package tracedat

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

var testLayout64 = PageLayout{Size: 4096, LongSize: 8, DataOffset: 16}

// decodePages decodes every page with one PageReader and returns the
// records (Data copied) and the first error.
func decodePages(t *testing.T, l PageLayout, pages ...[]byte) ([]Record, error) {
	t.Helper()
	pr, err := NewPageReader(l)
	if err != nil {
		t.Fatalf("NewPageReader(%+v) = %v", l, err)
	}
	var recs []Record
	for _, page := range pages {
		if err := pr.Reset(page); err != nil {
			return recs, err
		}
		for {
			var r Record
			ok, err := pr.Next(&r)
			if err != nil {
				return recs, err
			}
			if !ok {
				break
			}
			r.Data = bytes.Clone(r.Data)
			recs = append(recs, r)
		}
	}
	return recs, nil
}

func testUnhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPageWorkedExample decodes the page of trace-dat.md §6 (two
// trace_marker writes 0.2 s apart, a TIME_EXTEND between them).
func TestPageWorkedExample(t *testing.T) {
	page := testUnhex(t, `
		ba1b81d9b5000000 bc00000000000000
		06000000
		0500 00 01 ea3b0000
		1aab4981ffffffff 68656c6c6f0a0000
		5ec99881 01000000
		00000000 94000000
		0500 00 01 ea3b0000 1aab4981ffffffff`)
	long := []byte("long-" + strings.Repeat("x", 100) + "\n")
	page = append(page, long...)
	page = append(page, make([]byte, 128-len(long))...)
	if len(page) != 0xcc {
		t.Fatalf("hand-built page data ends at %#x, want 0xcc", len(page))
	}
	page = append(page, make([]byte, 4096-len(page))...)

	recs, err := decodePages(t, testLayout64, page)
	if err != nil {
		t.Fatal(err)
	}
	pr, _ := NewPageReader(testLayout64)
	if err := pr.Reset(page); err != nil || pr.Timestamp() != 781038197690 {
		t.Errorf("Reset() = %v, Timestamp() = %d; want the page timestamp 781038197690", err, pr.Timestamp())
	}
	want := []struct {
		ts   uint64
		size int
		text string
	}{
		{781038197690, 24, "hello\n"},
		{781240361476, 144, string(long)},
	}
	if len(recs) != len(want) {
		t.Fatalf("got %d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		r := recs[i]
		if r.TS != w.ts || len(r.Data) != w.size || r.Missed != 0 {
			t.Errorf("record %d: TS %d, %d bytes, missed %d; want TS %d, %d bytes", i, r.TS, len(r.Data), r.Missed, w.ts, w.size)
		}
		if binary.LittleEndian.Uint16(r.Data) != 5 || binary.LittleEndian.Uint32(r.Data[4:]) != 15338 {
			t.Errorf("record %d: common_type/pid = %d/%d, want 5/15338", i, binary.LittleEndian.Uint16(r.Data), binary.LittleEndian.Uint32(r.Data[4:]))
		}
		if got := string(bytes.TrimRight(r.Data[16:], "\x00")); got != w.text {
			t.Errorf("record %d: text %q, want %q", i, got, w.text)
		}
	}
}

func TestPageRecords(t *testing.T) {
	payload := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i + 1)
		}
		return b
	}
	type want struct {
		ts     uint64
		size   int
		missed int64
	}
	tests := []struct {
		name  string
		be    bool
		pages func() [][]byte
		want  []want
	}{{
		name: "type_len 1..28 and 0",
		pages: func() [][]byte {
			p := newTestPage(false).event(0, payload(4), false).event(10, payload(112), false).
				event(20, payload(116), false).event(30, payload(8), true)
			return [][]byte{p.bytes(4096, 1000, 0, 0)}
		},
		want: []want{{1000, 4, 0}, {1010, 112, 0}, {1030, 116, 0}, {1060, 8, 0}},
	}, {
		name: "padding: discarded record keeps its delta, filler ends the page",
		pages: func() [][]byte {
			p := newTestPage(false).event(0, payload(8), false).discard(5, 20).event(7, payload(8), false).
				fill().event(100, payload(8), false)
			return [][]byte{p.bytes(4096, 50, 0, 0)}
		},
		want: []want{{50, 8, 0}, {62, 8, 0}},
	}, {
		name: "TIME_EXTEND and TIME_STAMP",
		pages: func() [][]byte {
			p := newTestPage(false).event(0, payload(8), false).extend(3<<27+5).event(1, payload(8), false).
				stamp(1<<40+77).event(3, payload(8), false)
			return [][]byte{p.bytes(4096, 0xf800000000000000+10, 0, 0)}
		},
		want: []want{
			{0xf800000000000000 + 10, 8, 0},
			{0xf800000000000000 + 10 + 3<<27 + 5 + 1, 8, 0},
			// TIME_STAMP keeps the top 5 bits of the running time.
			{0xf800000000000000 + 1<<40 + 77 + 3, 8, 0},
		},
	}, {
		name: "lost events: stored count, unknown count, carried over an empty page",
		pages: func() [][]byte {
			one := func() *testPage { return newTestPage(false).event(0, payload(8), false).event(1, payload(8), false) }
			return [][]byte{
				one().bytes(4096, 100, missingEvents|missingStored, 1234),
				one().bytes(4096, 200, missingEvents, 0),
				newTestPage(false).bytes(4096, 300, missingEvents|missingStored, 5),
				newTestPage(false).fill().bytes(4096, 350, missingEvents|missingStored, 6),
				one().bytes(4096, 400, 0, 0),
			}
		},
		want: []want{{100, 8, 1234}, {101, 8, 0}, {200, 8, -1}, {201, 8, 0}, {400, 8, 11}, {401, 8, 0}},
	}, {
		name: "big endian",
		be:   true,
		pages: func() [][]byte {
			p := newTestPage(true).event(0, payload(8), false).extend(1<<27).event(2, payload(120), false).
				discard(1, 4).stamp(999).event(1, payload(4), false)
			return [][]byte{p.bytes(4096, 7, missingEvents|missingStored, 3)}
		},
		want: []want{{7, 8, 3}, {7 + 1<<27 + 2, 120, 0}, {1000, 4, 0}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := testLayout64
			l.BigEndian = tt.be
			recs, err := decodePages(t, l, tt.pages()...)
			if err != nil {
				t.Fatal(err)
			}
			var got []want
			for _, r := range recs {
				got = append(got, want{r.TS, len(r.Data), r.Missed})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("records = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("record %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
			for i, r := range recs {
				if !bytes.Equal(r.Data[:4], payload(4)) {
					t.Errorf("record %d: payload starts % x", i, r.Data[:4])
				}
			}
		})
	}
}

// TestPageCommitSignExtension checks the commit word of a page with
// stored lost events as the kernel writes it: 0xffffffffc0000fc0.
func TestPageCommitSignExtension(t *testing.T) {
	p := newTestPage(false)
	for len(p.data) < 0xfc0 {
		p.event(1, make([]byte, 60), false)
	}
	page := p.bytes(4096, 0, missingEvents|missingStored, 42)
	if c := binary.LittleEndian.Uint64(page[8:]); c != 0xffffffffc0000fc0 {
		t.Fatalf("commit = %#x, want 0xffffffffc0000fc0", c)
	}
	recs, err := decodePages(t, testLayout64, page)
	if err != nil || len(recs) != 0xfc0/64 || recs[0].Missed != 42 {
		t.Fatalf("records = %d (first missed %d), err %v; want %d, missed 42", len(recs), recs[0].Missed, err, 0xfc0/64)
	}
}

func TestPageLayout32(t *testing.T) {
	l := PageLayout{Size: 4096, LongSize: 4, DataOffset: 12}
	page := make([]byte, 4096)
	binary.LittleEndian.PutUint64(page, 500)
	binary.LittleEndian.PutUint32(page[8:], 1<<31|1<<30|12)
	copy(page[12:], testUnhex(t, "02000000 aabbccdd 11223344 47000000")) // lost count 0x47 after the data
	recs, err := decodePages(t, l, page)
	if err != nil || len(recs) != 1 || recs[0].TS != 500 || recs[0].Missed != 0x47 || len(recs[0].Data) != 8 {
		t.Fatalf("records = %+v, %v; want one 8-byte record at 500 with 0x47 missed", recs, err)
	}
}

func TestPageErrors(t *testing.T) {
	withCommit := func(commit uint64, recs ...byte) []byte {
		page := make([]byte, 4096)
		binary.LittleEndian.PutUint64(page[8:], commit)
		copy(page[16:], recs)
		return page
	}
	tests := []struct {
		name string
		page []byte
		want string
	}{
		{"short page", make([]byte, 100), "page is 100 bytes, want 4096"},
		{"commit past the page", withCommit(4081), "data size 4081 exceeds the page's 4080 bytes"},
		{"header cut by commit", withCommit(10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0), "record header at page offset 0x18: 2 bytes left"},
		{"payload past the page", func() []byte {
			// 36 records of 116 bytes: the last runs past the page.
			p := withCommit(4080)
			for i := range 36 {
				binary.LittleEndian.PutUint32(p[16+i*116:], 28)
			}
			return p
		}(), "112-byte payload runs past the data"},
		{"type_len 0 past commit", withCommit(12, 0, 0, 0, 0, 12, 0, 0, 0), "8-byte payload runs past the data"},
		{"type_len 0 without length word", withCommit(4, 0, 0, 0, 0), "no room for its length word"},
		{"padding past commit", withCommit(12, 0x3d, 0, 0, 0, 9, 0, 0, 0), "9-byte padding runs past the data"},
		{"time extend cut", withCommit(4, 0x1e, 0, 0, 0), "no room for its length word"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodePages(t, testLayout64, tt.page)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// A record that the commit size cuts but the page holds is read, as
	// trace-cmd reads it, and ends the page.
	recs, err := decodePages(t, testLayout64, withCommit(8, 2, 0, 0, 0, 7, 0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0))
	if err != nil || len(recs) != 1 || !bytes.Equal(recs[0].Data, []byte{7, 0, 0, 0, 9, 0, 0, 0}) {
		t.Errorf("record cut by the commit: %v, %v; want the one record, whole", recs, err)
	}
	// A type_len 0 record whose length runs past the data is returned
	// with what the page holds, as trace-cmd returns it, then the page
	// ends with the damage.
	page := withCommit(24, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0xff, 6, 0, 0, 0, 9, 0, 0, 0)
	recs, err = decodePages(t, testLayout64, page)
	if len(recs) != 2 || !bytes.Equal(recs[1].Data, page[16+16:]) || err == nil || !strings.Contains(err.Error(), "record at page offset 0x18 (type_len 0, 24 data bytes): 4293918716-byte payload runs past the data") {
		t.Errorf("type_len 0 with a huge length: %d records, %v; want the second with the rest of the page, then the damage", len(recs), err)
	}
	// A length word below 4 is read as kbuffer reads it, in 32-bit
	// unsigned arithmetic: 0 wraps to a length that runs past the data
	// (the record gets the rest of the page, then the damage ends it),
	// 1 to 3 to an empty record.
	page = withCommit(16, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 9, 0, 0, 0)
	recs, err = decodePages(t, testLayout64, page)
	if len(recs) != 1 || !bytes.Equal(recs[0].Data, page[16+8:]) || err == nil || !strings.Contains(err.Error(), "4294967292-byte payload runs past the data") {
		t.Errorf("type_len 0 with length word 0: %d records, %v; want one with the rest of the page, then the damage", len(recs), err)
	}
	recs, err = decodePages(t, testLayout64, withCommit(16, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0))
	if err != nil || len(recs) != 2 || len(recs[0].Data) != 0 || !bytes.Equal(recs[1].Data, []byte{9, 0, 0, 0}) {
		t.Errorf("type_len 0 with length word 3: %+v, %v; want an empty record, then the next", recs, err)
	}
	for _, l := range []PageLayout{{Size: 4096, LongSize: 2, DataOffset: 16}, {Size: 16, LongSize: 8, DataOffset: 16}, {Size: 4096, LongSize: 8, DataOffset: 8}} {
		if _, err := NewPageReader(l); err == nil {
			t.Errorf("NewPageReader(%+v) = nil error", l)
		}
	}
}
