package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// TestLimits prints records whose formats and values ask for huge output
// and wants each field and each event within its bound.
func TestLimits(t *testing.T) {
	const huge = 0x7fffffff
	many := func(piece string, n int) string {
		return strings.Repeat(piece, n)
	}
	tests := []struct {
		name     string
		fields   []tfield
		printFmt string
		vals     map[string]any
		// want is the event's text; cut: it is cut at the limit.
		want string
		cut  bool
	}{
		{name: "width", fields: []tfield{{"int w", 4, true}},
			printFmt: `"%*s|", REC->w, "x"`, vals: map[string]any{"w": huge},
			cut: true},
		// libtraceevent leaves out a negative '*' argument.
		{name: "negative width", fields: []tfield{{"int w", 4, true}},
			printFmt: `"%*d|", REC->w, 7`, vals: map[string]any{"w": -huge},
			want: "7|"},
		{name: "precision", fields: []tfield{{"int w", 4, true}},
			printFmt: `"%.*d|", REC->w, 7`, vals: map[string]any{"w": huge},
			cut: true},
		{name: "static width", fields: []tfield{{"int a", 4, true}},
			printFmt: `"%99999999d|", REC->a`, vals: map[string]any{"a": 5},
			cut: true},
		{name: "many widths", fields: []tfield{{"int w", 4, true}},
			printFmt: `"` + many("%*s", 300) + `"` + many(", REC->w, \"x\"", 300),
			vals:     map[string]any{"w": huge}, cut: true},
		{name: "many static widths", fields: []tfield{{"int a", 4, true}},
			printFmt: `"` + many("%9999d", 300) + `"` + many(", REC->a", 300),
			vals:     map[string]any{"a": 5}, cut: true},
		{name: "hex dump", fields: []tfield{{"unsigned int n", 4, false}, {"__data_loc u8[] buf", 4, false}},
			printFmt: `"%s", __print_hex(__get_dynamic_array(buf), REC->n)`,
			vals:     map[string]any{"n": huge, "buf": []byte{1, 2, 3}}, cut: true},
		{name: "array dump", fields: []tfield{{"unsigned int n", 4, false}, {"__data_loc u8[] buf", 4, false}},
			printFmt: `"%s", __print_array(__get_dynamic_array(buf), REC->n, 8)`,
			vals:     map[string]any{"n": huge, "buf": []byte{1, 2, 3}}, cut: true},
		{name: "flags", fields: []tfield{{"int w", 4, true}, {"unsigned long f", 8, false}},
			printFmt: `"%*s", REC->w, __print_flags(REC->f, "|", ` + flags(40) + `)`,
			vals:     map[string]any{"w": huge, "f": 1<<40 - 1}, cut: true},
		{name: "within bounds", fields: []tfield{{"int a", 4, true}},
			printFmt: `"a=%5d|%-3s|%.3d", REC->a, "x", REC->a`, vals: map[string]any{"a": 5},
			want: "a=    5|x  |005"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, fm := limitPrinter(t, "limit", 5000+i, tt.fields, tt.printFmt)
			rec := recordOf(t, fm, 1, tt.vals)
			for _, raw := range []bool{false, true} {
				p.raw = raw
				line := p.line(nil, &tracedat.Record{CPU: 0, TS: 1, Data: rec}, p.eventFor(fm.ID))
				text := eventText(t, line)
				limit := textLimit(len(rec))
				if len(text) > limit+len(tooBig) {
					t.Fatalf("raw=%v: text of %d bytes, limit %d", raw, len(text), limit)
				}
				if raw {
					continue
				}
				switch {
				case tt.cut:
					if len(text) != limit+len(tooBig) || !strings.HasSuffix(text, tooBig) {
						t.Errorf("text of %d bytes ending %q, want %d ending %q", len(text), text[max(0, len(text)-20):], limit+len(tooBig), tooBig)
					}
				default:
					if text != tt.want {
						t.Errorf("text = %q, want %q", text, tt.want)
					}
				}
			}
		})
	}
}

