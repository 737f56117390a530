package hist

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

// percentTable is a hist of writes by fd with hitcount.percent,
// count.percent and count.graph: two entries, 30 and 10 hits summing
// 3000 and 1000 bytes, and dropped events as given.
func percentTable(dropped uint64, droppedVals []uint64) *Table {
	p := plan("syscalls:sys_enter_write", []Key{numKey("fd", parse.ModNone)},
		[]parse.HistField{fld("hitcount", parse.ModPercent), fld("count", parse.ModPercent), fld("count", parse.ModGraph)})
	return &Table{Plan: p, Entries: []Entry{
		entry(30, "", keys(num(100)), 3000, 3000),
		entry(10, "", keys(num(1)), 1000, 1000),
	}, Dropped: dropped, DroppedVals: droppedVals}
}

// writeAll writes tbl in every output format.
func writeAll(t *testing.T, tbl *Table) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{"text", "csv", "json", "table"} {
		var b bytes.Buffer
		if err := Write(&b, f, []*Table{tbl}, []string{"x"}, testResolver); err != nil {
			t.Fatalf("Write(%s) = %v", f, err)
		}
		out[f] = b.String()
	}
	return out
}

// TestPercentOfAllHits checks that .percent divides by the column's sum
// over every event, the dropped ones included (grammar §12.20): 10
// dropped events of 4000 bytes make the entries' shares 60+20 of the hits
// and 37.50+12.50 of the bytes, in text, CSV and the table, whose footer
// gives the dropped share, and JSON gives the dropped sums; .graph stays
// relative to the largest entry.
func TestPercentOfAllHits(t *testing.T) {
	out := writeAll(t, percentTable(10, []uint64{4000, 4000}))
	want := []string{
		"{ fd:        100 } hitcount:         30  hitcount (%):  60.00  count (%):  37.50  count: ####################",
		"{ fd:          1 } hitcount:         10  hitcount (%):  20.00  count (%):  12.50  count: ######              ",
	}
	if got := entryLines(t, percentTable(10, []uint64{4000, 4000}), testResolver); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entry lines =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasSuffix(out["text"], "Totals:\n    Hits: 40\n    Entries: 2\n    Dropped: 10\n") {
		t.Errorf("text totals:\n%s", out["text"])
	}
	if want := "fd,hitcount,hitcount.percent,count.percent,count.graph\n100,30,60.00,37.50,3000\n1,10,20.00,12.50,1000\n"; out["csv"] != want {
		t.Errorf("csv =\n%s\nwant\n%s", out["csv"], want)
	}
	for _, frag := range []string{
		`"dropped": 10,`,
		`"dropped_values": [
        {
          "name": "hitcount",
          "modifier": "percent",
          "value": 10
        },
        {
          "name": "count",
          "modifier": "percent",
          "value": 4000
        }
      ]`,
	} {
		if !strings.Contains(out["json"], frag) {
			t.Errorf("json lacks\n%s\nin\n%s", frag, out["json"])
		}
	}
	for _, frag := range []string{" 60.00 │", " 37.50 │", "dropped 20.00", "dropped 50.00"} {
		if !strings.Contains(out["table"], frag) {
			t.Errorf("table lacks %q in\n%s", frag, out["table"])
		}
	}
}

// TestPercentNothingDropped checks that a table that dropped nothing
// prints the same bytes, in every format, whether it keeps dropped sums
// (zero) or none: the kernel's text, with shares of the entries alone.
func TestPercentNothingDropped(t *testing.T) {
	kept, none := writeAll(t, percentTable(0, []uint64{0, 0})), writeAll(t, percentTable(0, nil))
	for f, got := range kept {
		if got != none[f] {
			t.Errorf("%s with zero dropped sums differs from without: %s", f, testutil.FirstDiff(got, none[f]))
		}
	}
	if !strings.Contains(kept["text"], "hitcount (%):  75.00  count (%):  75.00") || strings.Contains(kept["json"], "dropped_values") {
		t.Errorf("nothing dropped:\n%s\n%s", kept["text"], kept["json"])
	}
}

// TestPlanDropSums checks that only a hist with a .percent sum keeps
// dropped sums: not one with hitcount.percent or .graph alone.
func TestPlanDropSums(t *testing.T) {
	for hist, want := range map[string]bool{
		"keys=id:vals=ret.percent":          true,
		"keys=id:vals=ret*2,ret.percent":    true,
		"keys=id:vals=hitcount.percent,ret": false,
		"keys=id:vals=ret.graph":            false,
		"keys=id:vals=ret.hex":              false,
	} {
		spec, err := parse.ParseHist("hist", hist)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(spec, testutil.Format(t, "raw_syscalls:sys_exit"))
		if err != nil {
			t.Fatal(err)
		}
		if p.Layout.DropSums != want {
			t.Errorf("NewPlan(%q).Layout.DropSums = %v, want %v", hist, p.Layout.DropSums, want)
		}
		if got := strings.Contains(p.String(), "dropped sums"); got != want {
			t.Errorf("NewPlan(%q).String() =\n%s\nsays dropped sums: %v, want %v", hist, p, got, want)
		}
	}
}

// TestEngineDropSums fills a table of 128 entries and drops events of
// new keys: their values add up in Table.DroppedVals, one per value, the
// hit count's being Dropped; a hist without a .percent sum keeps none.
func TestEngineDropSums(t *testing.T) {
	var events []engineEvent
	for id := range int64(128) {
		events = append(events, engineEvent{rec: sysExit(t, 1, id, id)})
	}
	events = append(events,
		engineEvent{rec: sysExit(t, 1, 200, 30)}, // dropped
		engineEvent{rec: sysExit(t, 1, 1, 5)},    // counted
		engineEvent{rec: sysExit(t, 1, 201, 12)}, // dropped
	)
	got := runEngine(t, "raw_syscalls:sys_exit", "keys=id:vals=ret.percent,ret*2:size=128", events)
	if got.Dropped != 2 || len(got.DroppedVals) != 2 || got.DroppedVals[0] != 42 || got.DroppedVals[1] != 84 {
		t.Errorf("Dropped, DroppedVals = %d, %v, want 2, [42 84]", got.Dropped, got.DroppedVals)
	}
	if got := runEngine(t, "raw_syscalls:sys_exit", "keys=id:vals=ret:size=128", events); got.Dropped != 2 || got.DroppedVals != nil {
		t.Errorf("without .percent: Dropped, DroppedVals = %d, %v, want 2, nil", got.Dropped, got.DroppedVals)
	}
}
