package status

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// TestEvery: the line is drawn every period, not before the first, and
// stop clears it once; work shorter than a period draws nothing, and a
// line with no writer starts nothing.
func TestEvery(t *testing.T) {
	var b syncBuilder
	l := NewLine(&b)
	var n atomic.Int32
	stop := l.Every(time.Millisecond, func() string { return fmt.Sprintf("step %d", n.Add(1)) })
	deadline := time.Now().Add(30 * time.Second)
	for n.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	stop()
	stop()
	got := b.String()
	if n.Load() < 3 || !strings.HasPrefix(got, "\rstep 1\x1b[K\rstep 2\x1b[K\rstep 3\x1b[K") || !strings.HasSuffix(got, "\x1b[K\r\x1b[K") {
		t.Errorf("Every wrote %q after %d steps, want steps 1, 2, 3... then a clear", got, n.Load())
	}
	if after := b.String(); after != got {
		t.Errorf("Every wrote %q after stop", after[len(got):])
	}

	var short syncBuilder
	NewLine(&short).Every(time.Hour, func() string { return "never" })()
	if short.String() != "" {
		t.Errorf("work shorter than a period wrote %q, want nothing", short.String())
	}
	NewLine(nil).Every(time.Millisecond, func() string { t.Error("text called on a line with no writer"); return "" })()
}

// syncBuilder is a strings.Builder safe for concurrent use.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFraction: byte counts in decimal units with three digits, and the
// percentage, whole and never above 100.
func TestFraction(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		want        string
	}{
		{0, 0, "0 B of 0 B (100%)"},
		{512, 4096, "512 B of 4.10 kB (12%)"},
		{312_000_000, 1_200_000_000, "312 MB of 1.20 GB (26%)"},
		{12_345_678, 99_960_000, "12.3 MB of 100 MB (12%)"},
		{999_600, 999_600, "1.00 MB of 1.00 MB (100%)"},
		{5, 3, "5 B of 3 B (100%)"},
	} {
		if got := Fraction(tc.done, tc.total); got != tc.want {
			t.Errorf("Fraction(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
}
