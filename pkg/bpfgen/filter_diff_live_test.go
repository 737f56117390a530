package bpfgen

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/filtergen"
	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// diffCaptures are real recordings of a 6.18 kernel (see the README of
// pkg/report/testdata): sched, syscall, network and timer events with
// char arrays, __data_loc strings, and signed and unsigned numbers of
// every width.
var diffCaptures = []string{"sched", "syscalls", "net", "timer"}

// diffEvent is an event of the captures and some of its records.
type diffEvent struct {
	format *parse.Format
	recs   [][]byte
}

// captureEvents reads the captures and returns each event with at least
// minRecs records, with at most maxRecs of them, in a stable order.
func captureEvents(t *testing.T, minRecs, maxRecs int) []*diffEvent {
	t.Helper()
	byID := map[string]*diffEvent{}
	var keys []string
	for _, name := range diffCaptures {
		f, err := tracedat.Open(filepath.Join("..", "report", "testdata", "captured", name+".dat"))
		if err != nil {
			t.Fatal(err)
		}
		it := f.Records()
		for it.Next() {
			rec := it.Record()
			if len(rec.Data) < 2 {
				continue
			}
			ev := f.Events[int(rec.Data[0])|int(rec.Data[1])<<8]
			if ev == nil || ev.Format.System == "ftrace" {
				continue
			}
			key := name + "/" + ev.Format.FullName()
			d := byID[key]
			if d == nil {
				d = &diffEvent{format: ev.Format}
				byID[key] = d
				keys = append(keys, key)
			}
			if len(d.recs) < maxRecs {
				d.recs = append(d.recs, slices.Clone(rec.Data))
			}
		}
		if err := it.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	sort.Strings(keys)
	var out []*diffEvent
	for _, k := range keys {
		if d := byID[k]; len(d.recs) >= minRecs {
			out = append(out, d)
		}
	}
	return out
}

// widthsFormat has what the captures lack: signed numbers of 1 and 2
// bytes, misaligned numbers, a short char array and a __rel_loc string.
const widthsFormat = `name: diff_widths
ID: 79
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:s8 a;	offset:8;	size:1;	signed:1;
	field:short b;	offset:9;	size:2;	signed:1;
	field:u8 c;	offset:11;	size:1;	signed:0;
	field:int d;	offset:13;	size:4;	signed:1;
	field:char tiny[5];	offset:17;	size:5;	signed:0;
	field:u16 e;	offset:22;	size:2;	signed:0;
	field:s64 f;	offset:25;	size:8;	signed:1;
	field:__rel_loc char[] path;	offset:36;	size:4;	signed:0;

print fmt: "x"
`

// widthsEvent returns records of widthsFormat with values near the
// edges of each type.
func widthsEvent(t *testing.T) *diffEvent {
	t.Helper()
	f := format(t, widthsFormat, "widths")
	r := rand.New(rand.NewPCG(79, 1))
	edge := func(bits uint) uint64 {
		switch r.IntN(4) {
		case 0:
			return uint64(r.IntN(5))
		case 1:
			return ^uint64(0) - uint64(r.IntN(5))
		case 2:
			return 1<<(bits-1) + uint64(r.IntN(5)) - 2
		}
		return r.Uint64()
	}
	words := []string{"", "a", "abcd", "abcde", "/usr/lib", "x*y", "kv_worker"}
	d := &diffEvent{format: f}
	for range 40 {
		rec := make([]byte, 40)
		putField(t, f, rec, "common_type", 79)
		for _, fld := range []string{"a", "b", "c", "d", "e", "f"} {
			putField(t, f, rec, fld, edge(uint(8*f.Field(fld).Size)))
		}
		copy(rec[17:22], words[r.IntN(len(words))])
		p := words[r.IntN(len(words))]
		putField(t, f, rec, "path", uint64(len(p)+1)<<16)
		d.recs = append(d.recs, append(append(rec, p...), 0))
	}
	return d
}

// buildMatcher is loadMatcher's program, with EmitFilter's refusal
// returned rather than fatal.
func buildMatcher(bf *parse.BoundFilter) (*ebpf.Program, error) {
	b := &Builder{}
	miss := b.Label("miss")
	b.Comment("R6 = ctx; R9 = pid_tgid")
	b.Emit(
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
	)
	if err := EmitFilter(b, bf, miss, filterScratch); err != nil {
		return nil, err
	}
	b.Emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
	b.Mark(miss)
	b.Emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	insns := b.Instructions()
	if err := withFilterBuffer(insns); err != nil {
		return nil, err
	}
	return ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.Syscall,
		Flags:        unix.BPF_F_SLEEPABLE,
		License:      "GPL",
		Instructions: insns,
	})
}

