package bpfgen

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
)

// countAction adds one to the only u64 of its map.
type countAction struct{ m *ebpf.MapSpec }

func newCountAction(name string) *countAction {
	return &countAction{m: &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}}
}

func (a *countAction) stack() int            { return 8 }
func (a *countAction) maps() []*ebpf.MapSpec { return []*ebpf.MapSpec{a.m} }

func (a *countAction) emit(b *Builder, f *Frame) error {
	b.Comment("%s++", a.m.Name)
	b.Emit(asm.StoreImm(asm.R10, f.Area.Off, 0, asm.Word))
	emitLookup(b, a.m.Name, f.Area.Off)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, f.Next),
		asm.Mov.Imm(asm.R1, 1),
		fetchAdd(asm.R0, asm.R1),
	)
	return nil
}

func readCount(t *testing.T, coll *ebpf.Collection, name string) uint64 {
	t.Helper()
	var n uint64
	if err := coll.Maps[name].Lookup(uint32(0), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPrivilegedGateInterrupts: a gate that excludes the test's own
// process ignores its getppid calls (task context), exactly 0 of
// getppids, but with the preempt count it counts the hrtimer expiries
// (hardirq) that interrupt a thread of the test spinning on its CPU;
// without it (the gate before) it counts none of them. Beside them,
// programs that only keep the test's process count every getppid and
// the expiries.
func TestPrivilegedGateInterrupts(t *testing.T) {
	testutil.RequirePrivileged(t)
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	pc, err := PreemptCountIn(spec)
	if err != nil {
		t.Fatal(err)
	}
	const getppids = 100
	me := uint32(os.Getpid())
	timer, getppid := liveFormat(t, "timer", "hrtimer_expire_entry"), liveFormat(t, "syscalls", "sys_enter_getppid")
	gates := []struct {
		name string
		gate Gate
	}{
		{"irq", Gate{ExcludeTGID: me, OnlyTGIDs: []uint32{me}, Preempt: pc}},
		{"old", Gate{ExcludeTGID: me, OnlyTGIDs: []uint32{me}}},
		{"all", Gate{OnlyTGIDs: []uint32{me}}},
	}
	c := NewCollection()
	for _, g := range gates {
		for _, ev := range []struct {
			name string
			id   int
		}{{"timer", timer.ID}, {"ppid", getppid.ID}} {
			name := fmt.Sprintf("%s_%s", ev.name, g.name)
			p := &Prog{Name: name, Source: Tracepoint{}, Gate: g.gate, ID: EventID{Const: ev.id}, Actions: []Action{newCountAction("n_" + name)}}
			if err := c.Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	coll := loadTracepoints(t, c)
	var links []link.Link
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	for _, g := range gates {
		for _, at := range []struct{ prog, system, event string }{
			{"timer_" + g.name, "timer", "hrtimer_expire_entry"},
			{"ppid_" + g.name, "syscalls", "sys_enter_getppid"},
		} {
			l, err := link.Tracepoint(at.system, at.event, coll.Programs[at.prog], nil)
			if err != nil {
				t.Fatal(err)
			}
			links = append(links, l)
		}
	}

	// A thread of the test calls getppid getppids times, then spins
	// until the tick has interrupted it (at least 300 ms, at most a
	// minute on a loaded machine).
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for range getppids {
			unix.Getppid()
		}
		start := time.Now()
		var n uint64
		for time.Since(start) < 300*time.Millisecond ||
			n == 0 && time.Since(start) < time.Minute {
			if err := coll.Maps["n_timer_irq"].Lookup(uint32(0), &n); err != nil {
				return
			}
			for i := 0; i < 1e6; i++ {
				spin++
			}
		}
	}()
	<-done
	for _, l := range links {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	links = nil

	if got := readCount(t, coll, "n_ppid_all"); got != getppids {
		t.Errorf("program without exclusion: %d getppid calls, want %d", got, getppids)
	}
	for _, g := range []string{"irq", "old"} {
		if got := readCount(t, coll, "n_ppid_"+g); got != 0 {
			t.Errorf("%s gate: %d of %d getppid calls of the excluded process counted, want 0", g, got, getppids)
		}
	}
	// Not equal to n_timer_all: the programs are attached and detached
	// one after the other, and the test's threads are current then too.
	irq, all := readCount(t, coll, "n_timer_irq"), readCount(t, coll, "n_timer_all")
	if irq == 0 {
		t.Errorf("gate with the preempt count: no hrtimer expiry interrupting the excluded process counted (without exclusion: %d)", all)
	}
	if got := readCount(t, coll, "n_timer_old"); got != 0 {
		t.Errorf("gate without the preempt count: %d hrtimer expiries interrupting the excluded process counted, want 0", got)
	}
	t.Logf("hrtimer expiries while the test was current: %d counted by the gate, %d without exclusion", irq, all)
}

// spin is what the spinning thread writes, so that its loop stays.
var spin int
