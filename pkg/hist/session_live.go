package hist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/probe"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// A session live: the hists bound by NewSession, lowered onto the BPF
// parts of package bpfgen (histvar.go, histtrack.go, synth.go) in one
// collection, whose maps the hists share by name:
//
//   - hist i of the session (Session.hists, field-variable hists
//     included) counts into map h<i>, its drops into d<i>, the
//     triggering value and key of its snapshot() into t<i>; its layout is
//     its plan's, with its variables, their set word and its tracks'
//     values and saved fields after the sums;
//   - each event of the session (not a synthetic one) has a program, its
//     hists' actions in the order the engine runs them, each behind its
//     own filter when the event has several hists;
//   - a trace action is a SynthAction whose actions are the hists of its
//     synthetic event, inlined: the synthetic event runs where it is
//     emitted, as the engine runs it (session_run.go), at most
//     bpfgen.MaxSynthDepth deep.
//
// At the end the maps are read into the tables the engine prints.

// liveSession is a session compiled for live events.
type liveSession struct {
	s       *Session
	index   map[*sessHist]int
	layouts []*bpfgen.HistLayout
	refs    [][]int // per hist, per session reference: its index in the layout's Refs, -1 for the hist's own
	tracks  [][]int // per hist, per action: its index in the layout's Tracks, -1 for onmatch
	saveOff []int   // per hist: the track that keeps the save() fields, -1 for none
	program *bpfgen.Program
	progs   []sessionProg
	objs    *probe.Objects
	rec     *SessionRecording // the recording whose maps the session shares; nil: none
	stamp   int               // while compiling an event's program: the format ID of its stamp (bpfgen.HistAction.Stamp); 0: none
}

// sessionProg is the program of one event of a session.
type sessionProg struct {
	name string
	fm   *parse.Format
	time string // whose clock read is the event's common_timestamp, for --dry-run; "": the session's own
}

// sessionLiveOptions are the gates of a live session's programs.
type sessionLiveOptions struct {
	gate   bpfgen.Gate
	follow *bpfgen.FollowSpec
	rec    *SessionRecording // the recording the session runs in; nil: none
}

// IsSession reports whether hists, with the synthetic events synths,
// are an inter-event session: synthetic events are defined, or a hist
// has variables or actions, or is on a synthetic event.
func IsSession(hists []EventHist, synths []SynthEvent) bool {
	if len(synths) > 0 {
		return true
	}
	for _, h := range hists {
		if len(h.Spec.Vars) > 0 || len(h.Spec.Actions) > 0 || strings.HasPrefix(h.Event, parse.SynthSystem+":") {
			return true
		}
		for _, v := range h.Spec.Vals {
			if v.HasRef() {
				return true
			}
		}
	}
	return false
}

// newLiveSession binds the hists of cfg, each on its event of fs or a
// synthetic event of cfg.Synths, as a session, and compiles it.
func newLiveSession(fs *tracefs.FS, cfg LiveConfig, rec *SessionRecording) (*LiveJob, error) {
	if cfg.StartOff || cfg.Clear {
		return nil, errors.New("an inter-event session runs without --start-off and --clear")
	}
	var sh []SessionHist
	for _, h := range cfg.Hists {
		if len(h.Triggers) > 0 {
			return nil, fmt.Errorf("-e %s: an inter-event session runs no triggers but its hists: %s", h.Event, h.Triggers[0])
		}
		if h.Spec.Pause {
			return nil, h.Spec.Errorf(h.Spec.PauseOff, h.Spec.PauseEnd, "a paused hist in an inter-event session: not supported by gtrace").
				WithHint("pause waits for an enable_hist trigger, which a session does not run: drop pause")
		}
		fm, err := sessionEventFormat(fs, cfg.Synths, h.Event)
		if err != nil {
			return nil, err
		}
		sh = append(sh, SessionHist{Format: fm, Spec: h.Spec})
	}
	s, err := newSession(sh, cfg.Synths, ksym.KernelFuncRange, true)
	if err != nil {
		return nil, err
	}
	j := &LiveJob{cfg: cfg}
	o := sessionLiveOptions{gate: bpfgen.Gate{ExcludeTGID: uint32(os.Getpid()), Preempt: probe.PreemptCount()}, rec: rec}
	for _, p := range cfg.PIDs {
		o.gate.OnlyTGIDs = append(o.gate.OnlyTGIDs, uint32(p))
	}
	if cfg.Follow {
		if o.follow, err = probe.FollowSpec(fs); err != nil {
			return nil, err
		}
		j.follow, o.gate.OnlyTGIDs = o.gate.OnlyTGIDs, nil
	}
	if j.sess, err = s.compileLive(o); err != nil {
		return nil, err
	}
	return j, nil
}

