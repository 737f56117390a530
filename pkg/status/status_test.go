package status

import (
	"os"
	"strings"
	"testing"
)

// TestTerminal: a pipe, a file and a buffer are no terminals.
func TestTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, x := range map[string]any{"pipe": w, "file": f, "buffer": &strings.Builder{}} {
		if got := Terminal(x.(interface{ Write([]byte) (int, error) })); got != nil {
			t.Errorf("Terminal(%s) = %v, want nil", name, got)
		}
	}
}

// TestLine: a line is redrawn in place and cleared once; a line on no
// writer, or no line, shows nothing.
func TestLine(t *testing.T) {
	var b strings.Builder
	l := NewLine(&b)
	l.Show("1 event")
	l.Show("2 events")
	l.Clear()
	l.Clear()
	if want := "\r1 event\x1b[K\r2 events\x1b[K\r\x1b[K"; b.String() != want {
		t.Errorf("line wrote %q, want %q", b.String(), want)
	}
	NewLine(nil).Show("x")
	var none *Line
	none.Show("x")
	none.Clear()
}
