package status

import (
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// Terminal returns w if it is a terminal, else nil: the writer to give a
// Line, or nothing to show.
func Terminal(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return w
}

// Line is a status line redrawn in place. A Line on a nil writer shows
// nothing. Its methods may be called from several goroutines.
type Line struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
}

// NewLine returns a status line on w (nil: none).
func NewLine(w io.Writer) *Line { return &Line{w: w} }

// Show replaces the line's text with s.
func (l *Line) Show(s string) {
	if l == nil || l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "\r%s\x1b[K", s)
	l.shown = true
}

// Clear erases the line, if shown, leaving the cursor at its start.
func (l *Line) Clear() {
	if l == nil || l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
}
