package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testtrace"
	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/live"
)

// stopWithin is how soon after a signal gtrace must have exited.
const stopWithin = 2 * time.Second

// signalSeedEnv, when set, is the seed of the signal tests' random
// moments, to repeat a run; each test logs the seed it used.
const signalSeedEnv = "GTRACE_SIGNAL_SEED"

// signalRand returns the random source of a signal test.
func signalRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(signalSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", signalSeedEnv, s, err)
		}
	}
	t.Logf("random moments from seed %d (%s=%d repeats them)", seed, signalSeedEnv, seed)
	return rand.New(rand.NewPCG(seed, seed))
}

// gtraceProc is gtrace running in a process of its own, as main.go runs
// it (the test binary's "main" workload), its output going to files.
type gtraceProc struct {
	args   []string
	c      *exec.Cmd
	done   chan struct{}
	stdout string // file names
	stderr string
	exited time.Time
	sent   bool   // the signal was sent (the process may have exited just before)
	before func() // if set, called right before the signal is sent
}

// startGtrace starts gtrace with args, its output going to files in dir,
// and returns once it handles signals.
func startGtrace(t *testing.T, dir string, args ...string) *gtraceProc {
	t.Helper()
	out, err := os.CreateTemp(dir, "stdout-")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errf, err := os.CreateTemp(dir, "stderr-")
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	p := &gtraceProc{args: args, done: make(chan struct{}), stdout: out.Name(), stderr: errf.Name()}
	p.c = gtraceCommand(t, args...)
	ready := out.Name() + ".ready"
	p.c.Env = append(p.c.Env, readyEnv+"="+ready)
	p.c.Stdout, p.c.Stderr = out, errf
	if err := p.c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.c.Wait()
		p.exited = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.c.Process.Kill()
		<-p.done
	})
	// Signals are for gtrace, not for the Go runtime before main.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case <-p.done:
			return p
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gtrace %s: not started after a minute", p.name())
		}
	}
	return p
}

// signal sends sig after delay, if gtrace still runs, and waits for it
// to exit: it fails the test if that takes longer than stopWithin.
func (p *gtraceProc) signal(t *testing.T, sig syscall.Signal, delay time.Duration) {
	t.Helper()
	select {
	case <-p.done:
		return
	case <-time.After(delay):
	}
	if p.before != nil {
		p.before()
	}
	sent := time.Now()
	if err := p.c.Process.Signal(sig); err != nil {
		<-p.done // it exited meanwhile
		return
	}
	p.sent = true
	select {
	case <-p.done:
	case <-time.After(stopWithin):
		t.Errorf("gtrace %s: still running %v after %v", p.name(), stopWithin, sig)
		p.c.Process.Kill()
		<-p.done
		return
	}
	t.Logf("gtrace %s: %v after %v, exited %v later", p.name(), sig, delay.Round(time.Millisecond), p.exited.Sub(sent).Round(time.Millisecond))
	if took := p.exited.Sub(sent); took > stopWithin {
		t.Errorf("gtrace %s: exited %v after %v, want within %v", p.name(), took, sig, stopWithin)
	}
}

// wait waits for gtrace to exit, at most timeout.
func (p *gtraceProc) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Errorf("gtrace %s: still running after %v", p.name(), timeout)
		p.c.Process.Kill()
		<-p.done
	}
}

func (p *gtraceProc) name() string {
	s := strings.Join(p.args, " ")
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}

// code returns gtrace's exit status; it fails the test if a signal
// killed it.
func (p *gtraceProc) code(t *testing.T) int {
	t.Helper()
	ws := p.c.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Errorf("gtrace %s: killed by %v, want an exit status", p.name(), ws.Signal())
	}
	return p.c.ProcessState.ExitCode()
}

