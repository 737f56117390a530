// Command startstop is the stopwatch of bench/record-startup.sh: it starts
// a recorder, sends it SIGINT once it has settled, as a user's Ctrl-C
// would, and reports on stdout, in nanoseconds of CLOCK_MONOTONIC (the
// clock the recorders stamp their events with):
//
//	start T0 settled TS int T1 exit T2 status S
//
// T0 is taken right before the recorder is started, TS when its number of
// open file descriptors last changed before SIGINT, T1 right before
// SIGINT is sent and T2 right after the recorder has exited, with exit
// status S, 128 + the signal's number when a signal ended it, as shells
// report it (perf record ends itself with the SIGINT it got: 130).
//
// The recorder has settled when its number of open file descriptors (the
// perf events, BPF links and buffers it sets up) has not changed for
// -settle, and -min-wait has passed since the start. This only decides
// when to send SIGINT: the caller tells when the recorder really began to
// record from the timestamps in its file, and checks that it was before
// T1. If the recorder has not settled within -timeout it is sent SIGINT
// anyway, and if it has not exited -kill-after the SIGINT, SIGKILL.
//
// With -marker, startstop first starts the marker workload in a
// goroutine: a locked OS thread that sleeps 1 ms (nanosleep) and calls
// getppid, in a loop, until the recorder has exited, so that
// sched_switch, sched_waking, sched_wakeup, the hrtimer events and the
// system call events of nanosleep and getppid happen every millisecond
// and a recorder's first events of each follow its start closely.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	settle := flag.Duration("settle", time.Second, "how long the recorder's open files must stay the same")
	minWait := flag.Duration("min-wait", 500*time.Millisecond, "the least time between the start and SIGINT")
	timeout := flag.Duration("timeout", 120*time.Second, "send SIGINT after this long even if the recorder has not settled")
	killAfter := flag.Duration("kill-after", 60*time.Second, "send SIGKILL this long after SIGINT")
	marker := flag.Bool("marker", false, "run the marker workload meanwhile")
	flag.Parse()
	if flag.NArg() == 0 || *settle <= 0 || *timeout <= 0 || *killAfter <= 0 {
		fmt.Fprintln(os.Stderr, "usage: startstop [-settle D] [-min-wait D] [-timeout D] [-kill-after D] [-marker] -- CMD [ARGS...]")
		os.Exit(2)
	}
	var stop atomic.Bool
	if *marker {
		go mark(&stop)
	}
	err := run(flag.Args(), *settle, *minWait, *timeout, *killAfter)
	stop.Store(true)
	if err != nil {
		fmt.Fprintf(os.Stderr, "startstop: %v\n", err)
		os.Exit(1)
	}
}

// run starts cmd, sends it SIGINT once settled and prints the times.
func run(args []string, settle, minWait, timeout, killAfter time.Duration) error {
	c := exec.Command(args[0], args[1:]...)
	c.Stdin, c.Stdout, c.Stderr = nil, os.Stderr, os.Stderr
	// Its own process group: a Ctrl-C at the terminal goes to the script.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := mono()
	if err := c.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()

	var err error
	var t1 int64
	n, since := -1, t0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err = <-exited:
			return fmt.Errorf("%s exited before SIGINT: %v", args[0], err)
		case <-tick.C:
		}
		now := mono()
		if m := openFiles(c.Process.Pid); m != n {
			n, since = m, now
		}
		switch {
		case now-t0 >= int64(timeout):
			fmt.Fprintf(os.Stderr, "startstop: %s did not settle within %v\n", args[0], timeout)
			break wait
		case now-since >= int64(settle) && now-t0 >= int64(minWait):
			break wait
		}
	}
	t1 = mono()
	if err := c.Process.Signal(os.Interrupt); err != nil {
		return err
	}
	select {
	case err = <-exited:
	case <-time.After(killAfter):
		fmt.Fprintf(os.Stderr, "startstop: %s did not exit within %v of SIGINT: killed\n", args[0], killAfter)
		_ = c.Process.Kill()
		err = <-exited
	}
	t2 := mono()
	status := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		}
	} else if err != nil {
		return err
	}
	fmt.Printf("start %d settled %d int %d exit %d status %d\n", t0, since, t1, t2, status)
	return nil
}

// openFiles returns the number of open file descriptors of process pid.
func openFiles(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// mark is the marker workload: until stop, sleep 1 ms and call getppid.
func mark(stop *atomic.Bool) {
	runtime.LockOSThread()
	ts := unix.Timespec{Nsec: int64(time.Millisecond)}
	for !stop.Load() {
		_ = unix.Nanosleep(&ts, nil)
		syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
	}
}

// mono returns CLOCK_MONOTONIC in nanoseconds.
func mono() int64 {
	var ts unix.Timespec
	// CLOCK_MONOTONIC cannot fail.
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
