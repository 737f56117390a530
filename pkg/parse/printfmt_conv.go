package parse

import "strings"

// FmtPiece is a piece of a print fmt's format string: literal text or one
// printk-style conversion. Pieces split the string the way libtraceevent
// (trace-cmd) splits it.
type FmtPiece struct {
	// Off and End delimit the piece in the format string as written.
	Off, End int
	// Conv is true for a conversion, false for literal text.
	Conv bool
	// Text is the literal text with "%%" as "%" and backslash escapes as
	// trace-cmd reads them: \n, \t, \r and \\, and \X as X for any other X.
	Text string

	// Spec is the conversion as written, from the '%' to the verb and the
	// %p extension, e.g. "%-08lx", "%.*s", "%pISpc".
	Spec string
	// Flags are the flag characters ("-+ #0") in the order written.
	Flags string
	// Width is the field width; WidthStar means "*" (taken from an
	// argument).
	Width     int
	WidthStar bool
	// Prec is the precision when HasPrec; PrecStar means ".*".
	Prec     int
	HasPrec  bool
	PrecStar bool
	// Length is the length modifier: "hh", "h", "l", "ll", "L", "z", "Z",
	// "j" or "t".
	Length string
	// Verb is the conversion character: one of "cdiuxXosp" for a valid
	// conversion; any other byte ends a conversion libtraceevent does not
	// know (and prints as ">X<"); 0 when the format ends inside the
	// conversion.
	Verb byte
	// Ext holds the letters after %p that name a special pointer format,
	// as libtraceevent takes them: S s F f (symbol), M m [R F] (MAC),
	// I i 4 6 S with p c h n b l (IP), U [L l B b] (UUID), h [C D N] (hex
	// buffer).
	Ext string
	// Odd is true when the characters between '%' and the verb are not in
	// C's order (flags, width, precision, length).
	Odd bool
}

// convScan are the bytes that may come between '%' and the verb.
const convScan = "#hlLzZjt.0123456789-*+ "

// ParseFormatPieces splits a print fmt's format string (PrintFmt.Format)
// into literal text and conversions. It never fails: a conversion
// libtraceevent does not know has an unusual Verb, and a format that ends
// inside a conversion gives Verb 0.
func ParseFormatPieces(format string) []FmtPiece {
	var out []FmtPiece
	var text []byte
	textOff := 0
	flush := func(end int) {
		if end > textOff {
			out = append(out, FmtPiece{Off: textOff, End: end, Text: string(text)})
		}
		text = text[:0]
	}
	for i := 0; i < len(format); {
		c := format[i]
		switch {
		case c == '\\':
			if i+1 >= len(format) {
				i++
				continue
			}
			switch e := format[i+1]; e {
			case 'n':
				text = append(text, '\n')
			case 't':
				text = append(text, '\t')
			case 'r':
				text = append(text, '\r')
			default:
				text = append(text, e)
			}
			i += 2
		case c == '%' && i+1 < len(format) && format[i+1] == '%':
			text = append(text, '%')
			i += 2
		case c == '%':
			flush(i)
			p := parseConv(format, i)
			out = append(out, p)
			i = p.End
			textOff = i
		default:
			text = append(text, c)
			i++
		}
	}
	flush(len(format))
	return out
}

// parseConv reads the conversion that starts at format[at] ('%').
func parseConv(format string, at int) FmtPiece {
	i := at + 1
	for i < len(format) && strings.IndexByte(convScan, format[i]) >= 0 {
		i++
	}
	p := FmtPiece{Off: at, Conv: true}
	mid := format[at+1 : i]
	if i < len(format) {
		p.Verb = format[i]
		i++
		if p.Verb == 'p' {
			n := pointerExt(format[i:])
			p.Ext = format[i : i+n]
			i += n
		}
	}
	p.End = i
	p.Spec = format[at:i]
	p.Odd = !p.parseMid(mid)
	return p
}

// parseMid fills flags, width, precision and length from the text between
// '%' and the verb, and reports whether it is in C's order.
func (p *FmtPiece) parseMid(s string) bool {
	i := 0
	for i < len(s) && strings.IndexByte("-+ #0", s[i]) >= 0 {
		i++
	}
	p.Flags = s[:i]
	if i < len(s) && s[i] == '*' {
		p.WidthStar = true
		i++
	} else {
		for ; i < len(s) && isDigit(s[i]); i++ {
			p.Width = p.Width*10 + int(s[i]-'0')
			if p.Width > 1<<20 {
				p.Width = 1 << 20
			}
		}
	}
	if i < len(s) && s[i] == '.' {
		p.HasPrec = true
		i++
		if i < len(s) && s[i] == '*' {
			p.PrecStar = true
			i++
		} else {
			for ; i < len(s) && isDigit(s[i]); i++ {
				p.Prec = p.Prec*10 + int(s[i]-'0')
				if p.Prec > 1<<20 {
					p.Prec = 1 << 20
				}
			}
		}
	}
	switch rest := s[i:]; rest {
	case "", "hh", "h", "l", "ll", "L", "z", "Z", "j", "t":
		p.Length = rest
		return true
	}
	return false
}

// pointerExt returns how many letters after %p libtraceevent takes as a
// pointer format (its parse_arg_format_pointer).
func pointerExt(s string) int {
	at := func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	switch at(0) {
	case 'F', 'S', 'f', 's':
		return 1
	case 'M', 'm':
		if c := at(1); c == 'R' || c == 'F' {
			return 2
		}
		return 1
	case 'I', 'i':
		n, i := 0, 2
		switch at(1) {
		case 'S':
			for c := at(i); c == 'p' || c == 'f' || c == 's'; c = at(i) {
				n++
				i++
			}
			n += ipTail(at, i, false)
		case '4':
			n += ipTail(at, i, true)
		case '6':
			if at(i) == 'c' {
				n++
			}
			n++
		}
		return n + 1
	case 'U':
		switch at(1) {
		case 'L', 'l', 'B', 'b':
			return 2
		}
		return 1
	case 'h':
		switch at(1) {
		case 'C', 'D', 'N':
			return 2
		}
		return 1
	}
	return 0
}

// ipTail counts the letters after %pI4 or %pIS[pfs]*: an optional byte
// order (h n b l), then for S an optional c; plus the 4 or S itself.
func ipTail(at func(int) byte, i int, four bool) int {
	n := 0
	switch at(i) {
	case 'h', 'n', 'l', 'b':
		n++
		i++
	}
	if four {
		return n + 1
	}
	if at(i) == 'c' {
		n++
	}
	return n + 1
}
