package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/record"
	"github.com/gtrace/gtrace/pkg/report"
)

// out is a writer the test can watch: it keeps what the printer flushed.
type out struct {
	mu sync.Mutex
	b  bytes.Buffer
	n  int // writes
}

func (o *out) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n++
	return o.b.Write(p)
}

func (o *out) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// waitLines waits, generously, until o holds n lines, and returns them.
func (o *out) waitLines(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := o.String()
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		if s != "" && len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("output after 10 s:\n%s\nwant %d lines", s, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// newTest returns a stream of raw_syscalls:sys_enter records on CPUs 0
// and 1, whose clock reads now.
func newTest(t *testing.T, now *atomic.Uint64, json bool, names func(int) string) (*Stream, *out, [2]record.PageSink) {
	t.Helper()
	f := testutil.Format(t, "raw_syscalls:sys_enter")
	w := &out{}
	s := New(Options{
		W: w, JSON: json,
		Printer: report.PrinterOptions{
			Formats: map[int]report.EventFormat{f.ID: {Format: f, Text: testutil.FormatText(t, "raw_syscalls:sys_enter")}},
			Clock:   "mono",
		},
		CPUs:  []int{0, 1},
		Names: names,
		Now:   now.Load,
		Delay: 50 * time.Millisecond,
	})
	return s, w, [2]record.PageSink{s.CPU(0), s.CPU(1)}
}

// enter returns a raw_syscalls:sys_enter record of pid for system call id.
func enter(t *testing.T, pid int32, id int64) []byte {
	f := testutil.Format(t, "raw_syscalls:sys_enter")
	b := make([]byte, 64)
	binary.LittleEndian.PutUint16(b, uint16(f.ID))
	binary.LittleEndian.PutUint32(b[4:], uint32(pid))
	binary.LittleEndian.PutUint64(b[8:], uint64(id))
	return b
}

func add(t *testing.T, k record.PageSink, ts uint64, pid int32, id int64) {
	t.Helper()
	if err := k.Add(ts, enter(t, pid, id)); err != nil {
		t.Fatal(err)
	}
}

func endChunk(t *testing.T, k record.PageSink) {
	t.Helper()
	if err := k.(record.ChunkSink).EndChunk(); err != nil {
		t.Fatal(err)
	}
}

func finish(t *testing.T, s *Stream, ks [2]record.PageSink, names map[int]string) {
	t.Helper()
	for _, k := range ks {
		if err := k.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(&record.Stats{}, names); err != nil {
		t.Fatal(err)
	}
}

// ids returns the system call numbers of text lines, in order.
func ids(lines []string) string {
	var out []string
	for _, l := range lines {
		if i := strings.Index(l, "NR "); i >= 0 {
			out = append(out, strings.Fields(l[i+3:])[0])
		} else {
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}

// TestOrder checks that records of two CPUs print in timestamp order, as
// soon as both CPUs have sent newer ones, and the rest at Finish; the
// clock's watermark never passes them here.
func TestOrder(t *testing.T) {
	var now atomic.Uint64
	s, w, ks := newTest(t, &now, false, nil)
	add(t, ks[0], 1000, 7, 1)
	add(t, ks[0], 3000, 7, 3)
	endChunk(t, ks[0])
	add(t, ks[1], 2000, 8, 2)
	endChunk(t, ks[1])
	// CPU 1 has sent records up to 2000: what is older prints. It might
	// still send another at 2000, which would print before CPU 0's at
	// 3000.
	if got := ids(w.waitLines(t, 1)); got != "1" {
		t.Errorf("before Finish: %q, want %q", got, "1")
	}
	add(t, ks[1], 2500, 8, 25)
	endChunk(t, ks[1])
	if got := ids(w.waitLines(t, 2)); got != "1 2" {
		t.Errorf("after CPU 1's second chunk: %q, want %q", got, "1 2")
	}
	add(t, ks[1], 5000, 8, 5)
	endChunk(t, ks[1])
	if got := ids(w.waitLines(t, 3)); got != "1 2 25" {
		t.Errorf("after CPU 1's next chunks: %q, want %q", got, "1 2 25")
	}
	finish(t, s, ks, nil)
	if got := ids(w.waitLines(t, 5)); got != "1 2 25 3 5" {
		t.Errorf("after Finish: %q, want %q", got, "1 2 25 3 5")
	}
	want := "           <...>-7     [000]     0.000001: sys_enter:            NR 1 (0, 0, 0, 0, 0, 0)\n"
	if got := w.String(); !strings.HasPrefix(got, want) {
		t.Errorf("first line %q, want trace-cmd report's %q", got, want)
	}
}

// TestWatermark checks that a record of one CPU waits for the other
// CPU's records until the clock is the delay past it, then prints
// without more records coming.
func TestWatermark(t *testing.T) {
	var now atomic.Uint64
	now.Store(uint64(time.Second))
	s, w, ks := newTest(t, &now, false, nil)
	ts := uint64(time.Second) - uint64(10*time.Millisecond) // 40 ms younger than the delay
	add(t, ks[0], ts, 7, 1)
	endChunk(t, ks[0])
	time.Sleep(3 * tickEvery)
	if got := w.String(); got != "" {
		t.Errorf("printed %q before the clock passed the delay", got)
	}
	now.Store(ts + uint64(50*time.Millisecond) + 1)
	if got := ids(w.waitLines(t, 1)); got != "1" {
		t.Errorf("after the delay: %q, want %q", got, "1")
	}
	finish(t, s, ks, nil)
}

// TestLost checks the lost marks: before the record that follows them,
// as trace-cmd report prints them, and at the end for those after a
// CPU's last record.
func TestLost(t *testing.T) {
	var now atomic.Uint64
	s, w, ks := newTest(t, &now, false, nil)
	add(t, ks[0], 1000, 7, 1)
	ks[0].Lost(5)
	add(t, ks[0], 2000, 7, 2)
	endChunk(t, ks[0])
	ks[1].Lost(3)
	finish(t, s, ks, nil)
	lines := w.waitLines(t, 4)
	if got, want := ids(lines), "1 CPU:0 [5 EVENTS DROPPED] 2 CPU:1 [3 EVENTS DROPPED]"; got != want {
		t.Errorf("lines %q, want %q", got, want)
	}
}

// TestJSON checks NDJSON lines, lost counts in them, and the names of
// tasks: from Names when a pid first appears, from Finish's cmdlines
// for those Names did not know.
func TestJSON(t *testing.T) {
	var now atomic.Uint64
	asked := map[int]int{}
	var mu sync.Mutex
	names := func(pid int) string {
		mu.Lock()
		defer mu.Unlock()
		asked[pid]++
		if pid == 7 {
			return "seven"
		}
		return ""
	}
	s, w, ks := newTest(t, &now, true, names)
	add(t, ks[0], 1000, 7, 1)
	add(t, ks[0], 2000, 7, 2)
	ks[0].Lost(2)
	add(t, ks[0], 3000, 9, 3)
	endChunk(t, ks[0])
	add(t, ks[1], 4000, 9, 4)
	endChunk(t, ks[1])
	w.waitLines(t, 2)
	finish(t, s, ks, map[int]string{9: "nine"})
	lines := w.waitLines(t, 4)
	for i, want := range []string{
		`{"cpu":0,"ts_ns":1000,"comm":"seven","pid":7,"event":"raw_syscalls:sys_enter"`,
		`{"cpu":0,"ts_ns":2000,"comm":"seven","pid":7,`,
		`{"cpu":0,"ts_ns":3000,"missed":2,"comm":"nine","pid":9,`, // printed after Finish named 9
		`{"cpu":1,"ts_ns":4000,"comm":"nine","pid":9,`,
	} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: %s\nwant it to start %s", i, lines[i], want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[7] != 1 {
		t.Errorf("Names asked %v: want pid 7 once, and 9 never (Finish named it first)", asked)
	}
}

// TestAbort checks that a stream given up on stops its printer and that
// sinks then fail instead of blocking.
func TestAbort(t *testing.T) {
	var now atomic.Uint64
	s, _, ks := newTest(t, &now, false, nil)
	s.Abort()
	add(t, ks[0], 1000, 7, 1)
	if err := ks[0].(record.ChunkSink).EndChunk(); err == nil {
		t.Error("EndChunk after Abort did not fail")
	}
}

// fakeSink records what it is given.
type fakeSink struct{ calls []string }

func (f *fakeSink) Add(ts uint64, p []byte) error {
	f.calls = append(f.calls, fmt.Sprintf("add %d %d", ts, len(p)))
	return nil
}
func (f *fakeSink) Lost(n uint64)     { f.calls = append(f.calls, fmt.Sprintf("lost %d", n)) }
func (f *fakeSink) FlushPages() error { f.calls = append(f.calls, "pages"); return nil }
func (f *fakeSink) Flush() error      { f.calls = append(f.calls, "flush"); return nil }

// chunkSink is a fakeSink that hears the ends of chunks.
type chunkSink struct{ fakeSink }

func (c *chunkSink) EndChunk() error { c.calls = append(c.calls, "end"); return nil }

// fakeOutput hands out one sink.
type fakeOutput struct {
	sink     record.PageSink
	finished map[int]string
	aborted  bool
}

func (f *fakeOutput) CPU(int) record.PageSink { return f.sink }
func (f *fakeOutput) Finish(_ *record.Stats, names map[int]string) error {
	f.finished = names
	return nil
}
func (f *fakeOutput) Abort() { f.aborted = true }

// TestTee checks that a tee gives both outputs everything, and the ends
// of chunks to the sink that wants them alone.
func TestTee(t *testing.T) {
	file, live := &fakeSink{}, &chunkSink{}
	a, b := &fakeOutput{sink: file}, &fakeOutput{sink: live}
	tee := record.Tee(a, b)
	k := tee.CPU(0)
	if err := k.Add(5, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	k.Lost(2)
	if err := k.(record.ChunkSink).EndChunk(); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(k.FlushPages(), k.Flush(), tee.Finish(&record.Stats{}, map[int]string{1: "a"})); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(file.calls, ", "), "add 5 16, lost 2, pages, flush"; got != want {
		t.Errorf("file sink got %s, want %s", got, want)
	}
	if got, want := strings.Join(live.calls, ", "), "add 5 16, lost 2, end, pages, flush"; got != want {
		t.Errorf("stream sink got %s, want %s", got, want)
	}
	if a.finished[1] != "a" || b.finished[1] != "a" {
		t.Errorf("Finish reached %v and %v", a.finished, b.finished)
	}
	tee.Abort()
	if !a.aborted || !b.aborted {
		t.Error("Abort did not reach both outputs")
	}
}

// BenchmarkStream measures the printer's cost per record: two CPUs'
// sinks, records of raw_syscalls:sys_enter in chunks of 256, text to
// io.Discard.
func BenchmarkStream(b *testing.B) {
	f := testutil.Format(b, "raw_syscalls:sys_enter")
	s := New(Options{
		W: io.Discard,
		Printer: report.PrinterOptions{
			Formats: map[int]report.EventFormat{f.ID: {Format: f, Text: testutil.FormatText(b, "raw_syscalls:sys_enter")}},
			Clock:   "mono",
		},
		CPUs: []int{0, 1},
		Now:  func() uint64 { return 0 },
	})
	ks := []record.PageSink{s.CPU(0), s.CPU(1)}
	rec := make([]byte, 64)
	binary.LittleEndian.PutUint16(rec, uint16(f.ID))
	binary.LittleEndian.PutUint32(rec[4:], 42)
	b.ResetTimer()
	for i := range b.N {
		k := ks[i&1]
		if err := k.Add(uint64(i), rec); err != nil {
			b.Fatal(err)
		}
		if i%512 >= 510 {
			if err := k.(record.ChunkSink).EndChunk(); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, k := range ks {
		if err := k.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Finish(&record.Stats{}, nil); err != nil {
		b.Fatal(err)
	}
}
