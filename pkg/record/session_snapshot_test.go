package record

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/probe"
)

// TestNewPlanSessionSnapshot: a hist trigger with snapshot() makes the
// recording a flight's (Snapshots, streamed) and records every event from
// its classic tracepoint, the session's, even raw_syscalls:sys_enter,
// which goes on the raw tracepoint sys_enter otherwise (kernel BTF,
// amd64); without Snapshots (a command that writes no file) neither.
func TestNewPlanSessionSnapshot(t *testing.T) {
	ev := []EventSpec{{Pattern: "raw_syscalls:sys_enter", Triggers: []string{"hist:keys=common_pid:n=id:onmax($n).snapshot()"}}}
	p, err := NewPlan(fakeTraceFS(t), &Options{Events: ev, Snapshots: true, HistOut: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Snapshots || p.direct() {
		t.Errorf("Snapshots = %v, direct() = %v: want a flight's recording on classic tracepoints", p.Snapshots, p.direct())
	}
	var b strings.Builder
	if err := p.Describe(&b); err != nil {
		t.Fatal(err)
	}
	if want := "# its snapshot() actions write FILE.snapshot-N.dat, each ending with the event that fired it"; !strings.Contains(b.String(), want) {
		t.Errorf("Describe() lacks %q:\n%s", want, b.String())
	}
	q, err := NewPlan(fakeTraceFS(t), &Options{Events: ev, HistOut: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if want := probe.HaveKernelBTF() && runtime.GOARCH == "amd64"; q.Snapshots || q.direct() != want {
		t.Errorf("without Snapshots: Snapshots = %v, direct() = %v, want false, %v", q.Snapshots, q.direct(), want)
	}
}
