package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// workloadEnv makes the test binary, run as a command to trace, do one of
// the controlled workloads below and exit, instead of running tests.
const workloadEnv = "GTRACE_TEST_WORKLOAD"

// openFlags are the flags of the open workload's calls, which nothing
// else in the test binary uses.
const openFlags = syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY

// argsEnv holds the arguments of the "main" workload as a JSON array,
// for arguments with blanks.
const argsEnv = "GTRACE_TEST_ARGS"

// readyEnv names a file that the "main" workload creates once it handles
// SIGINT and SIGTERM, for tests that signal it.
const readyEnv = "GTRACE_TEST_READY"

// pidFileEnv names the file where the "nanosleep" workload writes its pid.
const pidFileEnv = "GTRACE_TEST_PIDFILE"

// goOnEnv names the file that the "getppid-wait" workload waits for
// before it exits.
const goOnEnv = "GTRACE_TEST_GO_ON"

// noPID is a pid above any pid_max, which only the tests' getpgid calls
// ask for.
const noPID = 0x7ffffff0

// workloadFD is the descriptor the write workload writes to (/dev/null).
const workloadFD = 100

func TestMain(m *testing.M) {
	if w := os.Getenv(workloadEnv); w != "" {
		os.Exit(runWorkload(w))
	}
	os.Exit(m.Run())
}

