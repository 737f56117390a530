// Command loop is the workload of bench/hist-overhead.sh: it makes getppid
// system calls in a tight loop, -n calls on each of -threads OS threads, and
// prints the cost of one call in nanoseconds as a single number on stdout.
//
// The calls go through syscall.RawSyscall, which skips the Go scheduler's
// entersyscall/exitsyscall hooks, so that the loop costs little more than
// the system call itself and a tracer's per-event overhead stands out. Each
// thread is locked to its goroutine and all threads start together, so that
// with one thread per CPU every CPU runs the traced path at the same time.
//
// With -clock cpu (the default) the cost is the CPU time the calling
// threads used (CLOCK_THREAD_CPUTIME_ID, which includes the time spent in
// the kernel and in BPF programs run by the system call) divided by all
// calls: time the threads spend preempted by other processes does not
// count, which keeps the figure stable on a busy machine. With -clock wall
// it is the wall time divided by the calls per thread.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	n := flag.Int("n", 2000000, "getppid calls per thread")
	threads := flag.Int("threads", runtime.NumCPU(), "threads making calls, each locked to an OS thread")
	clock := flag.String("clock", "cpu", "what to divide by the calls: cpu (the threads' CPU time) or wall")
	flag.Parse()
	if *n <= 0 || *threads <= 0 || (*clock != "cpu" && *clock != "wall") || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: loop [-n CALLS] [-threads T] [-clock cpu|wall]  (n, T > 0)")
		os.Exit(2)
	}
	wall, cpu := run(*n, *threads)
	perCall := float64(cpu) / float64(*n**threads)
	if *clock == "wall" {
		perCall = float64(wall) / float64(*n)
	}
	fmt.Printf("%.1f\n", perCall)
}

// run makes n getppid calls on each of threads locked OS threads, started
// together. It returns the wall time from the start until the last thread
// is done and the CPU time all threads used for their calls.
func run(n, threads int) (wall, cpu time.Duration) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	cpus := make([]time.Duration, threads)
	ready.Add(threads)
	done.Add(threads)
	for i := range threads {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			<-start
			t0 := threadCPU()
			for range n {
				syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
			}
			cpus[i] = threadCPU() - t0
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	wall = time.Since(t0)
	for _, c := range cpus {
		cpu += c
	}
	return wall, cpu
}

// threadCPU returns the CPU time the calling OS thread has used.
func threadCPU() time.Duration {
	var ts unix.Timespec
	// CLOCK_THREAD_CPUTIME_ID cannot fail for the calling thread.
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}
