package bpfgen

// The snapshot action: what the kernel's snapshot trigger does on a
// firing, on eBPF. The kernel swaps the ring buffer with its spare, so
// that the spare holds what was recorded up to the firing; gtrace keeps
// the last records of each CPU in its own memory (package record's
// flight recorder) and needs only to know when a firing happened. The
// action writes a mark into the CPU's batch, in line with the records:
// a sample header with the firing's timestamp and SnapshotMark for a
// length, and no record. It follows the event's record, so that the
// event that fires the trigger is in the snapshot.

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// SnapshotMark is the length of a sample that is no record but the mark
// of a snapshot trigger's firing, at the sample's timestamp.
const SnapshotMark = 0xfffffffe

// SnapshotTrigger is what the snapshot trigger of an event asks for.
type SnapshotTrigger struct {
	Counter *Counter // the firings left; nil: every event
	// Filter is the trigger's own: an event that passes it fires the
	// trigger, whether the event's filter records it or not; nil: every
	// event.
	Filter *parse.BoundFilter
}

// SnapshotAction writes a snapshot mark into the CPU's batch for each
// event that reaches it.
type SnapshotAction struct {
	Clock   Clock // the recording's clock
	Stream  bool  // write the batch to the ring at once (RecordSpec.Stream)
	Counter *Counter
	shared  []*ebpf.MapSpec // the recording's maps: Record sets them
}

// NewSnapshotAction returns the action that marks a snapshot in the
// batches of the recording s: a hist's snapshot() handler, in a
// collection that shares the recording's maps by their names.
func NewSnapshotAction(s *RecordSpec) *SnapshotAction {
	return &SnapshotAction{Clock: s.Clock, Stream: s.Stream, shared: recordMaps(s)}
}

func (a *SnapshotAction) stack() int { return 8 }

func (a *SnapshotAction) maps() []*ebpf.MapSpec { return withCounter(a.shared, a.Counter) }

// emit: the count, then R8 = the batch, R7 = the sample, whose length
// word becomes the mark.
func (a *SnapshotAction) emit(b *Builder, fr *Frame) error {
	if len(a.shared) == 0 {
		return fmt.Errorf("snapshot action: not in a recording's program")
	}
	key := fr.Area.Off + 4
	if a.Counter != nil {
		emitCountDown(b, a.Counter, key, fr.Next)
	}
	done := b.Label("snapshot_done")
	emitBatch(b, a.Clock, BatchData-SampleHeader, key, fr.Next, done)
	b.Comment("the mark: length %#x, no record", uint32(SnapshotMark))
	b.Emit(
		asm.LoadImm(asm.R1, SnapshotMark, asm.DWord),
		asm.StoreMem(asm.R7, 8, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, SampleHeader),
	)
	emitCount(b)
	emitStreamWrite(b, a.Stream, key)
	b.Mark(done)
	b.Comment("the batch is free again")
	b.Emit(storeImm64(asm.R8, busyOff, 0))
	if fr.Next != fr.Out {
		b.Emit(asm.Ja.Label(fr.Next))
	}
	return nil
}
