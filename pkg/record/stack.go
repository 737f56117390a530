package record

import (
	"fmt"
	"math"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// Stacktrace is the stacktrace trigger of an event (-R 'stacktrace[:N]
// [if FILTER]'): each firing writes a record of the kernel's
// ftrace:kernel_stack event, the kernel stack where the event fired
// (bpfgen's stack.go), right after the event's own record, as the
// kernel's stacktrace trigger, a post-trigger, writes its entry after
// the event's. As the kernel's, it fires on every event that passes its
// own filter, whether the event's -f records it or not, and not while
// the event is soft disabled; while tracing is off a firing spends one
// of the count and writes nothing.
type Stacktrace struct {
	// Count is how many firings write a stack, as the kernel's
	// stacktrace:N counts them: every firing counts; 0: all of them.
	Count int
	// User follows each kernel stack with a record of ftrace:user_stack,
	// the user stack's first 8 frames, as the kernel's userstacktrace
	// option writes it (--user-stack).
	User bool
	// Filter is the trigger's if FILTER; nil: every event fires it.
	Filter *parse.BoundFilter
}

// stacktrace returns the Stacktrace of a bound stacktrace trigger, nil
// for one that never fires (stacktrace:0).
func stacktrace(bt *parse.BoundTrigger, user bool) *Stacktrace {
	t := bt.Trigger
	if t.HasCount && t.Count == 0 {
		return nil
	}
	st := &Stacktrace{User: user, Filter: bt.Filter}
	if t.HasCount {
		st.Count = int(min(t.Count, math.MaxInt))
	}
	return st
}

// StackCountsMapName is the map of the stack triggers' counts.
const StackCountsMapName = "stack_counts"

// stackSkip is how many innermost frames of bpf_get_stack on a classic
// tracepoint to leave out: none. The BPF program and its glue are not in
// the stack: it starts at the tracepoint's caller (__traceiter_X, or
// perf_syscall_enter for syscalls events), where the kernel's trigger
// shows its trace-event probe first (trace_event_raw_event_X, then
// __traceiter_X; ftrace_syscall_enter).
const stackSkip = 0

// stackTriggers returns the stack trigger of each event of the plan (nil
// for none), and reads the formats of ftrace:kernel_stack, and user_stack
// if an event asks for it, into p.Stacks.
func (p *Plan) stackTriggers(fs *tracefs.FS) ([]*bpfgen.StackTrigger, error) {
	out := make([]*bpfgen.StackTrigger, len(p.Events))
	var counts []uint64
	for _, ev := range p.Events {
		if st := ev.Stacktrace; st != nil && st.Count > 0 {
			counts = append(counts, uint64(st.Count))
		}
	}
	formats := map[string]*Event{}
	format := func(name string) (*Event, error) {
		if ev := formats[name]; ev != nil {
			return ev, nil
		}
		ev, err := loadEvent(fs, tracefs.Event{System: "ftrace", Name: name})
		if err != nil {
			return nil, err
		}
		formats[name] = ev
		p.Stacks = append(p.Stacks, ev)
		return ev, nil
	}
	var counter *bpfgen.Counter
	for i, ev := range p.Events {
		st := ev.Stacktrace
		if st == nil {
			continue
		}
		if st.Count < 0 {
			return nil, fmt.Errorf("stacktrace of %s: count %d, want 0 (every firing) or more", ev.Format.FullName(), st.Count)
		}
		kernel, err := format("kernel_stack")
		if err != nil {
			return nil, fmt.Errorf("stacktrace of %s: %w", ev.Format.FullName(), err)
		}
		out[i] = &bpfgen.StackTrigger{ID: kernel.Format.ID, Skip: stackSkip, Filter: st.Filter}
		if st.User {
			user, err := format("user_stack")
			if err != nil {
				return nil, fmt.Errorf("stacktrace of %s: %w", ev.Format.FullName(), err)
			}
			out[i].UserID = user.Format.ID
		}
		if st.Count > 0 {
			counter = nextCounter(counter, StackCountsMapName, counts)
			out[i].Counter = counter
		}
	}
	return out, nil
}

// nextCounter returns the count word after prev in the counter map
// name, which holds counts: its first word when prev is nil.
func nextCounter(prev *bpfgen.Counter, name string, counts []uint64) *bpfgen.Counter {
	if prev == nil {
		return &bpfgen.Counter{Map: bpfgen.CounterMap(name, counts)}
	}
	return &bpfgen.Counter{Map: prev.Map, Index: prev.Index + 1}
}

// describe is --dry-run's words for the trigger.
func (st *Stacktrace) describe() string {
	s := ", the kernel stack of each event"
	if st.User {
		s = ", the kernel and user stacks of each event"
	}
	if st.Filter != nil {
		s += fmt.Sprintf(" that passes %s", st.Filter.Expr)
	}
	if st.Count > 0 {
		s += fmt.Sprintf(" (the first %d)", st.Count)
	}
	return s
}
