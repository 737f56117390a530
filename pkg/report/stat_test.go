package report

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// TestStat checks report --stat on a file with stored CPU statistics and
// data on CPUs 0 and 2 of 4.
func TestStat(t *testing.T) {
	text := formatText("tick", 3000, []tfield{{"int n", 4, true}}, `"n=%d", REC->n`)
	fm, err := parse.ParseFormat("tick", text)
	if err != nil {
		t.Fatal(err)
	}
	m := buildMeta{
		formats: []tracedat.FormatText{{System: "gtrace", Text: text}},
		cpus:    4,
		stats:   []string{"entries: 0\noverrun: 0\n", "", "entries: 2\noverrun: 1\n"},
	}
	var recs []trec
	for i := 0; i < 300; i++ {
		recs = append(recs, trec{cpu: i % 3 & 2, ts: uint64(1000 + i), data: recordOf(t, fm, 1, map[string]any{"n": i})})
	}
	dat := buildDat(t, m, recs)
	f := openDat(t, dat)
	var b bytes.Buffer
	if err := Stat(context.Background(), &b, f); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "stat.txt"), b.Bytes(), func() []byte { return traceCmd(t, dat, "--stat") })
}

// TestSampleStat checks the reference sample's report --stat. Its CPU
// data is compressed, and trace-cmd prints where the decompressed data
// would lie: Stat needs package tracedat to give that size.
func TestSampleStat(t *testing.T) {
	var b bytes.Buffer
	err := Stat(context.Background(), &b, openDat(t, sampleDat))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "sample", "sched_switch.stat.txt"), b.Bytes(), func() []byte { return traceCmd(t, sampleDat, "--stat") })
}

// TestNDJSON checks the NDJSON form of the helpers file, and that JSON
// holds the same objects.
func TestNDJSON(t *testing.T) {
	f := openDat(t, helperFile(t))
	var b bytes.Buffer
	if err := NDJSON(context.Background(), &b, f, Options{}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "helpers.ndjson"), b.Bytes(), nil)
	checkJSONDoc(t, f, Options{}, b.Bytes())
}

// TestFilter checks that Options.Filter sees every record and its format,
// and drops the records it rejects.
func TestFilter(t *testing.T) {
	f := openDat(t, sampleDat)
	n := 0
	o := Options{Filter: func(fm *parse.Format, r *tracedat.Record) bool {
		if fm == nil || fm.Name != "sched_switch" {
			t.Errorf("Filter got format %v", fm)
		}
		n++
		return r.CPU == 1
	}}
	got := text(t, f, o)
	if n != 95 {
		t.Errorf("Filter saw %d records, want 95", n)
	}
	if c := bytes.Count(got, []byte("\n")); c != 1+42 {
		t.Errorf("Text with a CPU 1 filter printed %d lines, want 43", c)
	}
	var j bytes.Buffer
	if err := NDJSON(context.Background(), &j, f, o); err != nil {
		t.Fatal(err)
	}
	if c := bytes.Count(j.Bytes(), []byte("\n")); c != 42 {
		t.Errorf("NDJSON with a CPU 1 filter printed %d lines, want 42", c)
	}
	checkJSONDoc(t, f, o, j.Bytes())
}
