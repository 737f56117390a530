package bpfgen

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// filterBenchCalls is how many getppid calls each variant's run makes.
const filterBenchCalls = 200000

// filterVariant is one program on raw_syscalls:sys_enter's classic
// tracepoint (nil: no program) in the filter overhead benchmark.
type filterVariant struct {
	name string
	prog *ebpf.Program
}

// BenchmarkPrivilegedFilterOverhead measures what a filter that rejects
// every event costs per event, against an empty program on the same
// attach point, raw_syscalls:sys_enter's classic tracepoint: each of b.N
// rounds runs a getppid loop on this thread under every variant in turn
// (the order rotating from round to round), each paired with a run under
// no program right before it, so that the machine's drift cancels. It
// reports the median paired overheads in ns per event (the thread's CPU
// time per call, less the untraced run's), their ratios to the empty
// program's, and each program's own run time per event from the
// kernel's BPF statistics, taken in a shorter run after the paired ones,
// with the ratios they give: the empty program's overhead plus the
// difference of run times, over the empty program's overhead. bench/filter-overhead.sh prints them as a
// table.
//
// The variants: the empty program (returns 0); gtrace's record program
// with a filter that rejects every system call without reading the
// record (common_pid == 0), with one that reads a field (id == 99999),
// and with a glob on comm (comm ~ "*zz*"); gtrace's hist program (key
// common_pid) with the last two; record-pid's program with a trigger
// "traceoff if id == 99999", which never fires, and so a control map
// (traceoff-if); the hist program keyed on common_stacktrace,
// without a filter (hist-stack). The programs' process gate excludes
// another process than this one, as gtrace's excludes its own pid.
func BenchmarkPrivilegedFilterOverhead(b *testing.B) {
	testutil.RequirePrivileged(b)
	fs, err := tracefs.Open()
	if err != nil {
		b.Fatal(err)
	}
	f, err := fs.Format(tracefs.Event{System: "raw_syscalls", Name: "sys_enter"})
	if err != nil {
		b.Fatal(err)
	}
	filter := func(src string) *parse.BoundFilter {
		e, err := parse.ParseFilter("filter", src)
		if err != nil {
			b.Fatal(err)
		}
		bf, err := parse.BindFilter("filter", src, e, f)
		if err != nil {
			b.Fatal(err)
		}
		return bf
	}
	gate := Gate{ExcludeTGID: uint32(os.Getppid())}
	record := func(src string) *Program {
		p, err := Record(&RecordSpec{
			Events:      []RecordEvent{{Format: f, Filter: filter(src)}},
			CPUs:        runtime.NumCPU(),
			RingSize:    1 << 16,
			MaxRecord:   (os.Getpagesize() - 32) &^ 7,
			Clock:       ClockMono,
			ExcludeTGID: gate.ExcludeTGID,
		})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	hist := func(src string) *Program {
		p, err := Hist(&HistSpec{
			HistLayout: HistLayout{Keys: []KeySlot{{Src: SrcPID, Size: 8}}, KeySize: 8, ValueSize: 8, CommOff: -1, MaxEntries: 2048},
			Filter:     filter(src),
			Gate:       gate,
			Event:      f,
		})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	// The record program of an event with filter ev and a traceoff
	// trigger with filter trig: the record is gated on the control
	// map's words and ev, then the trigger's filter runs.
	triggered := func(ev, trig string) *Program {
		p, err := Record(&RecordSpec{
			Events: []RecordEvent{{Format: f, Filter: filter(ev), Triggers: []RecordTrigger{
				{Cmd: parse.TrigTraceOff, Filter: filter(trig), Count: -1},
			}}},
			CPUs:        runtime.NumCPU(),
			RingSize:    1 << 16,
			MaxRecord:   (os.Getpagesize() - 32) &^ 7,
			Clock:       ClockMono,
			ExcludeTGID: gate.ExcludeTGID,
			Control:     true,
		})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	// The hist program keyed on the kernel stack (common_stacktrace),
	// without a filter: every event takes a bpf_get_stackid.
	stackHist := func() *Program {
		p, err := Hist(&HistSpec{
			HistLayout: HistLayout{Keys: []KeySlot{{Src: SrcStack, Size: 8, Skip: StackSkip(f.System, f.Name)}}, KeySize: 8, ValueSize: 8, CommOff: -1, MaxEntries: 2048},
			Gate:       gate,
			Event:      f,
		})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	empty := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"empty": {
		Type: ebpf.TracePoint, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	}}}
	load := func(name string, spec *ebpf.CollectionSpec, prog string) filterVariant {
		c, err := ebpf.NewCollection(spec)
		if err != nil {
			b.Fatalf("load %s: %v", name, err)
		}
		b.Cleanup(func() { c.Close() })
		return filterVariant{name, c.Programs[prog]}
	}
	variants := []filterVariant{
		load("empty", empty, "empty"),
		load("record-pid", record("common_pid == 0").Collection, RecordProgName(0)),
		load("record-id", record("id == 99999").Collection, RecordProgName(0)),
		load("record-glob", record(`comm ~ "*zz*"`).Collection, RecordProgName(0)),
		load("hist-id", hist("id == 99999").Collection, HistProgName),
		load("hist-glob", hist(`comm ~ "*zz*"`).Collection, HistProgName),
		load("traceoff-if", triggered("common_pid == 0", "id == 99999").Collection, RecordProgName(0)),
		load("hist-stack", stackHist().Collection, HistProgName),
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	loop := func(calls int) float64 {
		t0 := threadCPU(b)
		for range calls {
			syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
		}
		return float64(threadCPU(b)-t0) / float64(calls)
	}
	var none []float64
	over := make([][]float64, len(variants))
	progNs := make([][]float64, len(variants))
	b.ResetTimer()
	for round := range b.N {
		for k := range variants {
			i := (k + round) % len(variants)
			v := variants[i]
			base := loop(filterBenchCalls)
			l, err := link.Tracepoint("raw_syscalls", "sys_enter", v.prog, nil)
			if err != nil {
				b.Fatalf("attach %s: %v", v.name, err)
			}
			traced := loop(filterBenchCalls)
			// The run time statistics cost two clock reads per event:
			// they are on only for a shorter run of their own.
			stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
			if err != nil {
				b.Fatal(err)
			}
			s0 := progStats(b, v.prog)
			loop(filterBenchCalls / 4)
			s1 := progStats(b, v.prog)
			stats.Close()
			l.Close()
			none = append(none, base)
			over[i] = append(over[i], traced-base)
			if n := s1.RunCount - s0.RunCount; n > 0 {
				progNs[i] = append(progNs[i], float64(s1.Runtime-s0.Runtime)/float64(n))
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(median(none), "none-ns/call")
	emptyOver, emptyProg := median(over[0]), median(progNs[0])
	for i, v := range variants {
		b.ReportMetric(median(over[i]), v.name+"-ns/event")
		b.ReportMetric(median(progNs[i]), v.name+"-prog-ns/event")
		if i > 0 && emptyOver > 0 {
			b.ReportMetric(median(over[i])/emptyOver, v.name+"/empty")
			// The same ratio with the variant's overhead estimated as
			// the empty program's plus the difference of their run
			// times: the attach point costs both the same, and the run
			// times have far less noise than the paired CPU times.
			b.ReportMetric((emptyOver+median(progNs[i])-emptyProg)/emptyOver, v.name+"/empty-by-prog")
		}
	}
}

// threadCPU returns the CPU time of the calling thread.
func threadCPU(tb testing.TB) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

func progStats(tb testing.TB, p *ebpf.Program) *ebpf.ProgramStats {
	s, err := p.Stats()
	if err != nil {
		tb.Fatal(fmt.Errorf("program statistics: %w", err))
	}
	return s
}

// median returns the median of v, 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
