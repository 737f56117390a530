package filterdiff

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/filtergen"
	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/launch"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/record"
	"github.com/gtrace/gtrace/pkg/tracedat"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// The test binary doubles as the workload: childEnv selects it.
const childEnv = "GTRACE_FILTERDIFF_CHILD"

// The workload, on its main thread: writes of sizes 1..writes to
// /dev/null through fd childFD, writes to badFDs closed fds (which fail
// with EBADF), and renames to each of names.
const (
	childFD = 100
	writes  = 60
	badFD   = 200
	badFDs  = 8
)

// names are the task names the workload takes, in order: short and full
// length, glob metacharacters, and the names that show the kernel's
// suffix glob bug (§12.22).
var names = []string{"gt-a1", "kv_worker", "daemon", "x[y]*z?", "abcdefghijklmno", "sh", "kworker/0:1", "a", "dae-mon", "tail_kv", "gt-z9"}

// init, in the workload, locks the main goroutine to the startup thread,
// whose tid is the process's pid: init functions run on that thread,
// and a lock taken there keeps main on it. Taken later, in TestMain, the
// main goroutine may already have moved to another thread, and the
// workload's events then carry another tid than the pid the instances
// and gtrace filter on.
func init() {
	if os.Getenv(childEnv) == "1" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child runs the workload on the main thread (whose tid is the pid),
// locked to it by init.
func child() int {
	null, err := unix.Open("/dev/null", unix.O_WRONLY, 0)
	if err != nil || unix.Dup3(null, childFD, 0) != nil {
		return 3
	}
	buf := make([]byte, writes)
	for n := 1; n <= writes; n++ {
		unix.Write(childFD, buf[:n])
	}
	for i := range badFDs {
		unix.Write(badFD+i, buf[:i+1])
	}
	for _, name := range names {
		p, _ := unix.BytePtrFromString(name)
		if unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0) != nil {
			return 4
		}
	}
	return 0
}

// kernelEvents are the events compared: numbers of each width, signed
// and not, and char arrays.
var kernelEvents = []struct{ system, name string }{
	{"syscalls", "sys_enter_write"},
	{"syscalls", "sys_exit_write"},
	{"task", "task_rename"},
}

// Known differences, each a bug of the kernel's (grammar.md §12) that a
// filter can run into; the test counts the filters it leaves out for
// each.
const (
	// §12.22: "*x" on a char array or comm compares with the end of the
	// array, not of the string.
	bugSuffixArray = "§12.22 suffix glob on a char array or comm"
	// §2.2: the kernel's glob_match reads past the string: a class that
	// matches the NUL ([!x] at the end) goes on into the bytes after it.
	bugClassAtNUL = "§2.2 glob class matched against the string's NUL"
	// Not in §12 yet (6.18): a number that is no CPU (at least the CPU
	// count) is neither == nor != a CPUS{} list of several CPUs
	// (ret != CPUS{0-1} is false for ret 2 on 2 CPUs, true for ret 1),
	// while != a one-CPU list it is.
	bugScalarCPUs = "CPUS{} of several CPUs, == or != on a number that is no CPU"
	// Not in §12 yet (6.18): the cpu pseudo-field against a number with
	// & never matches (common_cpu & 1 keeps nothing on CPU 1, while
	// common_cpu == 1 keeps its events).
	bugCPUAnd = "common_cpu & NUMBER never matches"
)

// kernelBug names the kernel bug that may make it disagree on bf, or "".
func kernelBug(bf *parse.BoundFilter) string {
	bug := ""
	parse.WalkPreds(bf.Root, func(p *parse.BoundPred) {
		if p.Compare == parse.CompareCPUs && p.Op != parse.CmpAnd && p.Operand == parse.OperandField &&
			(len(p.CPUs) > 1 || p.CPUs[0].First != p.CPUs[0].Last) {
			bug = bugScalarCPUs
		}
		if p.Compare == parse.CompareNumber && p.Operand == parse.OperandCPU && p.Op == parse.CmpAnd {
			bug = bugCPUAnd
		}
		if p.Compare != parse.CompareString {
			return
		}
		array := p.Operand == parse.OperandComm || p.Field.Class == parse.ClassString
		switch {
		case p.Glob.Kind == parse.GlobSuffix && array:
			bug = bugSuffixArray
		case p.Glob.Kind == parse.GlobFull && strings.Contains(p.Glob.Text, "[!") && bug == "":
			bug = bugClassAtNUL
		}
	})
	return bug
}

