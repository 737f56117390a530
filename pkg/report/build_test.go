package report

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// This file builds trace.dat files for tests: event formats written here
// or taken from a captured file, and records built field by field.

// tfield declares a field of a test format: its C declaration ("int pid",
// "char comm[16]", "__data_loc char[] name") and size; signed fields say
// so.
type tfield struct {
	decl   string
	size   int
	signed bool
}

// formatText returns the text of a format file with the common fields
// and fields laid out one after the other, each aligned to its size (8 at
// most).
func formatText(name string, id int, fields []tfield, printFmt string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nID: %d\nformat:\n", name, id)
	b.WriteString("\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n")
	b.WriteString("\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n")
	b.WriteString("\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n")
	b.WriteString("\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n")
	off := 8
	for _, f := range fields {
		align := min(max(f.size, 1), 8)
		if strings.Contains(f.decl, "[") && !strings.HasPrefix(f.decl, "__") {
			align = 1
			if strings.HasPrefix(f.decl, "u32") || strings.HasPrefix(f.decl, "int") {
				align = 4
			}
			if strings.Contains(f.decl, "long") || strings.HasPrefix(f.decl, "u64") {
				align = 8
			}
		}
		off = (off + align - 1) / align * align
		s := 0
		if f.signed {
			s = 1
		}
		fmt.Fprintf(&b, "\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;\n", f.decl, off, f.size, s)
		off += f.size
	}
	fmt.Fprintf(&b, "\nprint fmt: %s\n", printFmt)
	return b.String()
}

// trec is a record to write: a CPU, a time and the payload.
type trec struct {
	cpu  int
	ts   uint64
	data []byte
	lost uint64 // events lost before this record
}

// recordOf builds a record of format fm: vals holds field values by name
// (pid for common_pid): integers for numeric fields, strings for char
// arrays and dynamic strings (a NUL is added), []byte for raw bytes.
// Dynamic data goes after the fields, in field order.
func recordOf(tb testing.TB, fm *parse.Format, pid int32, vals map[string]any) []byte {
	tb.Helper()
	size := 0
	for _, f := range fm.Fields {
		size = max(size, f.Offset+f.Size)
	}
	data := make([]byte, size)
	binary.LittleEndian.PutUint16(data, uint16(fm.ID))
	binary.LittleEndian.PutUint32(data[4:], uint32(pid))
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return fm.Field(names[i]).Offset < fm.Field(names[j]).Offset })
	for _, name := range names {
		f := fm.Field(name)
		if f == nil {
			tb.Fatalf("%s: no field %s", fm.Name, name)
		}
		switch v := vals[name].(type) {
		case string:
			data = putBytes(data, f, append([]byte(v), 0))
		case []byte:
			data = putBytes(data, f, v)
		default:
			var u uint64
			switch n := v.(type) {
			case int:
				u = uint64(n)
			case uint64:
				u = n
			default:
				tb.Fatalf("%s.%s: value %T", fm.Name, name, v)
			}
			for i := 0; i < f.Size && i < 8; i++ {
				data[f.Offset+i] = byte(u >> (8 * i))
			}
		}
	}
	return data
}

// putBytes stores b in a field: in place for a static array (the rest of
// the record for a flexible one), at the end for a dynamic one.
func putBytes(data []byte, f *parse.Field, b []byte) []byte {
	switch f.Class {
	case parse.ClassDataLoc, parse.ClassRelLoc:
		off := len(data)
		data = append(data, b...)
		loc := off
		if f.Class == parse.ClassRelLoc {
			loc = off - (f.Offset + 4)
		}
		binary.LittleEndian.PutUint32(data[f.Offset:], uint32(len(b))<<16|uint32(loc))
		return data
	}
	if f.Size == 0 {
		return append(data[:f.Offset], b...)
	}
	copy(data[f.Offset:f.Offset+f.Size], b)
	return data
}

// buildMeta holds what a test file stores besides its records.
type buildMeta struct {
	formats  []tracedat.FormatText
	kallsyms string
	printk   string
	cmdlines map[int]string
	cpus     int
	stats    []string
}

// buildDat writes a version 6 (uncompressed) trace.dat file and returns
// its path.
func buildDat(tb testing.TB, m buildMeta, recs []trec) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "test.dat")
	sample := openDat(tb, sampleDat)
	w, err := tracedat.Create(path, tracedat.Meta{
		PageSize:    4096,
		HeaderPage:  sample.HeaderPage,
		HeaderEvent: sample.HeaderEvent,
		Formats:     m.formats,
		Kallsyms:    []byte(m.kallsyms),
		Printk:      []byte(m.printk),
		Cmdlines:    m.cmdlines,
		CPUs:        m.cpus,
		Version:     "gtrace test",
	}, tracedat.WriteOptions{Version: 6})
	if err != nil {
		tb.Fatal(err)
	}
	for i, s := range m.stats {
		w.SetCPUStat(i, s)
	}
	for _, r := range recs {
		pw := w.CPU(r.cpu)
		pw.Lost(r.lost)
		if err := pw.Add(r.ts, r.data); err != nil {
			w.Abort()
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}
