package tracedat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// recordsText returns every record of f, one a line, for comparing two
// reads of one file.
func recordsText(t *testing.T, f *File) string {
	t.Helper()
	var b strings.Builder
	it := f.Records()
	for it.Next() {
		r := it.Record()
		fmt.Fprintf(&b, "%d %d %x\n", r.CPU, r.TS, r.Data)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReadStream reads the sample from a pipe: the same metadata and
// records as from the file, and no file left in the temporary directory.
func TestReadStream(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	data, err := os.ReadFile("testdata/sched_switch.dat")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Open("testdata/sched_switch.dat")
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write(data)
		w.Close()
	}()
	got, err := ReadStream(r)
	r.Close()
	if err != nil {
		t.Fatalf("ReadStream() = %v", err)
	}
	defer got.Close()
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("ReadStream left %v in the temporary directory", left)
	}
	if got.CPUCount != want.CPUCount || len(got.Events) != len(want.Events) || recordsText(t, got) != recordsText(t, want) {
		t.Errorf("ReadStream read %d CPUs, %d events, other records; want the file's %d and %d", got.CPUCount, len(got.Events), want.CPUCount, len(want.Events))
	}
}

// TestOpenPipe opens a named pipe with a writer, and one without (an
// empty file); a directory is refused.
func TestOpenPipe(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	data, err := os.ReadFile("testdata/sched_switch.dat")
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(fifo); !errors.Is(err, ErrEmpty) {
		t.Errorf("Open(FIFO without a writer) = %v, want %v", err, ErrEmpty)
	}
	// Open does not wait for a writer: the test's own reader lets the
	// writer open first, as a shell pipeline's writer is there before
	// its reader.
	hold, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(data)
		w.Close()
		done <- err
	}()
	f, err := Open(fifo)
	if err != nil {
		t.Fatalf("Open(FIFO) = %v", err)
	}
	defer f.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.CPUCount != 2 || len(f.Events) == 0 {
		t.Errorf("Open(FIFO): %d CPUs, %d events", f.CPUCount, len(f.Events))
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Open(directory) = %v, want \"is a directory\"", err)
	}
	if _, err := Read(bytes.NewReader(nil), 0); !errors.Is(err, ErrEmpty) {
		t.Errorf("Read(no bytes) = %v, want %v", err, ErrEmpty)
	}
}
