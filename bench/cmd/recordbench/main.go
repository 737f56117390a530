// Command recordbench is the native baseline of bench/record-overhead.sh:
// it records one trace event the way trace-cmd record does, in the
// kernel's own ring buffer, with a consumer per CPU that splices
// per_cpu/cpuN/trace_pipe_raw into a file through a pipe, looking every
// -sleep without blocking (trace-cmd's default of 1 ms).
//
// It sets buffer_size_kb to -b, clears the buffer, turns tracing on,
// enables the event and prints "ready" on stdout. On SIGINT or SIGTERM it
// disables the event, splices what is left, restores buffer_size_kb,
// tracing_on and the event's enable file, and prints one line on stdout:
//
//	events N lost M
//
// where N is the events the consumers read or left in the buffer (the
// last partial page of each CPU, which trace-cmd would read when it
// finishes) and M the events the buffer overwrote or dropped, summed over
// the CPUs from per_cpu/cpuN/stats.
//
// It needs root, and nothing else may use the top tracing instance
// meanwhile. It deliberately uses none of gtrace's packages.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	event := flag.String("e", "raw_syscalls/sys_enter", "event to record, SYSTEM/EVENT")
	kb := flag.Int("b", 8192, "buffer_size_kb: the kernel's ring buffer per CPU, in KiB")
	dir := flag.String("o", "", "directory for the per-CPU files (required)")
	sleep := flag.Duration("sleep", time.Millisecond, "how long a consumer sleeps when its buffer has no full page")
	flag.Parse()
	if *dir == "" || *kb <= 0 || *sleep < 0 || flag.NArg() > 0 || !strings.Contains(*event, "/") {
		fmt.Fprintln(os.Stderr, "usage: recordbench -o DIR [-e SYSTEM/EVENT] [-b KB] [-sleep D]")
		os.Exit(2)
	}
	if err := run(*event, *kb, *dir, *sleep); err != nil {
		fmt.Fprintf(os.Stderr, "recordbench: %v\n", err)
		os.Exit(1)
	}
}

func run(event string, kb int, dir string, sleep time.Duration) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := tracefsRoot()
	if err != nil {
		return err
	}
	path := func(elem ...string) string { return filepath.Join(append([]string{root}, elem...)...) }
	enable := path("events", event, "enable")
	oldKB, err := os.ReadFile(path("buffer_size_kb"))
	if err != nil {
		return err
	}
	// Before first use the file reads "7 (expanded: 1408)": only the
	// number can be written back.
	oldKB = []byte(strings.Fields(string(oldKB) + " 0")[0])
	oldEnable, err := os.ReadFile(enable)
	if err != nil {
		return err
	}
	oldOn, err := os.ReadFile(path("tracing_on"))
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, write(enable, string(oldEnable)), write(path("buffer_size_kb"), string(oldKB)), write(path("tracing_on"), string(oldOn)))
	}()
	if err := write(path("buffer_size_kb"), strconv.Itoa(kb)); err != nil {
		return err
	}
	if err := write(path("trace"), ""); err != nil { // clears the buffer
		return err
	}
	if err := write(path("tracing_on"), "1"); err != nil {
		return err
	}
	cpus, err := onlineCPUs()
	if err != nil {
		return err
	}
	done := make(chan struct{})
	errs := make([]error, len(cpus))
	var wg sync.WaitGroup
	for i, cpu := range cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = consume(path("per_cpu", fmt.Sprintf("cpu%d", cpu), "trace_pipe_raw"), filepath.Join(dir, fmt.Sprintf("cpu%d", cpu)), sleep, done)
		}()
	}
	if err := write(enable, "1"); err != nil {
		close(done)
		wg.Wait()
		return err
	}
	fmt.Println("ready")
	<-ctx.Done()
	err = write(enable, "0")
	close(done)
	wg.Wait()
	if err := errors.Join(append(errs, err)...); err != nil {
		return err
	}
	var events, lost uint64
	for _, cpu := range cpus {
		st, err := stats(path("per_cpu", fmt.Sprintf("cpu%d", cpu), "stats"))
		if err != nil {
			return err
		}
		events += st["read events"] + st["entries"]
		lost += st["overrun"] + st["dropped events"]
	}
	fmt.Printf("events %d lost %d\n", events, lost)
	return nil
}

// consume splices the pages of one CPU's trace_pipe_raw into the file out
// until done is closed, then splices what is left.
func consume(pipeRaw, out string, sleep time.Duration, done <-chan struct{}) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	in, err := unix.Open(pipeRaw, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", pipeRaw, err)
	}
	defer unix.Close(in)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	size, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		return err
	}
	stopping := false
	for {
		n, err := unix.Splice(in, nil, p[1], nil, size, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		switch {
		case n > 0:
			for n > 0 {
				m, err := unix.Splice(p[0], nil, int(f.Fd()), nil, int(n), unix.SPLICE_F_MOVE)
				if err != nil {
					return fmt.Errorf("splice to %s: %w", out, err)
				}
				n -= m
			}
			continue
		case err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR):
			return fmt.Errorf("splice %s: %w", pipeRaw, err)
		}
		if stopping {
			return nil
		}
		select {
		case <-done:
			stopping = true
		case <-time.After(sleep):
		}
	}
}

// stats reads a per_cpu/cpuN/stats file's counters.
func stats(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); ok && err == nil {
			m[k] = n
		}
	}
	return m, sc.Err()
}

func write(path, s string) error {
	if err := os.WriteFile(path, []byte(s), 0); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func tracefsRoot() (string, error) {
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if st, err := os.Stat(filepath.Join(dir, "events")); err == nil && st.IsDir() {
			return dir, nil
		}
	}
	return "", errors.New("tracefs is not mounted: mount -t tracefs nodev /sys/kernel/tracing")
}

func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("bad CPU list %q", b)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("bad CPU list %q", b)
			}
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