// sessionEventFormat is the format of event name: a synthetic event of
// synths, or an event of fs.
func sessionEventFormat(fs *tracefs.FS, synths []SynthEvent, name string) (*parse.Format, error) {
	if sys, ev, ok := strings.Cut(name, ":"); ok && sys == parse.SynthSystem {
		for _, e := range synths {
			if e.Def.Name == ev {
				return e.Format, nil
			}
		}
		return nil, fmt.Errorf("no synthetic event %s: define it with --synth '%s TYPE FIELD[; TYPE FIELD]...'", ev, ev)
	}
	ev, err := fs.Lookup(name)
	if err != nil {
		return nil, err
	}
	return fs.Format(ev)
}

// names of the maps of hist i of a session.
func sessMap(i int) string   { return fmt.Sprintf("h%d", i) }
func sessDrops(i int) string { return fmt.Sprintf("d%d", i) }
func sessTrig(i int) string  { return fmt.Sprintf("t%d", i) }

// compileLive lowers the session onto BPF programs, one per event.
// What BPF cannot run is a *parse.Error on the hist at fault.
func (s *Session) compileLive(o sessionLiveOptions) (*liveSession, error) {
	ls := &liveSession{s: s, index: map[*sessHist]int{}, rec: o.rec}
	for i, h := range s.hists {
		ls.index[h] = i
	}
	for _, h := range s.hists {
		l, err := ls.layout(h)
		if err != nil {
			return nil, err
		}
		ls.layouts = append(ls.layouts, l)
	}
	for i, h := range s.hists {
		if err := ls.lowerExprs(h, ls.layouts[i]); err != nil {
			return nil, err
		}
	}
	c := bpfgen.NewCollection()
	gate := o.gate
	if o.rec != nil {
		// The session stops with the recording, at its switch.
		if err := c.AddMap(o.rec.Program.Collection.Maps[bpfgen.SwitchMapName]); err != nil {
			return nil, err
		}
		gate.Switch = bpfgen.SwitchMapName
	}
	if o.follow != nil {
		if err := c.AddFollow(o.follow); err != nil {
			return nil, err
		}
		gate.Follow = bpfgen.FollowMapName
	}
	for _, ev := range s.events {
		hs := s.byEvent[ev]
		fm := hs[0].fm
		if fm.System == parse.SynthSystem && s.synths[fm.Name] != nil {
			continue // runs where its actions emit it
		}
		p := &bpfgen.Prog{Name: fmt.Sprintf("gtrace_s%d", len(ls.progs)), Source: bpfgen.Tracepoint{}, Gate: gate, ID: bpfgen.EventID{Const: fm.ID}}
		time := ""
		if o.rec != nil && slices.ContainsFunc(hs, func(h *sessHist) bool { return h.spec.Timestamp() || len(h.spec.Vars) > 0 }) {
			why := ls.stampable(fm, hs, gate)
			if why == "" {
				ls.stamp, time = fm.ID, "the recording's read of the clock for the event (exact)"
			} else {
				time = "the session's own read of the clock: " + why
			}
		}
		if len(hs) == 1 {
			a, err := ls.histAction(hs[0], 0)
			if err != nil {
				return nil, err
			}
			p.Filter = hs[0].run.filter
			p.Actions = []bpfgen.Action{a}
		} else {
			for _, h := range hs {
				a, err := ls.filtered(h, 0)
				if err != nil {
					return nil, err
				}
				p.Actions = append(p.Actions, a)
			}
		}
		ls.stamp = 0
		if err := c.Add(p); err != nil {
			return nil, fmt.Errorf("generate the hists of %s: %w", ev, err)
		}
		ls.progs = append(ls.progs, sessionProg{name: p.Name, fm: fm, time: time})
	}
	ls.program = &bpfgen.Program{Collection: c.Spec()}
	return ls, nil
}

