package bpfgen

// The stack action: what the kernel's stacktrace trigger does on a
// firing, on eBPF. It takes the kernel stack of the program's context with
// bpf_get_stack, straight into a sample of the CPU's batch, as a record of
// the kernel's ftrace:kernel_stack event:
//
//	0   common fields: common_type = kernel_stack's ID, common_pid
//	8   int size: the number of frames
//	12  u32 zero (padding)
//	16  unsigned long caller[size]: return addresses, innermost first
//
// As the kernel writes it (__ftrace_trace_stack), the record holds only
// the frames taken: trace-cmd report prints one "=> func (addr)" line per
// address up to the record's end. The sample gets its own timestamp, taken
// after the event's: it follows the event's record, as the kernel's
// stacktrace trigger (a post-trigger) writes its entry after the event's.
//
// With UserID, a record of ftrace:user_stack follows, with the same
// timestamp, as the kernel's userstacktrace option writes it
// (ftrace_trace_userstack): the tgid, then 8 callers of the user stack
// (BPF_F_USER_STACK), the first the user's instruction pointer, zero
// after the last frame.
//
//	0   common fields: common_type = user_stack's ID, common_pid
//	8   unsigned int tgid
//	12  u32 zero (padding)
//	16  unsigned long caller[8]
//
// The register contract of an action holds: R7 is the sample, R8 the
// batch, R6 must be the program's context (the classic tracepoint's
// record), which bpf_get_stack reads the registers of the tracepoint's
// caller from.

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// StackFrames is the most frames a stack record holds.
const StackFrames = 64

// stackHeader is the bytes of a kernel_stack record before its callers.
const stackHeader = 16

// UserFrames is the frames of a user_stack record: the kernel's
// FTRACE_STACK_ENTRIES.
const UserFrames = 8

// bpfFSkipMask is BPF_F_SKIP_FIELD_MASK: the frames bpf_get_stack skips.
const bpfFSkipMask = 0xff

// bpfFUserStack is BPF_F_USER_STACK: bpf_get_stack takes the user stack.
const bpfFUserStack = 1 << 8

// Counter is a count word of a trigger: the firings it has left. A
// firing takes one (atomically, so that N firings on all CPUs are exactly
// N); a word at zero or below no longer fires.
type Counter struct {
	Map   *ebpf.MapSpec // an array of u64 words; the same spec for every action that names it
	Index uint32        // the word's key
}

// CounterMap returns the spec of an array of count words, each word's
// firings in counts (key i holds counts[i]) as the map is created.
func CounterMap(name string, counts []uint64) *ebpf.MapSpec {
	m := &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: uint32(max(len(counts), 1))}
	for i, n := range counts {
		m.Contents = append(m.Contents, ebpf.MapKV{Key: uint32(i), Value: n})
	}
	return m
}

// StackAction writes the kernel stack of each event that reaches it as
// a record of the kernel's ftrace:kernel_stack event, after the event's
// own record, in the same CPU's batch (see the top of this file). It runs
// only on a Tracepoint source, whose R6 is the program's context.
type StackAction struct {
	ID      int   // the format ID of ftrace:kernel_stack
	Clock   Clock // the recording's clock
	Skip    int   // innermost frames left out: those of the tracing machinery
	Stream  bool  // write the batch to the ring at once (RecordSpec.Stream)
	Counter *Counter
	// UserID, if not 0, is the format ID of ftrace:user_stack: a record
	// of the user stack follows the kernel's.
	UserID int
	// Control, if not nil, is the session's control map: a firing
	// while tracing is off (its word ControlTracingOff non-zero) spends
	// one of the count and writes nothing, as the kernel's stacktrace
	// trigger does when the ring buffer is off.
	Control *ebpf.MapSpec
	shared  []*ebpf.MapSpec // the recording's maps: Record sets them
}

func (a *StackAction) stack() int { return 8 }

func (a *StackAction) maps() []*ebpf.MapSpec {
	m := withCounter(a.shared, a.Counter)
	if a.Control != nil {
		m = append(m, a.Control)
	}
	return m
}