// TestLimitsPlugins prints records that ask plugins for huge output.
func TestLimitsPlugins(t *testing.T) {
	kallsyms := fmt.Sprintf("ffffffff81000000 T %s\n", strings.Repeat("f", 1<<20))
	tests := []struct {
		name   string
		fields []tfield
		vals   map[string]any
		want   string // what the plugin prints
	}{
		// The kernel's len is 8 bits; a crafted format's may be 32.
		{"kvm:kvm_emulate_insn", []tfield{{"__u64 rip", 8, false}, {"__u32 csbase", 4, false}, {"__u32 len", 4, false},
			{"__u8 insn[15]", 15, false}, {"__u8 flags", 1, false}, {"__u8 failed", 1, false}},
			map[string]any{"len": 0x7fffffff}, "0:0: 00 00 00"},
		// Every frame names a symbol of 1 MiB.
		{"ftrace:kernel_stack", []tfield{{"int size", 4, true}, {"unsigned long caller[8]", 64, false}},
			map[string]any{"caller": le64(0xffffffff81000000, 0xffffffff81000001, 0xffffffff81000002, 0xffffffff81000003)}, "<stack trace >\n=> fff"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, fm := limitPrinter(t, tt.name, 5100+i, tt.fields, `""`)
			p.kallsyms = kallsyms
			rec := recordOf(t, fm, 1, tt.vals)
			line := p.line(nil, &tracedat.Record{CPU: 0, TS: 1, Data: rec}, p.eventFor(fm.ID))
			if !strings.Contains(string(line), tt.want) {
				t.Fatalf("line %.100q does not hold %q", line, tt.want)
			}
			if limit := textLimit(len(rec)) + len(tooBig) + 100; len(line) > limit || !strings.HasSuffix(string(line), tooBig+"\n") {
				t.Errorf("line of %d bytes ending %q, want at most %d ending %q", len(line), line[max(0, len(line)-20):], limit, tooBig)
			}
		})
	}
}

// flags returns the flag table of n bits for __print_flags.
func flags(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{ %#x, \"F%d\" }", uint64(1)<<i, i)
	}
	return b.String()
}

// limitPrinter returns a printer that knows one event ("name" of system
// gtrace, or "system:name") of the given fields and print fmt, and its
// format.
func limitPrinter(t testing.TB, name string, id int, fields []tfield, printFmt string) (*printer, *parse.Format) {
	t.Helper()
	system, name, ok := strings.Cut(name, ":")
	if !ok {
		system, name = "gtrace", system
	}
	text := formatText(name, id, fields, printFmt)
	fm, err := parse.ParseFormat(name, text)
	if err != nil {
		t.Fatal(err)
	}
	fm.System = system
	p := newPrinter(PrinterOptions{LongSize: 8, Formats: map[int]EventFormat{fm.ID: {Format: fm, Text: text}}})
	return p, fm
}

// eventText returns what follows the event's name in a report line,
// without the newline.
func eventText(t *testing.T, line []byte) string {
	t.Helper()
	s, ok := strings.CutSuffix(string(line), "\n")
	if !ok {
		t.Fatalf("line %.80q does not end in a newline", line)
	}
	_, text, ok := strings.Cut(s, "limit: ")
	if !ok {
		t.Fatalf("line %.80q does not name the event", line)
	}
	pad := strings.Repeat(" ", 20-len("limit"))
	if !strings.HasPrefix(text, pad) {
		t.Fatalf("line %.80q does not pad the event's name", line)
	}
	return text[len(pad):]
}

// TestCutLike checks the comparison of gtrace's cut lines with trace-cmd's
// whole ones.
func TestCutLike(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		got, want, out string
	}{
		{"a\nb\n", "a\nb\n", "a\nb\n"},
		{"a\nxx" + tooBig + "\n", "a\n" + long + "\n", "a\nxx" + tooBig + "\n"},
		{"a\nxy" + tooBig + "\n", "a\n" + long + "\n", "a\n" + long + "\n"},
		{"a\n" + long + tooBig + "\n", "a\n" + long + "\n", "a\n" + long + "\n"},
		{"a\n", "a\nb\n", "a\nb\n"},
	}
	for _, tt := range tests {
		if got := string(cutLike([]byte(tt.got), []byte(tt.want))); got != tt.out {
			t.Errorf("cutLike(%.30q, %.30q) = %.30q, want %.30q", tt.got, tt.want, got, tt.out)
		}
	}
}

