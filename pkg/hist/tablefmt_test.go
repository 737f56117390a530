package hist

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

func TestWriteTableGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTable(&b, c.tables, c.trigger, c.r); err != nil {
				t.Fatalf("WriteTable() = %v", err)
			}
			checkGolden(t, c.name+".table", b.Bytes())
		})
	}
}

func TestWriteTableFooter(t *testing.T) {
	p := plan("kmem:kmalloc", []Key{numKey("call_site", parse.ModSym)}, []parse.HistField{fld("bytes_req", parse.ModNone)})
	tbl := &Table{Plan: p, Entries: []Entry{
		entry(2, "", keys(num(0xffffffff811e2a1b)), 100),
		entry(3, "", keys(num(0xffffffff8125847d)), 20),
	}, Dropped: 4, Lost: 5}
	var b bytes.Buffer
	if err := WriteTable(&b, []*Table{tbl}, []string{"hist:keys=call_site.sym [active]"}, testResolver); err != nil {
		t.Fatalf("WriteTable() = %v", err)
	}
	out := b.String()
	for _, want := range []string{
		"kmem:kmalloc: hist:keys=call_site.sym [active]\n",
		"call_site.sym",
		"│ 18446744071580822043 │ seq_buf_alloc           │",
		"Totals",
		" 5 ", " 120 ",
		"Hits: 5  Entries: 2  Dropped: 4  Lost: 5\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteTable() =\n%s\nwant it to contain %q", out, want)
		}
	}
}
