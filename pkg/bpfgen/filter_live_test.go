package bpfgen

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// The test binary doubles as the traced child: childModeEnv selects what
// it does instead of running tests.
const (
	childModeEnv = "GTRACE_BPFGEN_CHILD"
	childCPUEnv  = "GTRACE_BPFGEN_CHILD_CPU"
	childFD      = 100 // the child writes to /dev/null through this fd
	childWrites  = 300 // it writes 1, 2, ... childWrites bytes
)

// init, in a child workload, locks the main goroutine to the startup
// thread, whose tid is the process's pid: init functions run on that
// thread, and a lock taken there keeps main on it (taken later, main may
// already have moved to another thread, whose events carry another tid).
func init() {
	if os.Getenv(childModeEnv) != "" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	switch os.Getenv(childModeEnv) {
	case "write":
		os.Exit(childWrite())
	case "sleep":
		os.Exit(childSleep())
	case "open":
		// Open this executable by the name it was run with.
		fd, err := unix.Open(os.Args[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			os.Exit(1)
		}
		unix.Close(fd)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childWrite runs on one thread pinned to one CPU: it reports "tid comm"
// on stdout with writev (so that the traced write(2) sees none of it),
// waits for a byte on stdin, then writes 1..childWrites bytes to childFD.
func childWrite() int {
	runtime.LockOSThread()
	cpu, err := strconv.Atoi(os.Getenv(childCPUEnv))
	if err != nil {
		return 2
	}
	var set unix.CPUSet
	set.Set(cpu)
	if unix.SchedSetaffinity(0, &set) != nil {
		return 3
	}
	null, err := unix.Open("/dev/null", unix.O_WRONLY, 0)
	if err != nil || unix.Dup3(null, childFD, 0) != nil {
		return 4
	}
	comm, err := os.ReadFile("/proc/thread-self/comm")
	if err != nil {
		return 5
	}
	line := fmt.Sprintf("%d %s\n", unix.Gettid(), strings.TrimSpace(string(comm)))
	if _, err := unix.Writev(1, [][]byte{[]byte(line)}); err != nil {
		return 6
	}
	var b [1]byte
	if n, _ := unix.Read(0, b[:]); n != 1 {
		return 7
	}
	buf := make([]byte, childWrites)
	for n := 1; n <= childWrites; n++ {
		if _, err := unix.Write(childFD, buf[:n]); err != nil {
			return 8
		}
	}
	return 0
}

// writer is a started child that has not written yet.
type writer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tgid  int
	tid   int
	comm  string
	cpu   int
}

func startWriter(t *testing.T, cpu int) *writer {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childModeEnv+"=write", childCPUEnv+"="+strconv.Itoa(cpu))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("read child's tid: %v", err)
	}
	tidText, comm, _ := strings.Cut(strings.TrimSpace(line), " ")
	tid, err := strconv.Atoi(tidText)
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	return &writer{cmd: cmd, stdin: stdin, tgid: cmd.Process.Pid, tid: tid, comm: comm, cpu: cpu}
}

// run lets the child write and waits for it to exit.
func (w *writer) run(t *testing.T) {
	t.Helper()
	if _, err := w.stdin.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// liveFormat reads an event's format from tracefs.
func liveFormat(t *testing.T, system, event string) *parse.Format {
	t.Helper()
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.Format(tracefs.Event{System: system, Name: event})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// counter is a program that counts the events of one task (pidTgid, or
// any task when 0) that pass a filter.
type counter struct {
	m    *ebpf.Map
	prog *ebpf.Program
}

// filterScratch is the stack the live programs give the filter.
var filterScratch = StackArea{Off: -8 - 256, Size: 256}

func loadCounter(t *testing.T, bf *parse.BoundFilter, pidTgid uint64) *counter {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b := &Builder{}
	miss := b.Label("miss")
	// Line info needs a source line on the first instruction.
	b.Comment("R6 = ctx; R9 = pid_tgid")
	b.Emit(
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
	)
	if pidTgid != 0 {
		b.Emit(
			asm.LoadImm(asm.R1, int64(pidTgid), asm.DWord),
			asm.JNE.Reg(asm.R9, asm.R1, miss),
		)
	}
	if err := EmitFilter(b, bf, miss, filterScratch); err != nil {
		t.Fatalf("EmitFilter(%q) = %v", short(bf.Src), err)
	}
	b.Emit(
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, miss),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
	)
	b.Mark(miss)
	b.Emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	insns := b.Instructions()
	if err := withFilterBuffer(insns); err != nil {
		t.Fatal(err)
	}
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Type:         ebpf.TracePoint,
		License:      "GPL",
		Instructions: insns,
	}, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelBranch})
	if err != nil {
		listing := fmt.Sprint(insns)
		if len(insns) > 200 {
			listing = fmt.Sprintf("(%d instructions)", len(insns))
		}
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("load filter %q: %-30v\n%s", short(bf.Src), ve, listing)
		}
		t.Fatalf("load filter %q: %v\n%s", short(bf.Src), err, listing)
	}
	t.Cleanup(func() { prog.Close() })
	return &counter{m: m, prog: prog}
}

