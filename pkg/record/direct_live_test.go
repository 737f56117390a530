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
// N getppid calls with the arguments 1..6.
const workloadEnv = "GTRACE_RECORD_WORKLOAD"

func TestMain(m *testing.M) {
	if w := os.Getenv(workloadEnv); w != "" {
		var n int
		if _, err := fmt.Sscanf(w, "getppid %d", &n); err != nil {
			os.Exit(2)
		}
		runtime.LockOSThread()
		for range n {
			unix.RawSyscall6(unix.SYS_GETPPID, 1, 2, 3, 4, 5, 6)
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

// recordHelper records raw_syscalls:sys_enter and sys_exit of the command
// argv, started held and let go once the programs are attached, and
// returns the records of its system calls number nr, common_pid zeroed,
// as hex strings in a stable order.
func recordHelper(t *testing.T, fs *tracefs.FS, argv []string, nr int64, classic bool) []string {
	t.Helper()
	held, err := launch.Start(argv, nil, io.Discard, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(fs, &Options{
		Events:  []EventSpec{{Pattern: "raw_syscalls:sys_enter"}, {Pattern: "raw_syscalls:sys_exit"}},
		PIDs:    []int{held.Pid()},
		Classic: classic,
	})
	if err != nil {
		held.Kill()
		t.Fatal(err)
	}
	if got := p.direct(); got == classic {
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
		if len(r) < 16 || int64(binary.LittleEndian.Uint64(r[8:])) != nr {
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

// TestPrivilegedDirectMatchesClassic records a helper that makes exactly n
// getppid calls with the arguments 1..6, once with the records built on
// the raw tracepoints and once on the classic ones, for a 64-bit helper
// and a 32-bit one (i386 ABI: other registers): both ways give the same
// bytes, n sys_enter records with those arguments and n sys_exit records
// returning the parent's pid.
func TestPrivilegedDirectMatchesClassic(t *testing.T) {
	testutil.RequirePrivileged(t)
	if runtime.GOARCH != "amd64" || !probe.HaveKernelBTF() {
		t.Skipf("records are built on raw tracepoints only on amd64 with kernel BTF (here %s, BTF %v)", runtime.GOARCH, probe.HaveKernelBTF())
	}
	fs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
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
	direct := recordHelper(t, fs, argv, nr, false)
	classic := recordHelper(t, fs, argv, nr, true)
	if !slices.Equal(direct, classic) {
		t.Errorf("records built on raw tracepoints differ from the classic ones:\n%s", testutil.FirstDiff(fmt.Sprint(direct), fmt.Sprint(classic)))
	}
	le := binary.LittleEndian
	enter := make([]byte, 64)
	le.PutUint16(enter, uint16(formatID(t, fs, "sys_enter")))
	le.PutUint64(enter[8:], uint64(nr))
	for i := range 6 {
		le.PutUint64(enter[16+8*i:], uint64(i+1))
	}
	exit := make([]byte, 24)
	le.PutUint16(exit, uint16(formatID(t, fs, "sys_exit")))
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

// formatID returns the ID of a raw_syscalls event.
func formatID(t *testing.T, fs *tracefs.FS, name string) int {
	ev, err := loadEvent(fs, tracefs.Event{System: "raw_syscalls", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return ev.Format.ID
}

// buildHelper builds the helper program testdata/name for goarch and
// checks that the kernel runs it and its 32-bit system calls
// (CONFIG_IA32_EMULATION).
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
	var ws syscall.WaitStatus
	err = exec.Command(bin, "1").Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws, _ = ee.Sys().(syscall.WaitStatus)
	}
	switch {
	case errors.Is(err, syscall.ENOEXEC) || (ws.Signaled() && ws.Signal() == syscall.SIGSEGV):
		t.Skipf("the kernel does not run 32-bit system calls (CONFIG_IA32_EMULATION): %v", err)
	case err != nil:
		t.Fatalf("helper %s: %v", name, err)
	}
	return bin
}
