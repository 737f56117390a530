package tracedat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Event ids of the format fixtures in testdata/writer.
const (
	wrIDPrint  = 5
	wrIDSwitch = 372
	wrIDWakeup = 374
)

// wrKallsyms resolves the ip of the print events.
const (
	wrKallsyms = "ffffffff81000000 T _stext\nffffffff8149ab00 T tracing_mark_write\nffffffff8149ac00 T tracing_mark_raw_write\n"
	wrPrintIP  = 0xffffffff8149ab1a
)

// wrMeta returns the metadata of the test recordings: the format files
// of sched_switch, sched_wakeup and ftrace's print copied from a 6.18
// x86_64 kernel.
func wrMeta(t testing.TB, cpus int) Meta {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "writer", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return Meta{
		PageSize:    4096,
		HeaderPage:  read("header_page"),
		HeaderEvent: read("header_event"),
		Formats: []FormatText{
			{System: "ftrace", Text: read("ftrace_print.format")},
			{System: "sched", Text: read("sched_sched_switch.format")},
			{System: "sched", Text: read("sched_sched_wakeup.format")},
		},
		Kallsyms: []byte(wrKallsyms),
		Printk:   []byte(`0xffffffff82a5c8f0 : "test\n"` + "\n"),
		Cmdlines: map[int]string{1: "init", 4242: "early"},
		Clock:    read("trace_clock"),
		Uname:    "Linux test 6.18.44 x86_64",
		Version:  "gtrace test",
		CPUs:     cpus,
		TraceID:  0x1234567890abcdef,
	}
}

// wrEvent is one record to write, with what the readers must report.
type wrEvent struct {
	cpu     int
	ts      uint64
	payload []byte
	lost    uint64 // events lost just before this one
	comm    string // comm of common_pid
	pid     int
	name    string // event name
}

// header appends the 8 common bytes of a record.
func wrHeader(id uint16, pid int) []byte {
	b := binary.LittleEndian.AppendUint16(nil, id)
	b = append(b, 0, 1) // flags, preempt count
	return binary.LittleEndian.AppendUint32(b, uint32(pid))
}

func wrComm(s string) []byte {
	b := make([]byte, 16)
	copy(b, s)
	return b
}

// wrSwitch returns a sched_switch record (64 bytes).
func wrSwitch(prevComm string, prevPID int, nextComm string, nextPID int) []byte {
	b := wrHeader(wrIDSwitch, prevPID)
	b = append(b, wrComm(prevComm)...)
	b = binary.LittleEndian.AppendUint32(b, uint32(prevPID))
	b = binary.LittleEndian.AppendUint32(b, 120)
	b = binary.LittleEndian.AppendUint64(b, 1) // S
	b = append(b, wrComm(nextComm)...)
	b = binary.LittleEndian.AppendUint32(b, uint32(nextPID))
	return binary.LittleEndian.AppendUint32(b, 120)
}

// wrWakeup returns a sched_wakeup record (36 bytes: wrPadded to 36).
func wrWakeup(pid int, comm string, target int) []byte {
	b := wrHeader(wrIDWakeup, pid)
	b = append(b, wrComm(comm)...)
	b = binary.LittleEndian.AppendUint32(b, uint32(pid))
	b = binary.LittleEndian.AppendUint32(b, 120)
	return binary.LittleEndian.AppendUint32(b, uint32(target))
}

// wrPrint returns an ftrace print record with text (NUL added).
func wrPrint(pid int, text string) []byte {
	b := wrHeader(wrIDPrint, pid)
	b = binary.LittleEndian.AppendUint64(b, wrPrintIP)
	return append(append(b, text...), 0)
}