// runWorkload runs "getppid N" (N getppid calls), "getppid-sleep N MS"
// (then sleeps MS milliseconds), "getpgid-wait N" (N getpgid calls
// for noPID, then waits for goOnEnv's file), "getpgid-cpus N" (N getpgid
// calls for noPID on each CPU), "write N" (writes of 1..N bytes to fd
// 100), "write-getppid N" (each write followed by a getppid), "lines N" (N numbered lines to fd 1 and to fd 2, both
// /dev/null), "nanosleep N" (N sleeps of 1 µs), "sleeps N MS" (N sleeps of MS ms),
// "signals N" (the first N signals of signalOrder, ignored, sent to itself:
// hist_snapshot_live_test.go), "exec PROGRAM N", "exit
// N", the process trees of --follow (follow_live_test.go),
// "filter-matrix CPU" (filter_matrix_live_test.go) or "main ARGS..."
// (gtrace itself, as main.go runs it; the arguments are those of argsEnv
// if it is set).
func runWorkload(w string) int {
	fields := strings.Fields(w)
	if fields[0] == "main" {
		// As main.go runs it.
		args := fields[1:]
		if a := os.Getenv(argsEnv); a != "" {
			if err := json.Unmarshal([]byte(a), &args); err != nil {
				fmt.Fprintf(os.Stderr, "bad %s %q: %v\n", argsEnv, a, err)
				return 99
			}
		}
		ctx, stop := NotifyContext(context.Background())
		defer stop()
		if r := os.Getenv(readyEnv); r != "" {
			if err := os.WriteFile(r, nil, 0o600); err != nil {
				return 99
			}
		}
		return Main(ctx, args, os.Stdout, os.Stderr)
	}
	if code, ok := runFollowWorkload(fields); ok {
		return code
	}
	if fields[0] == "filter-matrix" {
		return filterMatrixWorkload(fields[1:])
	}
	name := fields[0]
	n, err := strconv.Atoi(fields[len(fields)-1])
	if len(fields) == 3 && name != "exec" {
		n, err = strconv.Atoi(fields[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bad workload %q\n", w)
		return 99
	}
	switch name {
	case "getppid", "getppid-sleep":
		for i := 0; i < n; i++ {
			syscall.Getppid()
		}
		if len(fields) == 3 {
			ms, _ := strconv.Atoi(fields[2])
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
	case "getppid-getuid":
		// N getppid calls, then as many getuid calls as the third word says.
		m, _ := strconv.Atoi(fields[2])
		for range n {
			syscall.Getppid()
		}
		for range m {
			syscall.Getuid()
		}
	case "write", "write-getppid", "write-paced":
		// N writes of 1..N bytes to fd 100; write-getppid: each followed
		// by a getppid; write-paced: from CPU 0 only, 2ms apart every 50,
		// so that a small ring keeps up.
		if name == "write-paced" {
			var mask [16]uint64
			mask[0] = 1
			if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, uintptr(len(mask)*8), uintptr(unsafe.Pointer(&mask[0]))); e != 0 {
				return 92
			}
		}
		f, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
		if err != nil {
			return 98
		}
		if err := syscall.Dup3(int(f.Fd()), workloadFD, 0); err != nil {
			return 97
		}
		buf := make([]byte, n)
		for i := 1; i <= n; i++ {
			if _, err := syscall.Write(workloadFD, buf[:i]); err != nil {
				return 96
			}
			if name == "write-getppid" {
				syscall.Getppid()
			}
			if name == "write-paced" && i%50 == 0 {
				time.Sleep(2 * time.Millisecond)
			}
		}
	case "getpgid-wait":
		// N getpgid calls for the pid noPID, then no more until
		// goOnEnv's file exists (at most a minute).
		for i := 0; i < n; i++ {
			syscall.Getpgid(noPID)
		}
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(os.Getenv(goOnEnv)); err == nil {
				return 0
			}
		}
		return 93
	case "getpgid-cpus":
		// N getpgid calls for noPID on each CPU, from a thread pinned
		// to it, all threads at once.
		var wg sync.WaitGroup
		start := make(chan struct{})
		for cpu := range runtime.NumCPU() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				var mask [16]uint64
				mask[cpu/64] = 1 << (cpu % 64)
				syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, uintptr(len(mask)*8), uintptr(unsafe.Pointer(&mask[0])))
				<-start
				for i := 0; i < n; i++ {
					syscall.Getpgid(noPID)
				}
			}()
		}
		close(start)
		wg.Wait()
	case "lines":
		// lines N: "line I\n" to fd 1 and "errr I\n" to fd 2 for I in
		// 1..N, both /dev/null: the first nine of each are 7 bytes.
		f, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
		if err != nil {
			return 98
		}
		for _, fd := range []int{1, 2} {
			if err := syscall.Dup3(int(f.Fd()), fd, 0); err != nil {
				return 97
			}
		}
		for i := 1; i <= n; i++ {
			if _, err := syscall.Write(1, []byte(fmt.Sprintf("line %d\n", i))); err != nil {
				return 96
			}
			if _, err := syscall.Write(2, []byte(fmt.Sprintf("errr %d\n", i))); err != nil {
				return 96
			}
		}
	case "nanosleep":
		// Each sleep arms an hrtimer whose function is hrtimer_wakeup;
		// so do the Go runtime's own sleeps, on other threads: the
		// process's pid, that of its main thread, goes to the file
		// that pidFileEnv names.
		if err := os.WriteFile(os.Getenv(pidFileEnv), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return 94
		}
		for i := 0; i < n; i++ {
			syscall.Nanosleep(&syscall.Timespec{Nsec: 1000}, nil)
		}
	case "sleeps":
		// sleeps N MS: N nanosleeps of MS milliseconds, the pid to the
		// file pidFileEnv names first.
		if err := os.WriteFile(os.Getenv(pidFileEnv), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return 94
		}
		ms, _ := strconv.Atoi(fields[2])
		for range n {
			syscall.Nanosleep(&syscall.Timespec{Nsec: int64(ms) * 1e6}, nil)
		}
	case "open":
		// open N: open /dev/null N times and / 2N times, with the flags
		// openFlags, each time from a new copy of the name.
		for i := 0; i < 3*n; i++ {
			name := "/"
			if i < n {
				name = "/dev/null"
			}
			fd, err := syscall.Open(name, openFlags, 0)
			if err != nil {
				return 94
			}
			syscall.Close(fd)
		}
	case "signals":
		return signalsWorkload(n)
	case "exit":
		return n
	case "exec":
		// exec PROGRAM N: run PROGRAM (an absolute path) N times.
		for i := 0; i < n; i++ {
			if err := exec.Command(fields[1]).Run(); err != nil {
				return 95
			}
		}
	}
	return 0
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of gtrace
// and of the traced command's output copier (bytes.Buffer.ReadFrom would
// truncate what gtrace writes meanwhile).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runLimit bounds a run of gtrace in a test: a live command that was
// meant to end (its workload, --duration) or to be refused, and runs on,
// is stopped as by Ctrl-C and fails its test rather than the package's
// time limit.
const runLimit = 3 * time.Minute

// run runs gtrace with args and returns its output and exit status.
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	code = Main(ctx, args, &out, &errb)
	if ctx.Err() != nil {
		t.Errorf("gtrace %q ran for %v: stopped", args, runLimit)
	}
	return out.String(), errb.String(), code
}

// workload returns the "-- CMD" arguments that run a workload.
func workload(t *testing.T, w string) []string {
	t.Helper()
	t.Setenv(workloadEnv, w)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--", self}
}

// gtraceCommand returns the command that runs gtrace with args, as
// main.go runs it.
func gtraceCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(self)
	c.Env = append(os.Environ(), workloadEnv+"=main", argsEnv+"="+string(a))
	return c
}

// runGtraceCmd runs c (from gtraceCommand) with its stdout and stderr
// collected, and returns them and its exit status.
func runGtraceCmd(t *testing.T, c *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}
