package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
)

// The --follow workloads: a process tree whose every process makes a
// known number of getppid calls, all different, forked after gtrace has
// attached (the root is held at its exec, or waits for a file):
//
//	follow N              N calls; forks follow-mid N+1, waits for the
//	                      whole tree (a pipe that every process holds)
//	  follow-mid N+1      N+1 calls; forks follow-leaf N+2 and waits;
//	                      forks follow-orphan N+3 and exits at once
//	    follow-leaf N+2   N+2 calls
//	    follow-orphan N+3 waits until its parent has exited (it is
//	                      reparented), then N+3 calls, forks
//	                      follow-leaf N+4 and waits
//	      follow-leaf N+4 N+4 calls
//
// 5N+10 calls in all, in five processes. follow-wait FILE N runs follow N
// once FILE exists; follow-outsider makes getppid calls until killed.

// followParentEnv is the pid of follow-orphan's parent, which it waits
// to see gone.
const followParentEnv = "GTRACE_TEST_FOLLOW_PARENT"

// followTreeFD is the descriptor of the pipe's write end that every
// process of the tree holds: the root reads to its end.
const followTreeFD = 3

// runFollowWorkload runs a --follow workload; ok is false for another
// workload.
func runFollowWorkload(fields []string) (code int, ok bool) {
	if len(fields) < 2 && fields[0] != "follow-outsider" {
		return 0, false
	}
	switch fields[0] {
	case "follow", "follow-mid", "follow-leaf", "follow-orphan", "follow-wait", "follow-outsider":
	default:
		return 0, false
	}
	if fields[0] == "follow-outsider" {
		for {
			syscall.Getppid()
			time.Sleep(time.Millisecond)
		}
	}
	n, err := strconv.Atoi(fields[len(fields)-1])
	if err != nil {
		return 99, true
	}
	calls := func(n int) {
		for range n {
			syscall.Getppid()
		}
	}
	switch fields[0] {
	case "follow-wait":
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(fields[1]); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return 90, true
			}
		}
		return followRoot(n), true
	case "follow":
		return followRoot(n), true
	case "follow-leaf":
		calls(n)
	case "follow-mid":
		calls(n)
		if err := followChild(fmt.Sprintf("follow-leaf %d", n+1), true); err != nil {
			return 91, true
		}
		if err := followChild(fmt.Sprintf("follow-orphan %d", n+2), false); err != nil {
			return 92, true
		}
	case "follow-orphan":
		parent := os.Getenv(followParentEnv)
		for deadline := time.Now().Add(time.Minute); parentPID() == parent; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				return 93, true
			}
		}
		calls(n)
		if err := followChild(fmt.Sprintf("follow-leaf %d", n+1), true); err != nil {
			return 94, true
		}
	}
	return 0, true
}

// followRoot makes n calls, starts follow-mid n+1 and waits until every
// process of the tree has exited.
func followRoot(n int) int {
	r, w, err := os.Pipe()
	if err != nil {
		return 95
	}
	for range n {
		syscall.Getppid()
	}
	c := followCmd(fmt.Sprintf("follow-mid %d", n+1))
	c.ExtraFiles = []*os.File{w}
	if err := c.Start(); err != nil {
		return 96
	}
	w.Close()
	if err := c.Wait(); err != nil {
		return 97
	}
	// EOF: the orphan and its child have exited too.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return 98
	}
	return 0
}

// followChild starts a workload that inherits the tree's pipe, and waits
// for it if wait.
func followChild(w string, wait bool) error {
	c := followCmd(w)
	c.ExtraFiles = []*os.File{os.NewFile(followTreeFD, "tree")}
	c.Env = append(c.Env, followParentEnv+"="+strconv.Itoa(os.Getpid()))
	if err := c.Start(); err != nil {
		return err
	}
	if wait {
		return c.Wait()
	}
	return nil
}

// followCmd returns the command that runs the test binary as workload w.
func followCmd(w string) *exec.Cmd {
	self, _ := os.Executable()
	c := exec.Command(self)
	c.Env = append(os.Environ(), workloadEnv+"="+w)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	return c
}

