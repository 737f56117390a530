package record

import (
	"fmt"
	"path"
	"strings"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/hist"
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// matchSynth returns the synthetic events of synths that pattern names:
// synthetic:NAME, synthetic:GLOB or synthetic. ok is false for a
// pattern of another system; one of the synthetic system that names
// none of synths is an error.
func matchSynth(pattern string, synths []hist.SynthEvent) (_ []hist.SynthEvent, ok bool, _ error) {
	sys, name, found := strings.Cut(pattern, ":")
	if sys != parse.SynthSystem {
		return nil, false, nil
	}
	if !found {
		name = "*"
	}
	var out []hist.SynthEvent
	for _, se := range synths {
		if m, err := path.Match(name, se.Def.Name); err != nil {
			return nil, true, fmt.Errorf("event %s: %w", pattern, err)
		} else if m {
			out = append(out, se)
		}
	}
	if len(out) == 0 {
		return nil, true, fmt.Errorf("no synthetic event %s: define it with --synth '%s TYPE FIELD[; TYPE FIELD]...'", pattern, name)
	}
	return out, true, nil
}

// addSynth adds the synthetic events of es to the plan's, each with the
// -f of es bound to its format; one named again takes the later -f.
func (p *Plan) addSynth(es EventSpec, synths []hist.SynthEvent, index map[string]int) error {
	var expr parse.Expr
	if es.Filter != "" {
		var err error
		if expr, err = parse.ParseFilter("-f", es.Filter); err != nil {
			return err
		}
	}
	for _, se := range synths {
		f := se.Format
		fixed, dynamic := bpfgen.RecordLayout(f)
		ev := &Event{Format: f, Text: se.Def.FormatFile(f.ID), Fixed: fixed, Dynamic: len(dynamic) > 0}
		if expr != nil {
			var err error
			if ev.Filter, err = parse.BindFilter("-f", es.Filter, expr, f); err != nil {
				return err
			}
			if err = ev.Filter.ResolveFunctions(ksym.KernelFuncRange); err != nil {
				return err
			}
			p.Warnings = append(p.Warnings, ev.Filter.Warnings...)
		}
		if i, ok := index[se.Def.Name]; ok {
			p.Synth[i] = ev
			continue
		}
		index[se.Def.Name] = len(p.Synth)
		p.Synth = append(p.Synth, ev)
	}
	return nil
}

// checkSession refuses what a recording's inter-event session does not
// run: tracing that starts off or is switched (the session's synthetic
// events are recorded whatever tracing is), and a synthetic event
// recorded on some CPUs only.
func (p *Plan) checkSession(o *Options) error {
	if len(p.Synth) == 0 {
		return nil
	}
	if o.StartOff {
		return fmt.Errorf("--start-off with synthetic events recorded: not supported by gtrace (a session's synthetic events are recorded from the start)")
	}
	if len(o.CPUs) > 0 {
		return fmt.Errorf("--cpu with synthetic events recorded: not supported by gtrace (a synthetic event is recorded on the CPU that emits it)")
	}
	for _, ev := range p.Events {
		for _, bt := range ev.Triggers {
			if t := bt.Trigger; t.Cmd == parse.TrigTraceOn || t.Cmd == parse.TrigTraceOff {
				return t.Errorf(t.CmdOff, t.CmdEnd, "%s with synthetic events recorded: not supported by gtrace", t.Cmd).
					WithHint("a session's synthetic events are recorded whether tracing is on or off: record them without traceon and traceoff")
			}
		}
	}
	return nil
}

// sessionHists returns the plan's inter-event session: its hists, on
// programs of their own in one collection that shares the recording's
// switch and, for the synthetic events recorded, its batches and rings.
func (p *Plan) sessionHists(fs *tracefs.FS, o *Options, spec *bpfgen.RecordSpec) (*hist.LiveJob, error) {
	if o.HistOut == nil {
		return nil, fmt.Errorf("a recording with hist triggers needs somewhere to print them")
	}
	cfg := hist.LiveConfig{Format: o.HistFormat, Out: o.HistOut, Follow: o.Follow, Hists: p.session, Synths: o.Synths}
	if !o.Follow {
		// With --follow, Start gives the hists the processes followed.
		cfg.PIDs = o.PIDs
	}
	rec := &hist.SessionRecording{Program: p.Program, Spec: spec, Record: map[string]*parse.BoundFilter{}, Snapshots: p.Snapshots}
	for _, ev := range p.Synth {
		rec.Record[ev.Format.Name] = ev.Filter
	}
	return hist.NewRecordingSession(fs, cfg, rec)
}