// stampable returns why the hists of fm in a recording cannot take the
// recording's read of the clock for each event (its stamp), "" when
// they can: its program, attached before the session's on the same
// classic tracepoint, stamps every event that passes the session's gate.
func (ls *liveSession) stampable(fm *parse.Format, hs []*sessHist, gate bpfgen.Gate) string {
	r := ls.rec
	for _, h := range hs {
		if l := ls.layouts[ls.index[h]]; (h.spec.Timestamp() || len(h.spec.Vars) > 0) && l.Clock != r.Spec.Clock {
			return fmt.Sprintf("a hist's clock is %s, the recording's %s", l.Clock, r.Spec.Clock)
		}
	}
	i := slices.IndexFunc(r.Spec.Events, func(e bpfgen.RecordEvent) bool { return e.Format.ID == fm.ID })
	switch {
	case i < 0:
		return "the event is not recorded"
	case r.Spec.Events[i].Filter != nil:
		return "the recording filters the event"
	case !r.Program.Recorders[i].Stamped:
		return "the recording's program of the event is not on its classic tracepoint, or has triggers"
	case r.Spec.Follow != nil || gate.Follow != "":
		return "the recording and the session follow their processes each in a map of its own"
	case gate.ExcludeTGID != r.Spec.ExcludeTGID || gate.Preempt != r.Spec.Preempt || !slices.Equal(gate.OnlyTGIDs, r.Spec.OnlyTGIDs) || len(r.Spec.OnlyCPUs) > 0 || len(gate.CPUs) > 0:
		return "the recording records other processes or CPUs than the session counts"
	}
	return ""
}

// layout is h's plan's layout with its variables, set word, tracks and
// saves placed after the sums; the expressions come later (lowerExprs).
func (ls *liveSession) layout(h *sessHist) (*bpfgen.HistLayout, error) {
	spec := h.spec
	l := *h.run.plan.Layout
	l.Vals = append([]bpfgen.ValSlot(nil), l.Vals...)
	l.Vars, l.Refs, l.Tracks = nil, nil, nil
	if l.DropSums {
		v := h.run.plan.Vals[0].Spec
		for _, pv := range h.run.plan.Vals {
			if pv.Spec.Mod == parse.ModPercent {
				v = pv.Spec
			}
		}
		return nil, spec.Errorf(v.Off, v.End, "a .percent sum in a live inter-event session: not supported by gtrace").
			WithHint("run the session over a recording (gtrace hist -i FILE) for .percent, or leave it out")
	}
	if spec.Timestamp() || len(spec.Vars) > 0 {
		c, err := bpfgen.ParseClock(spec.EffectiveClock())
		if err != nil {
			return nil, spec.Errorf(spec.ClockOff, spec.ClockEnd, "clock %q cannot be read from BPF", spec.Clock).
				WithHint("a live hist's common_timestamp is in mono, boot or tai")
		}
		l.Clock = c
	}
	off := l.ValueSize
	if len(h.vars) > 0 {
		l.SetOff = off
		off += 8
	}
	for i, v := range h.vars {
		sv := spec.Vars[i]
		slot := bpfgen.VarSlot{Name: v.name, Kind: bpfgen.VarNumber, Off: off, Size: 8}
		switch {
		case v.typ.stack:
			slot.Kind, slot.Size = bpfgen.VarFrames, bpfgen.FramesSize
			switch x := v.expr; {
			case x.kind == leafStack && h.fm.System == parse.SynthSystem:
				return nil, spec.Errorf(sv.Expr.Off, sv.Expr.End, "the stack of a synthetic event: not supported by a live hist").
					WithHint("a live hist takes the stack of the event that emits it: pass it to the synthetic event in an unsigned long[] field")
			case x.kind == leafStack:
				slot.Skip = bpfgen.StackSkip(h.fm.System, h.fm.Name)
			case h.refs[x.ref].self:
				return nil, spec.Errorf(sv.Expr.Off, sv.Expr.End, "a live hist's stack variable reads the references of its event, not its own variables").
					WithHint("copy the stack variable of another hist")
			default:
				slot.FromRef = true // its reference's index: lowerExprs
			}
		case v.typ.str:
			x := v.expr
			if x.op != 0 || x.kind != leafField {
				return nil, spec.Errorf(sv.Expr.Off, sv.Expr.End, "a string variable of %s in a live hist: not supported by gtrace", stringWhat(h, x)).
					WithHint("a live hist's string variables are string fields of the event")
			}
			slot.Kind, slot.Field = bpfgen.VarString, x.field
			slot.Size = bpfgen.StringSlotSize(x.field)
			slot.User = x.field.Class == parse.ClassStringPtr && h.fm.System == "syscalls"
		}
		l.Vars = append(l.Vars, slot)
		off += slot.Size
	}
	for _, a := range h.actions {
		if a.a.Handler == parse.OnMatch {
			continue
		}
		kind := bpfgen.TrackMax
		if a.a.Handler == parse.OnChange {
			kind = bpfgen.TrackChange
		}
		t := bpfgen.TrackSlot{Kind: kind, Var: a.track, Off: off}
		off += 8
		if a.a.Kind == parse.ActSave {
			for _, p := range h.saves {
				sv := bpfgen.SaveSlot{Field: p.field, Off: off, Size: 8}
				if p.field.Class.IsString() {
					sv.Size = bpfgen.StringSlotSize(p.field)
				}
				t.Saves = append(t.Saves, sv)
				off += sv.Size
			}
		}
		l.Tracks = append(l.Tracks, t)
	}
	l.ValueSize = off
	return &l, nil
}

