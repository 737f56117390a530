package hist

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// sessionControl returns the part of the session's control map of each
// hist of cfg, when a hist has -R triggers, starts paused (:pause) or
// the session starts off; nil otherwise. The session's events are the hists' events, each once:
// an event's triggers are those of all its hists' -R, applied in order to
// one trigger set (parse.TriggerSet.Apply), and run by the program of the
// event's first hist. traceon and traceoff turn the counting of every
// hist on and off; enable_event and disable_event turn that of the target
// event's hists on and off, and must name an event with a hist. A target
// of an enable_event starts soft disabled: counted from the firing on.
// enable_hist and disable_hist continue and pause every hist of their
// target, which must be an event with a hist, as the kernel's act on
// every hist trigger of the target; each hist has a paused word, set at
// the start by its :pause.
// Listings are each hist's triggers as the trigger file lists them, for
// --dry-run.
func sessionControl(fs *tracefs.FS, cfg LiveConfig) (ctls []*bpfgen.HistControl, listings [][]string, err error) {
	need := cfg.StartOff
	for _, h := range cfg.Hists {
		need = need || len(h.Triggers) > 0 || h.Spec.Pause
	}
	if !need {
		return nil, nil, nil
	}
	var events []*parse.Format
	index := map[tracefs.Event]int{}
	histEvent := make([]int, len(cfg.Hists))
	paused := make([]bool, len(cfg.Hists))
	for i, h := range cfg.Hists {
		ev, err := fs.Lookup(h.Event)
		if err != nil {
			return nil, nil, err
		}
		e, ok := index[ev]
		if !ok {
			f, err := fs.Format(ev)
			if err != nil {
				return nil, nil, err
			}
			e = len(events)
			index[ev] = e
			events = append(events, f)
		}
		histEvent[i], paused[i] = e, h.Spec.Pause
	}
	sets := make([]parse.TriggerSet, len(events))
	for i, h := range cfg.Hists {
		for _, src := range h.Triggers {
			t, err := parse.ParseTrigger("-R", src)
			if err != nil {
				return nil, nil, err
			}
			if err := supported(t); err != nil {
				return nil, nil, err
			}
			if err := sets[histEvent[i]].Apply(t); err != nil {
				return nil, nil, err
			}
		}
	}
	lookup := func(system, event string) (*parse.Format, bool) {
		if e, ok := index[tracefs.Event{System: system, Name: event}]; ok {
			return events[e], true
		}
		return nil, false
	}
	triggers := make([][]bpfgen.RecordTrigger, len(events))
	soft := make([]bool, len(events))
	for e, f := range events {
		for _, t := range sets[e].Triggers() {
			if t.Cmd.HasTarget() {
				if _, ok := lookup(t.Target.System, t.Target.Event); !ok {
					return nil, nil, t.Errorf(t.Target.Off, t.Target.End, "%s:%s has no hist here", t.Target.System, t.Target.Event).
						WithHint("%s turns the counting of a hist of this command on or off: give %s:%s its own -e", t.Cmd, t.Target.System, t.Target.Event)
				}
			}
			bt, err := t.Bind(f, lookup)
			if err != nil {
				return nil, nil, err
			}
			rt := bpfgen.RecordTrigger{Cmd: t.Cmd, Filter: bt.Filter, Count: -1}
			if bt.Filter != nil {
				if err := bt.Filter.ResolveFunctions(ksym.KernelFuncRange); err != nil {
					return nil, nil, err
				}
			}
			if t.HasCount {
				rt.Count = int64(min(t.Count, math.MaxInt64))
			}
			if bt.Target != nil {
				rt.Target = index[tracefs.Event{System: t.Target.System, Name: t.Target.Event}]
				switch t.Cmd {
				case parse.TrigEnableEvent:
					soft[rt.Target] = true
				case parse.TrigEnableHist, parse.TrigDisableHist:
					for h, he := range histEvent {
						if he == rt.Target {
							rt.Hists = append(rt.Hists, h)
						}
					}
				}
			}
			triggers[e] = append(triggers[e], rt)
		}
	}
	layout, m, err := bpfgen.SessionControl(triggers, soft, paused, cfg.StartOff)
	if err != nil {
		return nil, nil, err
	}
	out := make([]*bpfgen.HistControl, len(cfg.Hists))
	listings = make([][]string, len(cfg.Hists))
	first := make([]int, len(events)+1)
	for e := range events {
		first[e+1] = first[e] + len(triggers[e])
	}
	ran := make([]bool, len(events))
	for i := range cfg.Hists {
		e := histEvent[i]
		hc := &bpfgen.HistControl{Map: m, Layout: layout, Event: e, Hist: i, First: first[e]}
		if !ran[e] {
			hc.Triggers, ran[e] = triggers[e], true
			for _, t := range sets[e].Triggers() {
				listings[i] = append(listings[i], t.Listing())
			}
		}
		out[i] = hc
	}
	return out, listings, nil
}

// supported refuses the triggers a hist does not run, with a caret on
// the command word and what to use instead.
func supported(t *parse.Trigger) error {
	switch t.Cmd {
	case parse.TrigTraceOn, parse.TrigTraceOff, parse.TrigEnableEvent, parse.TrigDisableEvent,
		parse.TrigEnableHist, parse.TrigDisableHist:
		return nil
	case parse.TrigHist:
		return t.Errorf(t.CmdOff, t.CmdEnd, "not implemented by gtrace: a hist trigger in -R").
			WithHint("give the hist as the -e's own, 'hist:...' or -k")
	case parse.TrigStacktrace:
		return t.Errorf(t.CmdOff, t.CmdEnd, "a stacktrace trigger writes a stack after a record, and a hist has no records").
			WithHint("count the event by its kernel stack: -k common_stacktrace")
	}
	return t.Errorf(t.CmdOff, t.CmdEnd, "a snapshot trigger writes the records kept up to it, and a hist keeps none").
		WithHint("record the events with gtrace record -R '%s': it writes FILE.snapshot-N.dat at each firing", t.String())
}

// paused reports whether the hist of l is paused now: its paused word in
// the session's control map (false without one).
func (l *Live) paused() (bool, error) {
	hc := l.c.Layout.Control
	if hc == nil {
		return false, nil
	}
	m := l.objs.Map(bpfgen.SwitchMapName)
	v := make([]byte, m.ValueSize())
	if err := m.Lookup(uint32(0), v); err != nil {
		return false, fmt.Errorf("read the control map: %w", err)
	}
	w := hc.Layout.PausedWord(hc.Hist)
	return binary.LittleEndian.Uint64(v[8*w:]) != 0, nil
}

// withState returns a trigger info (ending in " [active]" or
// " [paused]") with the state the kernel shows: " [paused]" when paused.
func withState(info string, paused bool) string {
	info = strings.TrimSuffix(strings.TrimSuffix(info, " [active]"), " [paused]")
	if paused {
		return info + " [paused]"
	}
	return info + " [active]"
}
