package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gtrace/gtrace/internal/testtrace"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// checkJSONDoc checks that JSON prints one valid JSON document whose
// events are the objects of ndjson, NDJSON's output for the same file
// and options, byte for byte.
func checkJSONDoc(t *testing.T, f *tracedat.File, o Options, ndjson []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := JSON(context.Background(), &b, f, o); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		CPUs   *int              `json:"cpus"`
		Events []json.RawMessage `json:"events"`
	}
	dec := json.NewDecoder(bytes.NewReader(b.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("JSON output is not a JSON document: %v\n%.300s", err, b.Bytes())
	}
	if dec.More() {
		t.Fatalf("JSON output has more than one document")
	}
	if doc.CPUs == nil || *doc.CPUs != cpuCount(f) || doc.Events == nil {
		t.Errorf("JSON document: cpus %v, events %v; want cpus %d and an array", doc.CPUs, doc.Events, cpuCount(f))
	}
	lines := bytes.Split(bytes.TrimSuffix(ndjson, []byte("\n")), []byte("\n"))
	if len(ndjson) == 0 {
		lines = nil
	}
	if len(doc.Events) != len(lines) {
		t.Fatalf("JSON has %d events, NDJSON %d lines", len(doc.Events), len(lines))
	}
	for i, e := range doc.Events {
		if !bytes.Equal(e, lines[i]) {
			t.Errorf("JSON event %d = %s, NDJSON line %s", i, e, lines[i])
		}
	}
}

func TestJSONDocument(t *testing.T) {
	f := openDat(t, sampleDat)
	for _, tc := range []struct {
		name string
		o    Options
		want int // events
	}{
		{"all", Options{}, 95},
		{"cpu 1", Options{CPUs: []int{1}}, 42},
		{"none", Options{Filter: func(*parse.Format, *tracedat.Record) bool { return false }}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nd bytes.Buffer
			if err := NDJSON(context.Background(), &nd, f, tc.o); err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(nd.Bytes(), []byte("\n")); n != tc.want {
				t.Errorf("NDJSON printed %d lines, want %d", n, tc.want)
			}
			checkJSONDoc(t, f, tc.o, nd.Bytes())
		})
	}
	var b bytes.Buffer
	if err := JSON(context.Background(), &b, f, Options{Filter: func(*parse.Format, *tracedat.Record) bool { return false }}); err != nil {
		t.Fatal(err)
	}
	if want := "{\"cpus\":2,\"events\":[\n]}\n"; b.String() != want {
		t.Errorf("JSON of no events = %q, want %q", b.String(), want)
	}
}

// TestJSONDocumentCut reads a recording cut at many offsets in its data:
// whatever JSON returns, error or not, what it printed is one valid JSON
// document.
func TestJSONDocumentCut(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cut.dat")
	testtrace.RepeatTrace(t, sampleDat, p, 3)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	// The records are at the end, after the metadata (kallsyms and all).
	for n := len(data) - 26<<10; n < len(data); n += 1000 {
		f, err := tracedat.Read(bytes.NewReader(data[:n]), int64(n))
		if err != nil {
			continue
		}
		var b bytes.Buffer
		if err := JSON(context.Background(), &b, f, Options{}); err != nil {
			failed++
		}
		if b.Len() > 0 && !json.Valid(b.Bytes()) {
			t.Errorf("cut at %d: JSON printed an invalid document:\n%.300s", n, b.Bytes())
		}
	}
	if failed == 0 {
		t.Error("no cut made JSON fail: the test does not test what it says")
	}
}
