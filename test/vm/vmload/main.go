// Command vmload is the workload of the kernel oracle cases in test/vm: it
// makes an exact number of chosen system calls, so that a hist over them
// counts the same in the kernel's hist trigger and in gtrace.
//
// Usage:
//
//	vmload -pid N OP...
//
// Each OP is one of
//
//	getppid=N getuid=N getgid=N geteuid=N getegid=N
//	    N calls of that system call
//	lseek=FROM:TO:STEP
//	    lseek(fd, off, SEEK_SET) on /dev/null for off = FROM, FROM+STEP, ... < TO
//	lseek-file=FROM:TO:STEP
//	    the same on an empty temporary file, where lseek returns off
//	nanosleep=N:US
//	    N calls of nanosleep for US microseconds: N wakeups of the task
//	write-sym=NAME+OFF*N
//	    N calls of write(fd, ADDR, 0) on /dev/null, where ADDR is the kernel
//	    address of symbol NAME (from /proc/kallsyms) plus OFF: a field that
//	    holds a kernel address, for .sym and .sym-offset keys
//
// With -pid N the calls are made by a child process whose process id is N:
// vmload sets /proc/sys/kernel/ns_last_pid to N-1 before it starts the
// child (retrying when another process took the id first, and exiting 75
// when the id stays taken), so that keys and filters on common_pid are the
// same from run to run. All calls are made
// on the process's main thread, whose thread id (common_pid) is its pid.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

func init() {
	// Keep main on the main thread: common_pid is the thread id.
	runtime.LockOSThread()
}

func main() {
	pid := flag.Int("pid", 0, "make the calls in a child process with this process id")
	work := flag.Bool("work", false, "internal: wait for a byte on stdin, then make the calls")
	flag.Parse()
	var err error
	switch {
	case *work:
		err = worker(flag.Args())
	case *pid > 0:
		err = launch(*pid, flag.Args())
	default:
		err = run(flag.Args())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmload:", err)
		if errors.Is(err, errPIDTaken) {
			os.Exit(75) // EX_TEMPFAIL: init.sh runs the side again
		}
		os.Exit(1)
	}
}

