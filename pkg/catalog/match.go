package catalog

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// ErrNoEvent is wrapped by errors about events that do not exist. It is
// tracefs.ErrNoEvent, so that errors.Is holds with either name.
var ErrNoEvent = tracefs.ErrNoEvent

// ErrAmbiguous is wrapped by the error (an *AmbiguousError) of an event
// name that more than one system has, where a single event is needed.
var ErrAmbiguous = errors.New("ambiguous event name")

// EventError says that a pattern named no event. It wraps ErrNoEvent.
type EventError struct {
	Pattern     string
	Suggestions []string // the nearest event names, "SYS:EVENT"
	Where       string   // the catalog's Where
	List        string   // the command that lists the events, or ""
}

func (e *EventError) Error() string {
	msg := fmt.Sprintf("unknown event %q", e.Pattern)
	if e.Where != "" && e.Where != "tracefs" {
		msg += " in " + e.Where
	}
	if len(e.Suggestions) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(quoteAll(e.Suggestions), ", "))
	}
	if e.List != "" {
		msg += "; " + e.List + " shows the events"
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrNoEvent) true.
func (e *EventError) Unwrap() error { return ErrNoEvent }

// Match returns the events a trace-cmd style pattern names: "SYS:EVENT",
// "SYS:*", "*:EVENT", "EVENT" (any system) or "SYS" (a whole system, when
// no event has that name), each part a shell glob, in the catalog's order.
// When nothing matches it returns an *EventError, which wraps ErrNoEvent,
// with the nearest event names.
func Match(c Catalog, pattern string) ([]Event, error) {
	all, err := c.Events()
	if err != nil {
		return nil, err
	}
	if evs := match(all, pattern); len(evs) > 0 {
		return evs, nil
	}
	return nil, noEvent(c, pattern, all)
}

// match returns the events of all that pattern names, or none.
func match(all []Event, pattern string) []Event {
	sysPat, evPat, qualified := strings.Cut(pattern, ":")
	if !qualified {
		sysPat, evPat = "*", pattern
	}
	var out []Event
	for _, e := range all {
		if globMatch(sysPat, e.System) && globMatch(evPat, e.Name) {
			out = append(out, e)
		}
	}
	if len(out) == 0 && !qualified {
		// A bare word may name a whole system, as in trace-cmd -e sched.
		for _, e := range all {
			if globMatch(pattern, e.System) {
				out = append(out, e)
			}
		}
	}
	return out
}

func noEvent(c Catalog, pattern string, all []Event) *EventError {
	return &EventError{Pattern: pattern, Suggestions: closest(pattern, all, 3), Where: c.Where(), List: listCommand(c)}
}

// Lookup resolves one event name: "SYS:EVENT", or an "EVENT" that only one
// system has. A pattern is an error, an unknown name an *EventError, and a
// name several systems have an error wrapping ErrAmbiguous that lists
// them.
func Lookup(c Catalog, name string) (Event, error) {
	if strings.ContainsAny(name, "*?[") {
		return Event{}, fmt.Errorf("event %q: a single event is needed here, not a pattern", name)
	}
	all, err := c.Events()
	if err != nil {
		return Event{}, err
	}
	sys, ev, qualified := strings.Cut(name, ":")
	var found []Event
	for _, e := range all {
		if e.Name == ev && e.System == sys || !qualified && e.Name == name {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		return Event{}, noEvent(c, name, all)
	case 1:
		return found[0], nil
	}
	ae := &AmbiguousError{Name: name, Events: found}
	if s := shortWhere(c); s != "tracefs" {
		ae.In = s
	}
	return Event{}, ae
}

// AmbiguousError says that an event name is that of events in several
// systems. It wraps ErrAmbiguous.
type AmbiguousError struct {
	Name   string
	Events []Event // the candidates
	In     string  // where, for the message ("the file"), or ""
}

func (e *AmbiguousError) Error() string {
	names := make([]string, len(e.Events))
	for i, ev := range e.Events {
		names[i] = ev.String()
	}
	in := ""
	if e.In != "" {
		in = " in " + e.In
	}
	return fmt.Sprintf("event %q is ambiguous%s: %s", e.Name, in, strings.Join(names, ", "))
}

// Unwrap makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }

// closest returns up to n event names nearest to pattern by edit distance,
// comparing against the full "sys:event" name or the bare event name,
// whichever the pattern looks like.
func closest(pattern string, all []Event, n int) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	qualified := strings.Contains(pattern, ":")
	limit := max(2, len(pattern)/3)
	for _, e := range all {
		target := e.Name
		if qualified {
			target = e.String()
		}
		// The distance is at least the difference in length.
		if len(target) > len(pattern)+limit || len(pattern) > len(target)+limit {
			continue
		}
		d := parse.Distance(pattern, target)
		if d <= limit {
			cs = append(cs, cand{e.String(), d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func globMatch(pattern, s string) bool {
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}
