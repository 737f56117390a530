package report

import (
	"slices"
	"strconv"
	"strings"
)

// rawFields prints " name=value" for each of the event's own fields, as
// trace-cmd report -R (and libtraceevent's fallback) does: a field that
// the print fmt passes to a conversion as is (through casts) is printed
// with that conversion, looking from where the previous field matched;
// anything else is printed raw.
func (p *printer) rawFields(b []byte, r *rec) []byte {
	ev := r.ev
	pos := 0 // next piece of the print format to look at; -1: none left
	if len(ev.segs) == 0 {
		pos = -1
	}
	for _, f := range ev.fields {
		if p.full(b) {
			break
		}
		b = append(b, ' ')
		b = append(b, f.name...)
		b = append(b, '=')
		b, pos = p.printField(b, r, f, pos)
	}
	return b
}

// printField is libtraceevent's print_field: the first conversion of
// the field from pos on (wrapping around) prints it, with the "0x" that
// goes before it if the scan passed it; the next field looks from the
// conversion after.
func (p *printer) printField(b []byte, r *rec, f *field, pos int) ([]byte, int) {
	ev := r.ev
	if pos < 0 || ev.failed || f.flags&(fArray|fString) != 0 || f.index >= len(ev.fieldSegs) {
		return p.rawField(b, r, f), pos
	}
	at := ev.fieldSegs[f.index]
	if len(at) == 0 {
		return p.rawField(b, r, f), pos
	}
	i, _ := slices.BinarySearch(at, pos)
	if i == len(at) {
		i = 0
	}
	segs := ev.segs
	k := at[i]
	if k != pos {
		prev := &segs[(k+len(segs)-1)%len(segs)]
		if prev.kind == segText && strings.HasSuffix(prev.text, "0x") {
			b = append(b, "0x"...)
		}
	}
	b = p.printSeg(b, r, &segs[k])
	if k+1 < len(segs) {
		return b, k + 1
	}
	return b, -1
}

// rawField is print_field_raw: a field's value without its print fmt.
func (p *printer) rawField(b []byte, r *rec, f *field) []byte {
	data := r.data
	if f.flags&fArray != 0 {
		off, l := f.offset, f.size
		if f.flags&fDynamic != 0 {
			off, l = p.dynOffset(f, data)
		}
		if f.flags&fString != 0 && printable(clip(data, off, l)) {
			return append(b, cstr(overread(data, off))...)
		}
		b = append(b, "ARRAY["...)
		for i := 0; i < l; i++ {
			if i > 0 {
				b = append(b, ", "...)
			}
			var c byte
			if off+i < len(data) {
				c = data[off+i]
			}
			b = appendHex2(b, c)
		}
		// libtraceevent remembers: the field is no longer a string.
		f.flags &^= fString
		return append(b, ']')
	}
	v := p.readNum(data, f.offset, f.size)
	switch {
	case f.flags&fPointer != 0:
		return append0x(b, v)
	case f.flags&fSigned != 0:
		switch f.size {
		case 4:
			if f.flags&fLong != 0 {
				return append0x(b, uint64(uint32(v)))
			}
			return strconv.AppendInt(b, int64(int32(v)), 10)
		case 2:
			s := strconv.AppendInt(nil, int64(int16(v)), 10)
			if len(s) < 2 {
				b = append(b, ' ')
			}
			return append(b, s...)
		case 1:
			return strconv.AppendInt(b, int64(int8(v)), 10)
		}
		return strconv.AppendInt(b, int64(v), 10)
	case f.flags&fLong != 0:
		return append0x(b, v)
	}
	return strconv.AppendUint(b, v, 10)
}

// printable is libtraceevent's is_printable_array: every byte before the
// first NUL is printable or a space.
func printable(s []byte) bool {
	for _, c := range s {
		if c == 0 {
			break
		}
		if !(c >= 0x20 && c < 0x7f) && !isSpace(c) {
			return false
		}
	}
	return true
}
