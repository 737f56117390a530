package parse

import (
	"strings"
)

// The kernel's words for a trigger that may not be added (grammar §3.3,
// §4.6): EEXIST for the one-per-event triggers, the hist error log's
// message for a second identical hist.
const (
	kFileExists  = "File exists"
	kHistExists  = "Hist trigger already exists"
	triggerEmpty = "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist\n"
)

// TriggerSet is the triggers of one event, as its trigger file holds them
// after a sequence of writes. The zero value is an empty set.
type TriggerSet struct {
	list []*Trigger // in the trigger file's order
}

// Triggers returns the triggers in the trigger file's order (Listing).
func (s *TriggerSet) Triggers() []*Trigger { return s.list }

// Apply adds t to the set, or removes the trigger it names when t is a
// removal, as a write of t to the event's trigger file would. The errors
// point into t.Src.
//
// Limits on adding (grammar §3.3), with the kernel's EEXIST as "File
// exists": one traceon, one traceoff, one stacktrace and one snapshot per
// event; one enable_event and one disable_event per target event (and the
// same for enable_hist and disable_hist); any number of hists, but not two
// that match (below): "Hist trigger already exists". gtrace departs from
// the kernel where the kernel is poor (§12.15): the kernel lets an event
// have a traceon or a traceoff, not both, because the two share a type;
// gtrace lets them coexist, and likewise enable_event and disable_event of
// one target (and enable_hist and disable_hist): each is its own trigger
// with its own count and filter, so that "turn on at A, off at B" is
// possible on one event.
//
// A removal ("!...") names the trigger it removes by command, and target
// for enable/disable, as the kernel does (§3.4), but by the command
// itself, not the type the kernel shares between traceon and traceoff
// (§12.14: the kernel's "!traceon" removes a traceoff); a hist is named by
// its description without size and its filter text, exactly (the
// kernel's hist_trigger_match ignores the size). Where the kernel ignores
// a removal's count and filter, gtrace requires them to be left out or to
// equal those of the trigger removed (the count as given, the filter by
// its canonical text), and a removal that matches no trigger is an error,
// where the kernel's write succeeds doing nothing.
func (s *TriggerSet) Apply(t *Trigger) error {
	if t.Remove {
		return s.remove(t)
	}
	for _, o := range s.list {
		if t.Hist != nil && o.Hist != nil && histMatch(t.Hist, o.Hist) {
			return t.Errorf(t.CmdOff, len(strings.TrimRight(t.Src, " \t\n\v\f\r")), "%s: %s", kHistExists, o.Hist).
				WithHint("the event already has this hist (size aside); remove it first with !%s", o.Hist)
		}
		if t.Hist == nil && sameTrigger(t, o) {
			off, end := t.CmdOff, t.CmdEnd
			if t.Cmd.HasTarget() {
				end = t.Target.End
			}
			return t.Errorf(off, end, "%s: the event already has a trigger %s", kFileExists, o.Listing()).
				WithHint("one %s per event%s; remove the other first with !%s", triggerSlot(t), triggerTargetNote(t), o)
		}
	}
	if t.Hist != nil {
		// The kernel appends a hist to the list, and puts every other
		// trigger at its head.
		s.list = append(s.list, t)
		return nil
	}
	s.list = append([]*Trigger{t}, s.list...)
	return nil
}

func triggerSlot(t *Trigger) string {
	if t.Cmd.HasTarget() {
		return t.Cmd.String() + ":" + t.Target.System + ":" + t.Target.Event
	}
	return t.Cmd.String()
}

func triggerTargetNote(t *Trigger) string {
	if t.Cmd.HasTarget() {
		return " and target"
	}
	return ""
}

// sameTrigger reports whether a and b, neither a hist, take the same slot:
// the same command and, for enable/disable, the same target.
func sameTrigger(a, b *Trigger) bool {
	return b.Hist == nil && a.Cmd == b.Cmd && a.Target.System == b.Target.System && a.Target.Event == b.Target.Event
}

