package report

import (
	"encoding/binary"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// Field flags, as libtraceevent derives them from a field's declaration.
const (
	fArray    = 1 << iota // declared with [...]
	fPointer              // a '*' in the type
	fSigned               // signed:1
	fString               // an array of char, u8 or s8
	fDynamic              // __data_loc or __rel_loc
	fRelative             // __rel_loc
	fLong                 // "long" in the type
)

// field is one field of an event with libtraceevent's view of it.
type field struct {
	name        string
	typ         string
	offset      int
	size        int
	elementSize int
	flags       int
	common      bool
	index       int // position among the event's fields
	pf          *parse.Field
}

// event is an event format compiled for printing.
type event struct {
	id           int
	system, name string
	fields       []*field // the event's own fields, in order
	common       []*field
	args         []*node           // print fmt arguments
	segs         []seg             // the print format, split and bound to arguments
	fieldSegs    [][]int           // by own field index: the segs that print it as is
	byName       map[string]*field // own fields, built by findField
	failed       bool              // libtraceevent could not parse the print fmt
	bprint       bool              // ftrace:bprint: the format comes from the record
	handler      handler           // a plugin's printer, or nil
	format       *parse.Format
	full         string // "system:name"
}

// segKind says what a piece of the print format does.
type segKind uint8

const (
	segText    segKind = iota // literal text
	segDigit                  // %d %u %x ...
	segPointer                // %p and its extensions
	segString                 // %s
)

// seg is one piece of the print format (libtraceevent's print_parse).
type seg struct {
	kind   segKind
	text   string // segText: the text; others: the spec as written
	arg    *node
	lenArg *node // the argument of a '*'
	ls     int   // integer length count
	spec   cspec
	ext    string // segPointer: the letters after 'p'
}

// newField derives libtraceevent's flags for a parsed field.
func newField(pf *parse.Field, longSize, index int) *field {
	f := &field{name: pf.Name, typ: pf.Type, offset: pf.Offset, size: pf.Size, common: pf.Common, index: index, pf: pf}
	t := pf.Type
	if strings.Contains(t, "[") {
		f.flags |= fArray
	}
	if strings.Contains(t, "*") {
		f.flags |= fPointer
	}
	if f.flags&fArray != 0 && (strings.Contains(t, "char") || strings.Contains(t, "u8") || strings.Contains(t, "s8")) {
		f.flags |= fString
	}
	if strings.HasPrefix(t, "__data_loc") {
		f.flags |= fDynamic
	}
	if strings.HasPrefix(t, "__rel_loc") {
		f.flags |= fDynamic | fRelative
	}
	if strings.Contains(t, "long") {
		f.flags |= fLong
	}
	if pf.Signed {
		f.flags |= fSigned
	}
	if f.flags&fDynamic != 0 && f.size == 2 {
		f.flags |= fString | fArray
	}
	if f.flags&(fArray|fDynamic) == 0 {
		f.elementSize = f.size
		return f
	}
	arrayLen := max(pf.ArrayLen, 0)
	switch {
	case arrayLen > 0:
		f.elementSize = f.size / arrayLen
	case f.flags&fDynamic != 0:
		// "__data_loc u32[] name": the size of the word before "[";
		// nothing without brackets ("__data_loc cpumask_t mask").
		base, _, ok := strings.Cut(t, "[")
		if !ok {
			break
		}
		base = strings.TrimSpace(base)
		if i := strings.LastIndexByte(base, ' '); i >= 0 {
			base = base[i+1:]
		}
		switch base {
		case "u8", "s8", "char":
			f.elementSize = 1
		case "u16", "s16":
			f.elementSize = 2
		case "u32", "s32":
			f.elementSize = 4
		case "u64", "s64":
			f.elementSize = 8
		}
	case f.flags&fString != 0:
		f.elementSize = 1
	case f.flags&fLong != 0:
		f.elementSize = longSize
	}
	return f
}

// findField is tep_find_field: the event's own fields only. An event of
// many fields looks them up by name (a crafted format may have thousands,
// each named by the print format).
func (ev *event) findField(name string) *field {
	if len(ev.fields) > 16 {
		if ev.byName == nil {
			ev.byName = make(map[string]*field, len(ev.fields))
			for _, f := range ev.fields {
				if _, dup := ev.byName[f.name]; !dup {
					ev.byName[f.name] = f
				}
			}
		}
		return ev.byName[name]
	}
	for _, f := range ev.fields {
		if f.name == name {
			return f
		}
	}
	return nil
}

// findAnyField is tep_find_any_field: common fields first.
func (ev *event) findAnyField(name string) *field {
	for _, f := range ev.common {
		if f.name == name {
			return f
		}
	}
	return ev.findField(name)
}

// compileEvent builds an event from its format. text is the format file as
// stored (its print fmt may span lines).
func (p *printer) compileEvent(fm *parse.Format, text string) *event {
	ev := &event{id: fm.ID, system: fm.System, name: fm.Name, format: fm, full: fm.System + ":" + fm.Name}
	unread := false
	for i := range fm.Fields {
		pf := &fm.Fields[i]
		if unread = strings.HasPrefix(pf.Type, "__data_loc char[]["); unread {
			// libtraceevent's field parser stops at an array of
			// strings (a probe's __data_loc char[][N]): the event
			// has the fields before it and no print fmt.
			break
		}
		f := newField(pf, p.longSize, len(ev.fields))
		if pf.Common {
			ev.common = append(ev.common, f)
		} else {
			ev.fields = append(ev.fields, f)
		}
	}
	ev.bprint = fm.System == "ftrace" && fm.Name == "bprint"
	ev.handler = p.handlerFor(ev)
	if unread {
		ev.failed = true
		return ev
	}
	src := printFmtText(fm, text)
	pf, err := parse.ParsePrintFmt(ev.full, src)
	if err != nil {
		ev.failed = true
		return ev
	}
	c := compiler{p: p, ev: ev}
	for _, a := range pf.Args {
		ev.args = append(ev.args, c.top(a))
	}
	if len(pf.Args) == 0 && fm.System == "ftrace" {
		// Old ftrace formats had no arguments: every field is one.
		for _, f := range ev.fields {
			ev.args = append(ev.args, &node{kind: nField, field: f, name: f.name})
		}
	}
	if c.failed {
		ev.failed = true
		return ev
	}
	if !ev.bprint {
		ev.segs, ev.failed = p.bindFormat(parse.ParseFormatPieces(pf.Format), ev.args)
		ev.fieldSegs = fieldSegs(ev)
	}
	return ev
}

// fieldSegs returns, for each of the event's own fields, the conversions
// of its print format whose argument is that field (through casts), in
// order: what -R looks for, without a search through the whole format for
// each field (quadratic in a crafted format's size).
func fieldSegs(ev *event) [][]int {
	out := make([][]int, len(ev.fields))
	for k := range ev.segs {
		s := &ev.segs[k]
		if s.kind == segText {
			continue
		}
		a := s.arg
		for a != nil && a.kind == nType {
			a = a.left
		}
		if a == nil || a.kind != nField || a.field == nil || a.field.common {
			continue
		}
		if i := a.field.index; i < len(ev.fields) && ev.fields[i] == a.field {
			out[i] = append(out[i], k)
		}
	}
	return out
}

// printFmtText returns everything after "print fmt: " in the format text,
// or the parsed format's line when the text does not have it.
func printFmtText(fm *parse.Format, text string) string {
	const key = "print fmt:"
	i := strings.Index(text, key)
	if i < 0 {
		return fm.PrintFmt
	}
	return text[i+len(key):]
}

// bindFormat binds the conversions of a format string, split in pieces,
// to the arguments as libtraceevent does; failed reports a format
// libtraceevent marks unusable (a conversion without an argument, a bad
// length).
func (p *printer) bindFormat(pieces []parse.FmtPiece, args []*node) (segs []seg, failed bool) {
	next := 0
	take := func() *node {
		if next >= len(args) {
			failed = true
			return nil
		}
		next++
		return args[next-1]
	}
	for _, pc := range pieces {
		if !pc.Conv {
			segs = append(segs, seg{kind: segText, text: pc.Text})
			continue
		}
		var lenArg *node
		ls := 0
	scan:
		for k := 1; k < len(pc.Spec); k++ {
			c := pc.Spec[k]
			switch c {
			case '#', '.', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			case 'h':
				ls--
			case 'l':
				ls++
			case 'L':
				ls = 2
			case 'z', 'Z':
				ls = 1
			case '*':
				if lenArg != nil {
					return segs, true
				}
				if lenArg = take(); lenArg == nil {
					return segs, true
				}
			case 'p', 'd', 'u', 'i', 'x', 'X', 'o', 's':
				a := take()
				if a == nil {
					return segs, true
				}
				s := seg{text: pc.Spec, arg: a, lenArg: lenArg, ls: ls, spec: newCspec(&pc)}
				switch c {
				case 'p':
					s.kind, s.ext = segPointer, pc.Ext
				case 's':
					s.kind = segString
				default:
					s.kind = segDigit
					if ls < -2 || ls > 2 {
						failed = true
					}
					s.spec.bits = lsBits(ls)
				}
				s.spec.finish()
				segs = append(segs, s)
				break scan
			default:
				// A conversion libtraceevent does not know: it prints
				// ">c<", then the rest as text.
				segs = append(segs, seg{kind: segText, text: ">" + string(c) + "<"})
				if k+1 < len(pc.Spec) {
					segs = append(segs, seg{kind: segText, text: pc.Spec[k+1:]})
				}
				break scan
			}
		}
	}
	return segs, failed
}

// eventFor returns the compiled event of a record's type, or nil.
func (p *printer) eventFor(id int) *event {
	if id < 0 || id >= len(p.events) {
		return nil
	}
	if p.compiled[id] {
		return p.events[id]
	}
	p.compiled[id] = true
	if e, ok := p.formats[id]; ok {
		p.events[id] = p.compileEvent(e.Format, e.Text)
	}
	return p.events[id]
}

// readNum is the number a field holds, unsigned, as tep_read_number
// reads it: 0 when the field runs past the record or has an odd size.
func (p *printer) readNum(data []byte, off, size int) uint64 {
	if off < 0 || off+size > len(data) {
		return 0
	}
	b := data[off : off+size]
	if !p.bigEndian {
		switch size {
		case 1:
			return uint64(b[0])
		case 2:
			return uint64(binary.LittleEndian.Uint16(b))
		case 4:
			return uint64(binary.LittleEndian.Uint32(b))
		case 8:
			return binary.LittleEndian.Uint64(b)
		}
		return 0
	}
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		if p.bigEndian {
			return uint64(b[0])<<8 | uint64(b[1])
		}
		return uint64(b[1])<<8 | uint64(b[0])
	case 4:
		if p.bigEndian {
			return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
		}
		return uint64(b[3])<<24 | uint64(b[2])<<16 | uint64(b[1])<<8 | uint64(b[0])
	case 8:
		var v uint64
		if p.bigEndian {
			for _, c := range b {
				v = v<<8 | uint64(c)
			}
		} else {
			for i := 7; i >= 0; i-- {
				v = v<<8 | uint64(b[i])
			}
		}
		return v
	}
	return 0
}

// dynOffset is libtraceevent's dynamic_offset_field: where a __data_loc
// or __rel_loc field's data is, checked against the record size.
func (p *printer) dynOffset(f *field, data []byte) (off, n int) {
	size := len(data)
	if f.offset+f.size > size {
		return 0, 0
	}
	v := p.readNum(data, f.offset, f.size)
	o := int(v & 0xffff)
	var l int
	if f.size == 2 {
		l = size - o
	} else {
		l = int(v>>16) & 0xffff
	}
	if o > size {
		off = 0
	} else {
		off = o
	}
	if o+l <= size {
		n = l
	}
	if f.flags&fRelative != 0 {
		off += f.offset + f.size
	}
	return off, n
}

// bytesAt returns data[off:] clipped to the record, or nil.
func bytesAt(data []byte, off int) []byte {
	if off < 0 || off > len(data) {
		return nil
	}
	return data[off:]
}

// overread returns the bytes from data[off] to the end of the buffer the
// record lies in: a C string that lacks its NUL runs on into the bytes
// after the record, and libtraceevent prints them.
func overread(data []byte, off int) []byte {
	if off < 0 || off > cap(data) {
		return nil
	}
	return data[off:cap(data)]
}
