package record

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gtrace/gtrace/pkg/tracedat"
)

// newTestFlight returns a Flight of size bytes per CPU for a plan of
// sched:sched_switch on the fake tracefs, its files under a temporary
// directory, with final written at the end if set.
func newTestFlight(t *testing.T, size int, final bool) (*Flight, string) {
	t.Helper()
	fs := fakeTraceFS(t)
	p, err := NewPlan(fs, &Options{Events: []EventSpec{{Pattern: "sched:sched_switch"}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := FlightOptions{Base: filepath.Join(dir, "t"), Size: size, Names: func(pid int) string { return "task" }}
	if final {
		o.Final = filepath.Join(dir, "t.dat")
	}
	f, err := NewFlight(fs, p, o)
	if err != nil {
		t.Fatal(err)
	}
	return f, dir
}

// record returns a record of size bytes whose common_pid is pid and
// whose next 8 bytes hold v.
func testRecord(size int, pid uint32, v uint64) []byte {
	r := make([]byte, size)
	binary.LittleEndian.PutUint16(r, 316)
	binary.LittleEndian.PutUint32(r[4:], pid)
	binary.LittleEndian.PutUint64(r[8:], v)
	return r
}

// fileRecords returns, per CPU, the timestamps of a trace.dat file's
// records, and the events lost before them.
func fileRecords(t *testing.T, path string) (ts map[int][]uint64, missed int64) {
	t.Helper()
	f, err := tracedat.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts = map[int][]uint64{}
	it := f.Records()
	for it.Next() {
		r := it.Record()
		ts[r.CPU] = append(ts[r.CPU], r.TS)
		if r.Missed > 0 {
			missed += r.Missed
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return ts, missed
}

// TestFlightSnapshot: a mark cuts its CPU at once; another CPU is cut
// by its first record past the mark, or by take; the file holds each
// CPU's records up to the mark, with a lost mark where it was.
func TestFlightSnapshot(t *testing.T) {
	f, dir := newTestFlight(t, 64<<10, false)
	c0, c1 := f.CPU(0), f.CPU(1)
	add := func(s PageSink, ts uint64) {
		if err := s.Add(ts, testRecord(40, 7, ts)); err != nil {
			t.Fatal(err)
		}
	}
	add(c0, 10)
	add(c1, 15)
	add(c0, 20)
	c1.Lost(3)
	add(c1, 25)
	add(c0, 30)
	n, ok := f.mark(0, 30)
	if !ok || n != 1 {
		t.Fatalf("mark = %d, %v, want snapshot 1", n, ok)
	}
	add(c0, 40) // after the mark: not in snapshot 1
	add(c1, 35) // cuts CPU 1's part first
	n2, _ := f.mark(1, 35)
	add(c0, 50) // cuts CPU 0's part of snapshot 2
	if err := f.take(n); err != nil {
		t.Fatal(err)
	}
	if err := f.take(n2); err != nil {
		t.Fatal(err)
	}
	files, skipped := f.Files()
	want := []string{filepath.Join(dir, "t.snapshot-1.dat"), filepath.Join(dir, "t.snapshot-2.dat")}
	if !reflect.DeepEqual(files, want) || skipped != 0 {
		t.Fatalf("files %q, %d skipped; want %q", files, skipped, want)
	}
	for i, w := range []map[int][]uint64{
		{0: {10, 20, 30}, 1: {15, 25}},
		{0: {10, 20, 30}, 1: {15, 25, 35}},
	} {
		got, missed := fileRecords(t, files[i])
		if !reflect.DeepEqual(got, w) || missed != 3 {
			t.Errorf("snapshot %d: records %v, %d missed; want %v, 3", i+1, got, missed, w)
		}
	}
	if err := f.take(n); err == nil {
		t.Error("take of a snapshot taken: no error")
	}
}

// TestFlightTrim: a CPU keeps between Size and 1.5 Size bytes of
// samples, and a snapshot holds the last Size bytes of them up to the
// mark: with 64-byte samples, 1024 of them.
func TestFlightTrim(t *testing.T) {
	f, dir := newTestFlight(t, 64<<10, true)
	c := f.CPU(1)
	for ts := uint64(1); ts <= 3000; ts++ {
		if err := c.Add(ts, testRecord(48, 7, ts)); err != nil {
			t.Fatal(err)
		}
		if ts == 2000 {
			if _, ok := f.mark(1, ts); !ok {
				t.Fatal("mark refused")
			}
		}
	}
	if err := f.take(1); err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(&Stats{}, map[int]string{7: "seven"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file        string
		first, last uint64
	}{
		{"t.snapshot-1.dat", 977, 2000},
		{"t.dat", 1977, 3000},
	} {
		got, _ := fileRecords(t, filepath.Join(dir, tc.file))
		ts := got[1]
		if len(got) != 1 || len(ts) != int(tc.last-tc.first+1) || ts[0] != tc.first || ts[len(ts)-1] != tc.last {
			t.Errorf("%s: %d records on %d CPUs, %v...; want %d..%d on CPU 1", tc.file, len(ts), len(got), ts[:min(3, len(ts))], tc.first, tc.last)
		}
	}
	if ev, bytes := f.Final(); ev != 1024 || bytes != 1024*48 {
		t.Errorf("Final() = %d events, %d bytes; want 1024, %d", ev, bytes, 1024*48)
	}
}

// TestFlightPending: beyond maxPending snapshots waiting for their
// files, a firing is counted and left out.
func TestFlightPending(t *testing.T) {
	f, dir := newTestFlight(t, 64<<10, false)
	c := f.CPU(0)
	if err := c.Add(1, testRecord(40, 7, 1)); err != nil {
		t.Fatal(err)
	}
	for i := range maxPending + 2 {
		n, ok := f.mark(0, 1)
		if ok != (i < maxPending) || (ok && n != i+1) {
			t.Fatalf("mark %d = %d, %v", i, n, ok)
		}
	}
	if err := f.take(maxPending); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.mark(0, 1); !ok {
		t.Error("a mark after a take is refused")
	}
	files, skipped := f.Files()
	if len(files) != 1 || skipped != 2 {
		t.Errorf("files %q, %d skipped; want 1 file, 2 skipped", files, skipped)
	}
	if _, err := os.Stat(filepath.Join(dir, "t.snapshot-1.dat")); err == nil {
		t.Error("snapshot 1 written, want only the one taken")
	}
}

func TestSnapshotNames(t *testing.T) {
	for in, want := range map[string]string{"trace.dat": "trace.snapshot-3.dat", "run": "run.snapshot-3.dat", "a.dat.dat": "a.dat.snapshot-3.dat"} {
		if got := SnapshotFile(SnapshotBase(in), 3); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
