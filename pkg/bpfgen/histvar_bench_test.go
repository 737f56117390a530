package bpfgen

import (
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/internal/testutil"
)

// histRefRuns is how many times each variant runs per round.
const histRefRuns = 100000

// BenchmarkPrivilegedHistRef measures what a reference costs a hist per
// event: the kernel's run time per run (BPF statistics) of programs run
// by prog.Run on the same sched_switch record, whose key has an entry
// with its variable set:
//
//	empty       a program that returns 0
//	plain       hist:keys=next_pid
//	time        hist:keys=next_pid:vals=common_timestamp.usecs, the clock
//	            read that a reference's latency needs, without the reference
//	ref         hist:keys=next_pid:lat=common_timestamp.usecs-$ts0, the
//	            reference resolved (not read once, so every run resolves it)
//	ref+synth   the same with onmatch emitting wakeup_latency(lat, next_pid,
//	            next_prio) into its own hist:keys=lat.log2
//	set         the sched_waking side: hist:keys=pid:ts0=common_timestamp.usecs
//
// It reports ns per event of each, as ns/<variant>.
func BenchmarkPrivilegedHistRef(b *testing.B) {
	testutil.RequirePrivileged(b)
	waking, sw := testutil.Format(b, "sched:sched_waking"), testutil.Format(b, "sched:sched_switch")
	progs := map[string]*ebpf.Program{}
	load := func(name string, c *Collection) *ebpf.Collection {
		spec := c.Spec().Copy()
		for _, ps := range spec.Programs {
			ps.Type, ps.Flags = ebpf.Syscall, unix.BPF_F_SLEEPABLE
		}
		coll, err := ebpf.NewCollection(spec)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		b.Cleanup(coll.Close)
		return coll
	}
	wakeupProgs := func(synth bool) *ebpf.Collection {
		w := newWakeupSpec(b, waking, sw)
		w.lb.Refs[0].ReadOnce = false
		c := NewCollection()
		a := &Prog{Name: "set", Source: Tracepoint{}, ID: EventID{Const: waking.ID}, Actions: []Action{NewHistAction(w.la, "h_waking", "d_waking")}}
		h := NewHistAction(w.lb, "h_switch", "d_switch")
		if synth {
			h.OnMatch = []Action{&SynthAction{Format: w.synth, Params: []SynthParam{
				{Src: ParamNumber, Expr: &Expr{Src: SrcVar, Var: 0}},
				{Src: ParamNumber, Expr: &Expr{Src: SrcField, Field: sw.Field("next_pid")}},
				{Src: ParamNumber, Expr: &Expr{Src: SrcField, Field: sw.Field("next_prio")}},
			}, Actions: []Action{NewHistAction(w.ll, "h_lat", "d_lat")}}}
		}
		for _, p := range []*Prog{a, {Name: "ref", Source: Tracepoint{}, ID: EventID{Const: sw.ID}, Actions: []Action{h}}} {
			if err := c.Add(p); err != nil {
				b.Fatal(err)
			}
		}
		return load("wakeup", c)
	}
	plain := NewCollection()
	l := &HistLayout{Keys: []KeySlot{{Src: SrcField, Field: sw.Field("next_pid"), Size: 8}}, KeySize: 8, ValueSize: 8, CommOff: -1, MaxEntries: 1024}
	lt := *l
	lt.ValueSize, lt.Vals = 16, []ValSlot{{Expr: &Expr{Src: SrcTime, Usecs: true}, Off: 8}}
	for _, p := range []*Prog{
		{Name: "plain", Source: Tracepoint{}, ID: EventID{Const: sw.ID}, Actions: []Action{NewHistAction(l, "h", "d")}},
		{Name: "time", Source: Tracepoint{}, ID: EventID{Const: sw.ID}, Actions: []Action{NewHistAction(&lt, "ht", "dt")}},
		{Name: "empty", Source: Tracepoint{}, ID: EventID{Const: sw.ID}},
	} {
		if err := plain.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	pc := load("plain", plain)
	for _, name := range []string{"empty", "plain", "time"} {
		progs[name] = pc.Programs[name]
	}
	rc := wakeupProgs(false)
	progs["set"], progs["ref"] = rc.Programs["set"], rc.Programs["ref"]
	sc := wakeupProgs(true)
	progs["ref+synth"] = sc.Programs["ref"]

	pinThread(b)
	ra, rs := make([]byte, recordSize(waking)), make([]byte, recordSize(sw))
	putField(b, waking, ra, "pid", 42)
	putField(b, sw, rs, "next_pid", 42)
	putField(b, sw, rs, "next_prio", 120)
	for _, p := range []*ebpf.Program{rc.Programs["set"], sc.Programs["set"]} {
		if _, err := p.Run(&ebpf.RunOptions{Context: ra}); err != nil {
			b.Fatal(err)
		}
	}
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	order := []string{"empty", "plain", "time", "ref", "ref+synth", "set"}
	b.ResetTimer()
	for range b.N {
		for _, name := range order {
			rec := rs
			if name == "set" {
				rec = ra
			}
			for range histRefRuns {
				if _, err := progs[name].Run(&ebpf.RunOptions{Context: rec}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.StopTimer()
	for _, name := range order {
		st, err := progs[name].Stats()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Runtime.Nanoseconds())/float64(st.RunCount), "ns/"+name)
	}
}
