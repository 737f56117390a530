package hist

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

func TestWriteJSONGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
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
// schema's promises: raw numbers exact, signed keys signed, the name of
// an .execname or .hex key beside its number, hitcount always present.
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
	dec := json.NewDecoder(bytes.NewReader(b.Bytes()))
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
	wantKeys := map[string]any{
		"ret":                 json.Number("-2"),
		"addr":                json.Number("9223372036854775809"),
		"addr.hex":            "8000000000000001",
		"common_pid":          json.Number("0"),
		"common_pid.execname": "<idle>",
		"comm":                "swapper/0",
	}
	if ks := e["keys"].(map[string]any); !reflect.DeepEqual(ks, wantKeys) {
		t.Errorf("keys = %#v\nwant %#v", ks, wantKeys)
	}
	if e["hitcount"] != json.Number("7") {
		t.Errorf("hitcount = %v, want 7", e["hitcount"])
	}
	// The keys' members are in column order.
	order := []string{`"ret"`, `"addr"`, `"addr.hex"`, `"common_pid"`, `"common_pid.execname"`, `"comm"`}
	for i := 1; i < len(order); i++ {
		if strings.Index(b.String(), order[i-1]) > strings.Index(b.String(), order[i]) {
			t.Errorf("key %s before %s in:\n%s", order[i], order[i-1], b.String())
		}
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

	// No comm beside the keys.
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

// TestWriteNDJSON checks that each line of the NDJSON form is the JSON
// form's object of one table, in order.
func TestWriteNDJSON(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var nd, js bytes.Buffer
			if err := WriteNDJSON(&nd, c.tables, c.trigger, c.r); err != nil {
				t.Fatalf("WriteNDJSON() = %v", err)
			}
			if err := WriteJSON(&js, c.tables, c.trigger, c.r); err != nil {
				t.Fatalf("WriteJSON() = %v", err)
			}
			var want []json.RawMessage
			if err := json.Unmarshal(js.Bytes(), &want); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(nd.String(), "\n"), "\n")
			if len(lines) != len(want) {
				t.Fatalf("%d lines for %d tables:\n%s", len(lines), len(want), nd.String())
			}
			for i, l := range lines {
				var a, b any
				if err := json.Unmarshal([]byte(l), &a); err != nil {
					t.Fatalf("line %d: %v\n%s", i+1, err, l)
				}
				if err := json.Unmarshal(want[i], &b); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("line %d:\n%s\nwant the JSON form's\n%s", i+1, l, want[i])
				}
			}
		})
	}
}