// diffComm is the test thread's name while it runs the filters: glob
// metacharacters in it test the patterns' escapes.
const diffComm = "gt-d[1]*f?x"

// TestPrivilegedFilterBPFDifferential runs filters generated from the
// grammar in BPF (prog.Run) on real records of 6.18 and requires, for
// every filter and record, the interpreter's verdict. The thread is
// pinned to one CPU and named diffComm, so that the pseudo-fields cpu,
// comm and common_pid (which BPF reads from the current task) have
// known values.
func TestPrivilegedFilterBPFDifferential(t *testing.T) {
	testutil.RequirePrivileged(t)
	const filters = 3000
	events := captureEvents(t, 8, 40)
	if len(events) < 10 {
		t.Fatalf("the captures have %d events with enough records, want at least 10", len(events))
	}
	events = append(events, widthsEvent(t))
	// The thread stays locked: it dies with the test's goroutine, and its
	// name and CPU with it.
	runtime.LockOSThread()
	cpu := runtime.NumCPU() - 1
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	name, _ := unix.BytePtrFromString(diffComm)
	if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	tid := int32(unix.Gettid())
	ctx := eval.Context{PID: tid, CPU: cpu, Comm: diffComm}
	// BPF cannot read the record's first 8 bytes (common_type is the
	// format's ID and common_pid the task's pid), and char pointers point
	// at memory of the kernel that made the captures.
	skip := func(f *parse.Field) bool {
		return f.Common && f.Name != "common_type" && f.Name != "common_pid"
	}
	gens := make([]*filtergen.Generator, 0, len(events))
	var used []*diffEvent
	for i, ev := range events {
		samples := make([]filtergen.Sample, len(ev.recs))
		for j, rec := range ev.recs {
			samples[j] = filtergen.Sample{Rec: rec, CPU: cpu, PID: tid, Comm: diffComm}
		}
		g, err := filtergen.New(rand.New(rand.NewPCG(uint64(i), 7)), ev.format, samples, filtergen.Options{Skip: skip, Pseudo: true})
		if err != nil {
			continue // only char pointers
		}
		gens = append(gens, g)
		used = append(used, ev)
	}
	seen := map[string]int{}
	refused := map[string]int{}
	runs, passed := 0, 0
	start := time.Now()
	for n := range filters {
		k := n % len(gens)
		ev := used[k]
		src := gens[k].Filter()
		bf := bindLive(t, ev.format, src)
		for _, name := range filtergen.Features(bf) {
			seen[name]++
		}
		prog, err := buildMatcher(bf)
		if err != nil {
			var pe *parse.Error
			if !errors.As(err, &pe) {
				t.Fatalf("%s: load %q: %v", ev.format.FullName(), src, err)
			}
			refused[pe.Msg]++
			continue
		}
		for _, rec := range ev.recs {
			got, err := prog.Run(&ebpf.RunOptions{Context: rec})
			if err != nil {
				prog.Close()
				t.Fatalf("%s: run %q: %v", ev.format.FullName(), src, err)
			}
			want := eval.Match(bf, rec, ctx)
			if (got == 1) != want {
				t.Errorf("%s: %s on record %x: BPF says %v, the interpreter %v", ev.format.FullName(), src, rec, got == 1, want)
			}
			runs++
			if want {
				passed++
			}
		}
		prog.Close()
	}
	t.Logf("%d filters on %d events, %d runs (%d passed) in %v; refused by the BPF backend: %v",
		filters, len(used), runs, passed, time.Since(start).Round(time.Millisecond), refused)
	if total := sumCounts(refused); total > filters/50 {
		t.Errorf("the BPF backend refused %d of %d filters: %v", total, filters, refused)
	}
	if passed < runs/10 || passed > runs*9/10 {
		t.Errorf("%d of %d runs passed: the filters do not split the records", passed, runs)
	}
	for _, f := range filtergen.AllFeatures {
		if seen[f] == 0 && !strings.HasPrefix(f, "cpumask ") {
			t.Errorf("no filter has %q", f)
		}
	}
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