// stringWhat names what a string variable holds, for its error.
func stringWhat(h *sessHist, x *sexpr) string {
	switch {
	case x.kind == leafComm:
		return "the task's name"
	case x.kind == leafRef:
		return "another variable"
	}
	return "that kind"
}

// lowerExprs fills h's layout with its references, its variables' and
// values' expressions, and the indexes of its tracks.
func (ls *liveSession) lowerExprs(h *sessHist, l *bpfgen.HistLayout) error {
	refs := make([]int, len(h.refs))
	for i, r := range h.refs {
		refs[i] = -1
		if r.self {
			continue
		}
		refs[i] = len(l.Refs)
		l.Refs = append(l.Refs, bpfgen.RefSlot{Map: sessMap(ls.index[r.h]), Target: ls.layouts[ls.index[r.h]], Var: r.v, ReadOnce: r.readOnce})
	}
	ls.refs = append(ls.refs, refs)
	spec := h.spec
	for i := range h.vars {
		if l.Vars[i].FromRef {
			l.Vars[i].Ref = refs[h.vars[i].expr.ref]
		}
		if l.Vars[i].Kind != bpfgen.VarNumber {
			continue
		}
		e, err := ls.expr(h, h.vars[i].expr, refs, true)
		if err != nil {
			return err
		}
		if e == nil {
			v := spec.Vars[i]
			return spec.Errorf(v.Off, v.End, "a live hist's variable reads the references of its event, not its own variables").
				WithHint("compute it from the fields and the references of other hists")
		}
		l.Vars[i].Expr = e
	}
	for i, x := range h.vals {
		if x == nil {
			continue
		}
		e, err := ls.expr(h, x, refs, false)
		if err != nil {
			return err
		}
		if e == nil {
			v := h.run.plan.Vals[i].Spec
			return spec.Errorf(v.Off, v.End, "a live hist's value reads the references of its event, not its own variables").
				WithHint("sum a variable in the hist of the event that references it")
		}
		l.Vals[i].Expr = e
	}
	tracks := make([]int, len(h.actions))
	saveOff := -1
	n := 0
	for i, a := range h.actions {
		tracks[i] = -1
		if a.a.Handler != parse.OnMatch {
			tracks[i] = n
			if a.a.Kind == parse.ActSave {
				saveOff = n
			}
			n++
		}
	}
	ls.tracks = append(ls.tracks, tracks)
	ls.saveOff = append(ls.saveOff, saveOff)
	return nil
}

