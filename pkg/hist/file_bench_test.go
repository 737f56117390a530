package hist

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// benchSysEnter returns an in-memory trace.dat file of raw_syscalls:sys_enter
// records, perCPU on each of 2 CPUs, shaped like a system-wide recording:
// each CPU runs mostly its own few tasks, which make 40 different syscalls.
func benchSysEnter(b *testing.B, perCPU int) *tracedat.File {
	b.Helper()
	path := filepath.Join(b.TempDir(), "trace.dat")
	w, err := tracedat.Create(path, tracedat.Meta{
		PageSize:    4096,
		HeaderPage:  headerPage,
		HeaderEvent: headerEvent,
		Formats:     []tracedat.FormatText{{System: "raw_syscalls", Text: testutil.FormatText(b, "raw_syscalls:sys_enter")}},
		Cmdlines:    testCmdlines,
		CPUs:        2,
	}, tracedat.WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Abort()
	r := rand.New(rand.NewPCG(7, 7))
	rec := sysEnter(b, 0, 0)
	for cpu := range 2 {
		pw := w.CPU(cpu)
		ts := uint64(1e9)
		for range perCPU {
			pid := int32(100 + 4*cpu + min(r.IntN(8), 3)) // one busy task, three others
			if r.IntN(100) == 0 {
				pid = int32(100 + r.IntN(8)) // now and then a task from the other CPU
			}
			binary.LittleEndian.PutUint32(rec[4:], uint32(pid))
			binary.LittleEndian.PutUint64(rec[8:], uint64(r.IntN(40)))
			ts += 150 + r.Uint64N(100)
			if err := pw.Add(ts, rec); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	f, err := tracedat.Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// BenchmarkRunFile measures `-k common_pid,id` over 1 M sys_enter records
// of 2 CPUs held in memory: RunFile with one worker and with GOMAXPROCS,
// and for comparison an Engine fed the merged records one at a time.
func BenchmarkRunFile(b *testing.B) {
	const perCPU = 500_000
	f := benchSysEnter(b, perCPU)
	spec, err := parse.ParseHist("hist", "keys=common_pid,id")
	if err != nil {
		b.Fatal(err)
	}
	// events reports the rate, and the CPU time per event of all
	// goroutines, which other load on the machine changes less.
	events := func(b *testing.B, n int, cpu time.Duration) {
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/event")
	}
	for _, bc := range []struct {
		name    string
		workers int
	}{{"workers=1", 1}, {"workers=GOMAXPROCS", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			n := 0
			start := cpuTime(b)
			for b.Loop() {
				t, err := RunFile(context.Background(), spec, f, "sys_enter", FileOptions{Workers: bc.workers})
				if err != nil {
					b.Fatal(err)
				}
				if t.Hits() != 2*perCPU {
					b.Fatalf("hits %d, want %d", t.Hits(), 2*perCPU)
				}
				n += 2 * perCPU
			}
			events(b, n, cpuTime(b)-start)
		})
	}
	b.Run("engine", func(b *testing.B) {
		fm, err := FileFormat(f, "sys_enter")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		start := cpuTime(b)
		for b.Loop() {
			e, err := NewEngine(spec, fm, nil)
			if err != nil {
				b.Fatal(err)
			}
			it := f.Records()
			for it.Next() {
				rec := it.Record()
				e.Add(rec.Data, rec.CPU, "")
				n++
			}
			if t := e.Table(); t.Hits() != 2*perCPU {
				b.Fatalf("hits %d, want %d", t.Hits(), 2*perCPU)
			}
		}
		events(b, n, cpuTime(b)-start)
	})
}

// cpuTime returns the user and system CPU time of the process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
