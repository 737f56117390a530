package tracedat

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// readHeaderInfo reads the header_page and header_event texts.
func (rd *reader) readHeaderInfo(d *decoder) {
	if d.label(labelHeaderPage, len(labelHeaderPage)) {
		rd.f.HeaderPage = d.text(d.u64("header_page size"), "header_page")
	}
	if d.label(labelHeaderEvent, len(labelHeaderEvent)) {
		rd.f.HeaderEvent = d.text(d.u64("header_event size"), "header_event")
	}
}

// readFtraceFormats reads the formats of the ftrace events.
func (rd *reader) readFtraceFormats(d *decoder) {
	n := d.u32("ftrace format count")
	for i := uint32(0); i < n && d.err == nil; i++ {
		rd.readFormat(d, "ftrace")
	}
}

// readEventFormats reads the event formats of every system.
func (rd *reader) readEventFormats(d *decoder) {
	systems := d.u32("system count")
	for i := uint32(0); i < systems && d.err == nil; i++ {
		sys := d.cstring("system name")
		n := d.u32("format count of " + sys)
		for j := uint32(0); j < n && d.err == nil; j++ {
			rd.readFormat(d, sys)
		}
	}
}

// readFormat reads one u64 size + format text and adds the event.
func (rd *reader) readFormat(d *decoder, system string) {
	pos := d.pos
	text := d.text(d.u64("format size"), system+" format")
	if d.err != nil {
		return
	}
	fm, err := parse.ParseFormat(system+" format", text)
	if err != nil {
		at := d.at(pos)
		if fm, kept := damagedFields(system, text, err); fm != nil {
			// As libtraceevent does, keep the event with the fields
			// before the damaged line and no print fmt.
			fm.System = system
			rd.f.Events[fm.ID] = &Event{Format: fm, Text: kept}
			rd.f.damage.add("format "+at, fmt.Sprintf("the format of event %s at %s is damaged (its records print as [FAILED TO PARSE] with the %d fields before the damage): %v", formatName(system, text), at, len(fm.Fields), err), 0)
			return
		}
		// As trace-cmd does, skip the event: its records print as
		// unknown events, and the rest of the file reads.
		rd.f.damage.add("format "+at, fmt.Sprintf("skipped the unparsable format of event %s at %s (its records print as unknown events): %v", formatName(system, text), at, err), 0)
		return
	}
	fm.System = system
	rd.f.Events[fm.ID] = &Event{Format: fm, Text: text}
}

// damagedFields returns the format of an event whose format text failed
// to parse with err in a line of its field list, with the fields before
// that line and no print fmt, and the text up to that line. libtraceevent
// keeps such an event and prints its records as "[FAILED TO PARSE]" and
// the fields it read. Damage elsewhere returns nil.
func damagedFields(system, text string, err error) (*parse.Format, string) {
	var pe *parse.Error
	if !errors.As(err, &pe) || pe.Src != text || pe.Off > len(text) {
		return nil, ""
	}
	line := strings.LastIndexByte(text[:pe.Off], '\n') + 1
	fields := strings.Index(text, "\nformat:\n")
	if fields < 0 || line <= fields {
		return nil, ""
	}
	kept := text[:line]
	fm, err := parse.ParseFormat(system+" format", kept)
	if err != nil {
		return nil, ""
	}
	return fm, kept
}

// formatName names the event of a format text that does not parse, as
// far as its name and ID lines tell: "sched:sched_switch (ID 372)".
func formatName(system, text string) string {
	name, id := "?", ""
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch {
		case !ok:
		case k == "name" && name == "?":
			name = v
		case k == "ID" && id == "":
			id = " (ID " + v + ")"
		}
	}
	s := system + ":" + name + id
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

func (rd *reader) readKallsyms(d *decoder) {
	rd.f.Kallsyms = d.text(uint64(d.u32("kallsyms size")), "kallsyms")
}

func (rd *reader) readPrintk(d *decoder) {
	rd.f.Printk = d.text(uint64(d.u32("printk size")), "printk formats")
}