// expr lowers x, a number of h; a variable of h itself is read from
// the entry where own allows it, else expr returns nil.
func (ls *liveSession) expr(h *sessHist, x *sexpr, refs []int, own bool) (*bpfgen.Expr, error) {
	if x.op != 0 {
		e := &bpfgen.Expr{Op: x.op, Signed: x.signed}
		var err error
		if e.L, err = ls.expr(h, x.l, refs, own); err != nil || e.L == nil {
			return nil, err
		}
		if x.r != nil {
			if e.R, err = ls.expr(h, x.r, refs, own); err != nil || e.R == nil {
				return nil, err
			}
		}
		return e, nil
	}
	switch x.kind {
	case leafConst:
		return &bpfgen.Expr{Src: bpfgen.SrcConst, Const: x.c}, nil
	case leafTime:
		return &bpfgen.Expr{Src: bpfgen.SrcTime, Usecs: x.usecs}, nil
	case leafField:
		return &bpfgen.Expr{Src: bpfgen.SrcField, Field: x.field, Signed: x.signed}, nil
	case leafPID:
		return &bpfgen.Expr{Src: bpfgen.SrcPID, Signed: true}, nil
	case leafCPU:
		return &bpfgen.Expr{Src: bpfgen.SrcCPU}, nil
	case leafRef:
		r := h.refs[x.ref]
		if r.self {
			if !own {
				return nil, nil
			}
			return &bpfgen.Expr{Src: bpfgen.SrcVar, Var: r.v, Signed: x.signed}, nil
		}
		return &bpfgen.Expr{Src: bpfgen.SrcRef, Ref: refs[x.ref], Signed: x.signed}, nil
	}
	return nil, fmt.Errorf("hist %s: a string operand reached a number", h.fm.FullName())
}

// filtered is h's action behind h's filter, among other hists of its
// event.
func (ls *liveSession) filtered(h *sessHist, depth int) (bpfgen.Action, error) {
	a, err := ls.histAction(h, depth)
	if err != nil || h.run.filter == nil {
		return a, err
	}
	return &bpfgen.GatedAction{Filter: h.run.filter, Inner: a}, nil
}

// histAction is the action of h, depth synthetic events deep, with its
// handlers' actions.
func (ls *liveSession) histAction(h *sessHist, depth int) (bpfgen.Action, error) {
	i := ls.index[h]
	l := ls.layouts[i]
	ha := bpfgen.NewHistAction(l, sessMap(i), sessDrops(i))
	if depth == 0 && ls.stamp != 0 {
		ha.Stamp = ls.stamp
	}
	ha.OnTrack = make([][]bpfgen.Action, len(l.Tracks))
	for j, a := range h.actions {
		var acts []bpfgen.Action
		switch a.a.Kind {
		case parse.ActTrace:
			sa, err := ls.synthAction(h, &h.actions[j], depth)
			if err != nil {
				return nil, err
			}
			acts = []bpfgen.Action{sa}
		case parse.ActSnapshot:
			t := bpfgen.NewTriggeringAction(sessTrig(i), l.KeySize)
			t.Compare, t.Track = true, l.Tracks[ls.tracks[i][j]].Kind
			acts = []bpfgen.Action{t}
			if ls.rec != nil && ls.rec.Snapshots {
				// The recording's flight recorder writes the snapshot.
				acts = append(acts, bpfgen.NewSnapshotAction(ls.rec.Spec))
			}
		}
		if t := ls.tracks[i][j]; t >= 0 {
			ha.OnTrack[t] = acts
		} else {
			ha.OnMatch = append(ha.OnMatch, acts...)
		}
	}
	return ha, nil
}