// wrEvents returns n events per CPU on cpus CPUs: small deltas, gaps
// of 2^27 ns and more (TIME_EXTEND), one of minutes, one step back in
// time (TIME_STAMP), prints longer than 112 bytes, and losses.
func wrEvents(cpus, n int, seed uint64) []wrEvent {
	r := rand.New(rand.NewPCG(seed, 1))
	var evs []wrEvent
	for cpu := range cpus {
		ts := uint64(637_826_270_000) + uint64(cpu)*1777
		for i := range n {
			switch {
			case i == n/2:
				ts += 200 << 30 // minutes: a TIME_EXTEND with a large array[0]
			case i == n/3:
				ts -= 30_000 // back in time: a TIME_STAMP
			case r.IntN(40) == 0:
				ts += 1<<27 + uint64(r.IntN(1<<29))
			default:
				ts += uint64(r.IntN(50_000))
			}
			pid := 1000 + cpu*100 + r.IntN(5)
			comm := fmt.Sprintf("task-%d", pid)
			e := wrEvent{cpu: cpu, ts: ts, pid: pid, comm: comm}
			switch r.IntN(4) {
			case 0:
				text := fmt.Sprintf("cpu%d event %d %s", cpu, i, strings.Repeat("x", r.IntN(300)))
				e.payload, e.name = wrPrint(pid, text), "print"
			case 1:
				e.payload, e.name = wrWakeup(pid, comm, cpu), "sched_wakeup"
			default:
				e.payload, e.name = wrSwitch(comm, pid, "next", 7), "sched_switch"
			}
			if i > 0 && r.IntN(60) == 0 {
				e.lost = uint64(1 + r.IntN(5000))
			}
			evs = append(evs, e)
		}
	}
	return evs
}

// wrMerged returns evs in the order readers merge CPUs: each CPU's records
// in the order written, the CPU whose next record has the lowest
// timestamp first, ties to the lower CPU.
func wrMerged(evs []wrEvent) []wrEvent {
	var queues [][]wrEvent
	for _, e := range evs {
		for len(queues) <= e.cpu {
			queues = append(queues, nil)
		}
		queues[e.cpu] = append(queues[e.cpu], e)
	}
	out := make([]wrEvent, 0, len(evs))
	for len(out) < len(evs) {
		best := -1
		for cpu, q := range queues {
			if len(q) > 0 && (best < 0 || q[0].ts < queues[best][0].ts) {
				best = cpu
			}
		}
		out = append(out, queues[best][0])
		queues[best] = queues[best][1:]
	}
	return out
}

// wrWriteFile records evs into dir/name with w and closes it.
func wrWriteFile(t testing.TB, path string, m Meta, o WriteOptions, evs []wrEvent) {
	t.Helper()
	w, err := Create(path, m, o)
	if err != nil {
		t.Fatalf("Create(%q) = %v", path, err)
	}
	defer w.Abort()
	wrAdd(t, w, evs)
	cmd := map[int]string{}
	for _, e := range evs {
		cmd[e.pid] = e.comm
	}
	w.SetCmdlines(cmd)
	for cpu := range m.CPUs {
		w.SetCPUStat(cpu, fmt.Sprintf("entries: 0\noverrun: 0\nread events: %d\n", cpu))
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
}

func wrAdd(t testing.TB, w *Writer, evs []wrEvent) {
	t.Helper()
	for _, e := range evs {
		pw := w.CPU(e.cpu)
		if e.lost != 0 {
			pw.Lost(e.lost)
		}
		if err := pw.Add(e.ts, e.payload); err != nil {
			t.Fatalf("cpu %d: Add(%d, %d bytes) = %v", e.cpu, e.ts, len(e.payload), err)
		}
	}
}

// wrPadded returns b wrPadded with zeros to a multiple of 4 bytes, as
// records store payloads.
func wrPadded(b []byte) []byte {
	return append(slices.Clone(b), make([]byte, (4-len(b)%4)%4)...)
}

// wrReadAll reads every record of f, Data copied.
func wrReadAll(t testing.TB, f *File) []Record {
	t.Helper()
	var recs []Record
	it := f.Records()
	for it.Next() {
		r := it.Record()
		r.Data = bytes.Clone(r.Data)
		recs = append(recs, r)
	}
	if err := it.Err(); err != nil {
		t.Fatalf("Records: %v", err)
	}
	return recs
}

// wrCheckRecords compares records read back with the events written.
func wrCheckRecords(t testing.TB, got []Record, want []wrEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("read %d records, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.CPU != w.cpu || g.TS != w.ts || g.Missed != int64(w.lost) || !bytes.Equal(g.Data, wrPadded(w.payload)) {
			t.Fatalf("record %d = cpu %d ts %d missed %d %d bytes %x,\nwant cpu %d ts %d missed %d %d bytes %x",
				i, g.CPU, g.TS, g.Missed, len(g.Data), g.Data, w.cpu, w.ts, w.lost, len(wrPadded(w.payload)), wrPadded(w.payload))
		}
	}
}

var wrVariants = []struct {
	name string
	opts WriteOptions
}{
	{"v7", WriteOptions{}},
	{"v7-zstd", WriteOptions{Compression: "zstd"}},
	{"v6", WriteOptions{Version: 6}},
}

