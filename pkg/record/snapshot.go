package record

import (
	"fmt"
	"math"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/parse"
)

// Snapshot is the snapshot trigger of an event (-R 'snapshot[:N] [if
// FILTER]'): each firing writes what the recording's flight recorder
// holds at that moment, the last records of every CPU up to the firing,
// as a trace.dat file of its own (Flight). It fires as a stacktrace
// trigger does: on every event that passes its own filter, whether the
// event's -f records it or not, tracing on or off (the kernel swaps its
// buffers either way), not while the event is soft disabled; every
// firing spends one of the count.
type Snapshot struct {
	// Count is how many firings take a snapshot; 0: all of them.
	Count int
	// Filter is the trigger's if FILTER; nil: every event fires it.
	Filter *parse.BoundFilter
}

// snapshot returns the Snapshot of a bound snapshot trigger, nil for
// one that never fires (snapshot:0).
func snapshot(bt *parse.BoundTrigger) *Snapshot {
	t := bt.Trigger
	if t.HasCount && t.Count == 0 {
		return nil
	}
	s := &Snapshot{Filter: bt.Filter}
	if t.HasCount {
		s.Count = int(min(t.Count, math.MaxInt))
	}
	return s
}

// SnapshotCountsMapName is the map of the snapshot triggers' counts.
const SnapshotCountsMapName = "snapshot_counts"

// snapshotTriggers returns the snapshot trigger of each event of the
// plan (nil for none) and whether there is one.
func (p *Plan) snapshotTriggers() ([]*bpfgen.SnapshotTrigger, bool) {
	out := make([]*bpfgen.SnapshotTrigger, len(p.Events))
	var counts []uint64
	for _, ev := range p.Events {
		if s := ev.Snapshot; s != nil && s.Count > 0 {
			counts = append(counts, uint64(s.Count))
		}
	}
	has := false
	var counter *bpfgen.Counter
	for i, ev := range p.Events {
		s := ev.Snapshot
		if s == nil {
			continue
		}
		has = true
		out[i] = &bpfgen.SnapshotTrigger{Filter: s.Filter}
		if s.Count > 0 {
			counter = nextCounter(counter, SnapshotCountsMapName, counts)
			out[i].Counter = counter
		}
	}
	return out, has
}

// describe is --dry-run's words for the trigger.
func (s *Snapshot) describe() string {
	d := ", a snapshot at each event"
	if s.Filter != nil {
		d += fmt.Sprintf(" that passes %s", s.Filter.Expr)
	}
	if s.Count > 0 {
		d += fmt.Sprintf(" (the first %d)", s.Count)
	}
	return d
}
