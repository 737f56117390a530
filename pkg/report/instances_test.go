package report

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// This file checks files with several ring-buffer instances against
// what trace-cmd report printed for them (-update asks it again). The
// files are built here, as version 7 files without compression, to hold
// what live captures rarely do: records of different instances with the
// same timestamp, events lost in an instance, an instance with a CPU
// the top instance and the CPU count lack, no top instance at all.

// tbuf is an instance of a built file: its name and records.
type tbuf struct {
	name string
	recs []trec
}

// buildInstances writes a version 7 file holding bufs; cpuCount, if not
// 0, is stored as the CPUCOUNT option.
func buildInstances(tb testing.TB, formats []tracedat.FormatText, cmdlines string, cpuCount int, bufs []tbuf) string {
	tb.Helper()
	const pageSize = 4096
	sample := openDat(tb, sampleDat)
	le := binary.LittleEndian
	var b []byte
	section := func(id uint16, body []byte) uint64 {
		off := len(b)
		b = le.AppendUint16(b, id)
		b = le.AppendUint16(b, 0)
		b = le.AppendUint32(b, 0)
		b = le.AppendUint64(b, uint64(len(body)))
		b = append(b, body...)
		return uint64(off)
	}
	b = append(b, "\x17\x08Dtracing7\x00"...)
	b = append(b, 0, 8)
	b = le.AppendUint32(b, pageSize)
	b = append(b, "none\x00\x00"...)
	optPatch := len(b)
	b = le.AppendUint64(b, 0)

	var opts []byte
	option := func(id uint16, data []byte) {
		opts = le.AppendUint16(opts, id)
		opts = le.AppendUint32(opts, uint32(len(data)))
		opts = append(opts, data...)
	}
	var meta []byte
	meta = append(meta, "header_page\x00"...)
	meta = le.AppendUint64(meta, uint64(len(sample.HeaderPage)))
	meta = append(meta, sample.HeaderPage...)
	meta = append(meta, "header_event\x00"...)
	meta = le.AppendUint64(meta, uint64(len(sample.HeaderEvent)))
	meta = append(meta, sample.HeaderEvent...)
	option(16, le.AppendUint64(nil, section(16, meta)))
	option(17, le.AppendUint64(nil, section(17, le.AppendUint32(nil, 0))))
	meta = le.AppendUint32(nil, uint32(len(formats)))
	for _, f := range formats {
		meta = append(meta, f.System+"\x00"...)
		meta = le.AppendUint32(meta, 1)
		meta = le.AppendUint64(meta, uint64(len(f.Text)))
		meta = append(meta, f.Text...)
	}
	option(18, le.AppendUint64(nil, section(18, meta)))
	option(19, le.AppendUint64(nil, section(19, le.AppendUint32(nil, 0))))
	option(20, le.AppendUint64(nil, section(20, le.AppendUint32(nil, 0))))
	option(21, le.AppendUint64(nil, section(21, append(le.AppendUint64(nil, uint64(len(cmdlines))), cmdlines...))))
	option(4, []byte("[local] global counter\n\x00"))
	if cpuCount > 0 {
		option(8, le.AppendUint32(nil, uint32(cpuCount)))
	}
	for _, buf := range bufs {
		// One section per instance: the header, padding, then each
		// CPU's pages from a page boundary on.
		pages := map[int]*bytes.Buffer{}
		writers := map[int]*tracedat.PageWriter{}
		var cpus []int
		for _, r := range buf.recs {
			pw := writers[r.cpu]
			if pw == nil {
				pages[r.cpu] = &bytes.Buffer{}
				pw = tracedat.NewPageWriter(pages[r.cpu], pageSize)
				writers[r.cpu] = pw
				cpus = append(cpus, r.cpu)
			}
			pw.Lost(r.lost)
			if err := pw.Add(r.ts, r.data); err != nil {
				tb.Fatal(err)
			}
		}
		start := len(b) + 16
		data := make([]byte, (start+pageSize-1)/pageSize*pageSize-start)
		bopt := le.AppendUint64(nil, uint64(len(b)))
		bopt = append(bopt, buf.name+"\x00local\x00"...)
		bopt = le.AppendUint32(bopt, pageSize)
		bopt = le.AppendUint32(bopt, uint32(len(cpus)))
		for _, c := range cpus {
			if err := writers[c].Flush(); err != nil {
				tb.Fatal(err)
			}
			bopt = le.AppendUint32(bopt, uint32(c))
			bopt = le.AppendUint64(bopt, uint64(start+len(data)))
			bopt = le.AppendUint64(bopt, uint64(pages[c].Len()))
			data = append(data, pages[c].Bytes()...)
		}
		section(3, data)
		option(3, bopt)
	}
	option(0, le.AppendUint64(nil, 0))
	off := section(0, opts)
	le.PutUint64(b[optPatch:], off)
	path := filepath.Join(tb.TempDir(), "instances.dat")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestInstances checks text and JSON output of files with instances.
func TestInstances(t *testing.T) {
	tick := formatText("tick", 3000, []tfield{{"int n", 4, true}}, `"n=%d", REC->n`)
	fm, err := parse.ParseFormat("tick", tick)
	if err != nil {
		t.Fatal(err)
	}
	formats := []tracedat.FormatText{{System: "gtrace", Text: tick}}
	n := 0
	rec := func(cpu int, us uint64, lost uint64) trec {
		n++
		return trec{cpu: cpu, ts: 5_000_000_000 + us*1000, data: recordOf(t, fm, int32(n%3*21), map[string]any{"n": n}), lost: lost}
	}
	// Records at 10 µs are on every CPU of every instance: ties.
	top := tbuf{"", []trec{rec(1, 10, 0), rec(0, 10, 0), rec(0, 20, 0), rec(1, 30, 0)}}
	short := tbuf{"in1", []trec{rec(1, 10, 0), rec(0, 10, 0), rec(1, 15, 0), rec(1, 30, 7), rec(0, 40, 0)}}
	long := tbuf{"instance_two", []trec{rec(0, 5, 0), rec(0, 10, 0), rec(3, 10, 0), rec(3, 25, 2)}}
	const cmdlines = "21 worker\n42 other\n"
	runs := []struct {
		args []string
		o    Options
	}{
		{nil, Options{}},
		{[]string{"-t"}, Options{NsTimestamps: true}},
		{[]string{"-R"}, Options{Raw: true}},
		{[]string{"--cpu", "0"}, Options{CPUs: []int{0}}},
		{[]string{"--cpu", "1,3"}, Options{CPUs: []int{1, 3}}},
		{[]string{"--cpu", "2-6"}, Options{CPUs: []int{2, 3, 4, 5, 6}}},
		{[]string{"--cpu", "7-12"}, Options{CPUs: []int{7, 8, 9, 10, 11, 12}}},
	}
	for _, tt := range []struct {
		name     string
		cpuCount int
		bufs     []tbuf
	}{
		// The top instance is not the first in the file; the second
		// instance has CPU 3, which CPUCOUNT counts.
		{"three", 4, []tbuf{short, top, long}},
		// Without CPUCOUNT, cpus=N counts the top instance's CPUs only.
		{"nocpucount", 0, []tbuf{top, short, long}},
		// trace-cmd tags the records of "dir/in1" with "in1".
		{"notop", 4, []tbuf{long, {"dir/in1", short.recs}}},
		// A lone top instance has no tags.
		{"toponly", 2, []tbuf{top}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dat := buildInstances(t, formats, cmdlines, tt.cpuCount, tt.bufs)
			f := openDat(t, dat)
			var got []byte
			for _, r := range runs {
				got = append(got, "$ trace-cmd report "+strings.Join(r.args, " ")+"\n"...)
				got = append(got, text(t, f, r.o)...)
			}
			checkGolden(t, filepath.Join("testdata", "instances", tt.name+".txt"), got, func() []byte {
				var want []byte
				for _, r := range runs {
					want = append(want, "$ trace-cmd report "+strings.Join(r.args, " ")+"\n"...)
					want = append(want, traceCmd(t, dat, r.args...)...)
				}
				return want
			})
			var j bytes.Buffer
			if err := NDJSON(context.Background(), &j, f, Options{}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "instances", tt.name+".ndjson"), j.Bytes(), nil)
			checkJSONDoc(t, f, Options{}, j.Bytes())
		})
	}
}
