package report

import (
	"strconv"

	"github.com/gtrace/gtrace/pkg/parse"
)

// cspec is a C conversion specification, ready to print: glibc's printf
// for the integer and string conversions libtraceevent hands it. A
// literal replaces what a %s would print (see printSeg).
type cspec struct {
	minus, zero, hash, plus, space bool
	width                          int
	widthStar                      bool
	prec                           int // -1: none
	precStar                       bool
	verb                           byte
	bits                           int // integer conversions: 8, 16, 32 or 64
	literal                        string
	plain                          bool // see finish
}

// newCspec builds the specification of a conversion piece.
func newCspec(p *parse.FmtPiece) cspec {
	c := cspec{width: p.Width, widthStar: p.WidthStar, prec: -1, precStar: p.PrecStar, verb: p.Verb, bits: 32}
	if p.HasPrec && !p.PrecStar {
		c.prec = p.Prec
	}
	for i := 0; i < len(p.Flags); i++ {
		switch p.Flags[i] {
		case '-':
			c.minus = true
		case '0':
			c.zero = true
		case '#':
			c.hash = true
		case '+':
			c.plus = true
		case ' ':
			c.space = true
		}
	}
	switch p.Length {
	case "hh":
		c.bits = 8
	case "h":
		c.bits = 16
	case "l", "ll", "L", "z", "Z", "j", "t":
		c.bits = 64
	}
	if p.Odd {
		// Specs out of C's order ("%l5d"): count the length letters as
		// libtraceevent does.
		c.bits = lsBits(lengthCount(p.Spec))
	}
	return c
}

// lengthCount is libtraceevent's "ls" of a spec: -1 per 'h', +1 per 'l',
// 2 for 'L', 1 for 'z' or 'Z'.
func lengthCount(spec string) int {
	ls := 0
	for i := 1; i < len(spec); i++ {
		switch spec[i] {
		case 'h':
			ls--
		case 'l':
			ls++
		case 'L':
			ls = 2
		case 'z', 'Z':
			ls = 1
		}
	}
	return ls
}

// lsBits is the integer size libtraceevent casts to for a length count.
func lsBits(ls int) int {
	switch ls {
	case -2:
		return 8
	case -1:
		return 16
	case 0:
		return 32
	}
	return 64
}

// star applies a '*' argument: to the width, or to the precision.
func (c cspec) star(v int, ok bool) cspec {
	if !ok {
		return c
	}
	c.plain = false
	switch {
	case c.widthStar:
		if v < 0 {
			c.minus = true
			v = -v
		}
		c.width = v
	case c.precStar:
		if v >= 0 {
			c.prec = v
		}
	}
	return c
}

// appendInt appends v converted as by printf with this specification
// (verb d i u x X o; other verbs print as d).
func (c *cspec) appendInt(b []byte, v uint64) []byte {
	if c.plain {
		// No flags, width or precision: the common case.
		switch c.verb {
		case 'd', 'i':
			return strconv.AppendInt(b, signExtend(v, c.bits/8), 10)
		case 'u':
			return strconv.AppendUint(b, v&c.mask(), 10)
		case 'x':
			return appendHex(b, v&c.mask())
		}
	}
	neg := false
	switch c.bits {
	case 8:
		v &= 0xff
		if c.signed() && v >= 0x80 {
			neg, v = true, 0x100-v
		}
	case 16:
		v &= 0xffff
		if c.signed() && v >= 0x8000 {
			neg, v = true, 0x10000-v
		}
	case 32:
		v &= 0xffffffff
		if c.signed() && v >= 0x80000000 {
			neg, v = true, 0x100000000-v
		}
	default:
		if c.signed() && int64(v) < 0 {
			neg, v = true, -v
		}
	}
	var digits [24]byte
	d := digits[:0]
	switch c.verb {
	case 'x':
		d = strconv.AppendUint(d, v, 16)
	case 'X':
		d = strconv.AppendUint(d, v, 16)
		for i, ch := range d {
			if ch >= 'a' {
				d[i] = ch - 'a' + 'A'
			}
		}
	case 'o':
		d = strconv.AppendUint(d, v, 8)
	default:
		d = strconv.AppendUint(d, v, 10)
	}
	if c.prec == 0 && v == 0 {
		d = d[:0]
	}
	zeros := 0
	if c.prec > len(d) {
		zeros = c.prec - len(d)
	}
	if c.hash && c.verb == 'o' && zeros == 0 && (len(d) == 0 || d[0] != '0') {
		zeros = 1
	}
	var prefix string
	switch {
	case neg:
		prefix = "-"
	case c.signed() && c.plus:
		prefix = "+"
	case c.signed() && c.space:
		prefix = " "
	case c.hash && v != 0 && c.verb == 'x':
		prefix = "0x"
	case c.hash && v != 0 && c.verb == 'X':
		prefix = "0X"
	}
	n := len(prefix) + zeros + len(d)
	pad := c.width - n
	if pad > 0 && !c.minus && c.zero && c.prec < 0 {
		zeros += pad
		pad = 0
	}
	if pad > 0 && !c.minus {
		b = appendSpaces(b, pad)
	}
	b = append(b, prefix...)
	b = appendZeros(b, zeros)
	b = append(b, d...)
	if pad > 0 && c.minus {
		b = appendSpaces(b, pad)
	}
	return b
}

func (c *cspec) signed() bool { return c.verb == 'd' || c.verb == 'i' }

// mask keeps the bits of the conversion's size.
func (c *cspec) mask() uint64 {
	if c.bits >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(c.bits) - 1
}

// finish notes whether the spec is plain: no flags, width or precision.
func (c *cspec) finish() {
	c.plain = !c.minus && !c.zero && !c.hash && !c.plus && !c.space && c.width == 0 &&
		!c.widthStar && c.prec < 0 && !c.precStar && c.literal == ""
}

// appendStr appends s as by printf's %s with this specification.
func (c *cspec) appendStr(b []byte, s []byte) []byte {
	if c.literal != "" {
		return append(b, c.literal...)
	}
	if c.prec >= 0 && len(s) > c.prec {
		s = s[:c.prec]
	}
	pad := c.width - len(s)
	if pad > 0 && !c.minus {
		b = appendSpaces(b, pad)
	}
	b = append(b, s...)
	if pad > 0 && c.minus {
		b = appendSpaces(b, pad)
	}
	return b
}

// appendHex appends v as %llx.
func appendHex(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	n := 1
	for x := v >> 4; x != 0; x >>= 4 {
		n++
	}
	for i := n - 1; i >= 0; i-- {
		b = append(b, digits[v>>(4*uint(i))&15])
	}
	return b
}

// append0x appends v as 0x%llx.
func append0x(b []byte, v uint64) []byte { return appendHex(append(b, "0x"...), v) }

// appendHex2 appends the byte as %02x.
func appendHex2(b []byte, c byte) []byte {
	const digits = "0123456789abcdef"
	return append(b, digits[c>>4], digits[c&15])
}

// appendPointer appends v as glibc's %p: "(nil)" or 0x%lx.
func appendPointer(b []byte, v uint64) []byte {
	if v == 0 {
		return append(b, "(nil)"...)
	}
	return append0x(b, v)
}

// cstr returns s up to its first NUL.
func cstr(s []byte) []byte {
	for i, c := range s {
		if c == 0 {
			return s[:i]
		}
	}
	return s
}
