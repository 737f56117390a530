package report

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// FuzzRecord prints arbitrary record bytes with every test format and
// plugin, plain and raw: no panic, one line per record, within the
// event's limit.
func FuzzRecord(f *testing.F) {
	dat := openDat(f, sampleDat)
	formats := map[int]EventFormat{}
	var ids []int
	for i, e := range testEvents {
		text := formatText(e.name, 3000+i, e.fields, e.printFmt)
		fm, err := parse.ParseFormat(e.name, text)
		if err != nil {
			f.Fatal(err)
		}
		fm.System = "gtrace"
		formats[fm.ID] = EventFormat{Format: fm, Text: text}
		ids = append(ids, fm.ID)
	}
	all := openDat(f, "testdata/captured/all2.dat")
	for _, e := range all.Events {
		for _, name := range pluginEvents {
			if e.Format.FullName() == name {
				formats[e.Format.ID] = EventFormat{Format: e.Format, Text: e.Text}
				ids = append(ids, e.Format.ID)
			}
		}
	}
	f.Add(uint16(0), []byte{}, false)
	f.Add(uint16(3), []byte("\x00\x00\x00\x00\x05\x00\x00\x00abcdefgh\x10\x00\x04\x00xyz\x00"), true)
	f.Add(uint16(40), make([]byte, 64), false)
	f.Fuzz(func(t *testing.T, which uint16, data []byte, raw bool) {
		p := filePrinter(dat, Options{Raw: raw})
		p.kallsyms = helperKallsyms
		p.printk = newPrintkMap(helperPrintk)
		p.formats = formats
		id := ids[int(which)%len(ids)]
		rec := make([]byte, max(len(data), 8))
		copy(rec, data)
		binary.LittleEndian.PutUint16(rec, uint16(id))
		for i := 0; i < 2; i++ {
			tr := tracedat.Record{CPU: 1, TS: 12345, Data: rec}
			line := p.line(nil, &tr, p.eventFor(id))
			if len(line) == 0 || line[len(line)-1] != '\n' {
				t.Fatalf("line %.200q does not end in a newline", line)
			}
			// The text, its cut mark, and what goes before it.
			if bound := textLimit(len(rec)) + len(tooBig) + 200; len(line) > bound {
				t.Fatalf("line of %d bytes for a record of %d, want at most %d", len(line), len(rec), bound)
			}
		}
	})
}

// FuzzText damages the helpers test's file (every print fmt feature and
// plugin, kallsyms, printk formats, saved task names) as edits say
// (testutil.Damage), cuts it at cut, and prints what Read makes of it,
// plain or raw. Properties: no panic; every line within its event's limit
// (records fit in a page, so textLimit of the page size bounds them).
func FuzzText(f *testing.F) {
	data, err := os.ReadFile(helperFile(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(0), []byte{}, false)
	f.Add(uint32(len(data)-100), []byte{}, true)
	f.Add(uint32(0), []byte{0x40, 0, 2, 0xff, 0x10, 1, 1, 0x80}, false)
	f.Fuzz(func(t *testing.T, cut uint32, edits []byte, raw bool) {
		d := testutil.Damage(data, edits)
		if cut > 0 && int64(cut) < int64(len(d)) {
			d = d[:cut]
		}
		file, err := tracedat.Read(bytes.NewReader(d), int64(len(d)))
		if err != nil {
			return
		}
		var out bytes.Buffer
		Text(context.Background(), &out, file, Options{Raw: raw})
		bound := 0
		for _, b := range file.Buffers {
			bound = max(bound, textLimit(b.PageSize))
		}
		// The text, its cut mark, and what goes before it (an event's
		// name comes from its format, which damage may lengthen).
		bound += len(tooBig) + 8192
		for line := range bytes.Lines(out.Bytes()) {
			if len(line) > bound {
				t.Fatalf("line of %d bytes, want at most %d: %.200q", len(line), bound, line)
			}
		}
	})
}