// output returns what gtrace wrote to stdout and stderr.
func (p *gtraceProc) output(t *testing.T) (stdout, stderr []byte) {
	t.Helper()
	stdout, err := os.ReadFile(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err = os.ReadFile(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	return stdout, stderr
}

// wantStatus checks that gtrace exited 128+N for the signal it got and
// reports true, or, if it may have finished before the signal came (a
// command that ends by itself), that it exited 0, and reports false.
func (p *gtraceProc) wantStatus(t *testing.T, sig syscall.Signal, mayFinish bool) (interrupted bool) {
	t.Helper()
	got := p.code(t)
	switch {
	case got == 128+int(sig) && p.sent:
		return true
	case got == 0 && (mayFinish || !p.sent):
		t.Logf("gtrace %s: finished before the signal", p.name())
		return false
	}
	_, stderr := p.output(t)
	t.Errorf("gtrace %s: exit status %d after %v, want %d; stderr:\n%s", p.name(), got, sig, 128+int(sig), stderr)
	return false
}

// wholeLines checks that out is empty or ends with a newline.
func wholeLines(t *testing.T, what string, out []byte) {
	t.Helper()
	if len(out) > 0 && out[len(out)-1] != '\n' {
		i := max(0, len(out)-80)
		t.Errorf("%s: output ends in the middle of a line: ...%q", what, out[i:])
	}
}

// TestSignalsFileCommands interrupts report (text, json, ndjson), hist -i
// and list -i with SIGINT and SIGTERM at random moments: each must exit
// within stopWithin of the signal, with status 128+N and complete output
// (a prefix of the uninterrupted report in whole lines, a valid JSON
// document, a hist with its totals).
func TestSignalsFileCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 70 MB trace.dat")
	}
	dir := t.TempDir()
	dat := filepath.Join(dir, "big.dat")
	testtrace.RepeatTrace(t, sample, dat, 10000) // 950,000 records
	rng := signalRand(t)

	// The uninterrupted report, and how long it takes: the signals come
	// within its first third.
	ref := startGtrace(t, dir, "report", dat)
	start := time.Now()
	ref.wait(t, 5*time.Minute)
	span := time.Since(start)
	full, stderr := ref.output(t)
	if code := ref.code(t); code != 0 || len(stderr) > 0 {
		t.Fatalf("gtrace report: exit %d, stderr:\n%s", code, stderr)
	}
	t.Logf("gtrace report of %d lines: %v", bytes.Count(full, []byte("\n")), span.Round(time.Millisecond))
	moment := func() time.Duration {
		return time.Duration(rng.Int64N(int64(max(span/3, 50*time.Millisecond))))
	}

	hist := []string{"hist", "-i", dat, "-k", "prev_comm,next_comm", "--vals", "prev_prio"}
	for i := range 4 { // four hists: each its own filter, as one event takes no hist twice
		hist = append(hist, "-e", "sched:sched_switch", "-f", fmt.Sprintf("prev_pid >= %d", i))
	}
	for _, tc := range []struct {
		name  string
		args  []string
		check func(t *testing.T, out []byte, interrupted bool)
	}{
		{"report", []string{"report", dat}, func(t *testing.T, out []byte, interrupted bool) {
			wholeLines(t, "report", out)
			if !interrupted && !bytes.Equal(out, full) {
				t.Errorf("report: exit 0 and %d bytes of output, want all %d", len(out), len(full))
			}
			if !bytes.HasPrefix(full, out) {
				t.Errorf("report: the output of %d bytes is not a prefix of the uninterrupted output:\n%s",
					len(out), testutil.FirstDiff(string(out), string(full[:min(len(full), len(out))])))
			}
		}},
		{"json", []string{"report", "--format", "json", dat}, func(t *testing.T, out []byte, _ bool) {
			var doc struct {
				CPUs   int `json:"cpus"`
				Events []json.RawMessage
			}
			if err := json.Unmarshal(out, &doc); err != nil || doc.CPUs == 0 {
				i := max(0, len(out)-80)
				t.Errorf("report --format json: not a JSON document: %v (ends ...%q)", err, out[i:])
			}
		}},
		{"ndjson", []string{"report", "--format", "ndjson", dat}, func(t *testing.T, out []byte, _ bool) {
			wholeLines(t, "report --format ndjson", out)
			lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
			if last := lines[len(lines)-1]; len(out) > 0 && !json.Valid(last) {
				t.Errorf("report --format ndjson: last line not JSON: %q", last)
			}
		}},
		{"hist", hist, func(t *testing.T, out []byte, _ bool) {
			wholeLines(t, "hist -i", out)
			if !bytes.Contains(out, []byte("\nTotals:\n    Hits: ")) {
				t.Errorf("hist -i: no totals in the output:\n%s", out)
			}
		}},
		{"list", []string{"list", "-i", dat, "sched:*", "-F"}, func(t *testing.T, out []byte, _ bool) {
			wholeLines(t, "list -i", out)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
				p := startGtrace(t, dir, tc.args...)
				p.signal(t, sig, moment())
				interrupted := p.wantStatus(t, sig, true)
				out, stderr := p.output(t)
				if len(stderr) > 0 {
					t.Errorf("gtrace %s: stderr after %v:\n%s", p.name(), sig, stderr)
				}
				tc.check(t, out, interrupted)
				os.Remove(p.stdout)
			}
		})
	}
}

