package hist

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

func TestWriteJSONGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteJSON(&b, c.tables, c.trigger, c.r); err != nil {
				t.Fatalf("WriteJSON() = %v", err)
			}
			if !json.Valid(b.Bytes()) {
				t.Fatalf("WriteJSON() wrote invalid JSON:\n%s", b.Bytes())
			}
			checkGolden(t, c.name+".json", b.Bytes())
		})
	}
}

// TestWriteJSONSchema decodes the output generically and checks the
// schema's promises: raw numbers exact, signed keys signed, comm only with
// an .execname key, hitcount always present.
func TestWriteJSONSchema(t *testing.T) {
	p := plan("a:b", []Key{sgnKey("ret", parse.ModNone), numKey("addr", parse.ModHex), sgnKey("common_pid", parse.ModExecname), strKey("comm")},
		[]parse.HistField{fld("hitcount", parse.ModPercent), fld("bytes", parse.ModNone)})
	p.Spec.NoHitcount = true
	tbl := &Table{Plan: p, Entries: []Entry{
		entry(7, "<idle>", keys(neg(-2), num(1<<63+1), num(0), str("swapper/0")), 1<<64-1),
	}, Dropped: 2, Lost: 1}
	var b bytes.Buffer
	if err := WriteJSON(&b, []*Table{tbl}, []string{"hist:keys=ret [active]"}, Resolver{}); err != nil {
		t.Fatalf("WriteJSON() = %v", err)
	}
	dec := json.NewDecoder(&b)
	dec.UseNumber()
	var got []map[string]any
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d tables, want 1", len(got))
	}
	gt := got[0]
	if gt["event"] != "a:b" || gt["trigger"] != "hist:keys=ret [active]" {
		t.Errorf("event, trigger = %v, %v", gt["event"], gt["trigger"])
	}
	e := gt["entries"].([]any)[0].(map[string]any)
	ks := e["keys"].([]any)
	wantKeys := []map[string]any{
		{"name": "ret", "modifier": "", "value": json.Number("-2"), "display": "18446744073709551614"},
		{"name": "addr", "modifier": "hex", "value": json.Number("9223372036854775809"), "display": "8000000000000001"},
		{"name": "common_pid", "modifier": "execname", "value": json.Number("0"), "display": "<idle>          [         0]"},
		{"name": "comm", "modifier": "", "value": "swapper/0", "display": "swapper/0"},
	}
	for i, want := range wantKeys {
		k := ks[i].(map[string]any)
		for f, v := range want {
			if k[f] != v {
				t.Errorf("keys[%d].%s = %#v, want %#v", i, f, k[f], v)
			}
		}
	}
	if e["comm"] != "<idle>" || e["hitcount"] != json.Number("7") {
		t.Errorf("comm, hitcount = %v, %v, want <idle>, 7", e["comm"], e["hitcount"])
	}
	vals := e["values"].([]any)
	if len(vals) != 2 || vals[0].(map[string]any)["modifier"] != "percent" || vals[1].(map[string]any)["value"] != json.Number("18446744073709551615") {
		t.Errorf("values = %v", vals)
	}
	tot := gt["totals"].(map[string]any)
	for f, v := range map[string]json.Number{"hits": "7", "entries": "1", "dropped": "2", "lost": "1"} {
		if tot[f] != v {
			t.Errorf("totals.%s = %v, want %v", f, tot[f], v)
		}
	}

	// No .execname key: no comm.
	b.Reset()
	plain := &Table{Plan: plan("a:b", []Key{numKey("k", parse.ModNone)}, nil), Entries: []Entry{entry(1, "bash", keys(num(1)))}}
	if err := WriteJSON(&b, []*Table{plain}, []string{"x"}, Resolver{}); err != nil || strings.Contains(b.String(), `"comm"`) {
		t.Errorf("WriteJSON() = %v,\n%s\nwant no comm", err, b.String())
	}
	// An empty table has "entries": [], not null.
	b.Reset()
	if err := WriteJSON(&b, []*Table{{Plan: plain.Plan}}, []string{"x"}, Resolver{}); err != nil || !strings.Contains(b.String(), `"entries": []`) {
		t.Errorf("WriteJSON(empty) = %v,\n%s\nwant \"entries\": []", err, b.String())
	}
}
