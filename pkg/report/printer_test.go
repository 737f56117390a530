package report

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// records reads the records of a file's top instance, each with a copy of
// its page from the record on: a Printer, like trace-cmd, reads a string
// that lacks its NUL on into the bytes after the record.
func records(t *testing.T, f *tracedat.File) []Record {
	t.Helper()
	var out []Record
	it := f.Records()
	for it.Next() {
		r := it.Record()
		data := append([]byte(nil), r.Data[:cap(r.Data)]...)[:len(r.Data)]
		out = append(out, Record{CPU: r.CPU, TS: r.TS, Data: data, Missed: r.Missed})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// filePrinterOptions is what a live stream would give a Printer for the
// file's kernel.
func filePrinterOptions(f *tracedat.File) PrinterOptions {
	o := PrinterOptions{Kallsyms: f.Kallsyms, Printk: f.Printk, Cmdlines: f.Cmdlines,
		LongSize: f.LongSize, BigEndian: f.BigEndian, Clock: f.Clock, Formats: map[int]EventFormat{}}
	for id, e := range f.Events {
		o.Formats[id] = EventFormat{Format: e.Format, Text: e.Text}
	}
	return o
}

// TestPrinter prints the records of the test files one by one through a
// Printer, as a live stream would, and wants Text's and NDJSON's bytes.
func TestPrinter(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "captured", "*.dat"))
	helpers := helperFile(t)
	files = append(files, sampleDat, helpers)
	for _, path := range files {
		f := openDat(t, path)
		recs := records(t, f)
		for _, o := range []Options{{}, {Raw: true}, {NsTimestamps: true}} {
			t.Run(filepath.Base(path)+"/"+strconv.FormatBool(o.Raw)+strconv.FormatBool(o.NsTimestamps), func(t *testing.T) {
				po := filePrinterOptions(f)
				po.Raw, po.NsTimestamps = o.Raw, o.NsTimestamps
				pr := NewPrinter(po)
				got := []byte("cpus=" + strconv.Itoa(cpuCount(f)) + "\n")
				used := 0
				for i := 0; i < len(recs); i++ {
					next := func() (Record, bool) {
						if i+1 < len(recs) {
							return recs[i+1], true
						}
						return Record{}, false
					}
					var skip bool
					got, skip = pr.AppendText(got, recs[i], next)
					if skip {
						i++
						used++
					}
				}
				want := text(t, f, o)
				if !bytes.Equal(got, want) {
					t.Errorf("Printer differs from Text:\n%s", testutil.FirstDiff(string(got), string(want)))
				}
				if path == helpers && !o.Raw && used == 0 {
					t.Errorf("no function graph entry used the record after it")
				}
				if o.Raw || o.NsTimestamps {
					return
				}
				pr = NewPrinter(filePrinterOptions(f))
				var js []byte
				for _, r := range recs {
					js = pr.AppendJSON(js, r)
				}
				var nd bytes.Buffer
				if err := NDJSON(context.Background(), &nd, f, Options{}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(js, nd.Bytes()) {
					t.Errorf("Printer's JSON differs from NDJSON:\n%s", testutil.FirstDiff(string(js), nd.String()))
				}
			})
		}
	}
}

// TestPrinterNoNext: without the next record, a function graph entry
// prints as a nested call, as trace-cmd prints one at the end of its data.
func TestPrinterNoNext(t *testing.T) {
	f := openDat(t, helperFile(t))
	pr := NewPrinter(filePrinterOptions(f))
	n := 0
	for _, r := range records(t, f) {
		line, used := pr.AppendText(nil, r, nil)
		if used {
			t.Fatalf("AppendText(%s) used a next record it was not given", line)
		}
		if bytes.HasSuffix(line, []byte("() {\n")) {
			n++
		}
	}
	if n == 0 {
		t.Error("no function graph entry printed as a nested call")
	}
}

// TestPrinterClock: timestamps of clocks in nanoseconds print as seconds,
// others as raw counts.
func TestPrinterClock(t *testing.T) {
	f := openDat(t, sampleDat)
	r := records(t, f)[0]
	for _, tc := range []struct {
		clock string
		ns    bool
		want  string
	}{
		{"", false, " " + strconv.FormatFloat(float64((r.TS+500)/1000)/1e6, 'f', 6, 64) + ": sched_switch"},
		{"mono", true, " " + strconv.FormatFloat(float64(r.TS)/1e9, 'f', 9, 64) + ": sched_switch"},
		{"boot", false, "]" + strconv.FormatUint(r.TS, 10) + ": sched_switch"},
	} {
		o := filePrinterOptions(f)
		o.Clock, o.NsTimestamps = tc.clock, tc.ns
		line, _ := NewPrinter(o).AppendText(nil, r, nil)
		if !bytes.Contains(line, []byte(tc.want)) {
			t.Errorf("clock %q: %q lacks %q", tc.clock, line, tc.want)
		}
	}
}

// TestPrinterStringArray: libtraceevent's field parser stops at an array
// of strings (a probe's __data_loc char[][N]): the event prints as
// [FAILED TO PARSE] with the fields before it, as trace-cmd report prints
// the kernel's probe events.
func TestPrinterStringArray(t *testing.T) {
	text := "name: v\nID: 9\nformat:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" +
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n" +
		"\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n" +
		"\tfield:__data_loc char[] path;\toffset:16;\tsize:4;\tsigned:1;\n" +
		"\tfield:__data_loc char[][2] argv;\toffset:20;\tsize:8;\tsigned:1;\n" +
		"\tfield:u64 n;\toffset:28;\tsize:8;\tsigned:0;\n\n" +
		`print fmt: "(%lx) path=\"%s\" argv={\"%s\",\"%s\"} n=%Lu", REC->__probe_ip, __get_str(path), __get_str(argv[0]), __get_str(argv[1]), REC->n` + "\n"
	fm, err := parse.ParseFormat("v", text)
	if err != nil {
		t.Fatal(err)
	}
	fm.System = "uprobes"
	rec := binary.LittleEndian.AppendUint16(nil, 9)
	rec = append(rec, 0, 0)
	rec = binary.LittleEndian.AppendUint32(rec, 42)
	rec = binary.LittleEndian.AppendUint64(rec, 0x1234)
	rec = binary.LittleEndian.AppendUint32(rec, 3<<16|36)
	rec = binary.LittleEndian.AppendUint32(rec, 2<<16|39)
	rec = binary.LittleEndian.AppendUint32(rec, 2<<16|41)
	rec = binary.LittleEndian.AppendUint64(rec, 7)
	rec = append(rec, "/x\x00a\x00b\x00"...)
	pr := NewPrinter(PrinterOptions{LongSize: 8, Clock: "local", Formats: map[int]EventFormat{9: {Format: fm, Text: text}}})
	got, _ := pr.AppendText(nil, Record{Data: rec}, func() (Record, bool) { return Record{}, false })
	if want := ": v: [FAILED TO PARSE] __probe_ip=0x1234 path=/x\n"; !strings.HasSuffix(strings.Join(strings.Fields(string(got)), " ")+"\n", want) {
		t.Errorf("got %q, want it to end %q", got, want)
	}
}