// parentPID reads the parent's pid from /proc/self/stat: not with
// getppid, which the tests count.
func parentPID() string {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return ""
	}
	return fields[1]
}

// startOutsider starts a process, not descended from any traced one,
// that makes getppid calls while the test runs.
func startOutsider(t *testing.T) {
	t.Helper()
	c := followCmd("follow-outsider")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
}

// followCounts are the getppid calls of the processes of follow N.
func followCounts(n int) []int { return []int{n, n + 1, n + 2, n + 3, n + 4} }

// TestPrivilegedRecordFollow records the getppid calls of a process tree
// with --follow -- CMD while an outsider makes the same calls: the report
// has exactly the tree's, from five processes. syscalls:* puts the gate
// in the syscall group programs (on raw tracepoints, with kernel BTF).
func TestPrivilegedRecordFollow(t *testing.T) {
	testutil.RequirePrivileged(t)
	startOutsider(t)
	for _, event := range []string{"syscalls:sys_enter_getppid", "syscalls:*"} {
		t.Run(event, func(t *testing.T) {
			const n = 300
			file := filepath.Join(t.TempDir(), "trace.dat")
			args := append([]string{"-e", event, "--follow", "-o", file}, workload(t, fmt.Sprintf("follow %d", n))...)
			errOut, code := recordLive(t, args...)
			if code != 0 {
				t.Fatalf("gtrace record --follow exit %d, stderr:\n%s", code, errOut)
			}
			report, errOut, code := run(t, "report", "-i", file)
			if code != 0 {
				t.Fatalf("gtrace report exit %d, stderr:\n%s", code, errOut)
			}
			lines := regexp.MustCompile(`(?m)^ *\S+-(\d+) +\[\d+\] +\d+\.\d+: sys_enter_getppid:.*$`).FindAllStringSubmatch(report, -1)
			perPID := map[string]int{}
			for _, l := range lines {
				perPID[l[1]]++
			}
			if got := sortedCounts(perPID); fmt.Sprint(got) != fmt.Sprint(followCounts(n)) {
				t.Errorf("getppid calls per process %v (%v), want %v; report starts:\n%s", got, perPID, followCounts(n), report[:min(len(report), 2000)])
			}
		})
	}
}

// TestPrivilegedFilterFollow streams the getppid calls of the same tree
// with gtrace filter --follow: exactly the tree's, per process.
func TestPrivilegedFilterFollow(t *testing.T) {
	testutil.RequirePrivileged(t)
	startOutsider(t)
	const n = 250
	args := append([]string{"filter", "-e", "syscalls:sys_enter_getppid", "--follow"}, workload(t, fmt.Sprintf("follow %d", n))...)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gtrace filter --follow exit %d, stderr:\n%s", code, errOut)
	}
	lines := regexp.MustCompile(`(?m)^ *\S+-(\d+) +\[\d+\] +\d+\.\d+: sys_enter_getppid:.*$`).FindAllStringSubmatch(out, -1)
	perPID := map[string]int{}
	for _, l := range lines {
		perPID[l[1]]++
	}
	if got := sortedCounts(perPID); fmt.Sprint(got) != fmt.Sprint(followCounts(n)) {
		t.Errorf("getppid calls per process %v (%v), want %v; stream starts:\n%s", got, perPID, followCounts(n), out[:min(len(out), 2000)])
	}
}

// TestPrivilegedHistFollow counts the getppid calls of the same tree by
// common_pid: each process of the tree with its own count, and nothing
// of the outsider's. raw_syscalls:sys_enter puts the gate in a program on
// the raw tracepoint, with kernel BTF.
func TestPrivilegedHistFollow(t *testing.T) {
	testutil.RequirePrivileged(t)
	startOutsider(t)
	for _, hist := range [][]string{
		{"-e", "syscalls:sys_enter_getppid", "-k", "common_pid"},
		{"-e", "raw_syscalls:sys_enter", "-k", "common_pid", "-f", "id == 110"},
	} {
		t.Run(hist[1], func(t *testing.T) {
			const n = 200
			args := append(append(append([]string{"hist"}, hist...), "--follow"), workload(t, fmt.Sprintf("follow %d", n))...)
			out, errOut, code := run(t, args...)
			if code != 0 {
				t.Fatalf("gtrace hist --follow exit %d, stderr:\n%s", code, errOut)
			}
			checkFollowHist(t, out, n)
		})
	}
}