// synthAction is the SynthAction of trace action a of h: the synthetic
// event's record from a's params, and its hists' actions on it.
func (ls *liveSession) synthAction(h *sessHist, a *sessAction, depth int) (bpfgen.Action, error) {
	spec := h.spec
	if depth >= bpfgen.MaxSynthDepth {
		return nil, spec.Errorf(a.a.Off, a.a.End, "synthetic events nest more than %d deep: not supported by a live hist", bpfgen.MaxSynthDepth).
			WithHint("a synthetic event whose hist emits a synthetic event ... runs over a recording (gtrace hist -i FILE) up to %d deep", maxSynthDepth)
	}
	i := ls.index[h]
	refs := ls.refs[i]
	sa := &bpfgen.SynthAction{Format: a.synth.fm}
	for j, p := range a.params {
		pa := a.a.Params[j]
		var sp bpfgen.SynthParam
		switch {
		case p.ref >= 0 && h.refs[p.ref].self:
			r := h.refs[p.ref]
			if p.typ.str || p.typ.stack {
				if k := ls.layouts[i].Vars[r.v].Kind; k != bpfgen.VarString && k != bpfgen.VarFrames {
					return nil, spec.Errorf(pa.Off, pa.End, "this string cannot be passed to a synthetic event by a live hist")
				}
				sp = bpfgen.SynthParam{Src: bpfgen.ParamVar, Index: r.v}
			} else {
				sp = bpfgen.SynthParam{Src: bpfgen.ParamNumber, Expr: &bpfgen.Expr{Src: bpfgen.SrcVar, Var: r.v}}
			}
		case p.ref >= 0:
			if p.typ.str || p.typ.stack {
				sp = bpfgen.SynthParam{Src: bpfgen.ParamRef, Index: refs[p.ref]}
			} else {
				sp = bpfgen.SynthParam{Src: bpfgen.ParamNumber, Expr: &bpfgen.Expr{Src: bpfgen.SrcRef, Ref: refs[p.ref]}}
			}
		case p.field.Class.IsString() || p.field.Class == parse.ClassStringPtr && p.typ.str:
			sp = bpfgen.SynthParam{Src: bpfgen.ParamString, Field: p.field, User: p.field.Class == parse.ClassStringPtr && h.fm.System == "syscalls"}
		case p.field.Name == "common_pid":
			sp = bpfgen.SynthParam{Src: bpfgen.ParamNumber, Expr: &bpfgen.Expr{Src: bpfgen.SrcPID, Signed: true}}
		default:
			sp = bpfgen.SynthParam{Src: bpfgen.ParamNumber, Expr: &bpfgen.Expr{Src: bpfgen.SrcField, Field: p.field, Signed: p.field.Signed}}
		}
		sa.Params = append(sa.Params, sp)
	}
	for _, t := range ls.s.byEvent[a.synth.fm.FullName()] {
		in, err := ls.filtered(t, depth+1)
		if err != nil {
			return nil, err
		}
		sa.Actions = append(sa.Actions, in)
	}
	if r := ls.rec; r != nil {
		if filter, ok := r.Record[a.synth.def.Name]; ok {
			var rec bpfgen.Action = bpfgen.NewRecordAction(r.Spec, a.synth.fm)
			if filter != nil {
				rec = &bpfgen.GatedAction{Filter: filter, Inner: rec}
			}
			sa.Actions = append(sa.Actions, rec)
		}
	}
	return sa, nil
}

// describe prints the programs, for --dry-run.
func (ls *liveSession) describe(w io.Writer) error {
	infos := ls.s.infos()
	for i, h := range ls.s.hists {
		fmt.Fprintf(w, "# trigger info: %s\n%s", infos[h], h.run.plan)
		fmt.Fprintf(w, "# map %s: %d variables, %d references, %d tracks\n", sessMap(i), len(ls.layouts[i].Vars), len(ls.layouts[i].Refs), len(ls.layouts[i].Tracks))
	}
	for _, p := range ls.progs {
		fmt.Fprintf(w, "# program %s on classic tracepoint %s\n", p.name, p.fm.FullName())
		if p.time != "" {
			fmt.Fprintf(w, "# common_timestamp of %s: %s\n", p.fm.FullName(), p.time)
		}
	}
	_, err := fmt.Fprintf(w, "%s\n", ls.program.Listing())
	return err
}

// attached says what the session counts, for the run's attach line:
// "counting 3 hists of 2 events and 1 synthetic event (2 programs)".
func (ls *liveSession) attached() string {
	events, synths := 0, 0
	for _, ev := range ls.s.events {
		if strings.HasPrefix(ev, parse.SynthSystem+":") {
			synths++
		} else {
			events++
		}
	}
	what := "counting " + plural(len(ls.s.hists), "hist") + " of " + plural(events, "event")
	if synths > 0 {
		what += " and " + plural(synths, "synthetic event")
	}
	return what + " (" + plural(len(ls.progs), "program") + ")"
}