// TestPrivilegedFilterKernelDifferential writes generated filters to the
// kernel, each in a tracefs instance of its own, runs one workload while
// the kernel filters and gtrace records, and requires that the kernel
// keeps exactly the events that gtrace's interpreter accepts from
// gtrace's records.
func TestPrivilegedFilterKernelDifferential(t *testing.T) {
	testutil.RequirePrivileged(t)
	const instances = 100 // each with one filter on each event
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(childEnv, "1")
	runtime.LockOSThread() // launch: Start and Release on one thread
	defer runtime.UnlockOSThread()
	held, err := launch.Start([]string{self}, nil, io.Discard, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			held.Kill()
		}
	}()
	pid := held.Pid()
	comm0, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		t.Fatal(err)
	}
	firstComm := strings.TrimSpace(string(comm0))

	formats := make([]*parse.Format, len(kernelEvents))
	gens := make([]*filtergen.Generator, len(kernelEvents))
	for i, ev := range kernelEvents {
		f, err := fs.Format(tracefs.Event{System: ev.system, Name: ev.name})
		if err != nil {
			t.Fatal(err)
		}
		formats[i] = f
		// §12.18: the kernel reads syscall arguments declared int as 8
		// unsigned bytes, gtrace as the int they are; they are not
		// compared here.
		// gtrace's records have 0 for common_flags and
		// common_preempt_count, which BPF cannot see.
		skip := func(fld *parse.Field) bool {
			if fld.Common && fld.Name != "common_type" && fld.Name != "common_pid" {
				return true
			}
			bp := bind(fld.Name+" == 0", f)
			return bp != nil && bp.Field != nil && bp.Size < fld.Size
		}
		gens[i], err = filtergen.New(rand.New(rand.NewPCG(uint64(i), 18)), f, samples(t, f, pid, firstComm),
			filtergen.Options{Kernel: true, MaxCPU: runtime.NumCPU() - 1, Skip: skip, Pseudo: true})
		if err != nil {
			t.Fatal(err)
		}
	}

	// The instances, each filtering the workload's main thread.
	type kfilter struct {
		inst string
		ev   int
		bf   *parse.BoundFilter
	}
	var filters []kfilter
	refused := map[string]int{}
	tag := fmt.Sprintf("gtrace_%d", rand.Uint32())
	for i := range instances {
		inst := fmt.Sprintf("%s_%d", tag, i)
		dir := fs.Path("instances", inst)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.Remove(dir); err != nil {
				t.Errorf("remove instance %s: %v", inst, err)
			}
		})
		writeFile(t, filepath.Join(dir, "buffer_size_kb"), "64")
		writeFile(t, filepath.Join(dir, "set_event_pid"), strconv.Itoa(pid))
		for e, ev := range kernelEvents {
			src := gens[e].Filter()
			evDir := filepath.Join(dir, "events", ev.system, ev.name)
			if err := os.WriteFile(filepath.Join(evDir, "filter"), []byte(src), 0); err != nil {
				msg := kernelMessage(dir)
				refused[msg]++
				t.Logf("the kernel refuses %s: %s: %s", ev.name, src, msg)
				continue
			}
			writeFile(t, filepath.Join(evDir, "enable"), "1")
			filters = append(filters, kfilter{inst, e, bind(src, formats[e]).bf})
		}
	}

	// gtrace records the same events, unfiltered.
	var specs []record.EventSpec
	for _, ev := range kernelEvents {
		specs = append(specs, record.EventSpec{Pattern: ev.system + ":" + ev.name})
	}
	plan, err := record.NewPlan(fs, &record.Options{Events: specs, PIDs: []int{pid}})
	if err != nil {
		t.Fatal(err)
	}
	out := &memOutput{}
	s, err := record.Start(plan, out, record.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	released = true
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if code := <-held.Done(); code != 0 {
		t.Fatalf("workload exited with %d", code)
	}
	st, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if st.Lost() != 0 {
		t.Fatalf("gtrace lost %d events", st.Lost())
	}

	// gtrace's records of the main thread, each with the task's name at
	// the time: the first, then each rename's new name after it.
	byTS := out.sorted()
	comm := firstComm
	type grec struct {
		rec  []byte
		ctx  eval.Context
		ev   int
		text string
	}
	var mine []grec
	for _, r := range byTS {
		if int32(binary.LittleEndian.Uint32(r.data[4:])) != int32(pid) {
			continue
		}
		ev := slices.IndexFunc(formats, func(f *parse.Format) bool { return f.ID == int(binary.LittleEndian.Uint16(r.data)) })
		if ev < 0 {
			continue
		}
		mine = append(mine, grec{r.data, eval.Context{PID: -1, CPU: r.cpu, Comm: comm}, ev, key(formats[ev], r.data)})
		if kernelEvents[ev].name == "task_rename" {
			comm = string(formats[ev].Field("newcomm").Bytes(r.data))
		}
	}
	if want := 2*(writes+badFDs) + len(names); len(mine) < want {
		t.Fatalf("gtrace recorded %d events of the workload, want at least %d", len(mine), want)
	}

	// Each instance's events against the interpreter's verdicts.
	kept := map[string][]string{} // instance/event -> keys
	for i := range instances {
		inst := fmt.Sprintf("%s_%d", tag, i)
		writeFile(t, fs.Path("instances", inst, "tracing_on"), "0")
		for _, r := range readRaw(t, fs, inst) {
			ev := slices.IndexFunc(formats, func(f *parse.Format) bool { return f.ID == int(binary.LittleEndian.Uint16(r)) })
			if ev >= 0 {
				k := inst + "/" + strconv.Itoa(ev)
				kept[k] = append(kept[k], key(formats[ev], r))
			}
		}
	}
	excepted := map[string]int{}
	differed := map[string]int{} // excepted filters on which the kernel did differ
	agreed, passed := 0, 0
	seen := map[string]int{}
	for _, kf := range filters {
		var want []string
		for _, g := range mine {
			if g.ev == kf.ev && eval.Match(kf.bf, g.rec, g.ctx) {
				want = append(want, g.text)
			}
		}
		got := kept[kf.inst+"/"+strconv.Itoa(kf.ev)]
		slices.Sort(want)
		slices.Sort(got)
		if bug := kernelBug(kf.bf); bug != "" {
			excepted[bug]++
			if !slices.Equal(got, want) {
				differed[bug]++
			}
			continue
		}
		for _, name := range filtergen.Features(kf.bf) {
			seen[name]++
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %s: the kernel kept %d events, gtrace's interpreter %d\n kernel only: %v\n gtrace only: %v",
				formats[kf.ev].FullName(), kf.bf.Src, len(got), len(want), minus(got, want), minus(want, got))
			continue
		}
		agreed++
		passed += len(want)
	}
	t.Logf("%d filters written, %d refused by the kernel %v; %d agree (%d events kept); excepted %v, of which the kernel differed on %v",
		len(filters)+sumCounts(refused), sumCounts(refused), refused, agreed, passed, excepted, differed)
	if agreed < len(filters)/2 {
		t.Errorf("only %d of %d filters compared", agreed, len(filters))
	}
	t.Logf("features compared: %v", seen)
}

