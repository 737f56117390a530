package probe

import (
	"encoding/binary"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"0", []int{0}, true},
		{"0-3", []int{0, 1, 2, 3}, true},
		{"0-1,4,6-7", []int{0, 1, 4, 6, 7}, true},
		{"", nil, false},
		{"3-1", nil, false},
		{"x", nil, false},
	}
	for _, tc := range cases {
		got, err := parseCPUList(tc.in)
		if (err == nil) != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseCPUList(%q) = %v, %v, want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// sample is one record read back: CPU, timestamp and the record.
type sample struct {
	cpu int
	ts  uint64
	rec []byte
}

// samples splits a run of samples (a batch) into t's records.
func samples(t *testing.T, cpu int, b []byte, out []sample) []sample {
	t.Helper()
	for off := 0; off < len(b); {
		if off+bpfgen.SampleHeader > len(b) {
			t.Fatalf("CPU %d: batch of %d bytes ends in a sample header at %d", cpu, len(b), off)
		}
		ts := binary.LittleEndian.Uint64(b[off:])
		n := int(binary.LittleEndian.Uint32(b[off+8:]))
		off += bpfgen.SampleHeader
		if off+n > len(b) {
			t.Fatalf("CPU %d: sample of %d bytes at %d passes the batch's end %d", cpu, n, off, len(b))
		}
		out = append(out, sample{cpu, ts, append([]byte(nil), b[off:off+n]...)})
		off += (n + 7) &^ 7
	}
	return out
}

// drain detaches the programs and returns every sample they wrote: the
// batches in the rings, then those left in the batch map, per CPU.
func drain(t *testing.T, o *Objects, rings []*Ring, cpus []int) []sample {
	t.Helper()
	if err := o.Detach(); err != nil {
		t.Fatal(err)
	}
	var out []sample
	batches, err := o.PerCPUValue(bpfgen.BatchMapName)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rings {
		r.Refresh()
		for {
			b, ok := r.Next()
			if !ok {
				break
			}
			out = samples(t, cpus[i], b, out)
		}
		r.Commit()
		fill := binary.LittleEndian.Uint32(batches[cpus[i]])
		out = samples(t, cpus[i], batches[cpus[i]][bpfgen.BatchHeader:bpfgen.BatchHeader+fill], out)
	}
	return out
}

// loadRecorder loads the record programs of events, with rings for every
// online CPU, and attaches them. Only this process's events are recorded,
// unless all is set.
func loadRecorder(t *testing.T, ringSize int, all bool, events ...string) (*Objects, []*Ring, []int, []*parse.Format) {
	t.Helper()
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	spec := &bpfgen.RecordSpec{
		CPUs: cpus[len(cpus)-1] + 1, RingSize: ringSize, MaxRecord: 4064,
	}
	if !all {
		spec.OnlyTGIDs = []uint32{uint32(os.Getpid())}
	}
	var formats []*parse.Format
	for _, name := range events {
		ev, err := fs.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fs.Format(ev)
		if err != nil {
			t.Fatal(err)
		}
		formats = append(formats, f)
		spec.Events = append(spec.Events, bpfgen.RecordEvent{Format: f})
	}
	prog, err := bpfgen.Record(spec)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Load(prog)
	if err != nil {
		t.Fatalf("%v\n%s", VerifierTail(err, 20), prog.Listing())
	}
	t.Cleanup(func() { o.Close() })
	rings, err := o.OpenRings(bpfgen.RingsMapName, cpus, ringSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range rings {
			r.Close()
		}
	})
	for i, f := range formats {
		if err := o.AttachTracepoint(bpfgen.RecordProgName(i), f.System, f.Name); err != nil {
			t.Fatal(err)
		}
	}
	return o, rings, cpus, formats
}