// plural is "1 thing" or "n things".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// attach loads the collection and attaches each event's program; in a
// recording, the maps of the loaded recording that its synthetic events'
// records and its switch go through are the recording's.
func (ls *liveSession) attach(follow []uint32, recording *probe.Objects) error {
	shared := probe.Shared{}
	if ls.rec != nil {
		var names []string
		for _, n := range []string{bpfgen.SwitchMapName, bpfgen.RingsMapName, bpfgen.LostMapName, bpfgen.BatchMapName, bpfgen.StampMapName} {
			if ls.program.Collection.Maps[n] != nil {
				names = append(names, n)
			}
		}
		if err := shared.Take(recording, names...); err != nil {
			return err
		}
	}
	objs, _, err := probe.LoadBestSharing(ls.program, nil, shared)
	if err != nil {
		return err
	}
	if len(follow) > 0 || objs.Map(bpfgen.FollowMapName) != nil {
		if err := objs.Follow(follow); err != nil {
			objs.Close()
			return err
		}
	}
	for _, p := range ls.progs {
		if err := objs.Attach(p.name, bpfgen.Tracepoint{}.Point(p.fm)); err != nil {
			objs.Close()
			return err
		}
	}
	ls.objs = objs
	return nil
}

// tables reads the session's maps into its tables, in the engine's
// order (Session.Tables).
func (ls *liveSession) tables() ([]*Table, []string, error) {
	var err error
	tables, infos := ls.s.tablesOf(func(h *sessHist) *Table {
		t, e := ls.table(h)
		if e != nil && err == nil {
			err = e
		}
		return t
	})
	return tables, infos, err
}

// table reads the map of h.
func (ls *liveSession) table(h *sessHist) (*Table, error) {
	i := ls.index[h]
	l := ls.layouts[i]
	p := h.run.plan
	t := &Table{Plan: p}
	err := probe.ForEach(ls.objs.Map(sessMap(i)), func(k, v []byte) {
		e := p.decode(k, v)
		for j, a := range h.actions {
			if a.a.Handler == parse.OnMatch || a.a.Kind == parse.ActSnapshot {
				continue
			}
			tr := l.Tracks[ls.tracks[i][j]]
			ea := EntryAction{Handler: a.a.Handler, Value: binary.LittleEndian.Uint64(v[tr.Off:])}
			if s := ls.saveOff[i]; s >= 0 {
				st := l.Tracks[s]
				set := binary.LittleEndian.Uint64(v[st.Off:]) != 0
				for n, sv := range st.Saves {
					sf := SavedField{Name: h.saves[n].name, Str: h.saves[n].typ.str, Set: set}
					if sf.Str {
						sf.Text = cString(v[sv.Off : sv.Off+sv.Size])
					} else {
						sf.Num = binary.LittleEndian.Uint64(v[sv.Off:])
					}
					ea.Saved = append(ea.Saved, sf)
				}
			}
			e.Actions = append(e.Actions, ea)
		}
		t.Entries = append(t.Entries, e)
	})
	if err != nil {
		return nil, err
	}
	if t.Dropped, err = probe.ReadU64(ls.objs.Map(sessDrops(i)), false); err != nil {
		return nil, err
	}
	if t.Snapshot, err = ls.snapshot(h, p); err != nil {
		return nil, err
	}
	t.Sort()
	return t, nil
}

// snapshot reads the triggering value and key of h's snapshot(), nil
// when it has none or it has not fired.
func (ls *liveSession) snapshot(h *sessHist, p *Plan) (*Snapshot, error) {
	i := ls.index[h]
	m := ls.objs.Map(sessTrig(i))
	if m == nil {
		return nil, nil
	}
	for _, a := range h.actions {
		if a.a.Kind != parse.ActSnapshot {
			continue
		}
		v := make([]byte, 8+ls.layouts[i].KeySize)
		if err := m.Lookup(uint32(0), v); err != nil {
			return nil, fmt.Errorf("read the snapshot of %s: %w", h.fm.FullName(), err)
		}
		val := binary.LittleEndian.Uint64(v)
		if val == 0 {
			return nil, nil
		}
		key := v[8:]
		s := &Snapshot{Handler: fmt.Sprintf("%s($%s)", a.a.Handler, a.a.Var), Value: val, Keys: h.decodeKeys(key)}
		if ls.layouts[i].CommOff >= 0 {
			entry := make([]byte, ls.layouts[i].ValueSize)
			if err := ls.objs.Map(sessMap(i)).Lookup(key, entry); err == nil {
				s.Comm = p.decode(key, entry).Comm
			}
		}
		return s, nil
	}
	return nil, nil
}

// close detaches and unloads the programs.
func (ls *liveSession) close() {
	if ls.objs != nil {
		ls.objs.Close()
		ls.objs = nil
	}
}
