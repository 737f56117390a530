package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/launch"
	"github.com/gtrace/gtrace/pkg/probe"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// workloadEnv makes the test binary the traced helper: "getppid N" makes
// N getppid calls with the arguments 1..6; "close N" makes N getppid calls
// and N close calls of the bad descriptors closeFD+1..closeFD+N.
const workloadEnv = "GTRACE_RECORD_WORKLOAD"

// closeFD is where the descriptors that "close N" closes start.
const closeFD = 100000

// init, in the helper, locks the main goroutine to the startup thread,
// whose tid is the process's pid: init functions run on that thread, and
// a lock taken there keeps main on it. Locked only in TestMain, main could
// already have moved to another thread, whose system calls carry another
// tid (common_pid) than the helper's pid that the tests look for.
func init() {
	if os.Getenv(workloadEnv) != "" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if w := os.Getenv(workloadEnv); w != "" {
		var mode string
		var n int
		if _, err := fmt.Sscanf(w, "%s %d", &mode, &n); err != nil {
			os.Exit(2)
		}
		if unix.Gettid() != os.Getpid() {
			fmt.Fprintf(os.Stderr, "helper runs on thread %d, not on the main thread %d\n", unix.Gettid(), os.Getpid())
			os.Exit(3)
		}
		for i := range n {
			switch mode {
			case "getppid":
				unix.RawSyscall6(unix.SYS_GETPPID, 1, 2, 3, 4, 5, 6)
			case "close":
				unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
				unix.RawSyscall(unix.SYS_CLOSE, uintptr(closeFD+i+1), 0, 0)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// memOutput keeps a recording's records in memory.
type memOutput struct {
	mu   sync.Mutex
	recs [][]byte
}

type memSink struct{ o *memOutput }

func (o *memOutput) CPU(int) PageSink                    { return memSink{o} }
func (o *memOutput) Finish(*Stats, map[int]string) error { return nil }
func (o *memOutput) Abort()                              {}

func (s memSink) Add(_ uint64, p []byte) error {
	s.o.mu.Lock()
	s.o.recs = append(s.o.recs, slices.Clone(p))
	s.o.mu.Unlock()
	return nil
}
func (s memSink) Lost(uint64)       {}
func (s memSink) FlushPages() error { return nil }
func (s memSink) Flush() error      { return nil }

// recordHelper records events of the command argv, started held and let
// go once the programs are attached, and returns the records that keep
// accepts, common_pid zeroed, as hex strings in a stable order.
func recordHelper(t *testing.T, fs *tracefs.FS, argv []string, events []string, classic bool, keep func(r []byte) bool) []string {
	t.Helper()
	held, err := launch.Start(argv, nil, io.Discard, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var specs []EventSpec
	for _, e := range events {
		specs = append(specs, EventSpec{Pattern: e})
	}
	p, err := NewPlan(fs, &Options{Events: specs, PIDs: []int{held.Pid()}, Classic: classic})
	if err != nil {
		held.Kill()
		t.Fatal(err)
	}
	if got := p.direct(); got && classic {
		held.Kill()
		t.Fatalf("Classic: %v, but the plan builds records on raw tracepoints: %v", classic, got)
	}
	out := &memOutput{}
	s, err := Start(p, out, StartOptions{})
	if err != nil {
		held.Kill()
		t.Fatal(err)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if code := <-held.Done(); code != 0 {
		t.Fatalf("%s exited with %d", argv[0], code)
	}
	st, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if st.Lost() != 0 {
		t.Errorf("%d events lost", st.Lost())
	}
	var recs []string
	for _, r := range out.recs {
		if !keep(r) {
			continue
		}
		if pid := binary.LittleEndian.Uint32(r[4:]); int(pid) != held.Pid() {
			t.Errorf("record of pid %d, want only the helper's %d", pid, held.Pid())
		}
		binary.LittleEndian.PutUint32(r[4:], 0)
		recs = append(recs, fmt.Sprintf("%x", r))
	}
	slices.Sort(recs)
	return recs
}

// rawSyscalls are the events of raw_syscalls.
var rawSyscalls = []string{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"}

// idIs keeps raw_syscalls records of system call nr.
func idIs(nr int64) func(r []byte) bool {
	return func(r []byte) bool { return len(r) >= 16 && int64(binary.LittleEndian.Uint64(r[8:])) == nr }
}

// directSetup skips a test of the programs on raw tracepoints where there
// are none, and returns tracefs and the test binary, the helper.
func directSetup(t *testing.T) (*tracefs.FS, string) {
	t.Helper()
	testutil.RequirePrivileged(t)
	if runtime.GOARCH != "amd64" || !probe.HaveKernelBTF() {
		t.Skipf("records are built on raw tracepoints only on amd64 with kernel BTF (here %s, BTF %v)", runtime.GOARCH, probe.HaveKernelBTF())
	}
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fs, self
}

// TestPrivilegedDirectMatchesClassic records a helper that makes exactly n
// getppid calls with the arguments 1..6, once with the records built on
// the raw tracepoints and once on the classic ones, for a 64-bit helper
// and a 32-bit one (i386 ABI: other registers): both ways give the same
// bytes, n sys_enter records with those arguments and n sys_exit records
// returning the parent's pid.
func TestPrivilegedDirectMatchesClassic(t *testing.T) {
	fs, self := directSetup(t)
	const n = 3000
	t.Run("amd64", func(t *testing.T) {
		t.Setenv(workloadEnv, fmt.Sprintf("getppid %d", n))
		checkDirect(t, fs, []string{self}, unix.SYS_GETPPID, n)
	})
	t.Run("386", func(t *testing.T) {
		bin := buildHelper(t, "getppid386", "386")
		checkDirect(t, fs, []string{bin, strconv.Itoa(n)}, 64, n)
	})
	// A 64-bit process's int 0x80 takes the i386 registers too: the
	// kernel tells it by TS_COMPAT, not by the code segment.
	t.Run("int0x80", func(t *testing.T) {
		bin := buildHelper(t, "int80", "amd64")
		checkDirect(t, fs, []string{bin, strconv.Itoa(n)}, 64, n)
	})
}

// checkDirect records argv both ways and checks the records of system
// call nr.
func checkDirect(t *testing.T, fs *tracefs.FS, argv []string, nr int64, n int) {
	direct := recordHelper(t, fs, argv, rawSyscalls, false, idIs(nr))
	classic := recordHelper(t, fs, argv, rawSyscalls, true, idIs(nr))
	if !slices.Equal(direct, classic) {
		t.Errorf("records built on raw tracepoints differ from the classic ones:\n%s", testutil.FirstDiff(fmt.Sprint(direct), fmt.Sprint(classic)))
	}
	le := binary.LittleEndian
	enter := make([]byte, 64)
	le.PutUint16(enter, uint16(formatID(t, fs, "raw_syscalls", "sys_enter")))
	le.PutUint64(enter[8:], uint64(nr))
	for i := range 6 {
		le.PutUint64(enter[16+8*i:], uint64(i+1))
	}
	exit := make([]byte, 24)
	le.PutUint16(exit, uint16(formatID(t, fs, "raw_syscalls", "sys_exit")))
	le.PutUint64(exit[8:], uint64(nr))
	le.PutUint64(exit[16:], uint64(os.Getpid()))
	var want []string
	for range n {
		want = append(want, fmt.Sprintf("%x", enter), fmt.Sprintf("%x", exit))
	}
	slices.Sort(want)
	if !slices.Equal(direct, want) {
		t.Errorf("%d records of system call %d, want %d sys_enter with arguments 1..6 and %d sys_exit returning %d:\n%s",
			len(direct), nr, n, n, os.Getpid(), testutil.FirstDiff(fmt.Sprint(direct), fmt.Sprint(want)))
	}
}

// formatID returns the ID of an event.
func formatID(t *testing.T, fs *tracefs.FS, system, name string) int {
	ev, err := loadEvent(fs, tracefs.Event{System: system, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return ev.Format.ID
}

// noIA32 is the exit status of testdata/int80 when int 0x80 faults.
const noIA32 = 3

// buildHelper builds the helper program testdata/name for goarch and
// checks that the kernel runs it and its 32-bit system calls: it skips the
// test when it does not (a kernel built without CONFIG_IA32_EMULATION or
// booted with ia32_emulation=0, as some VMs are). That is a feature the
// machine lacks, not BPF, so GTRACE_REQUIRE_BPF=1 does not fail the skip:
// it is the one skip CI allows.
func buildHelper(t *testing.T, name, goarch string) string {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to build the helper %s", name)
	}
	bin := filepath.Join(t.TempDir(), name)
	c := exec.Command(goCmd, "build", "-o", bin, ".")
	c.Dir = filepath.Join("testdata", name)
	c.Env = append(os.Environ(), "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("build the helper %s: %v\n%s", name, err, out)
	}
	// One call, the helper's first: a kernel without 32-bit system
	// calls refuses to exec a 386 binary (ENOEXEC), and answers int 0x80
	// with a fault, which testdata/int80 reports with status noIA32 (a
	// fault the Go runtime takes itself exits with 2 and says SIGSEGV).
	var ws syscall.WaitStatus
	probe := exec.Command(bin, "1")
	var stderr strings.Builder
	probe.Stderr = &stderr
	err = probe.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws, _ = ee.Sys().(syscall.WaitStatus)
	}
	faulted := ws.Signaled() && ws.Signal() == syscall.SIGSEGV ||
		ws.Exited() && ws.ExitStatus() == noIA32 ||
		ws.Exited() && ws.ExitStatus() == 2 && strings.Contains(stderr.String(), "SIGSEGV")
	switch {
	case errors.Is(err, syscall.ENOEXEC) || faulted:
		why := err.Error()
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			why += ": " + msg
		}
		t.Skipf("this machine runs no 32-bit code (a kernel without CONFIG_IA32_EMULATION, or booted with ia32_emulation=0): "+
			"a missing CPU/kernel feature, the one skip that GTRACE_REQUIRE_BPF=1 allows (helper %s: %s)", name, why)
	case err != nil:
		t.Fatalf("helper %s: %v\n%s", name, err, stderr.String())
	}
	return bin
}

// TestPrivilegedSyscallGroupMatchesClassic records syscalls events of a
// helper that makes exactly n getppid calls and n close calls of bad
// descriptors, once with the syscall group programs on the raw tracepoints
// and once with a classic program per event: both ways give the same
// bytes (but for the 4 bytes of padding after __syscall_nr, which the
// kernel leaves as it finds them and the groups zero), n records of each
// event with the kernel's fields. 32-bit system calls, of a 32-bit process
// or through int 0x80, have no syscalls events: both ways record none.
func TestPrivilegedSyscallGroupMatchesClassic(t *testing.T) {
	fs, self := directSetup(t)
	const n = 2000
	le := binary.LittleEndian
	// Enough events for the groups (bpfgen's minGroup): the helper's two
	// calls, and calls it does not make.
	var events []string
	for _, call := range []string{"getppid", "close", "semget", "msgget", "shmget", "sysinfo", "getpgid", "getsid"} {
		events = append(events, "syscalls:sys_enter_"+call, "syscalls:sys_exit_"+call)
	}
	ids := map[uint16]string{}
	for _, e := range events {
		name := strings.TrimPrefix(e, "syscalls:")
		ids[uint16(formatID(t, fs, "syscalls", name))] = name
	}
	keep := helperCalls(ids)
	pad := func(recs []string) []string {
		out := slices.Clone(recs)
		for i, r := range out {
			if len(r) > 32 {
				out[i] = r[:24] + "00000000" + r[32:] // bytes 12-15, in hex
			}
		}
		slices.Sort(out)
		return out
	}
	t.Setenv(workloadEnv, fmt.Sprintf("close %d", n))
	direct := recordHelper(t, fs, []string{self}, events, false, keep)
	classic := pad(recordHelper(t, fs, []string{self}, events, true, keep))
	if !slices.Equal(direct, classic) {
		t.Errorf("syscall group records differ from the classic ones:\n%s", testutil.FirstDiff(strings.Join(direct, "\n"), strings.Join(classic, "\n")))
	}
	rec := func(name string, size int, fields ...uint64) string {
		b := make([]byte, size)
		le.PutUint16(b, uint16(formatID(t, fs, "syscalls", name)))
		for i, v := range fields {
			if i == 0 {
				le.PutUint32(b[8:], uint32(v)) // __syscall_nr
				continue
			}
			le.PutUint64(b[8+8*i:], v)
		}
		return fmt.Sprintf("%x", b)
	}
	ebadf := -int64(syscall.EBADF)
	var want []string
	for i := range n {
		want = append(want,
			rec("sys_enter_getppid", 12, unix.SYS_GETPPID),
			rec("sys_exit_getppid", 24, unix.SYS_GETPPID, uint64(os.Getpid())),
			rec("sys_enter_close", 24, unix.SYS_CLOSE, uint64(closeFD+i+1)),
			rec("sys_exit_close", 24, unix.SYS_CLOSE, uint64(ebadf)))
	}
	slices.Sort(want)
	if !slices.Equal(direct, want) {
		t.Errorf("%d records, want %d of each event:\n%s", len(direct), n, testutil.FirstDiff(strings.Join(direct, "\n"), strings.Join(want, "\n")))
	}

	// i386 getppid is 64, x86-64's semget: a 32-bit call taken for a
	// 64-bit one would show as semget (or as getppid, were the number
	// translated); the 64-bit Go runtime of the int 0x80 helper makes
	// other calls of its own.
	calls := func(r []byte) bool {
		nr := le.Uint32(r[8:])
		return nr == unix.SYS_SEMGET || nr == unix.SYS_GETPPID
	}
	for _, h := range []struct{ name, goarch string }{{"getppid386", "386"}, {"int80", "amd64"}} {
		t.Run(h.name, func(t *testing.T) {
			argv := []string{buildHelper(t, h.name, h.goarch), strconv.Itoa(n)}
			for _, classic := range []bool{false, true} {
				if recs := recordHelper(t, fs, argv, events, classic, calls); len(recs) != 0 {
					t.Errorf("classic %v: %d records of 32-bit system calls, want none: %s", classic, len(recs), recs[0])
				}
			}
		})
	}
}

// helperCalls keeps the records of the "close N" helper's own calls, by
// the event names of ids: every getppid; the close calls of the bad
// descriptors (the Go runtime closes good ones, which return 0).
func helperCalls(ids map[uint16]string) func(r []byte) bool {
	le := binary.LittleEndian
	return func(r []byte) bool {
		switch ids[le.Uint16(r)] {
		case "sys_enter_close":
			return le.Uint64(r[16:]) > closeFD
		case "sys_exit_close":
			return int64(le.Uint64(r[16:])) == -int64(syscall.EBADF)
		}
		return true
	}
}