// TestPrivilegedRingRecords records this thread's getppid calls and reads
// the samples back: every call once, in time order, with the common
// fields the program writes and the syscall number the kernel wrote.
func TestPrivilegedRingRecords(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n = 1000
	o, rings, cpus, formats := loadRecorder(t, 1<<20, false, "raw_syscalls:sys_enter")
	lost, err := o.MapCounters(bpfgen.LostMapName)
	if err != nil {
		t.Fatal(err)
	}
	defer lost.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	for i := 0; i < n; i++ {
		syscall.Getppid()
		if i == n/2 {
			time.Sleep(2 * time.Millisecond) // the next event writes out the batch
		}
	}
	got := 0
	last := map[int]uint64{}
	for _, s := range drain(t, o, rings, cpus) {
		if len(s.rec) != 64 {
			t.Fatalf("record of %d bytes, want 64", len(s.rec))
		}
		typ := binary.LittleEndian.Uint16(s.rec)
		pid := binary.LittleEndian.Uint32(s.rec[4:])
		if typ != uint16(formats[0].ID) || s.rec[2] != 0 || s.rec[3] != 0 {
			t.Fatalf("common fields % x, want type %d, flags 0, preempt_count 0", s.rec[:4], formats[0].ID)
		}
		if s.ts < last[s.cpu] {
			t.Errorf("CPU %d: timestamps go back: %d after %d", s.cpu, s.ts, last[s.cpu])
		}
		last[s.cpu] = s.ts
		if pid == uint32(tid) && formats[0].Field("id").Value(s.rec) == syscall.SYS_GETPPID {
			got++
		}
	}
	if got != n {
		t.Errorf("read %d getppid records of this thread, want %d", got, n)
	}
	for _, cpu := range cpus {
		if l := lost.Load(cpu); l != 0 {
			t.Errorf("CPU %d lost %d events", cpu, l)
		}
	}
}

// TestPrivilegedRingLost fills small rings and wants the events that did
// not fit counted.
func TestPrivilegedRingLost(t *testing.T) {
	testutil.RequirePrivileged(t)
	const size = 64 << 10
	o, rings, cpus, _ := loadRecorder(t, size, false, "raw_syscalls:sys_enter")
	lost, err := o.MapCounters(bpfgen.LostMapName)
	if err != nil {
		t.Fatal(err)
	}
	defer lost.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const n = 100000
	for i := 0; i < n; i++ {
		syscall.Getppid()
	}
	read := len(drain(t, o, rings, cpus))
	dropped := uint64(0)
	for _, cpu := range cpus {
		dropped += lost.Load(cpu)
	}
	if dropped == 0 || read == 0 || read > len(rings)*(size+bpfgen.BatchData)/(bpfgen.SampleHeader+64) {
		t.Errorf("read %d samples and lost %d with rings of %d bytes", read, dropped, size)
	}
	if read+int(dropped) < n {
		t.Errorf("read %d samples and lost %d, fewer than the %d calls", read, dropped, n)
	}
}

// TestPrivilegedRingDynamic records an exec, whose filename is a
// __data_loc string after the fixed fields: the sample holds the whole
// record, string included.
func TestPrivilegedRingDynamic(t *testing.T) {
	testutil.RequirePrivileged(t)
	o, rings, cpus, formats := loadRecorder(t, 1<<20, true, "sched:sched_process_exec")
	c := exec.Command("/bin/true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	f := formats[0]
	found := false
	for _, s := range drain(t, o, rings, cpus) {
		rec := s.rec
		if int(f.Field("pid").Value(rec)) != c.Process.Pid {
			continue
		}
		found = true
		if got := string(f.Field("filename").Bytes(rec)); got != "/bin/true" {
			t.Errorf("filename = %q, want /bin/true", got)
		}
		loc := f.Field("filename").Uint(rec)
		if end := int(loc&0xffff + loc>>16); len(rec) != end {
			t.Errorf("record is %d bytes, want %d (the end of the filename)", len(rec), end)
		}
		if pid := binary.LittleEndian.Uint32(rec[4:]); int(pid) != c.Process.Pid {
			t.Errorf("common_pid = %d, want %d", pid, c.Process.Pid)
		}
	}
	if !found {
		t.Error("no sched_process_exec record of the command")
	}
}