// launch starts a worker child with process id pid and lets it run.
func launch(pid int, ops []string) error {
	if _, err := parseOps(ops); err != nil {
		return err
	}
	last, err := os.OpenFile("/proc/sys/kernel/ns_last_pid", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer last.Close()
	for try := 0; try < 50; try++ {
		c := exec.Command(os.Args[0], append([]string{"-work"}, ops...)...)
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		in, err := c.StdinPipe()
		if err != nil {
			return err
		}
		// As close to the fork as can be: a thread another process starts
		// in between takes the id.
		if _, err := last.WriteAt([]byte(strconv.Itoa(pid-1)), 0); err != nil {
			return err
		}
		if err := c.Start(); err != nil {
			return err
		}
		if c.Process.Pid != pid {
			in.Close()
			_ = c.Process.Kill()
			_ = c.Wait()
			continue
		}
		if _, err := in.Write([]byte{1}); err != nil {
			return err
		}
		in.Close()
		return c.Wait()
	}
	return fmt.Errorf("could not start a child with pid %d: %w", pid, errPIDTaken)
}

// errPIDTaken: another task holds the pid (a thread of the tracer, started
// just after ns_last_pid was written); the caller may run again.
var errPIDTaken = errors.New("taken")

func worker(ops []string) error {
	var b [1]byte
	if n, _ := os.Stdin.Read(b[:]); n != 1 {
		return errors.New("not released") // the launcher killed us
	}
	return run(ops)
}

type op struct {
	nr             uintptr // system call number
	from, to, step uintptr // lseek offsets, or 0, n, 1
	addr           uintptr // write-sym: the address; nanosleep: the microseconds
	file           bool    // lseek on the temporary file, not /dev/null
}

func run(ops []string) error {
	list, err := parseOps(ops)
	if err != nil {
		return err
	}
	null, err := os.OpenFile("/dev/null", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	fd := null.Fd()
	tmp, err := os.CreateTemp("", "vmload")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	for _, o := range list {
		for i := o.from; i < o.to; i += o.step {
			switch {
			case o.nr == syscall.SYS_LSEEK && o.file:
				syscall.RawSyscall(o.nr, tmp.Fd(), i, 0)
			case o.nr == syscall.SYS_LSEEK:
				syscall.RawSyscall(o.nr, fd, i, 0)
			case o.nr == syscall.SYS_WRITE:
				syscall.RawSyscall(o.nr, fd, o.addr, 0)
			case o.nr == syscall.SYS_NANOSLEEP:
				ts := syscall.NsecToTimespec(int64(o.addr) * 1000)
				syscall.Syscall(o.nr, uintptr(unsafe.Pointer(&ts)), 0, 0)
			default:
				syscall.RawSyscall(o.nr, 0, 0, 0)
			}
		}
	}
	return null.Close()
}

var simple = map[string]uintptr{
	"getppid": syscall.SYS_GETPPID,
	"getuid":  syscall.SYS_GETUID,
	"getgid":  syscall.SYS_GETGID,
	"geteuid": syscall.SYS_GETEUID,
	"getegid": syscall.SYS_GETEGID,
}

func parseOps(ops []string) ([]op, error) {
	var list []op
	for _, s := range ops {
		name, arg, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("op %q: want NAME=ARG", s)
		}
		switch {
		case simple[name] != 0:
			n, err := strconv.ParseUint(arg, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("op %q: %w", s, err)
			}
			list = append(list, op{nr: simple[name], to: uintptr(n), step: 1})
		case name == "lseek" || name == "lseek-file":
			var f [3]uint64
			parts := strings.Split(arg, ":")
			if len(parts) != 3 {
				return nil, fmt.Errorf("op %q: want %s=FROM:TO:STEP", s, name)
			}
			for i, p := range parts {
				v, err := strconv.ParseUint(p, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("op %q: %w", s, err)
				}
				f[i] = v
			}
			if f[2] == 0 {
				return nil, fmt.Errorf("op %q: STEP is 0", s)
			}
			list = append(list, op{nr: syscall.SYS_LSEEK, from: uintptr(f[0]), to: uintptr(f[1]), step: uintptr(f[2]), file: name == "lseek-file"})
		case name == "nanosleep":
			n, us, ok := strings.Cut(arg, ":")
			count, err := strconv.ParseUint(n, 10, 32)
			if err != nil || !ok {
				return nil, fmt.Errorf("op %q: want nanosleep=N:US", s)
			}
			usecs, err := strconv.ParseUint(us, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("op %q: %w", s, err)
			}
			list = append(list, op{nr: syscall.SYS_NANOSLEEP, to: uintptr(count), step: 1, addr: uintptr(usecs)})
		case name == "write-sym":
			sym, n, ok := strings.Cut(arg, "*")
			if !ok {
				return nil, fmt.Errorf("op %q: want write-sym=NAME+OFF*N", s)
			}
			count, err := strconv.ParseUint(n, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("op %q: %w", s, err)
			}
			sym, offs, _ := strings.Cut(sym, "+")
			var off uint64
			if offs != "" {
				if off, err = strconv.ParseUint(offs, 0, 32); err != nil {
					return nil, fmt.Errorf("op %q: %w", s, err)
				}
			}
			addr, err := kallsym(sym)
			if err != nil {
				return nil, fmt.Errorf("op %q: %w", s, err)
			}
			list = append(list, op{nr: syscall.SYS_WRITE, to: uintptr(count), step: 1, addr: addr + uintptr(off)})
		default:
			return nil, fmt.Errorf("op %q: unknown op", s)
		}
	}
	return list, nil
}

// kallsym returns the address of a function in /proc/kallsyms.
func kallsym(name string) (uintptr, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && fs[2] == name && (fs[1] == "T" || fs[1] == "t") {
			a, err := strconv.ParseUint(fs[0], 16, 64)
			if err != nil || a == 0 {
				return 0, fmt.Errorf("kallsyms: no address for %s (kptr_restrict?)", name)
			}
			return uintptr(a), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("kallsyms: no function %s", name)
}
