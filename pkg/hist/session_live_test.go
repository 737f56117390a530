package hist

import (
	"errors"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/parse"
)

// TestSessionLiveCompile lowers the wakeup-latency example with an
// onmax that saves and snapshots: one program per real event, the
// synthetic event's hist inlined, a map per hist of the layout the
// variables and tracks give.
func TestSessionLiveCompile(t *testing.T) {
	s, err := newTestSession(t, []string{wakeupLatency}, []string{
		"sched:sched_waking hist:keys=pid:ts0=common_timestamp.usecs",
		"sched:sched_switch hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio):onmax($wakeup_lat).save(next_comm,prev_pid):onmax($wakeup_lat).snapshot()",
		"synthetic:wakeup_latency hist:keys=lat.log2:sort=lat if prio < 100",
	})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.compileLive(sessionLiveOptions{gate: bpfgen.Gate{ExcludeTGID: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls.progs) != 2 || ls.progs[0].fm.Name != "sched_waking" || ls.progs[1].fm.Name != "sched_switch" {
		t.Fatalf("programs %+v, want one on sched_waking, one on sched_switch", ls.progs)
	}
	maps := ls.program.Collection.Maps
	for _, name := range []string{"h0", "d0", "h1", "d1", "t1", "h2", "d2", bpfgen.ScratchMapName} {
		if maps[name] == nil {
			t.Errorf("no map %s in the collection", name)
		}
	}
	// h1: hitcount, set word, wakeup_lat, two onmax values, next_comm
	// (24 bytes) and prev_pid saved with the first.
	if got := maps["h1"].ValueSize; got != 8+8+8+8+24+8+8 {
		t.Errorf("the value of sched_switch's hist takes %d bytes", got)
	}
	if l := ls.layouts[1]; len(l.Refs) != 1 || l.Refs[0].Map != "h0" || !l.Refs[0].ReadOnce || len(l.Tracks) != 2 {
		t.Errorf("sched_switch's layout: refs %+v, tracks %+v", l.Refs, l.Tracks)
	}
	var b strings.Builder
	if err := ls.describe(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# program gtrace_s0 on classic tracepoint sched:sched_waking", "# map h1: 1 variables, 1 references, 2 tracks"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("--dry-run has no %q:\n%s", want, b.String())
		}
	}
	if got := ls.attached(); got != "counting 3 hists of 2 events and 1 synthetic event (2 programs)" {
		t.Errorf("attach line %q", got)
	}
}

// TestSessionLiveErrors: what a live session cannot run, refused with a
// caret on the hist at fault.
func TestSessionLiveErrors(t *testing.T) {
	waking := "sched:sched_waking hist:keys=pid:ts0=common_timestamp.usecs"
	for _, c := range []struct {
		synth []string
		hists []string
		msg   string
		token string
	}{
		{nil, []string{"sched:sched_waking hist:keys=pid:c=comm"},
			"a string variable of the task's name in a live hist: not supported by gtrace", "comm"},
		{nil, []string{waking, "sched:sched_switch hist:keys=next_pid:vals=prev_prio.percent:lat=common_timestamp.usecs-$ts0"},
			"a .percent sum in a live inter-event session: not supported by gtrace", "prev_prio.percent"},
		{[]string{"loop pid_t v"}, []string{"sched:sched_waking hist:keys=pid:x=pid:onmatch(sched.sched_waking).loop($x)",
			"synthetic:loop hist:keys=v:w=v:onmatch(synthetic.loop).loop($w)"},
			"synthetic events nest more than 3 deep: not supported by a live hist", "onmatch(synthetic.loop).loop($w)"},
		{[]string{blockLatDef}, []string{blockLat[0], "sched:sched_switch hist:keys=prev_pid:delta=common_timestamp.usecs-$ts,s=$st:onmax($s).trace(block_lat,prev_pid,$delta,$s)"},
			"onmax of a string or stack variable: not supported", "$s"},
		{[]string{blockLatDef}, []string{blockLat[0], "sched:sched_switch hist:keys=prev_pid:delta=common_timestamp.usecs-$ts:onmax($delta).trace(block_lat,prev_pid,$delta,$delta)"},
			"param type doesn't match synthetic event field type", "$delta"},
		{[]string{blockLatDef}, []string{blockLat[0], "sched:sched_switch hist:keys=prev_pid:delta=common_timestamp.usecs-$ts,s=$st:onmax($delta).trace(block_lat,prev_pid,$s,$s)"},
			"param type doesn't match synthetic event field type", "$s"},
		{nil, []string{blockLat[0], "sched:sched_switch hist:keys=prev_pid:x=$st+1"},
			"a stack cannot be an operand in an expression", "$st+1"},
		{nil, []string{"sched:sched_switch hist:keys=next_pid:u=ustacktrace"},
			"a user stack variable: not supported by gtrace", "ustacktrace"},
		{nil, []string{"sched:sched_switch hist:keys=ustacktrace:ts=common_timestamp"},
			"a user stack key in an inter-event session: not supported by gtrace", "ustacktrace"},
		{[]string{blockLatDef}, []string{"synthetic:block_lat hist:keys=pid:st=common_stacktrace"},
			"the stack of a synthetic event: not supported by a live hist", "common_stacktrace"},
	} {
		s, err := newTestSessionFor(t, c.synth, c.hists, true)
		if err == nil {
			_, err = s.compileLive(sessionLiveOptions{})
		}
		var pe *parse.Error
		if !errors.As(err, &pe) {
			t.Errorf("%v: got %v, want a *parse.Error", c.hists, err)
			continue
		}
		if pe.Msg != c.msg || pe.Src[pe.Off:pe.End] != c.token {
			t.Errorf("%v:\ngot  %q at %q\nwant %q at %q", c.hists, pe.Msg, pe.Src[pe.Off:pe.End], c.msg, c.token)
		}
	}
}

// blockLat is the kernel's example of a stack passed through a
// synthetic event (Documentation/trace/histogram.rst).
var blockLat = []string{
	"sched:sched_switch hist:keys=next_pid:ts=common_timestamp.usecs,st=common_stacktrace if prev_state == 2",
	"sched:sched_switch hist:keys=prev_pid:delta=common_timestamp.usecs-$ts,s=$st:onmax($delta).trace(block_lat,prev_pid,$delta,$s)",
	"synthetic:block_lat hist:keys=delta.buckets=100,stack.stacktrace:sort=delta",
}

const blockLatDef = "block_lat pid_t pid; u64 delta; unsigned long[] stack;"

// TestSessionLiveStack binds the kernel's example live and lowers it: a
// frames variable of the event's stack, one copied from its reference,
// passed to the synthetic event's stack field, a frames key on it; over
// records, the stack variable is refused with the caret on it.
func TestSessionLiveStack(t *testing.T) {
	s, err := newTestSessionFor(t, []string{blockLatDef}, blockLat, true)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.compileLive(sessionLiveOptions{gate: bpfgen.Gate{ExcludeTGID: 1}})
	if err != nil {
		t.Fatal(err)
	}
	st, sv := ls.layouts[0].Vars[1], ls.layouts[1].Vars[1]
	if st.Kind != bpfgen.VarFrames || st.FromRef || st.Skip != bpfgen.StackSkip("sched", "sched_switch") || st.Size != bpfgen.FramesSize {
		t.Errorf("st: %+v, want the frames of the event's stack", st)
	}
	if sv.Kind != bpfgen.VarFrames || !sv.FromRef || ls.layouts[1].Refs[sv.Ref].Var != 1 {
		t.Errorf("s: %+v, want the frames of its reference to st", sv)
	}
	if k := ls.layouts[2].Keys[1]; !k.Frames() || k.Field.Name != "stack" {
		t.Errorf("the synthetic hist's second key %+v, want the frames of field stack", k)
	}
	if ls.program.Collection.Maps[bpfgen.StacksMapName] != nil {
		t.Error("a stack map: frames variables and keys need none")
	}
	if len(ls.progs) != 1 {
		t.Errorf("%d programs, want the one of sched_switch", len(ls.progs))
	}

	_, err = newTestSessionFor(t, []string{blockLatDef}, blockLat, false)
	var pe *parse.Error
	if !errors.As(err, &pe) || pe.Msg != "a stack variable needs a live hist: a trace.dat's records hold no stacks" || pe.Src[pe.Off:pe.End] != "common_stacktrace" {
		t.Errorf("over records: %v, want the stack variable refused", err)
	}
}

// TestSessionLiveStackKey: a live session's common_stacktrace key is
// its frames, as the synthetic event's stack field's; over records it is
// refused.
func TestSessionLiveStackKey(t *testing.T) {
	hists := []string{
		"sched:sched_switch hist:keys=common_stacktrace:ts=common_timestamp.usecs",
		"sched:sched_waking hist:keys=common_stacktrace:lat=common_timestamp.usecs-$ts",
	}
	s, err := newTestSessionFor(t, nil, hists, true)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.compileLive(sessionLiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if k := ls.layouts[0].Keys[0]; !k.Frames() || k.Src != bpfgen.SrcStack || ls.layouts[0].KeySize != bpfgen.FramesSize {
		t.Errorf("key %+v, want the event's stack's frames", k)
	}
	_, err = newTestSessionFor(t, nil, hists, false)
	var pe *parse.Error
	if !errors.As(err, &pe) || pe.Src[pe.Off:pe.End] != "common_stacktrace" || !strings.Contains(pe.Msg, "a stack key needs a live hist") {
		t.Errorf("over records: %v, want the stack key refused", err)
	}
}