func (rd *reader) readCmdlines(d *decoder) {
	text := d.text(d.u64("cmdlines size"), "cmdlines")
	for line := range strings.Lines(text) {
		pid, comm, ok := strings.Cut(strings.TrimRight(line, "\n"), " ")
		if n, err := strconv.Atoi(pid); ok && err == nil {
			rd.f.Cmdlines[n] = comm
		}
	}
}

// metaSection maps the v7 options that hold a section offset to the
// reader of the section's body.
func (rd *reader) metaSection(id OptionID) func(*decoder) {
	switch id {
	case OptionHeaderInfo:
		return rd.readHeaderInfo
	case OptionFtraceEvents:
		return rd.readFtraceFormats
	case OptionEventFormats:
		return rd.readEventFormats
	case OptionKallsyms:
		return rd.readKallsyms
	case OptionPrintk:
		return rd.readPrintk
	case OptionCmdlines:
		return rd.readCmdlines
	}
	return nil
}

// option handles one option; at locates it for errors.
func (rd *reader) option(id OptionID, data []byte, at string) error {
	f := rd.f
	f.Options = append(f.Options, Option{ID: id, Data: bytes.Clone(data)})
	switch id {
	case OptionDate:
		// Hex µs between the trace clock and the time of day.
		if v, ok := parseCInt(cstr(data)); ok {
			f.TSOffset += v * 1000
		}
	case OptionOffset:
		if v, ok := parseCInt(cstr(data)); ok {
			f.TSOffset += v
		}
	case OptionCPUStat:
		f.CPUStats = append(f.CPUStats, cstr(data))
	case OptionTraceClock:
		rd.sawClock = true
		if w, ok := clockWord(cstr(data)); ok {
			rd.clock = w
		}
	case OptionUname:
		f.Uname = cstr(data)
	case OptionVersion:
		f.TracerVersion = cstr(data)
	case OptionCPUCount:
		if len(data) >= 4 {
			rd.cpuCount = int(min(rd.order.Uint32(data), maxCPUs))
		}
	case OptionTraceID:
		if len(data) >= 8 {
			f.TraceID = rd.order.Uint64(data)
		}
	case OptionBuffer:
		if f.Version == 6 {
			d := newBodyDecoder(data, rd.order, "the BUFFER option at "+at)
			b := v6Buf{off: d.u64("buffer offset"), name: d.cstring("buffer name")}
			if d.err != nil {
				return d.err
			}
			rd.v6Buffers = append(rd.v6Buffers, b)
			return nil
		}
		return rd.bufferOption(data, at)
	case OptionBufferText:
		return fmt.Errorf("BUFFER_TEXT option at %s: latency-format trace data: %w", at, errors.ErrUnsupported)
	case OptionHeaderInfo, OptionFtraceEvents, OptionEventFormats, OptionKallsyms, OptionPrintk, OptionCmdlines:
		// Read after the options, once each (the last option wins), as
		// trace-cmd does.
		if f.Version == 7 && len(data) >= 8 {
			off, err := rd.offset(rd.order.Uint64(data), id.String()+" section")
			if err != nil {
				return fmt.Errorf("%v option at %s: %w", id, at, err)
			}
			rd.sections[id] = off
		}
	}
	return nil
}

// readMetaSections reads the v7 metadata sections named by the options.
func (rd *reader) readMetaSections() error {
	for id := OptionHeaderInfo; id <= OptionCmdlines; id++ {
		off, ok := rd.sections[id]
		if !ok {
			continue
		}
		d, err := rd.section(off, id)
		if err == nil {
			rd.metaSection(id)(d)
			err = d.err
		}
		switch {
		case err == nil:
		case id == OptionKallsyms || id == OptionPrintk || id == OptionCmdlines:
			// Symbols and names only make the output nicer: read on.
			rd.f.damage.add(fmt.Sprintf("section %#x", off), fmt.Sprintf("skipped the %v section at %#x: %v", id, off, err), 0)
		default:
			return fmt.Errorf("read %v section at %#x: %w", id, off, err)
		}
	}
	return nil
}