// TestWriterRoundTrip writes events on two CPUs in every format and reads
// them back with the reader: times, CPUs, payloads and lost counts.
func TestWriterRoundTrip(t *testing.T) {
	evs := wrEvents(2, 3000, 1)
	m := wrMeta(t, 2)
	for _, v := range wrVariants {
		t.Run(v.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.dat")
			wrWriteFile(t, path, m, v.opts, evs)
			f, err := Open(path)
			if err != nil {
				t.Fatalf("Open() = %v", err)
			}
			defer f.Close()
			wrCheckMeta(t, f, m, v.opts)
			wrCheckRecords(t, wrReadAll(t, f), wrMerged(evs))
			if _, err := os.Stat(path + ".cpu0"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("spool file left after Close: %v", err)
			}
		})
	}
}

// wrCheckMeta compares the metadata read back with m.
func wrCheckMeta(t testing.TB, f *File, m Meta, o WriteOptions) {
	t.Helper()
	wantVersion, wantComp := 7, "none"
	if o.Version == 6 {
		wantVersion = 6
	}
	if o.Compression != "" {
		wantComp = o.Compression
	}
	if f.Version != wantVersion || f.Compression != wantComp || f.PageSize != m.PageSize || f.LongSize != 8 {
		t.Errorf("file version %d compression %q page size %d long %d, want %d %q %d 8",
			f.Version, f.Compression, f.PageSize, f.LongSize, wantVersion, wantComp, m.PageSize)
	}
	if f.HeaderPage != m.HeaderPage || f.HeaderEvent != m.HeaderEvent {
		t.Errorf("header_page/header_event differ")
	}
	if len(f.Events) != len(m.Formats) {
		t.Errorf("%d events stored, want %d", len(f.Events), len(m.Formats))
	}
	for _, ft := range m.Formats {
		found := false
		for _, ev := range f.Events {
			if ev.Text == ft.Text && ev.Format.System == ft.System {
				found = true
			}
		}
		if !found {
			t.Errorf("format of system %q not stored verbatim:\n%s", ft.System, ft.Text)
		}
	}
	if f.Kallsyms != string(m.Kallsyms) || f.Printk != string(m.Printk) {
		t.Errorf("kallsyms %q printk %q, want %q %q", f.Kallsyms, f.Printk, m.Kallsyms, m.Printk)
	}
	if f.Clock != "local" || f.Uname != m.Uname || f.TracerVersion != m.Version || f.TraceID != m.TraceID || f.CPUCount != m.CPUs {
		t.Errorf("clock %q uname %q version %q trace id %#x cpus %d, want local %q %q %#x %d",
			f.Clock, f.Uname, f.TracerVersion, f.TraceID, f.CPUCount, m.Uname, m.Version, m.TraceID, m.CPUs)
	}
	if len(f.CPUStats) != m.CPUs || !strings.HasPrefix(f.CPUStats[0], "CPU: 0\nentries: 0\n") {
		t.Errorf("cpu stats %q", f.CPUStats)
	}
}

// BenchmarkWriterAdd measures recording 64-byte records through a
// Writer, spool file writes included.
func BenchmarkWriterAdd(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "trace.dat"), wrMeta(b, 1), WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Abort()
	pw := w.CPU(0)
	payload := wrSwitch("bench", 1, "next", 2)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	ts := uint64(0)
	for b.Loop() {
		ts += 700
		if err := pw.Add(ts, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriterClose measures Close, which copies (or compresses) 16
// MiB of pages of 64-byte records into the final file.
func BenchmarkWriterClose(b *testing.B) {
	m := wrMeta(b, 2)
	payload := wrSwitch("bench", 1, "next", 2)
	const bytesPerCPU = 8 << 20
	for _, v := range wrVariants {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(2 * bytesPerCPU)
			for b.Loop() {
				b.StopTimer()
				path := filepath.Join(b.TempDir(), "trace.dat")
				w, err := Create(path, m, v.opts)
				if err != nil {
					b.Fatal(err)
				}
				for cpu := range 2 {
					pw := w.CPU(cpu)
					for i := 0; pw.Pages() < bytesPerCPU/4096; i++ {
						payload[8] = byte(i) // vary the data a little
						if err := pw.Add(uint64(i)*1000, payload); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StartTimer()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
