package hist

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

func TestWriteCSVGolden(t *testing.T) {
	for _, c := range goldenCases() {
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
	want := "id,id.syscall,ret,comm,lat,lat.buckets=10,hitcount,bytes.hex,hitcount.percent\n" +
		`0,sys_read                      [  0],-2,"say ""hi"", bye",20,~ 20-29,3,255,75.00` + "\n" +
		"1,sys_write                     [  1],0,x,0,~ 0-9,1,1,25.00\n"
	if b.String() != want {
		t.Errorf("WriteCSV() =\n%s\nwant\n%s", b.String(), want)
	}
}
