package status

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

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

// Every shows text() on l every period, from a goroutine of its own,
// until stop is called: the first time after one period, so that work
// shorter than that shows nothing. stop ends the goroutine, clears the
// line and returns, so that what is written next is not drawn over. On
// a Line with no writer it starts nothing.
func (l *Line) Every(period time.Duration, text func() string) (stop func()) {
	if l == nil || l.w == nil {
		return func() {}
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				l.Show(text())
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-ended
			l.Clear()
		})
	}
}

// Bytes returns n bytes in decimal units, with three significant digits
// from kB on: "512 B", "4.10 kB", "312 MB", "1.20 GB".
func Bytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	unit := 0
	for v >= 999.5 && unit < len(units)-1 {
		v /= 1000
		unit++
	}
	prec := 2
	if v >= 99.95 {
		prec = 0
	} else if v >= 9.995 {
		prec = 1
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + units[unit]
}

var units = []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}

// Fraction returns done of total bytes as a progress line says it:
// "312 MB of 1.20 GB (26%)".
func Fraction(done, total int64) string {
	pct := int64(100)
	if total > 0 {
		pct = min(done*100/total, 100)
	}
	return fmt.Sprintf("%s of %s (%d%%)", Bytes(done), Bytes(total), pct)
}