// bufferOption reads a v7 BUFFER option: the offset of the instance's
// data section, its name, clock, page size and CPU table.
func (rd *reader) bufferOption(data []byte, at string) error {
	d := newBodyDecoder(data, rd.order, "the BUFFER option at "+at)
	sect := d.u64("buffer section offset")
	b := &Buffer{Name: d.cstring("buffer name"), Clock: d.cstring("buffer clock")}
	ps := d.u32("page size")
	n := d.u32("cpu count")
	if d.err != nil {
		return d.err
	}
	if ps == 0 || ps > maxPageSize {
		return fmt.Errorf("buffer %q at %s: page size %d out of range", b.Name, at, ps)
	}
	b.PageSize = int(ps)
	if int64(n) > d.left()/20 {
		return fmt.Errorf("buffer %q at %s: %d cpus need %d bytes, %d left", b.Name, at, n, int64(n)*20, d.left())
	}
	seen := map[int]bool{}
	for range n {
		cpu := int(d.u32("cpu id"))
		off, size := d.u64("cpu data offset"), d.u64("cpu data size")
		if seen[cpu] {
			return fmt.Errorf("buffer %q at %s: cpu %d listed twice", b.Name, at, cpu)
		}
		seen[cpu] = true
		if size != 0 {
			b.CPUs = append(b.CPUs, rd.cpuData(cpu, off, size))
		}
	}
	// The data section's header says whether the data is compressed.
	off, err := rd.offset(sect, "buffer section")
	if err != nil {
		return fmt.Errorf("buffer %q at %s: %w", b.Name, at, err)
	}
	h := newFileDecoder(rd.r, rd.size, off, rd.order)
	id := OptionID(h.u16("section id"))
	flags := h.u16("section flags")
	if h.need(12, "section header") == nil {
		return fmt.Errorf("read buffer %q section: %w", b.Name, h.err)
	}
	rd.metaEnd = max(rd.metaEnd, h.pos)
	if id != OptionBuffer {
		return fmt.Errorf("buffer %q: at offset %#x: section id %d (%v), want %d (%v)", b.Name, off, id, id, OptionBuffer, OptionBuffer)
	}
	if b.Compressed = flags&SectionCompressed != 0; b.Compressed && rd.f.Compression != compressionZstd {
		return fmt.Errorf("buffer %q: at offset %#x: compressed data in a file with compression %q", b.Name, off, rd.f.Compression)
	}
	rd.addBuffer(b)
	return nil
}

// cstr returns b up to its first NUL.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// parseCInt parses an integer as C's strtoll(s, NULL, 0) does for the
// DATE and OFFSET options: decimal, 0x hex or 0 octal, with a sign.
func parseCInt(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	base := 10
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		s, base = s[2:], 16
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	v, err := strconv.ParseInt(s, base, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// clockWord returns the selected clock of a trace_clock text: the word in
// brackets, as in "[local] global counter".
func clockWord(s string) (string, bool) {
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "[") {
			w, _, _ = strings.Cut(w[1:], "]")
			return w, w != ""
		}
	}
	return "", false
}

// parseHeaderPage returns the commit field's size (the kernel's long
// size) and the data field's offset from the header_page text.
func parseHeaderPage(text string) (long, data int, ok bool) {
	for line := range strings.Lines(text) {
		var name string
		off, size := -1, -1
		for part := range strings.SplitSeq(line, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), ":")
			v = strings.TrimSpace(v)
			switch k {
			case "field":
				name = v[strings.LastIndexAny(v, " \t*")+1:]
			case "offset":
				off, _ = strconv.Atoi(v)
			case "size":
				size, _ = strconv.Atoi(v)
			}
		}
		switch name {
		case "commit":
			long, ok = size, size == 4 || size == 8
		case "data":
			data = max(off, 0)
		}
	}
	return long, data, ok
}