func (c *counter) attach(t *testing.T, system, event string) link.Link {
	t.Helper()
	l, err := link.Tracepoint(system, event, c.prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (c *counter) count(t *testing.T) uint64 {
	t.Helper()
	var n uint64
	if err := c.m.Lookup(uint32(0), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func bindLive(t *testing.T, f *parse.Format, src string) *parse.BoundFilter {
	t.Helper()
	e, err := parse.ParseFilter("filter", src)
	if err != nil {
		t.Fatalf("ParseFilter(%q) = %v", short(src), err)
	}
	bf, err := parse.BindFilter("filter", src, e, f)
	if err != nil {
		t.Fatalf("BindFilter(%q) = %v", short(src), err)
	}
	return bf
}

// short cuts a filter for messages.
func short(src string) string {
	if len(src) > 200 {
		return src[:200] + "..."
	}
	return src
}

// putField stores v in a numeric field of a synthetic record.
func putField(t testing.TB, f *parse.Format, rec []byte, name string, v uint64) {
	t.Helper()
	fld := f.Field(name)
	if fld == nil {
		t.Fatalf("%s has no field %q", f.FullName(), name)
	}
	switch fld.Size {
	case 1:
		rec[fld.Offset] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(rec[fld.Offset:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(rec[fld.Offset:], uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(rec[fld.Offset:], v)
	default:
		t.Fatalf("field %q has size %d", name, fld.Size)
	}
}

// recordSize is the size of a record holding every field of f.
func recordSize(f *parse.Format) int {
	n := 0
	for _, fld := range f.Fields {
		n = max(n, fld.Offset+fld.Size)
	}
	return n
}

// TestPrivilegedFilterBPF runs filters in the kernel on the writes of a
// child process and checks that BPF counts exactly the events the
// interpreter accepts from records built with the same format.
func TestPrivilegedFilterBPF(t *testing.T) {
	testutil.RequirePrivileged(t)
	f := liveFormat(t, "syscalls", "sys_enter_write")
	cpu := runtime.NumCPU() - 1
	w := startWriter(t, cpu)
	id, cpuText := strconv.Itoa(f.ID), strconv.Itoa(cpu)
	short := w.comm[:len(w.comm)-2]
	filters := []string{
		"fd == 100 && count > 50",
		"count < 10 || count >= 290",
		"!(count & 1) && fd == 100",
		"count & 0x100",
		"count > 0xffffffff || count == 7",
		"count < 0x100000000 && !(count <= 299)",
		"__syscall_nr == 1 && count >= 100 && count < 0x7b",
		"__syscall_nr != 1",
		"fd == 100 || (count > 100 && !(count > 200))",
		"fd != 100",
		"count & CPUS{1-3,7,200-202}",
		"count == CPUS{5}",
		"count != CPUS{1-4}",
		"(count > 10 && count < 20) || (count > 30 && count < 40) || count == 299",
		"!(!(count == 1))",
		"common_type == " + id + " && count <= 2",
		"common_type != " + id,
		"cpu == " + cpuText + " && count < 5",
		"CPU != " + cpuText,
		"common_cpu & CPUS{" + cpuText + "} && count > 295",
		"count & CPUS{0-1000}",
		fmt.Sprintf("common_pid == %d && count < 10", w.tid),
		fmt.Sprintf("common_pid != %d", w.tid),
		fmt.Sprintf("comm == %q && count > 200", w.comm),
		fmt.Sprintf("comm != %q", w.comm),
		fmt.Sprintf("comm == %q", short),
		fmt.Sprintf("comm ~ %q && count < 3", short+"*"),
		fmt.Sprintf("comm ~ %q && count < 4", "*"+w.comm[2:]),
		fmt.Sprintf("comm ~ %q && count < 5", "*"+w.comm[1:len(w.comm)-1]+"*"),
		fmt.Sprintf("comm ~ %q", "*"+w.comm[1:]+"x"),
		fmt.Sprintf("COMM ~ %q", "!*"+w.comm[3:]),
		`comm ~ "*" && count == 1`,
		`comm == ""`,
	}
	pidTgid := uint64(w.tgid)<<32 | uint64(w.tid)
	counters := make([]*counter, len(filters))
	bound := make([]*parse.BoundFilter, len(filters))
	for i, src := range filters {
		bound[i] = bindLive(t, f, src)
		counters[i] = loadCounter(t, bound[i], pidTgid)
		l := counters[i].attach(t, "syscalls", "sys_enter_write")
		defer l.Close()
	}
	w.run(t)
	ctx := eval.Context{PID: int32(w.tid), CPU: w.cpu, Comm: w.comm}
	rec := make([]byte, recordSize(f))
	for i, bf := range bound {
		want := uint64(0)
		for n := 1; n <= childWrites; n++ {
			putField(t, f, rec, "common_type", uint64(f.ID))
			putField(t, f, rec, "common_pid", uint64(w.tid))
			putField(t, f, rec, "__syscall_nr", 1)
			putField(t, f, rec, "fd", childFD)
			putField(t, f, rec, "count", uint64(n))
			if eval.Match(bf, rec, ctx) {
				want++
			}
		}
		if got := counters[i].count(t); got != want {
			t.Errorf("filter %q: BPF counted %d events, the interpreter %d", bf.Src, got, want)
		}
	}
}

// TestPrivilegedFilterBPFStrings runs string filters on the events of a
// child exec'd through a symlink with a unique name: the __data_loc
// filename of sched_process_exec (copied from ctx + a variable offset),
// the char[16] comm of sched_process_exit, and the user-memory filename of
// openat (.ustring), which the interpreter cannot evaluate.
func TestPrivilegedFilterBPFStrings(t *testing.T) {
	testutil.RequirePrivileged(t)
	name := fmt.Sprintf("gt%d", os.Getpid())
	path := filepath.Join(t.TempDir(), name)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, path); err != nil {
		t.Fatal(err)
	}
	type event struct {
		system, name string
		only         string   // what selects the child's event among all the machine's
		filters      []string // each is ANDed with only
		rec          func(f *parse.Format) []byte
		want         []uint64 // nil: what the interpreter says on rec
	}
	tail := name[len(name)-3:]
	events := []event{{
		system: "sched", name: "sched_process_exec",
		only: fmt.Sprintf("filename ~ \"*/%s\" && ", name),
		filters: []string{
			"filename ~ \"*" + tail + "\"",
			fmt.Sprintf("filename == %q", path),
			fmt.Sprintf("filename != %q", path),
			fmt.Sprintf("filename == %q", path[:len(path)-1]),
			fmt.Sprintf("filename ~ %q", filepath.Dir(path)+"*"),
			fmt.Sprintf("filename ~ %q", path+"*"),
			fmt.Sprintf("filename ~ %q", path+"x*"),
			`filename ~ "*.so"`,
			`!(filename ~ "*.so")`,
			fmt.Sprintf("filename ~ %q", "*"+path),
			fmt.Sprintf("filename ~ %q", "*/"+path),
			fmt.Sprintf("filename ~ %q", "*"+name[1:4]+"*"),
			`filename ~ "!*x"`,
		},
		rec: func(f *parse.Format) []byte {
			// The string follows the fields, as the kernel writes it.
			rec := make([]byte, recordSize(f))
			putField(t, f, rec, "filename", uint64(len(path)+1)<<16|uint64(len(rec)))
			return append(append(rec, path...), 0)
		},
	}, {
		system: "sched", name: "sched_process_exit",
		only: fmt.Sprintf("group_dead == 1 && comm ~ %q && ", name[:4]+"*"),
		filters: []string{
			fmt.Sprintf("comm == %q", name),
			fmt.Sprintf("comm == %s", name),
			fmt.Sprintf("comm != %q", name),
			fmt.Sprintf("comm == %q", name[:len(name)-1]),
			fmt.Sprintf("comm ~ %q", "*"+tail),
			fmt.Sprintf("comm ~ %q", "*"+tail+"x"),
			fmt.Sprintf("comm ~ %q", "*"+name[1:4]+"*"),
			fmt.Sprintf("comm ~ %q", "!"+name[:3]+"*"),
			`comm ~ "*"`,
		},
		rec: func(f *parse.Format) []byte {
			rec := make([]byte, recordSize(f))
			copy(rec[f.Field("comm").Offset:], name)
			putField(t, f, rec, "group_dead", 1)
			return rec
		},
	}, {
		system: "syscalls", name: "sys_enter_openat",
		only: fmt.Sprintf("filename.ustring ~ %q && ", "*/"+name),
		filters: []string{
			"dfd == -100",
			"dfd != -100",
			fmt.Sprintf("filename.ustring == %q", path),
			fmt.Sprintf("filename.ustring ~ %q", path[:5]+"*"),
			fmt.Sprintf("filename.ustring ~ %q", "*"+name[1:4]+"*"),
			fmt.Sprintf("filename.ustring ~ %q", "*/"+name+"x"),
			"flags == 0x80000",
			"flags & 0x40",
		},
		want: []uint64{1, 0, 1, 1, 1, 0, 1, 0},
	}}
	if runtime.GOARCH == "amd64" {
		// Reading a user pointer as kernel memory faults on x86-64, and a
		// fault makes the predicate false, negated or not.
		ev := &events[len(events)-1]
		ev.filters = append(ev.filters, `filename != "x"`, `!(filename == "x")`, `filename ~ "!x*"`)
		ev.want = append(ev.want, 0, 1, 0)
	}
	type check struct {
		bf   *parse.BoundFilter
		c    *counter
		want uint64
	}
	var checks []check
	for _, ev := range events {
		f := liveFormat(t, ev.system, ev.name)
		for i, src := range ev.filters {
			bf := bindLive(t, f, ev.only+src)
			c := loadCounter(t, bf, 0)
			l := c.attach(t, ev.system, ev.name)
			defer l.Close()
			var want uint64
			switch {
			case ev.want != nil:
				want = ev.want[i]
			case eval.Match(bf, ev.rec(f), eval.Context{PID: -1}):
				want = 1
			}
			checks = append(checks, check{bf, c, want})
		}
	}
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), childModeEnv+"=open")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run %s: %v\n%s", path, err, out)
	}
	for _, c := range checks {
		if got := c.c.count(t); got != c.want {
			t.Errorf("filter %q: BPF counted %d events, want %d", c.bf.Src, got, c.want)
		}
	}
}

// TestPrivilegedFilterBPFLarge loads the largest filters EmitFilter
// accepts, at its limits on predicates and on code size: the verifier
// must take them.
func TestPrivilegedFilterBPFLarge(t *testing.T) {
	testutil.RequirePrivileged(t)
	f := liveFormat(t, "sched", "sched_waking")
	for _, pred := range []string{"pid == %d", `comm == "kworker/%d:1H"`, `comm ~ "*%d" && prio > 0`, `COMM ~ "*%d*"`, `pid & CPUS{%d-8000}`} {
		t.Run(pred, func(t *testing.T) {
			filter := func(n int) *parse.BoundFilter {
				parts := make([]string, n)
				for i := range parts {
					parts[i] = fmt.Sprintf(pred, i)
				}
				return bindLive(t, f, strings.Join(parts, " || "))
			}
			// The most predicates that EmitFilter takes.
			lo, hi := 1, maxFilterBranches+1
			for hi-lo > 1 {
				mid := (lo + hi) / 2
				if EmitFilter(&Builder{}, filter(mid), "miss", filterScratch) == nil {
					lo = mid
				} else {
					hi = mid
				}
			}
			loadCounter(t, filter(lo), 0)
		})
	}
}
