package parse

import (
	"fmt"
	"strings"
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
func (e *Error) Caret() string {
	var b strings.Builder
	b.WriteString(e.Error())
	start := strings.LastIndexByte(e.Src[:e.Off], '\n') + 1
	stop := strings.IndexByte(e.Src[start:], '\n')
	if stop < 0 {
		stop = len(e.Src)
	} else {
		stop += start
	}
	lineText := expandTabs(e.Src[start:stop])
	pad := displayWidth(e.Src[start:e.Off])
	end := e.End
	if end > stop {
		end = stop
	}
	width := displayWidth(e.Src[start:end]) - pad
	b.WriteString("\n  ")
	b.WriteString(lineText)
	b.WriteString("\n  ")
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteString("^")
	if width > 1 {
		b.WriteString(strings.Repeat("~", width-1))
	}
	if e.Hint != "" {
		b.WriteString("\n  hint: ")
		b.WriteString(e.Hint)
	}
	return b.String()
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

func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	w := 0
	for _, r := range s {
		if r == '\t' {
			n := 8 - w%8
			b.WriteString(strings.Repeat(" ", n))
			w += n
			continue
		}
		b.WriteRune(r)
		w++
	}
	return b.String()
}
