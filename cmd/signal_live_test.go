package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestPrivilegedSignalsLive interrupts record and hist, system-wide and
// with a traced command that ignores SIGINT, with SIGINT and SIGTERM at
// random moments (while they attach, or after): each must exit within
// stopWithin of the signal, with status 128+N and complete output (a
// trace.dat file that trace-cmd reads, a hist with its totals).
func TestPrivilegedSignalsLive(t *testing.T) {
	testutil.RequirePrivileged(t)
	requireTraceCmd(t)
	dir := t.TempDir()
	rng := signalRand(t)
	// A command that ignores SIGINT: SIGTERM ends it (sh, that is; its
	// sleep lives on, as the child of a killed shell does).
	deaf := []string{"--", "sh", "-c", `trap "" INT; sleep 30`}
	histArgs := []string{"hist", "-e", "sched:sched_switch", "-k", "prev_comm"}
	hasTotals := func(t *testing.T, p *gtraceProc) {
		out, stderr := p.output(t)
		wholeLines(t, "hist", out)
		if !bytes.Contains(out, []byte("\nTotals:\n    Hits: ")) {
			t.Errorf("gtrace %s: no totals in the output:\n%s\nstderr:\n%s", p.name(), out, stderr)
		}
	}
	for _, tc := range []struct {
		name  string
		args  func(out string) []string
		check func(t *testing.T, p *gtraceProc, out string)
	}{
		{"record", func(out string) []string {
			return []string{"record", "-e", "sched:sched_switch", "-o", out}
		}, func(t *testing.T, p *gtraceProc, out string) {
			traceCmdReport(t, out)
		}},
		{"record-deaf-command", func(out string) []string {
			return append([]string{"record", "-e", "sched:sched_switch", "-o", out}, deaf...)
		}, func(t *testing.T, p *gtraceProc, out string) {
			traceCmdReport(t, out)
		}},
		{"hist", func(string) []string { return histArgs }, func(t *testing.T, p *gtraceProc, _ string) {
			hasTotals(t, p)
		}},
		{"hist-deaf-command", func(string) []string { return append(histArgs, deaf...) }, func(t *testing.T, p *gtraceProc, _ string) {
			hasTotals(t, p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
				out := filepath.Join(dir, tc.name+"-"+sig.String()+".dat")
				out = strings.ReplaceAll(out, " ", "-")
				p := startGtrace(t, dir, tc.args(out)...)
				var attached bool
				p.before = func() { attached = hasBPFLink(p.c.Process.Pid) }
				p.signal(t, sig, time.Duration(rng.Int64N(int64(time.Second))))
				p.wantStatus(t, sig, false)
				if _, stderr := p.output(t); bytes.Contains(stderr, []byte("stopped without completing")) {
					if attached {
						t.Errorf("gtrace %s: did not stop in time after %v:\n%s", p.name(), sig, stderr)
					} else {
						// Starting up can take seconds on a loaded
						// machine: gtrace does not wait for it.
						t.Logf("gtrace %s: %v while starting up, exited before it was done", p.name(), sig)
					}
					continue
				}
				tc.check(t, p, out)
			}
		})
	}
}

// hasBPFLink reports whether process pid holds a BPF link: it has
// attached a program.
func hasBPFLink(pid int) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == "anon_inode:bpf_link" {
			return true
		}
	}
	return false
}