// emit: the count, tracing on, then R8 = the batch, R7 = the sample; bpf_get_stack
// writes the callers into it.
func (a *StackAction) emit(b *Builder, fr *Frame) error {
	if len(a.shared) == 0 {
		return fmt.Errorf("stack action: not in a recording's program")
	}
	if a.ID <= 0 || a.ID > 0xffff || a.UserID < 0 || a.UserID > 0xffff {
		return fmt.Errorf("stack action: format IDs %d and %d, want 1 to 65535 (0: no user stack)", a.ID, a.UserID)
	}
	if a.Skip < 0 || a.Skip > bpfFSkipMask {
		return fmt.Errorf("stack action: %d frames to skip, at most %d", a.Skip, bpfFSkipMask)
	}
	key := fr.Area.Off + 4
	if a.Counter != nil {
		emitCountDown(b, a.Counter, key, fr.Next)
	}
	if a.Control != nil {
		b.Comment("tracing off: the firing writes nothing")
		emitControl(b, a.Control.Name, key, fr.Next)
		b.Emit(
			asm.LoadMem(asm.R1, asm.R0, 8*ControlTracingOff, asm.DWord),
			asm.JNE.Imm(asm.R1, 0, fr.Next),
		)
	}
	done := b.Label("stack_done")
	const user = SampleHeader + stackHeader + 8*UserFrames
	most := SampleHeader + stackHeader + 8*StackFrames
	if a.UserID != 0 {
		most += user
	}
	emitBatch(b, a.Clock, BatchData-most, key, fr.Next, done)
	emitCommon(b, asm.R7, SampleHeader, EventID{Const: a.ID})
	b.Comment("callers: bpf_get_stack(ctx, sample, %d, skip %d)", 8*StackFrames, a.Skip)
	b.Emit(
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, SampleHeader+stackHeader),
		asm.Mov.Imm(asm.R3, 8*StackFrames),
		asm.Mov.Imm(asm.R4, int32(a.Skip)),
		asm.FnGetStack.Call(),
		asm.JSLE.Imm(asm.R0, 0, done),
		asm.JGT.Imm(asm.R0, 8*StackFrames, done), // never taken: bounds the length for the verifier
	)
	b.Comment("size = frames; the record's length; the sample's")
	b.Emit(
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.RSh.Imm(asm.R1, 3),
		asm.StoreMem(asm.R7, SampleHeader+8, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Add.Imm(asm.R1, stackHeader),
		asm.StoreMem(asm.R7, 8, asm.R1, asm.DWord),
		asm.Add.Imm(asm.R1, SampleHeader),
	)
	emitCount(b)
	if a.UserID != 0 {
		emitUserStack(b, a.UserID, BatchData-user, done)
	}
	emitStreamWrite(b, a.Stream, key)
	b.Mark(done)
	b.Comment("the batch is free again")
	b.Emit(storeImm64(asm.R8, busyOff, 0))
	if fr.Next != fr.Out {
		b.Emit(asm.Ja.Label(fr.Next))
	}
	return nil
}

// withCounter returns a copy of shared with the map of c, if any.
func withCounter(shared []*ebpf.MapSpec, c *Counter) []*ebpf.MapSpec {
	m := append([]*ebpf.MapSpec(nil), shared...)
	if c != nil {
		m = append(m, c.Map)
	}
	return m
}

// emitCountDown jumps to skip when the counter has no firing left, and
// takes one otherwise. Clobbers R0-R5.
func emitCountDown(b *Builder, c *Counter, key int16, skip string) {
	b.Comment("count: %s[%d] firings left", c.Map.Name, c.Index)
	b.Emit(asm.StoreImm(asm.R10, key, int64(c.Index), asm.Word))
	emitLookup(b, c.Map.Name, key)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, skip),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JSLE.Imm(asm.R1, 0, skip),
		asm.Mov.Imm(asm.R2, -1),
		fetchAdd(asm.R0, asm.R2),
		asm.JSLE.Imm(asm.R2, 0, skip), // another CPU took the last one
	)
}

// fetchAdd is *(u64 *)dst += src, src = the old value, atomically.
// cilium/ebpf (v0.22) marshals an atomic instruction's imm from its
// Constant, read before it folds the operation into it: without the
// BPF_ADD|BPF_FETCH already there, the kernel gets a plain add and src
// keeps its value.
func fetchAdd(dst, src asm.Register) asm.Instruction {
	ins := asm.FetchAdd.Mem(dst, src, asm.DWord, 0)
	ins.Constant = int64(asm.FetchAdd >> 8)
	return ins
}

// emitUserStack adds a user_stack sample of format ID id after the sample
// at R7, with its timestamp, to the batch at R8, whose fill is at most
// limit. Clobbers R0-R5, R7.
func emitUserStack(b *Builder, id, limit int, done string) {
	b.Comment("user_stack: R7 = the next sample, the same timestamp")
	b.Emit(
		asm.LoadMem(asm.R3, asm.R7, 0, asm.DWord),
		asm.LoadMem(asm.R1, asm.R8, 0, asm.Word),
		asm.JGT.Imm(asm.R1, int32(limit), done), // never taken: bounds fill for the verifier
		asm.Mov.Reg(asm.R7, asm.R8),
		asm.Add.Reg(asm.R7, asm.R1),
		asm.Add.Imm(asm.R7, BatchHeader),
		asm.StoreMem(asm.R7, 0, asm.R3, asm.DWord),
		storeImm64(asm.R7, 8, stackHeader+8*UserFrames),
	)
	emitCommon(b, asm.R7, SampleHeader, EventID{Const: id})
	b.Emit(
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.RSh.Imm(asm.R1, 32),
		asm.StoreMem(asm.R7, SampleHeader+8, asm.R1, asm.DWord),
	)
	b.Comment("callers: bpf_get_stack(ctx, sample, %d, BPF_F_USER_STACK), zero after the last", 8*UserFrames)
	b.Emit(
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, SampleHeader+stackHeader),
		asm.Mov.Imm(asm.R3, 8*UserFrames),
		asm.Mov.Imm(asm.R4, bpfFUserStack),
		asm.FnGetStack.Call(),
		asm.JSLE.Imm(asm.R0, 0, done),
		asm.Mov.Imm(asm.R1, SampleHeader+stackHeader+8*UserFrames),
	)
	emitCount(b)
}