// TestFIFO: report, hist -i and list -i do not wait for a FIFO's writer:
// one without a writer is an empty file (a FIFO with a writer is read,
// TestReportPipe).
func TestFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"report", fifo},
		{"report", "--format", "json", "-i", fifo},
		{"hist", "-i", fifo, "-e", "sched:sched_switch", "-k", "prev_pid"},
		{"list", "-i", fifo},
	} {
		p := startGtrace(t, dir, args...)
		p.wait(t, stopWithin)
		out, stderr := p.output(t)
		if code := p.code(t); code != exitFailure || len(out) > 0 || !strings.Contains(string(stderr), ": empty file") {
			t.Errorf("gtrace %s: exit %d, stdout %q, stderr %q; want %d and \"empty file\"", p.name(), code, out, stderr, exitFailure)
		}
	}
}

// TestStopGrace: once a signal has arrived, Main returns 128+N within
// stopGrace even if the command does not stop (blocked in the kernel).
func TestStopGrace(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&live.SignalError{Signal: syscall.SIGTERM})
	var errb bytes.Buffer
	start := time.Now()
	code := finish(ctx, &errb, make(chan int))
	if took := time.Since(start); code != 143 || took < stopGrace || took > stopGrace+3*time.Second { // a loaded machine may run the timer late
		t.Errorf("finish(stuck run, SIGTERM) = %d after %v, want 143 after %v", code, took, stopGrace)
	}
	if want := "gtrace: interrupted by signal: terminated: stopped without completing its output\n"; errb.String() != want {
		t.Errorf("finish(stuck run) printed %q, want %q", errb.String(), want)
	}
	done := make(chan int, 1)
	done <- exitOK
	if code := finish(ctx, &errb, done); code != 143 {
		t.Errorf("finish(run stopped, SIGTERM) = %d, want 143", code)
	}
	done <- 3
	if code := finish(context.Background(), &errb, done); code != 3 {
		t.Errorf("finish(run ended, no signal) = %d, want 3", code)
	}
}

// TestSignalStatus: handleError turns the signal that stopped a run
// into 128+N, and prints nothing.
func TestSignalStatus(t *testing.T) {
	se := &live.SignalError{Signal: syscall.SIGINT}
	for _, err := range []error{se, fmt.Errorf("read records: %w", se)} {
		var errb bytes.Buffer
		if got := handleError(&errb, err); got != 130 || errb.Len() > 0 {
			t.Errorf("handleError(%v) = %d, printing %q; want 130, nothing", err, got, errb.String())
		}
	}
}
