package parse

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is a parse or semantic error in some user input. Off and End are
// byte offsets into Src of the offending token (End >= Off). Error() is a
// single line; %+v also shows the source line with a caret under the token.
type Error struct {
	Name string // what the input is, e.g. "--filter" or "hist"
	Src  string // the whole input
	Off  int    // byte offset of the token's first byte
	End  int    // byte offset just past the token
	Msg  string // what is wrong, lowercase, no trailing period
	Hint string // optional: what to do instead
}

// Errorf returns an *Error for the token src[off:end].
func Errorf(name, src string, off, end int, format string, args ...any) *Error {
	if off < 0 {
		off = 0
	}
	if off > len(src) {
		off = len(src)
	}
	if end < off {
		end = off
	}
	if end > len(src) {
		end = len(src)
	}
	return &Error{Name: name, Src: src, Off: off, End: end, Msg: fmt.Sprintf(format, args...)}
}

// WithHint sets the hint and returns e.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// Position returns the 1-based line and column of Off, with tabs expanded
// to 8 columns.
func (e *Error) Position() (line, col int) {
	line = 1 + strings.Count(e.Src[:e.Off], "\n")
	start := strings.LastIndexByte(e.Src[:e.Off], '\n') + 1
	return line, 1 + displayWidth(e.Src[start:e.Off])
}

func (e *Error) Error() string {
	line, col := e.Position()
	name := e.Name
	if name == "" {
		name = "input"
	}
	return fmt.Sprintf("%s:%d:%d: %s", name, line, col, e.Msg)
}

// Format implements fmt.Formatter: %+v prints the message, the source line,
// a caret line (^ under the token's first character, ~ under the rest) and
// the hint.
func (e *Error) Format(f fmt.State, verb rune) {
	if verb != 'v' || !f.Flag('+') {
		fmt.Fprint(f, e.Error())
		return
	}
	fmt.Fprint(f, e.Caret())
}

// Caret returns the multi-line form of the error: message, source line,
// caret line and hint, each line but the first indented by two spaces.
// Control characters and invalid UTF-8 in any part are escaped (Escape),
// and a source line wider than caretWindow columns is shown as a window
// around the token, with "..." where it is cut, so that a corrupt file or
// a huge argument cannot flood or drive the terminal.
func (e *Error) Caret() string {
	var b strings.Builder
	b.WriteString(Escape(e.Error()))
	start := strings.LastIndexByte(e.Src[:e.Off], '\n') + 1
	stop := strings.IndexByte(e.Src[start:], '\n')
	if stop < 0 {
		stop = len(e.Src)
	} else {
		stop += start
	}
	line, pad, width := caretLine(e.Src[start:stop], e.Off-start, min(e.End, stop)-start)
	b.WriteString("\n  ")
	b.WriteString(line)
	b.WriteString("\n  ")
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteString("^")
	if width > 1 {
		b.WriteString(strings.Repeat("~", width-1))
	}
	if e.Hint != "" {
		b.WriteString("\n  hint: ")
		b.WriteString(Escape(e.Hint))
	}
	return b.String()
}

// caretWindow is the widest source line Caret shows whole, in columns;
// caretBefore is how many columns of a wider line it shows before the
// token.
const (
	caretWindow = 100
	caretBefore = 30
)

// caretLine returns the display of a source line (tabs expanded, special
// characters escaped, cut to a window around the token src[off:end]) and
// the column and width of the token in it.
func caretLine(src string, off, end int) (line string, pad, width int) {
	// cells[i] is the display of the i-th character; cols[i] its column.
	var cells []string
	var cols []int
	col, tokCol, tokEnd := 0, -1, -1
	for i := 0; i < len(src); {
		if i >= off && tokCol < 0 {
			tokCol = col
		}
		if i >= end && tokEnd < 0 {
			tokEnd = col
		}
		r, n := utf8.DecodeRuneInString(src[i:])
		var c string
		switch {
		case r == '\t':
			c = strings.Repeat(" ", 8-col%8)
		case r == utf8.RuneError && n == 1:
			c = fmt.Sprintf(`\x%02x`, src[i])
		default:
			c = escapeRune(r)
		}
		cells = append(cells, c)
		cols = append(cols, col)
		col += utf8.RuneCountInString(c)
		i += n
	}
	if tokCol < 0 {
		tokCol = col
	}
	if tokEnd < 0 {
		tokEnd = col
	}
	total := col
	lo, hi := 0, total
	if total > caretWindow {
		lo = max(0, tokCol-caretBefore)
		hi = min(total, lo+caretWindow)
		lo = max(0, min(lo, hi-caretWindow))
	}
	var b strings.Builder
	if lo > 0 {
		b.WriteString("...")
		pad = 3
	}
	first := -1
	for i, c := range cells {
		if cols[i] < lo || cols[i]+utf8.RuneCountInString(c) > hi {
			continue
		}
		if first < 0 {
			first = cols[i]
		}
		b.WriteString(c)
	}
	if first < 0 {
		first = lo
	}
	if hi < total {
		b.WriteString("...")
	}
	pad += tokCol - first
	width = min(tokEnd, hi) - tokCol
	return b.String(), pad, width
}

// Escape returns s with what a terminal would act on or cannot show
// escaped: control characters and other unprintable runes as \n, \r,
// \xNN or \uNNNN, and bytes that are not UTF-8 as \xNN. Tabs are kept.
// Error printers pass text from files and arguments through it.
func Escape(s string) string {
	clean := true
	for _, r := range s {
		if r != '\t' && (r == utf8.RuneError || !unicode.IsPrint(r)) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\t':
			b.WriteByte('\t')
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			b.WriteString(escapeRune(r))
		}
		i += n
	}
	return b.String()
}

// escapeRune returns r, or its escape when it is not printable.
func escapeRune(r rune) string {
	switch {
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r < 0x80 && !unicode.IsPrint(r):
		return fmt.Sprintf(`\x%02x`, r)
	case !unicode.IsPrint(r):
		return fmt.Sprintf(`\u%04x`, r)
	}
	return string(r)
}

func displayWidth(s string) int {
	w := 0
	for _, r := range s {
		if r == '\t' {
			w += 8 - w%8
			continue
		}
		w++
	}
	return w
}
