package record

import (
	"fmt"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// Stacktrace is the stacktrace trigger of an event: each of its records
// is followed by a record of the kernel's ftrace:kernel_stack event, the
// kernel stack where the event fired (bpfgen's stack.go).
type Stacktrace struct {
	// Count is how many firings write a stack, as the kernel's
	// stacktrace:N counts them: every firing counts; 0: all of them.
	Count int
}

// StackCountsMapName is the map of the stack triggers' counts.
const StackCountsMapName = "stack_counts"

// stackSkip is how many innermost frames of bpf_get_stack on a classic
// tracepoint are the tracing machinery's (the BPF program's caller and
// the perf glue), so that the first frame left is the one the kernel's
// own stacktrace trigger shows first.
const stackSkip = 0

// stackTriggers returns the stack trigger of each event of the plan (nil
// for none), and reads the format of ftrace:kernel_stack into p.Stack if
// any event has one.
func (p *Plan) stackTriggers(fs *tracefs.FS) ([]*bpfgen.StackTrigger, error) {
	out := make([]*bpfgen.StackTrigger, len(p.Events))
	var counts []uint64
	for _, ev := range p.Events {
		if st := ev.Stacktrace; st != nil && st.Count > 0 {
			counts = append(counts, uint64(st.Count))
		}
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
		if p.Stack == nil {
			stack, err := loadEvent(fs, tracefs.Event{System: "ftrace", Name: "kernel_stack"})
			if err != nil {
				return nil, fmt.Errorf("stacktrace of %s: %w", ev.Format.FullName(), err)
			}
			p.Stack = stack
		}
		out[i] = &bpfgen.StackTrigger{ID: p.Stack.Format.ID, Skip: stackSkip}
		if st.Count > 0 {
			if counter == nil {
				counter = &bpfgen.Counter{Map: bpfgen.CounterMap(StackCountsMapName, counts)}
			} else {
				counter = &bpfgen.Counter{Map: counter.Map, Index: counter.Index + 1}
			}
			out[i].Counter = counter
		}
	}
	return out, nil
}