// bound is a one-filter bind, with its only predicate when it has one.
type bound struct {
	bf *parse.BoundFilter
	*parse.BoundPred
}

// bind binds src to f, or returns nil.
func bind(src string, f *parse.Format) *bound {
	e, err := parse.ParseFilter("-f", src)
	if err != nil {
		return nil
	}
	bf, err := parse.BindFilter("-f", src, e, f)
	if err != nil {
		return nil
	}
	bp, _ := bf.Root.(*parse.BoundPred)
	return &bound{bf, bp}
}

// samples are records of f with the values the workload gives it.
func samples(t *testing.T, f *parse.Format, pid int, comm string) []filtergen.Sample {
	t.Helper()
	size := 0
	for _, fld := range f.Fields {
		size = max(size, fld.Offset+fld.Size)
	}
	var out []filtergen.Sample
	add := func(set map[string]uint64, strs map[string]string, c string) {
		rec := make([]byte, size)
		binary.LittleEndian.PutUint16(rec, uint16(f.ID))
		binary.LittleEndian.PutUint32(rec[4:], uint32(pid))
		for name, v := range set {
			fld := f.Field(name)
			if fld == nil {
				t.Fatalf("%s has no field %q", f.FullName(), name)
			}
			b := binary.LittleEndian.AppendUint64(nil, v)
			copy(rec[fld.Offset:fld.Offset+fld.Size], b)
		}
		for name, s := range strs {
			copy(rec[f.Field(name).Offset:], s)
		}
		out = append(out, filtergen.Sample{Rec: rec, CPU: 0, PID: -1, Comm: c})
	}
	switch f.Name {
	case "sys_enter_write":
		for n := 1; n <= writes; n += 7 {
			add(map[string]uint64{"__syscall_nr": unix.SYS_WRITE, "fd": childFD, "count": uint64(n)}, nil, comm)
		}
		for i := range badFDs {
			add(map[string]uint64{"__syscall_nr": unix.SYS_WRITE, "fd": uint64(badFD + i), "count": uint64(i + 1)}, nil, comm)
		}
	case "sys_exit_write":
		for n := 1; n <= writes; n += 7 {
			add(map[string]uint64{"__syscall_nr": unix.SYS_WRITE, "ret": uint64(n)}, nil, comm)
		}
		add(map[string]uint64{"__syscall_nr": unix.SYS_WRITE, "ret": uint64(^uint64(unix.EBADF - 1))}, nil, comm)
	case "task_rename":
		old := comm
		for _, n := range names {
			add(map[string]uint64{"pid": uint64(pid)}, map[string]string{"oldcomm": old, "newcomm": n}, old)
			old = n
		}
	}
	return out
}

