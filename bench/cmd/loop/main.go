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
// With -procs P the threads are spread over P processes (copies of this
// program, -threads/P threads each) that start their loops together, once
// all of them are ready. A tracer that keys its table by process id then
// sees one key per process, as it would with separate programs, instead of
// one key that all threads update (which serialises them on one entry).
//
// With -clock cpu (the default) the cost is the CPU time the calling
// threads used (CLOCK_THREAD_CPUTIME_ID, which includes the time spent in
// the kernel and in BPF programs run by the system call) divided by all
// calls: time the threads spend preempted by other processes does not
// count, which keeps the figure stable on a busy machine. With -clock wall
// it is the wall time divided by the calls per thread (with -procs, the
// longest of the processes' wall times).
//
// With -bpf-stats it keeps the kernel's BPF run-time statistics on while
// it runs (BPF_ENABLE_STATS, which ends when the loop exits and leaves
// kernel.bpf_stats_enabled alone), so that a caller can read the run
// time and count of a tracer's programs (run_time_ns and run_cnt in the
// fdinfo of their file descriptors) before and after.
//
// With -sysno it prints getppid's system call number and exits.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

func main() {
	n := flag.Int("n", 2000000, "getppid calls per thread")
	threads := flag.Int("threads", runtime.NumCPU(), "threads making calls, each locked to an OS thread")
	procs := flag.Int("procs", 1, "processes to spread the threads over (threads must be a multiple)")
	clock := flag.String("clock", "cpu", "what to divide by the calls: cpu (the threads' CPU time) or wall")
	sysno := flag.Bool("sysno", false, "print getppid's system call number and exit")
	bpfStats := flag.Bool("bpf-stats", false, "keep BPF run-time statistics on while running")
	child := flag.Bool("child", false, "internal: run as one of the -procs processes")
	flag.Parse()
	if *n <= 0 || *threads <= 0 || *procs <= 0 || *threads%*procs != 0 ||
		(*clock != "cpu" && *clock != "wall") || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: loop [-n CALLS] [-threads T] [-procs P] [-clock cpu|wall] [-sysno]  (n, T, P > 0; P divides T)")
		os.Exit(2)
	}
	if *sysno {
		fmt.Println(syscall.SYS_GETPPID)
		return
	}
	if *bpfStats {
		stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
		if err != nil {
			fmt.Fprintf(os.Stderr, "loop: enable BPF statistics: %v\n", err)
			os.Exit(1)
		}
		defer stats.Close()
	}
	var wall, cpu time.Duration
	var err error
	switch {
	case *child:
		err = runChild(*n, *threads)
	case *procs > 1:
		wall, cpu, err = runProcs(*n, *threads / *procs, *procs)
	default:
		wall, cpu = run(*n, *threads, func() {})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "loop: %v\n", err)
		os.Exit(1)
	}
	if *child {
		return
	}
	perCall := float64(cpu) / float64(*n**threads)
	if *clock == "wall" {
		perCall = float64(wall) / float64(*n)
	}
	fmt.Printf("%.1f\n", perCall)
}

// run makes n getppid calls on each of threads locked OS threads, started
// together once all are ready and wait has returned. It returns the wall
// time from the start until the last thread is done and the CPU time all
// threads used for their calls.
func run(n, threads int, wait func()) (wall, cpu time.Duration) {
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
	wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	wall = time.Since(t0)
	for _, c := range cpus {
		cpu += c
	}
	return wall, cpu
}

// runChild is one of the processes of runProcs: once its threads are
// ready it writes "ready" on stdout, waits for EOF on file descriptor 3,
// runs, and writes its wall and CPU time in nanoseconds on stdout.
func runChild(n, threads int) error {
	start := os.NewFile(3, "start")
	wall, cpu := run(n, threads, func() {
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, start)
	})
	fmt.Printf("%d %d\n", wall.Nanoseconds(), cpu.Nanoseconds())
	return nil
}

// runProcs runs procs copies of this program with threads threads each,
// lets them start their loops together once all are ready, and returns
// the longest wall time and the sum of their CPU times.
func runProcs(n, threads, procs int) (wall, cpu time.Duration, err error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	startR, startW, err := os.Pipe()
	if err != nil {
		return 0, 0, err
	}
	defer startW.Close()
	var cmds []*exec.Cmd
	var outs []*bufio.Reader
	defer func() {
		for _, c := range cmds {
			if err != nil {
				_ = c.Process.Kill()
			}
			_ = c.Wait()
		}
	}()
	for range procs {
		c := exec.Command(self, "-child", "-n", strconv.Itoa(n), "-threads", strconv.Itoa(threads))
		c.Stderr = os.Stderr
		c.ExtraFiles = []*os.File{startR}
		out, err := c.StdoutPipe()
		if err != nil {
			return 0, 0, err
		}
		if err := c.Start(); err != nil {
			return 0, 0, fmt.Errorf("start child: %w", err)
		}
		cmds = append(cmds, c)
		outs = append(outs, bufio.NewReader(out))
	}
	startR.Close()
	for _, o := range outs {
		if line, err := o.ReadString('\n'); line != "ready\n" {
			return 0, 0, fmt.Errorf("child not ready: %q %v", line, err)
		}
	}
	startW.Close() // EOF on every child's fd 3: go
	for _, o := range outs {
		line, err := o.ReadString('\n')
		f := strings.Fields(line)
		if err != nil || len(f) != 2 {
			return 0, 0, fmt.Errorf("child result: %q %v", line, err)
		}
		w, err1 := strconv.ParseInt(f[0], 10, 64)
		c, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("child result: %q", line)
		}
		wall = max(wall, time.Duration(w))
		cpu += time.Duration(c)
	}
	return wall, cpu, nil
}

// threadCPU returns the CPU time the calling OS thread has used.
func threadCPU() time.Duration {
	var ts unix.Timespec
	// CLOCK_THREAD_CPUTIME_ID cannot fail for the calling thread.
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}
