package hist

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

func TestWriteCSVGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteCSV(&b, c.tables, c.trigger, c.r); err != nil {
				t.Fatalf("WriteCSV() = %v", err)
			}
			checkGolden(t, c.name+".csv", b.Bytes())
			// Every block reads back as CSV with one header and one row per entry.
			blocks := strings.Split(b.String(), "\n\n")
			if len(blocks) != len(c.tables) {
				t.Fatalf("WriteCSV() wrote %d blocks, want %d", len(blocks), len(c.tables))
			}
			for i, blk := range blocks {
				rows, err := csv.NewReader(strings.NewReader(blk)).ReadAll()
				if err != nil || len(rows) != len(c.tables[i].Entries)+1 {
					t.Errorf("table %d: read back %d rows, %v; want %d", i, len(rows), err, len(c.tables[i].Entries)+1)
				}
			}
		})
	}
}

func TestWriteCSVColumns(t *testing.T) {
	p := plan("a:b", []Key{sgnKey("id", parse.ModSyscall), sgnKey("ret", parse.ModNone), strKey("comm"), bucketsKey("lat", 10)},
		[]parse.HistField{fld("bytes", parse.ModHex), fld("hitcount", parse.ModPercent)})
	tbl := &Table{Plan: p, Entries: []Entry{
		entry(3, "", keys(num(0), neg(-2), str(`say "hi", bye`), num(20)), 255),
		entry(1, "", keys(num(1), num(0), str("x"), num(0)), 1),
	}}
	var b bytes.Buffer
	if err := WriteCSV(&b, []*Table{tbl}, []string{"x"}, testResolver); err != nil {
		t.Fatalf("WriteCSV() = %v", err)
	}
	want := "id,id.syscall,ret,comm,lat.min,lat.max,hitcount,bytes.hex,hitcount.percent\n" +
		`0,sys_read,-2,"say ""hi"", bye",20,29,3,255,75.00` + "\n" +
		"1,sys_write,0,x,0,9,1,1,25.00\n"
	if b.String() != want {
		t.Errorf("WriteCSV() =\n%s\nwant\n%s", b.String(), want)
	}
}

// TestWriteCSVValues reads the CSV of every kind of key back with
// encoding/csv and wants values, not the kernel's padded text: numbers
// that parse as numbers, names in columns of their own.
func TestWriteCSVValues(t *testing.T) {
	p := plan("a:b", []Key{
		sgnKey("common_pid", parse.ModExecname), sgnKey("id", parse.ModSyscall), numKey("call_site", parse.ModSym),
		numKey("addr", parse.ModHex), numKey("len", parse.ModLog2), sgnKey("ret", parse.ModNone),
	}, []parse.HistField{fld("bytes", parse.ModNone)})
	tbl := &Table{Plan: p, Entries: []Entry{
		entry(5, "memfd:sealed-91", keys(num(10752), num(202), num(0xffffffff8125847d), num(0xbeef), num(13), neg(-11)), 4096),
	}}
	var b bytes.Buffer
	if err := WriteCSV(&b, []*Table{tbl}, []string{"x"}, testResolver); err != nil {
		t.Fatalf("WriteCSV() = %v", err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("read back %d rows, %v; want 2", len(rows), err)
	}
	got := map[string]string{}
	for i, name := range rows[0] {
		got[name] = rows[1][i]
	}
	wantNum := map[string]int64{
		"common_pid": 10752, "id": 202, "addr": 0xbeef, "len.log2": 13, "len.min": 4097, "len.max": 8192,
		"ret": -11, "hitcount": 5, "bytes": 4096,
	}
	for name, want := range wantNum {
		if n, err := strconv.ParseInt(got[name], 10, 64); err != nil || n != want {
			t.Errorf("column %s = %q (%v), want %d", name, got[name], err, want)
		}
	}
	if n, err := strconv.ParseUint(got["call_site"], 10, 64); err != nil || n != 0xffffffff8125847d {
		t.Errorf("column call_site = %q (%v), want %d", got["call_site"], err, uint64(0xffffffff8125847d))
	}
	wantText := map[string]string{
		"common_pid.execname": "memfd:sealed-91", "id.syscall": "unknown_syscall", "call_site.sym": "ext4_htree_store_dirent", "addr.hex": "beef",
	}
	for name, want := range wantText {
		if got[name] != want {
			t.Errorf("column %s = %q, want %q", name, got[name], want)
		}
	}
	if len(got) != len(wantNum)+len(wantText)+1 {
		t.Errorf("columns %q, want %d", rows[0], len(wantNum)+len(wantText)+1)
	}
}

// TestLog2Bounds checks the bounds of .log2 buckets against the
// transform the BPF program and the file engine apply.
func TestLog2Bounds(t *testing.T) {
	for k := uint64(0); k <= 64; k++ {
		lo, hi := log2Bounds(k)
		if log2Bucket(lo) != k || log2Bucket(hi) != k {
			t.Errorf("bucket %d: bounds %d..%d are in buckets %d..%d", k, lo, hi, log2Bucket(lo), log2Bucket(hi))
		}
		if k > 0 && k < 64 && (log2Bucket(lo-1) == k || log2Bucket(hi+1) == k) {
			t.Errorf("bucket %d: bounds %d..%d are not its ends", k, lo, hi)
		}
	}
}