// TestPrivilegedHistFollowPID follows a running process given by -P: it
// forks its tree only once gtrace has attached (its first print).
func TestPrivilegedHistFollowPID(t *testing.T) {
	testutil.RequirePrivileged(t)
	startOutsider(t)
	const n = 100
	start := filepath.Join(t.TempDir(), "start")
	root := followCmd(fmt.Sprintf("follow-wait %s %d", start, n))
	if err := root.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- root.Wait() }()
	t.Cleanup(func() { _ = root.Process.Kill() })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &firstWrite{ready: make(chan struct{})}
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"hist", "-e", "syscalls:sys_enter_getppid", "-k", "common_pid", "--interval", "20ms",
			"-P", strconv.Itoa(root.Process.Pid), "--follow"}, out, &errb)
	}()
	select {
	case <-out.ready:
	case code := <-done:
		t.Fatalf("gtrace hist -P --follow exit %d before its first print, stderr:\n%s", code, errb.String())
	case <-time.After(time.Minute):
		t.Fatal("gtrace hist -P --follow: no print within a minute")
	}
	if err := os.WriteFile(start, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the followed process: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the followed process did not exit within a minute")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("gtrace hist -P --follow exit %d, stderr:\n%s", code, errb.String())
	}
	all := out.String()
	checkFollowHist(t, all[strings.LastIndex(all, "# event histogram"):], n)
}

// checkFollowHist checks a hist of getppid calls by common_pid: the five
// processes of follow n, each with its count.
func checkFollowHist(t *testing.T, out string, n int) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\{ common_pid: +(\d+) \} hitcount: +(\d+)$`).FindAllStringSubmatch(out, -1)
	perPID := map[string]int{}
	for _, l := range m {
		perPID[l[1]], _ = strconv.Atoi(l[2])
	}
	if got := sortedCounts(perPID); fmt.Sprint(got) != fmt.Sprint(followCounts(n)) {
		t.Errorf("hitcounts %v, want %v:\n%s", got, followCounts(n), out)
	}
}

func sortedCounts(m map[string]int) []int {
	var c []int
	for _, n := range m {
		c = append(c, n)
	}
	sort.Ints(c)
	return c
}

// firstWrite is a writer that closes ready at its first write.
type firstWrite struct {
	syncBuffer
	once  sync.Once
	ready chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	w.once.Do(func() { close(w.ready) })
	return n, err
}

// TestPrivilegedFollowDryRun: --dry-run of record and hist with --follow
// lists the follow programs and a gate that looks the map up.
func TestPrivilegedFollowDryRun(t *testing.T) {
	testutil.RequirePrivileged(t)
	for _, args := range [][]string{
		{"record", "-e", "syscalls:sys_enter_getppid", "-e", "sched:sched_switch", "--follow", "--dry-run", "-o", filepath.Join(t.TempDir(), "x.dat"), "--", "true"},
		{"hist", "-e", "sched:sched_switch", "-k", "prev_pid", "--follow", "--dry-run", "-P", "1"},
	} {
		out, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("gtrace %q: exit %d, stderr:\n%s", args, code, errOut)
		}
		who := "the command"
		if args[0] == "hist" {
			who = "processes 1"
		}
		for _, want := range []string{
			"# follow: " + who + ", and every process that a followed one forks from then on (gtrace_fork, gtrace_free)\n",
			"gtrace_fork (TracePoint, ", "gtrace_free (TracePoint, ",
			"; followed processes only\n", "LoadMapPtr dst: r1 fd: 0 <gtrace_follow>",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("gtrace %q: no %q in:\n%s", args, want, out)
			}
		}
	}
}
