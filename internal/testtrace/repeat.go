package testtrace

import (
	"sort"
	"testing"

	"github.com/gtrace/gtrace/pkg/tracedat"
)

// RepeatTrace writes to dst a trace.dat file that holds the records of
// the top instance of the trace.dat file src n times over, each copy
// after the one before in time, with src's formats, symbols and task
// names: a big file, quickly and deterministically, for tests that need
// a long report.
func RepeatTrace(tb testing.TB, src, dst string, n int) {
	tb.Helper()
	f, err := tracedat.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	m := Meta(f, nil)
	m.Clock = "[" + f.Clock + "]"
	w, err := tracedat.Create(dst, m, tracedat.WriteOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Abort()
	var first, last uint64
	type rec struct {
		ts   uint64
		data []byte
	}
	recs := make(map[int][]rec)
	for it := f.Records(); it.Next(); {
		r := it.Record()
		if first == 0 {
			first = r.TS
		}
		last = r.TS
		recs[r.CPU] = append(recs[r.CPU], rec{r.TS - first, append([]byte(nil), r.Data...)})
	}
	span := last - first + 1000
	for cpu, rs := range recs {
		pw := w.CPU(cpu)
		for i := range n {
			for _, r := range rs {
				if err := pw.Add(first+uint64(i)*span+r.ts, r.data); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// Meta returns the metadata to write a file with f's page size, headers,
// symbols, printk formats and task names, and the formats of the events
// that keep accepts (all of them when keep is nil), in ID order.
func Meta(f *tracedat.File, keep func(id int) bool) tracedat.Meta {
	m := tracedat.Meta{
		PageSize:    f.PageSize,
		HeaderPage:  f.HeaderPage,
		HeaderEvent: f.HeaderEvent,
		Kallsyms:    []byte(f.Kallsyms),
		Printk:      []byte(f.Printk),
		Cmdlines:    f.Cmdlines,
		CPUs:        f.CPUCount,
	}
	ids := make([]int, 0, len(f.Events))
	for id := range f.Events {
		if keep == nil || keep(id) {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	for _, id := range ids {
		e := f.Events[id]
		m.Formats = append(m.Formats, tracedat.FormatText{System: e.Format.System, Text: e.Text})
	}
	return m
}