// cutLike returns trace-cmd's output want with each line that gtrace's
// output got cuts (a prefix of it, then tooBig) replaced by got's line:
// trace-cmd prints any length, gtrace stops an event at its limit.
func cutLike(got, want []byte) []byte {
	gl := bytes.SplitAfter(got, []byte("\n"))
	wl := bytes.SplitAfter(want, []byte("\n"))
	if len(gl) != len(wl) {
		return want
	}
	var out []byte
	for i, w := range wl {
		g := gl[i]
		if cut, ok := bytes.CutSuffix(g, []byte(tooBig+"\n")); ok && len(w) > len(g) && bytes.HasPrefix(w, cut) {
			w = g
		}
		out = append(out, w...)
	}
	return out
}

// BenchmarkHugeWidth prints an event whose record asks for the largest
// width in each of its fields.
func BenchmarkHugeWidth(b *testing.B) {
	fields := []tfield{{"int w", 4, true}}
	pf := `"` + strings.Repeat("%*s", 100) + `"` + strings.Repeat(", REC->w, \"x\"", 100)
	p, fm := limitPrinter(b, "limit", 6000, fields, pf)
	rec := recordOf(b, fm, 1, map[string]any{"w": 0x7fffffff})
	var line []byte
	for b.Loop() {
		line = p.line(line[:0], &tracedat.Record{Data: rec}, p.eventFor(fm.ID))
	}
	b.ReportMetric(float64(len(line)), "bytes/line")
}

// BenchmarkRawManyFields prints with -R an event of many fields whose
// print format names them in reverse order but the last: each field's
// conversion is just before where the previous one matched, the furthest
// from where the search for it starts.
func BenchmarkRawManyFields(b *testing.B) {
	const n = 4000
	var fields []tfield
	var pf, args strings.Builder
	pf.WriteString(`"`)
	for i := range n {
		fields = append(fields, tfield{fmt.Sprintf("int f%d", i), 4, true})
		pf.WriteString(" %d")
		fmt.Fprintf(&args, ", REC->f%d", (n-2-i+n)%n)
	}
	pf.WriteString(`"`)
	p, fm := limitPrinter(b, "limit", 6001, fields, pf.String()+args.String())
	p.raw = true
	rec := recordOf(b, fm, 1, nil)
	line := p.line(nil, &tracedat.Record{Data: rec}, p.eventFor(fm.ID)) // compiles the event
	for b.Loop() {
		line = p.line(line[:0], &tracedat.Record{Data: rec}, p.eventFor(fm.ID))
	}
}

// BenchmarkBprintLongFormat prints bprint records whose printk format is
// long text around one conversion.
func BenchmarkBprintLongFormat(b *testing.B) {
	dat := openDat(b, "testdata/captured/all2.dat")
	var ef EventFormat
	for _, e := range dat.Events {
		if e.Format.FullName() == "ftrace:bprint" {
			ef = EventFormat{Format: e.Format, Text: e.Text}
		}
	}
	if ef.Format == nil {
		b.Skip("no ftrace:bprint format")
	}
	const addr = 0xffffffff82000000
	p := newPrinter(PrinterOptions{LongSize: 8, Formats: map[int]EventFormat{ef.Format.ID: ef},
		Printk: fmt.Sprintf("%#x : \"%s%%d\"\n", uint64(addr), strings.Repeat("x", 1<<20))})
	rec := recordOf(b, ef.Format, 1, map[string]any{"fmt": uint64(addr), "buf": []byte{1, 0, 0, 0}})
	line := p.line(nil, &tracedat.Record{Data: rec}, p.eventFor(ef.Format.ID))
	if !strings.HasSuffix(string(line), tooBig+"\n") {
		b.Fatalf("line of %d bytes ending %q", len(line), line[max(0, len(line)-30):])
	}
	for b.Loop() {
		line = p.line(line[:0], &tracedat.Record{Data: rec}, p.eventFor(ef.Format.ID))
	}
}
