package record

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/probe"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// fakeTraceFS serves a tracefs tree made of the real format files of
// internal/testutil (named SYSTEM_EVENT.format), with the header files and
// trace_clock of a 64-bit kernel.
func fakeTraceFS(t *testing.T) *tracefs.FS {
	t.Helper()
	root := t.TempDir()
	formats := testutil.FormatFiles()
	files, err := fs.Glob(formats, "*.format")
	if err != nil || len(files) == 0 {
		t.Fatalf("no format fixtures: %v", err)
	}
	write := func(p, text string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range files {
		b, err := fs.ReadFile(formats, p)
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(filepath.Base(p), ".format")
		name := strings.SplitN(string(b), "\n", 2)[0][len("name: "):]
		sys := strings.TrimSuffix(base, "_"+name)
		write(filepath.Join(root, "events", sys, name, "format"), string(b))
	}
	write(filepath.Join(root, "events", "header_page"), "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n")
	write(filepath.Join(root, "events", "header_event"), "# compressed entry header\n")
	write(filepath.Join(root, "trace_clock"), "[local] global counter uptime perf mono mono_raw boot x86-tsc\n")
	return tracefs.At(root)
}

func eventNames(p *Plan) []string {
	var out []string
	for _, ev := range p.Events {
		name := ev.Format.FullName()
		if ev.Filter != nil {
			name += " if " + ev.Filter.Src
		}
		out = append(out, name)
	}
	return out
}

func TestNewPlan(t *testing.T) {
	fs := fakeTraceFS(t)
	cases := []struct {
		name   string
		events []EventSpec
		want   []string
	}{
		{"one", []EventSpec{{Pattern: "raw_syscalls:sys_enter"}}, []string{"raw_syscalls:sys_enter"}},
		{"glob with filter", []EventSpec{{Pattern: "sched:*", Filter: "common_pid != 0"}, {Pattern: "kmem:kmalloc"}},
			[]string{"sched:sched_process_exec if common_pid != 0", "sched:sched_switch if common_pid != 0", "sched:sched_waking if common_pid != 0", "kmem:kmalloc"}},
		{"filter follows its event only", []EventSpec{{Pattern: "sched:sched_switch"}, {Pattern: "sched:sched_waking", Filter: "prio < 100"}},
			[]string{"sched:sched_switch", "sched:sched_waking if prio < 100"}},
		{"last -e of an event wins", []EventSpec{{Pattern: "sched:*"}, {Pattern: "sched_switch", Filter: "prev_pid == 1"}},
			[]string{"sched:sched_process_exec", "sched:sched_switch if prev_pid == 1", "sched:sched_waking"}},
		{"whole system", []EventSpec{{Pattern: "raw_syscalls"}}, []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(fs, &Options{Events: tc.events})
			if err != nil {
				t.Fatalf("NewPlan() = %+v", err)
			}
			if got := eventNames(p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			if p.RingSize != DefaultBufferKB<<10 || p.Clock != bpfgen.ClockMono || len(p.CPUs) == 0 {
				t.Errorf("ring %d, clock %v, CPUs %v", p.RingSize, p.Clock, p.CPUs)
			}
			for i := range p.Events {
				if p.Program.Collection.Programs[bpfgen.RecordProgName(i)] == nil {
					t.Errorf("no program for event %d", i)
				}
			}
		})
	}
}

func TestNewPlanLayout(t *testing.T) {
	p, err := NewPlan(fakeTraceFS(t), &Options{
		Events:   []EventSpec{{Pattern: "raw_syscalls:sys_enter"}, {Pattern: "sched:sched_process_exec"}},
		BufferKB: 100, Clock: "boot", PIDs: []int{3, 4}, Classic: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.RingSize != 128<<10 {
		t.Errorf("-b 100 gives a ring of %d bytes, want 128 KiB", p.RingSize)
	}
	if p.Clock != bpfgen.ClockBoot {
		t.Errorf("clock %v, want boot", p.Clock)
	}
	if e := p.Events[0]; e.Fixed != 64 || e.Dynamic || !strings.HasPrefix(e.Text, "name: sys_enter\nID: 443\n") {
		t.Errorf("sys_enter: fixed %d, dynamic %v, text %q", e.Fixed, e.Dynamic, e.Text[:20])
	}
	if e := p.Events[1]; e.Fixed != 20 || !e.Dynamic {
		t.Errorf("sched_process_exec: fixed %d, dynamic %v", e.Fixed, e.Dynamic)
	}
	var b strings.Builder
	if err := p.Describe(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# gtrace_rec0: raw_syscalls:sys_enter (ID 443), 64-byte records\n",
		"# gtrace_rec1: sched:sched_process_exec (ID 365), 20-byte fixed part and dynamic fields, up to ",
		"# rings: 128 KiB on each of CPUs ",
		"clock boot; pages of ",
		"gtrace_rec0 (TracePoint, ",
		"gtrace_comm (TracePoint, ",
		"JEqImm dst: r0 off: -1 imm: 3 <pid_ok_",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Describe() lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "gtrace_rec0 (") > strings.Index(out, "gtrace_rec1 (") {
		t.Error("Describe() lists the programs out of order")
	}
}

// TestNewPlanDirect checks where sys_enter's program goes by default: on
// the raw tracepoint where the kernel has BTF (amd64), else on the classic
// one; and that a plan can fall back to classic tracepoints.
func TestNewPlanDirect(t *testing.T) {
	p, err := NewPlan(fakeTraceFS(t), &Options{Events: []EventSpec{
		{Pattern: "raw_syscalls:sys_enter"}, {Pattern: "sched:sched_switch"},
		{Pattern: "syscalls:sys_enter_openat"}, {Pattern: "syscalls:sys_exit_openat"},
		{Pattern: "syscalls:sys_enter_write", Filter: "fd == 1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := probe.HaveKernelBTF() && runtime.GOARCH == "amd64"
	if p.direct() != want {
		t.Fatalf("direct() = %v, want %v (kernel BTF and amd64)", p.direct(), want)
	}
	if noBTF := !probe.HaveKernelBTF() && runtime.GOARCH == "amd64"; p.NoBTF != noBTF {
		t.Errorf("NoBTF = %v, want %v", p.NoBTF, noBTF)
	}
	describe := func() string {
		var b strings.Builder
		if err := p.Describe(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if want {
		out := describe()
		for _, frag := range []string{
			"# gtrace_rec0: raw_syscalls:sys_enter (ID 443), 64-byte records, built on raw tracepoint sys_enter\n",
			"# gtrace_rec1: sched:sched_switch (ID 372), 64-byte records\n",
			// Two syscalls events are too few for a syscall group.
			"# gtrace_rec2: syscalls:sys_enter_openat (ID 782), 48-byte records\n",
			"# gtrace_rec3: syscalls:sys_exit_openat (ID 781), 24-byte records\n",
			"# gtrace_rec4: syscalls:sys_enter_write (ID 840), 40-byte records, filter fd == 1\n",
			"gtrace_rec0 (Tracing, ",
			"gtrace_rec1 (TracePoint, ",
			"gtrace_rec2 (TracePoint, ",
			"gtrace_rec4 (TracePoint, ",
		} {
			if !strings.Contains(out, frag) {
				t.Errorf("Describe() lacks %q:\n%s", frag, out)
			}
		}
		ps := p.Program.Collection.Programs[bpfgen.RecordProgName(0)]
		if ps.AttachType != ebpf.AttachTraceRawTp || ps.AttachTo != "sys_enter" {
			t.Errorf("sys_enter program attaches %v to %q, want tp_btf sys_enter", ps.AttachType, ps.AttachTo)
		}
		p.Program = p.Fallback
	}
	if p.direct() {
		t.Error("direct() after classic()")
	}
	if out := describe(); strings.Contains(out, "on raw tracepoint") || !strings.Contains(out, "gtrace_rec0 (TracePoint, ") {
		t.Errorf("classic plan:\n%s", out)
	}
}

func TestNewPlanErrors(t *testing.T) {
	fs := fakeTraceFS(t)
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"no events", Options{}, "nothing to record"},
		{"unknown event", Options{Events: []EventSpec{{Pattern: "sched:sched_swich"}}}, `unknown event "sched:sched_swich" (did you mean "sched:sched_switch"`},
		{"bad filter", Options{Events: []EventSpec{{Pattern: "raw_syscalls:sys_enter", Filter: "id =="}}}, "-f:"},
		{"unknown field", Options{Events: []EventSpec{{Pattern: "sched:*", Filter: "nosuch == 1"}}}, `Field not found: "nosuch"`},
		{"local clock", Options{Events: []EventSpec{{Pattern: "raw_syscalls:sys_enter"}}, Clock: "local"}, "use mono, boot or tai"},
		{"bad pid", Options{Events: []EventSpec{{Pattern: "raw_syscalls:sys_enter"}}, PIDs: []int{0}}, "want a positive pid"},
		{"huge buffer", Options{Events: []EventSpec{{Pattern: "raw_syscalls:sys_enter"}}, BufferKB: 1 << 23}, "want 1 to"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPlan(fs, &tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewPlan() = %v, want an error with %q", err, tc.want)
			}
		})
	}
	_, err := NewPlan(fs, &Options{Events: []EventSpec{{Pattern: "sched:*", Filter: "nosuch == 1"}}})
	var pe *parse.Error
	if !errors.As(err, &pe) || pe.Name != "-f" {
		t.Errorf("unknown field: %v, want a *parse.Error on -f", err)
	}
}

// TestNewPlanPartialFilter: a filter given to several events applies to
// those it fits; the others are recorded without it, and one warning
// names them. A filter that fits none is an error (above).
func TestNewPlanPartialFilter(t *testing.T) {
	p, err := NewPlan(fakeTraceFS(t), &Options{Events: []EventSpec{{Pattern: "sched:*", Filter: "prev_pid == 1"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sched:sched_process_exec", "sched:sched_switch if prev_pid == 1", "sched:sched_waking"}
	if got := eventNames(p); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if len(p.Warnings) != 1 {
		t.Fatalf("warnings %v, want one", p.Warnings)
	}
	w := p.Warnings[0].Caret()
	for _, s := range []string{`-f:1:1: Field not found: "prev_pid" in sched:sched_process_exec (the filter does not fit 2 of the events of "sched:*")`, "hint: recorded without the filter, as the kernel does with a subsystem filter: sched:sched_process_exec, sched:sched_waking"} {
		if !strings.Contains(w, s) {
			t.Errorf("warning\n%s\nwants %q", w, s)
		}
	}
}

func TestCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{{[]int{0}, "0"}, {[]int{0, 1, 2, 3}, "0-3"}, {[]int{0, 1, 3, 5, 6}, "0-1,3,5-6"}} {
		if got := cpuList(tc.in); got != tc.want {
			t.Errorf("cpuList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSelectClock(t *testing.T) {
	const clocks = "[local] global counter uptime perf mono mono_raw boot x86-tsc\n"
	for _, tc := range []struct{ clock, want string }{
		{"mono", "local global counter uptime perf [mono] mono_raw boot x86-tsc\n"},
		{"boot", "local global counter uptime perf mono mono_raw [boot] x86-tsc\n"},
		{"tai", "local global counter uptime perf mono mono_raw boot x86-tsc [tai]\n"},
	} {
		if got := selectClock(clocks, tc.clock); got != tc.want {
			t.Errorf("selectClock(%s) = %q, want %q", tc.clock, got, tc.want)
		}
	}
}

func TestCPUStat(t *testing.T) {
	got := cpuStat(CPUStats{CPU: 1, Events: 10, Lost: 2, First: 1_500_000_123, Last: 12_000_001_000})
	want := "entries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 0\noldest event ts:     1.500000\nnow ts:    12.000001\ndropped events: 2\nread events: 10\n"
	if got != want {
		t.Errorf("cpuStat() = %q, want %q", got, want)
	}
}

// fakeRing serves samples: each Refresh makes the next batch visible,
// after what is left unread.
type fakeRing struct {
	batches [][][]byte
	cur     [][]byte
	commits int
}

func (r *fakeRing) Refresh() uint64 {
	if len(r.batches) > 0 {
		r.cur, r.batches = append(r.cur, r.batches[0]...), r.batches[1:]
	}
	return uint64(len(r.cur))
}

func (r *fakeRing) Next() ([]byte, bool) {
	if len(r.cur) == 0 {
		return nil, false
	}
	s := r.cur[0]
	r.cur = r.cur[1:]
	return s, true
}

func (r *fakeRing) Commit()   { r.commits++ }
func (r *fakeRing) Size() int { return 1 << 20 }

type fakeCounters []uint64

func (c *fakeCounters) Load(i int) uint64 { return (*c)[i] }

// fakeSink logs what a reader does with a CPU's records.
type fakeSink struct{ log []string }

func (s *fakeSink) Add(ts uint64, p []byte) error {
	s.log = append(s.log, "add "+itoa(ts)+" "+itoa(uint64(len(p)))+" pid "+itoa(uint64(binary.LittleEndian.Uint32(p[4:]))))
	return nil
}
func (s *fakeSink) Lost(n uint64)     { s.log = append(s.log, "lost "+itoa(n)) }
func (s *fakeSink) FlushPages() error { s.log = append(s.log, "flush pages"); return nil }
func (s *fakeSink) Flush() error      { s.log = append(s.log, "flush"); return nil }

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// sample builds a sample, a batch of one: the header and a record of size
// bytes, padded to 8, with common_pid pid.
func sample(ts uint64, size int, pid uint32) []byte {
	s := make([]byte, bpfgen.SampleHeader+(size+7)&^7)
	binary.LittleEndian.PutUint64(s, ts)
	binary.LittleEndian.PutUint32(s[8:], uint32(size))
	binary.LittleEndian.PutUint16(s[16:], 443)
	binary.LittleEndian.PutUint32(s[20:], pid)
	return s
}

// TestReader checks that a reader passes each record, cut to its length,
// with its timestamp; notes the lost events after the records the ring
// held when they were counted; remembers the pids; and at the end drains
// the ring, adds the samples of the tail and flushes.
func TestReader(t *testing.T) {
	ring := &fakeRing{batches: [][][]byte{
		{sample(100, 64, 7), sample(110, 20, 7)},
		{sample(120, 64, 8)},
		{},
	}}
	lost := fakeCounters{0, 0}
	sink := &fakeSink{}
	r := newReader(1, ring, &lost, sink)
	done := make(chan error)
	go func() { done <- r.write() }()
	if _, n, blocked := r.poll(); n != 2 || blocked {
		t.Fatalf("poll() = %d, %v, want 2 records", n, blocked)
	}
	lost[1] = 5
	if _, n, blocked := r.poll(); n != 1 || blocked {
		t.Fatalf("poll() = %d, %v, want 1 record", n, blocked)
	}
	r.tail = append(sample(130, 8, 9), sample(140, 8, 9)...)
	stop := make(chan struct{})
	close(stop)
	r.run(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"add 100 64 pid 7", "add 110 20 pid 7", "add 120 64 pid 8", "lost 5", "add 130 8 pid 9", "add 140 8 pid 9", "flush"}
	if !reflect.DeepEqual(sink.log, want) {
		t.Errorf("sink got %q, want %q", sink.log, want)
	}
	if !reflect.DeepEqual(r.pids, map[uint32]struct{}{7: {}, 8: {}, 9: {}}) {
		t.Errorf("pids %v, want 7, 8 and 9", r.pids)
	}
	st := r.stats()
	if st != (CPUStats{CPU: 1, Events: 5, Bytes: 164, Lost: 5, First: 100, Last: 140}) {
		t.Errorf("stats %+v", st)
	}
	if ring.commits < 3 {
		t.Errorf("%d commits, want one per poll", ring.commits)
	}
}

// TestReaderBlocked fills every chunk while the writer is stalled: the
// reader stops taking samples from the ring instead of waiting, and
// goes on once the writer frees a chunk.
func TestReaderBlocked(t *testing.T) {
	var batch [][]byte
	const perChunk = chunkSize / (bpfgen.SampleHeader + 64)
	for i := range maxChunks*perChunk + 10 {
		batch = append(batch, sample(uint64(i+1), 64, 1))
	}
	ring := &fakeRing{batches: [][][]byte{batch}}
	r := newReader(0, ring, &fakeCounters{0}, &fakeSink{})
	_, n, blocked := r.poll()
	if !blocked || n >= len(batch) || len(ring.cur) == 0 {
		t.Fatalf("poll() with a stalled writer = %d samples, blocked %v; %d left in the ring", n, blocked, len(ring.cur))
	}
	done := make(chan error)
	go func() { done <- r.write() }()
	stop := make(chan struct{})
	close(stop)
	r.run(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := r.stats(); st.Events != uint64(len(batch)) || st.Last != uint64(len(batch)) {
		t.Errorf("wrote %d events up to %d, want all %d", st.Events, st.Last, len(batch))
	}
}

// failSink fails every Add.
type failSink struct{ fakeSink }

func (s *failSink) Add(uint64, []byte) error { return errors.New("disk full") }

// TestReaderWriteError wants a write error returned, and the reader not
// held up by it.
func TestReaderWriteError(t *testing.T) {
	ring := &fakeRing{batches: [][][]byte{{sample(1, 64, 1)}, {sample(2, 64, 1)}}}
	r := newReader(0, ring, &fakeCounters{0}, &failSink{})
	done := make(chan error)
	go func() { done <- r.write() }()
	stop := make(chan struct{})
	close(stop)
	r.run(stop)
	if err := <-done; err == nil || err.Error() != "disk full" {
		t.Errorf("write() = %v, want disk full", err)
	}
}

// TestCmdlines names pids from the comm map, else from /proc, and
// leaves out the idle task and pids that are nowhere.
func TestCmdlines(t *testing.T) {
	r := newReader(0, &fakeRing{}, &fakeCounters{0}, &fakeSink{})
	self := uint32(os.Getpid())
	r.pids = map[uint32]struct{}{0: {}, self: {}, 1 << 30: {}, 1<<30 + 1: {}}
	got := cmdlines([]*reader{r}, map[uint32]string{1 << 30: "gone"})
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{int(self): strings.TrimSpace(string(comm)), 1 << 30: "gone"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cmdlines() = %v, want %v (no idle task)", got, want)
	}
	if got := commString([]byte("bash\x00\x00junk")); got != "bash" {
		t.Errorf("commString() = %q", got)
	}
}

func TestNextWait(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		prev    time.Duration
		pending uint64
		elapsed time.Duration
		want    time.Duration
	}{
		{0, 0, ms, minWait},                       // idle: back off from minWait
		{ms, 0, ms, 2 * ms},                       // ... doubling
		{maxWait, 0, ms, maxWait},                 // ... up to maxWait
		{ms, 1 << 10, 2 * ms, maxWait},            // slow: an eighth of the ring is far away
		{ms, 1 << 17, 2 * ms, 2 * ms},             // an eighth filled since the last look: the same again
		{ms, 1 << 20, 2 * ms, ms / 4},             // the whole ring: look eight times as often
		{0, 1 << 20, 10 * time.Microsecond, 1250}, // a full ring at once: spin
	}
	for _, tc := range cases {
		if got := nextWait(tc.prev, tc.pending, tc.elapsed, 1<<20); got != tc.want {
			t.Errorf("nextWait(%v, %d, %v) = %v, want %v", tc.prev, tc.pending, tc.elapsed, got, tc.want)
		}
	}
}

// TestPrivilegedRaisePriority raises every thread's priority and sets it
// back.
func TestPrivilegedRaisePriority(t *testing.T) {
	testutil.RequirePrivileged(t)
	nices := func() map[int]int {
		m := map[int]int{}
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			if prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil {
				m[tid] = 20 - prio
			}
		}
		return m
	}
	before := nices()
	restore := raisePriority(-7)
	for tid, n := range nices() {
		if n > -7 {
			t.Errorf("thread %d has nice %d, want at most -7", tid, n)
		}
	}
	// Threads made while raised inherit -7: restore sets them back too.
	var wg sync.WaitGroup
	hold := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			<-hold
		}()
	}
	time.Sleep(10 * time.Millisecond)
	restore()
	for tid, n := range nices() {
		if old, ok := before[tid]; ok && n != old {
			t.Errorf("thread %d has nice %d after restore, want %d", tid, n, old)
		}
		if _, ok := before[tid]; !ok && n == -7 {
			t.Errorf("thread %d, made while raised, still has nice -7 after restore", tid)
		}
	}
	close(hold)
	wg.Wait()
}

func TestBatchSamples(t *testing.T) {
	v := make([]byte, bpfgen.BatchHeader+64)
	copy(v[bpfgen.BatchHeader:], sample(5, 8, 1))
	binary.LittleEndian.PutUint32(v, 24)
	if got := batchSamples(v); len(got) != 24 || binary.LittleEndian.Uint64(got) != 5 {
		t.Errorf("batchSamples() = % x", got)
	}
	binary.LittleEndian.PutUint32(v, 1000)
	if got := batchSamples(v); len(got) != 64 {
		t.Errorf("batchSamples(fill past the end) has %d bytes, want 64", len(got))
	}
	if got := batchSamples(nil); got != nil {
		t.Errorf("batchSamples(nil) = % x", got)
	}
}