// key identifies an event by its type, pid and fields (the flags and
// preempt count, which gtrace does not record, the padding between
// fields, and the bytes of char arrays after the NUL left out).
func key(f *parse.Format, rec []byte) string {
	var b strings.Builder
	for _, fld := range f.Fields {
		if fld.Name == "common_flags" || fld.Name == "common_preempt_count" {
			continue
		}
		switch {
		case fld.Class == parse.ClassString:
			fmt.Fprintf(&b, "%q/", fld.Bytes(rec))
		case fld.Offset+fld.Size <= len(rec):
			fmt.Fprintf(&b, "%x/", rec[fld.Offset:fld.Offset+fld.Size])
		}
	}
	return b.String()
}

// minus returns the elements of a not in b, as multisets.
func minus(a, b []string) []string {
	var out []string
	left := slices.Clone(b)
	for _, x := range a {
		if i := slices.Index(left, x); i >= 0 {
			left = slices.Delete(left, i, i+1)
			continue
		}
		out = append(out, x)
	}
	return out
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0); err != nil {
		t.Fatalf("write %q to %s: %v", s, path, err)
	}
}

// kernelMessage is the message of the last error the kernel logged in
// the instance dir, and where its caret was.
func kernelMessage(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "error_log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if _, msg, ok := strings.Cut(lines[i], "event filter parse error: error: "); ok {
			caret := ""
			if i+2 < len(lines) {
				caret = fmt.Sprintf(" (caret at column %d)", strings.IndexByte(lines[i+2], '^')-len("  Command: ")+1)
			}
			return msg + caret
		}
	}
	return "no message in error_log"
}

// readRaw returns the records of an instance, every CPU's, from
// trace_pipe_raw.
func readRaw(t *testing.T, fs *tracefs.FS, inst string) [][]byte {
	t.Helper()
	page := os.Getpagesize()
	pr, err := tracedat.NewPageReader(tracedat.PageLayout{Size: page, LongSize: 8, DataOffset: 16})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for cpu := range runtime.NumCPU() {
		path := fs.Path("instances", inst, "per_cpu", fmt.Sprintf("cpu%d", cpu), "trace_pipe_raw")
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, page)
		for {
			n, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EAGAIN) || n == 0 {
				break
			}
			if err != nil {
				unix.Close(fd)
				t.Fatalf("read %s: %v", path, err)
			}
			if err := pr.Reset(bytes.Clone(buf[:n])); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			var r tracedat.Record
			for {
				ok, err := pr.Next(&r)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				if !ok {
					break
				}
				out = append(out, slices.Clone(r.Data))
			}
		}
		unix.Close(fd)
	}
	return out
}

// memOutput keeps a recording's records in memory.
type memOutput struct {
	mu   sync.Mutex
	recs []memRec
}

type memRec struct {
	cpu  int
	ts   uint64
	data []byte
}

type memSink struct {
	o   *memOutput
	cpu int
}

func (o *memOutput) CPU(cpu int) record.PageSink                { return memSink{o, cpu} }
func (o *memOutput) Finish(*record.Stats, map[int]string) error { return nil }
func (o *memOutput) Abort()                                     {}

// sorted returns the records in time order.
func (o *memOutput) sorted() []memRec {
	recs := slices.Clone(o.recs)
	slices.SortStableFunc(recs, func(a, b memRec) int {
		switch {
		case a.ts < b.ts:
			return -1
		case a.ts > b.ts:
			return 1
		}
		return 0
	})
	return recs
}

func (s memSink) Add(ts uint64, p []byte) error {
	s.o.mu.Lock()
	s.o.recs = append(s.o.recs, memRec{s.cpu, ts, slices.Clone(p)})
	s.o.mu.Unlock()
	return nil
}
func (s memSink) Lost(uint64)       {}
func (s memSink) FlushPages() error { return nil }
func (s memSink) Flush() error      { return nil }
