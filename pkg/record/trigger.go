package record

import (
	"fmt"
	"math"
	"strings"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/hist"
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// EventTriggers is the trigger set of one event: what its trigger file
// would hold after the -R of the command line.
type EventTriggers struct {
	Event tracefs.Event
	Set   *parse.TriggerSet
}

// TriggerSets parses the -R triggers of specs and applies them, in order,
// to the trigger set of every event that their -e matches, as writes to
// the events' trigger files would: "!TRIGGER" removes an earlier one, and
// the one-per-event limits are errors (parse.TriggerSet.Apply). It reads only the
// event names, so it needs no privileges. The sets come in the order
// their events are first named; an event whose triggers all went is left
// out.
func TriggerSets(fs *tracefs.FS, specs []EventSpec) ([]EventTriggers, error) {
	sets, _, err := triggerSets(fs, specs, nil, nil)
	if err != nil {
		return nil, err
	}
	kept := sets[:0]
	for _, et := range sets {
		if len(et.Set.Triggers()) > 0 {
			kept = append(kept, et)
		}
	}
	return kept, nil
}

// addedTrigger is a trigger added to the set of an event, in the order
// of the writes.
type addedTrigger struct {
	event tracefs.Event
	t     *parse.Trigger
}

// triggerSets is TriggerSets with the events whose triggers all went
// (their sets empty), and the synthetic events of synths and the probe
// events of probes that a -e names; it also returns every trigger added,
// in the order of the writes, with the event it went to.
func triggerSets(fs *tracefs.FS, specs []EventSpec, synths []hist.SynthEvent, probes []*parse.Format) ([]EventTriggers, []addedTrigger, error) {
	var out []EventTriggers
	var added []addedTrigger
	index := map[tracefs.Event]int{}
	for _, es := range specs {
		if len(es.Triggers) == 0 {
			continue
		}
		var evs []tracefs.Event
		if ses, ok, err := matchSynth(es.Pattern, synths); ok {
			if err != nil {
				return nil, nil, err
			}
			for _, se := range ses {
				evs = append(evs, tracefs.Event{System: parse.SynthSystem, Name: se.Def.Name})
			}
		} else if evs, err = matchEvents(fs, es.Pattern, probes); err != nil {
			return nil, nil, err
		}
		for _, src := range es.Triggers {
			t, err := parse.ParseTrigger("-R", src)
			if err != nil {
				return nil, nil, err
			}
			for _, e := range evs {
				if e.System == "ftrace" {
					continue
				}
				i, ok := index[e]
				if !ok {
					i = len(out)
					index[e] = i
					out = append(out, EventTriggers{Event: e, Set: &parse.TriggerSet{}})
				}
				if err := out[i].Set.Apply(t); err != nil {
					return nil, nil, err
				}
				if !t.Remove {
					added = append(added, addedTrigger{event: e, t: t})
				}
			}
		}
	}
	return out, added, nil
}

// planHist is a hist trigger of the plan: the hist of an event, counted
// alongside the recording.
type planHist struct {
	event int // the event's index in Plan.Events
	spec  *parse.HistSpec
}

// bindTriggers resolves the -R triggers of o against the plan's events:
// it binds each trigger's filter to its event and adds the target of an
// enable_event or disable_event that no -e names to the plan, soft
// disabled, so that it is recorded only once a trigger enables it. A
// stacktrace trigger becomes the event's Stacktrace, a hist trigger a
// hist of the plan (p.hists, in the order of the events and of each
// event's hists); the target of an enable_hist or disable_hist must be
// an event with a hist.
func (p *Plan) bindTriggers(fs *tracefs.FS, o *Options, index map[tracefs.Event]int) error {
	sets, _, err := triggerSets(fs, o.Events, o.Synths, o.Probes)
	if err != nil {
		return err
	}
	withHist := map[tracefs.Event]bool{}
	var all []hist.EventHist
	for _, et := range sets {
		if et.Event.System == parse.SynthSystem {
			for _, t := range et.Set.Triggers() {
				if t.Cmd != parse.TrigHist {
					return t.Errorf(t.CmdOff, t.CmdEnd, "a %s trigger on synthetic event %s: not supported by gtrace", t.Cmd, et.Event.Name).
						WithHint("a recording's synthetic events take hist triggers (and -f): -e synthetic:%s -R 'hist:keys=...'", et.Event.Name)
				}
				all = append(all, hist.EventHist{Event: et.Event.String(), Spec: t.Hist})
			}
			continue
		}
		i, ok := index[et.Event]
		if !ok {
			continue // an event the plan left out (a pattern's ftrace events)
		}
		for _, t := range et.Set.Triggers() {
			if t.Cmd == parse.TrigHist {
				p.hists = append(p.hists, planHist{event: i, spec: t.Hist})
				all = append(all, hist.EventHist{Event: et.Event.String(), Spec: t.Hist})
				withHist[et.Event] = true
			}
		}
	}
	if hist.IsSession(all, o.Synths) {
		if len(all) == 0 {
			return fmt.Errorf("--synth defines synthetic events that no hist trigger emits: give a hist trigger with an action, -R 'hist:keys=...:onmatch(SYS.EVENT).NAME(...)'")
		}
		p.session, p.hists = all, nil
		withHist = map[tracefs.Event]bool{}
	}
	for _, et := range sets {
		i, ok := index[et.Event]
		if !ok {
			continue
		}
		ev := p.Events[i]
		for _, t := range et.Set.Triggers() {
			if t.Cmd == parse.TrigHist {
				continue
			}
			if p.session != nil && (t.Cmd == parse.TrigEnableHist || t.Cmd == parse.TrigDisableHist) {
				return t.Errorf(t.CmdOff, t.CmdEnd, "%s with an inter-event session: not supported by gtrace", t.Cmd).
					WithHint("the hists of a session (variables, actions, synthetic events) count from start to end")
			}
			if t.Cmd == parse.TrigEnableHist || t.Cmd == parse.TrigDisableHist {
				if target := (tracefs.Event{System: t.Target.System, Name: t.Target.Event}); !withHist[target] {
					return t.Errorf(t.Target.Off, t.Target.End, "%s has no hist here", target).
						WithHint("%s continues or pauses the hists of a hist trigger: give %s one, -e %s -R 'hist:keys=...'", t.Cmd, target, target)
				}
			}
			bt, err := t.Bind(ev.Format, func(system, event string) (*parse.Format, bool) {
				return p.target(fs, index, tracefs.Event{System: system, Name: event}, o.Probes)
			})
			if err != nil {
				return err
			}
			if bt.Filter != nil {
				if err := bt.Filter.ResolveFunctions(ksym.KernelFuncRange); err != nil {
					return err
				}
				p.Warnings = append(p.Warnings, bt.Filter.Warnings...)
			}
			switch t.Cmd {
			case parse.TrigStacktrace:
				ev.Stacktrace = stacktrace(bt, o.UserStack)
				continue
			case parse.TrigSnapshot:
				if !o.Snapshots {
					return t.Errorf(t.CmdOff, t.CmdEnd, "the snapshot trigger writes trace.dat files: it runs on gtrace record").
						WithHint("gtrace record -e %s -R '%s' writes FILE.snapshot-N.dat at each firing", ev.Format.FullName(), t)
				}
				ev.Snapshot = snapshot(bt)
				continue
			}
			ev.Triggers = append(ev.Triggers, bt)
		}
	}
	return nil
}

// target returns the format of a trigger's target event, adding it to
// the plan, soft disabled, when no -e names it.
func (p *Plan) target(fs *tracefs.FS, index map[tracefs.Event]int, e tracefs.Event, probes []*parse.Format) (*parse.Format, bool) {
	if i, ok := index[e]; ok {
		return p.Events[i].Format, true
	}
	if e.System == "ftrace" {
		return nil, false
	}
	ev, err := planEvent(fs, e, probes)
	if err != nil {
		return nil, false
	}
	ev.SoftDisabled = true
	index[e] = len(p.Events)
	p.Events = append(p.Events, ev)
	return ev.Format, true
}

// recordTriggers returns the bpfgen triggers of ev, their targets looked
// up in events, and for an enable_hist or disable_hist the hists of its
// target among hists.
func recordTriggers(ev *Event, events []*Event, hists []planHist) ([]bpfgen.RecordTrigger, error) {
	var out []bpfgen.RecordTrigger
	for _, bt := range ev.Triggers {
		t := bt.Trigger
		rt := bpfgen.RecordTrigger{Cmd: t.Cmd, Filter: bt.Filter, Count: -1, Target: -1}
		if t.HasCount {
			// A count beyond 2^63-1 is, at a billion firings a
			// second, three centuries: it is that.
			rt.Count = int64(min(t.Count, math.MaxInt64))
		}
		if bt.Target != nil {
			for i, o := range events {
				if o.Format == bt.Target {
					rt.Target = i
				}
			}
			if rt.Target < 0 {
				return nil, fmt.Errorf("trigger %s of %s: its target is not in the recording", t, ev.Format.FullName())
			}
			if t.Cmd == parse.TrigEnableHist || t.Cmd == parse.TrigDisableHist {
				for h, ph := range hists {
					if ph.event == rt.Target {
						rt.Hists = append(rt.Hists, h)
					}
				}
			}
		}
		out = append(out, rt)
	}
	return out, nil
}

// PlanTrigger is a trigger of a plan, in the order of Session.Fired.
type PlanTrigger struct {
	Event   string         // SYS:EVENT
	Trigger *parse.Trigger // as given
}

// Triggers returns the plan's triggers: each event's, in the plan's
// order of events and the trigger file's order of an event's triggers.
func (p *Plan) Triggers() []PlanTrigger {
	var out []PlanTrigger
	for _, ev := range p.Events {
		for _, bt := range ev.Triggers {
			out = append(out, PlanTrigger{Event: ev.Format.FullName(), Trigger: bt.Trigger})
		}
	}
	return out
}

// Fired returns how many times each trigger of the plan has fired (it
// changed what it changes), in the order of Plan.Triggers.
func (s *Session) Fired() ([]uint64, error) {
	if s.control == nil {
		return nil, nil
	}
	w, err := s.objs.Words(bpfgen.SwitchMapName)
	if err != nil {
		return nil, err
	}
	if len(w) < s.control.Words() {
		return nil, fmt.Errorf("control map: %d words, want %d", len(w), s.control.Words())
	}
	fired := make([]uint64, s.control.Triggers)
	for t := range fired {
		fired[t] = w[s.control.FiresWord(t)]
	}
	return fired, nil
}

// TriggerListing returns the trigger files of the events that specs put
// triggers on, as the kernel would list them after the -R writes
// (parse.TriggerSet.Listing; an event whose triggers were all removed
// lists as the kernel's empty trigger file), without loading anything: one event's
// listing alone, several each after a line "# SYS:EVENT". It takes every
// trigger the parser takes, those a recording does not run too (a
// listing only lists), each checked against its event's format: the
// filter's fields, the target event, a hist's keys and values, and the
// hists of one name= against the first of that name (hist.Shares), whose
// description the others list, with their own filter, as the kernel
// lists a hist that counts into a named table.
func TriggerListing(fs *tracefs.FS, specs []EventSpec) (string, error) {
	sets, added, err := triggerSets(fs, specs, nil, nil)
	if err != nil {
		return "", err
	}
	lookup := func(system, event string) (*parse.Format, bool) {
		f, err := fs.Format(tracefs.Event{System: system, Name: event})
		return f, err == nil && system != "ftrace"
	}
	formats := map[tracefs.Event]*parse.Format{}
	for _, et := range sets {
		f, err := fs.Format(et.Event)
		if err != nil {
			return "", err
		}
		formats[et.Event] = f
		for _, t := range et.Set.Triggers() {
			if _, err := t.Bind(f, lookup); err != nil {
				return "", err
			}
		}
	}
	lines, err := histListings(sets, added, formats)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, et := range sets {
		if len(sets) > 1 {
			fmt.Fprintf(&b, "# %s\n", et.Event)
		}
		if len(et.Set.Triggers()) == 0 {
			b.WriteString(et.Set.Listing())
		}
		for _, t := range et.Set.Triggers() {
			line := t.Listing()
			if l, ok := lines[listed{et.Event, t}]; ok {
				line = l
			}
			b.WriteString(line + "\n")
		}
	}
	return b.String(), nil
}

// listed is a trigger in the set of an event.
type listed struct {
	event tracefs.Event
	t     *parse.Trigger
}

// histListings checks the hists that are still in the sets, in the order
// they were added, against their events' formats (hist.Shares), and
// returns the listing line of each hist that counts into the table of an
// earlier hist of its name: that hist's description with its own filter
// and state.
func histListings(sets []EventTriggers, added []addedTrigger, formats map[tracefs.Event]*parse.Format) (map[listed]string, error) {
	kept := map[listed]bool{}
	for _, et := range sets {
		for _, t := range et.Set.Triggers() {
			kept[listed{et.Event, t}] = true
		}
	}
	var hists []listed
	var fms []*parse.Format
	var specs []*parse.HistSpec
	for _, a := range added {
		l := listed(a)
		if a.t.Hist == nil || !kept[l] {
			continue
		}
		hists = append(hists, l)
		fms = append(fms, formats[a.event])
		specs = append(specs, a.t.Hist)
	}
	owner, err := hist.Shares(fms, specs)
	if err != nil {
		return nil, err
	}
	lines := map[listed]string{}
	for i, o := range owner {
		if o == i {
			continue
		}
		s := *specs[o]
		s.FilterText, s.Pause = specs[i].FilterText, specs[i].Pause
		lines[hists[i]] = (&parse.Trigger{Cmd: parse.TrigHist, Hist: &s}).Listing()
	}
	return lines, nil
}