// histMatch reports whether two hist specs are the same hist as the
// kernel's hist_trigger_match decides: the same description, size aside,
// and the same filter text.
func histMatch(a, b *HistSpec) bool {
	x, y := *a, *b
	x.Size, y.Size = 0, 0
	return x.String() == y.String()
}

func (s *TriggerSet) remove(t *Trigger) error {
	for i, o := range s.list {
		if t.Hist != nil {
			if o.Hist == nil || !histMatch(t.Hist, o.Hist) {
				continue
			}
		} else if !sameTrigger(t, o) {
			continue
		}
		if t.HasCount && (!o.HasCount || o.Count != t.Count) {
			return t.Errorf(t.CountOff, t.CountEnd, "the count does not match the trigger removed, %s", o.Listing()).
				WithHint("remove it without a count, as !%s, or with its own", triggerSlot(t))
		}
		if t.Hist == nil && t.Filter != nil && (o.Filter == nil || exprString(o.Filter) != exprString(t.Filter)) {
			return t.Errorf(t.FilterOff, t.FilterOff+len(t.FilterText), "the filter does not match the trigger removed, %s", o.Listing()).
				WithHint("remove it without a filter, as !%s, or with its own", triggerSlot(t))
		}
		s.list = append(s.list[:i:i], s.list[i+1:]...)
		return nil
	}
	end := len(strings.TrimRight(t.Src, " \t\n\v\f\r"))
	if t.Hist == nil {
		end = t.CmdEnd
		if t.Cmd.HasTarget() {
			end = t.Target.End
		}
	}
	return t.Errorf(t.Off, end, "no trigger to remove: the event has no %s", strings.TrimPrefix(t.String(), "!")).
		WithHint("a removal names a trigger the event has, as its listing shows it")
}

// Listing returns the event's trigger file as the kernel prints it
// (grammar §3.5): one line per trigger (Trigger.Listing) in the kernel's
// order, which puts every trigger but a hist at the head of the list, so
// that those list newest first, and appends a hist at its end, so that
// hists list oldest first, after the others. An empty set reads as the
// kernel's two comment lines naming the commands.
func (s *TriggerSet) Listing() string {
	if len(s.list) == 0 {
		return triggerEmpty
	}
	var b strings.Builder
	for _, t := range s.list {
		b.WriteString(t.Listing())
		b.WriteByte('\n')
	}
	return b.String()
}

// EventLookup returns the format of the event SYSTEM:EVENT, or false when
// there is no such event.
type EventLookup func(system, event string) (*Format, bool)

// BoundTrigger is a trigger resolved against its event.
type BoundTrigger struct {
	Trigger *Trigger
	Filter  *BoundFilter // the bound filter, nil when the trigger has none
	Target  *Format      // the target event's format for enable/disable, else nil
}

// Bind resolves t against f, the format of the event whose trigger it is:
// it binds the filter (a hist's too) against f and, for enable_event,
// disable_event, enable_hist and disable_hist, looks the target event up
// with lookup. Errors are *Error pointing into t.Src.
func (t *Trigger) Bind(f *Format, lookup EventLookup) (*BoundTrigger, error) {
	bt := &BoundTrigger{Trigger: t}
	if t.Filter != nil {
		bf, err := BindFilter(t.Name, t.Src, t.Filter, f)
		if err != nil {
			return nil, err
		}
		bt.Filter = bf
	}
	if t.Cmd.HasTarget() {
		tf, ok := lookup(t.Target.System, t.Target.Event)
		if !ok {
			return nil, t.Errorf(t.Target.Off, t.Target.End, "no event %s:%s", t.Target.System, t.Target.Event).
				WithHint("the target of %s is an event of the catalog, SYSTEM:EVENT", t.Cmd)
		}
		bt.Target = tf
	}
	return bt, nil
}
