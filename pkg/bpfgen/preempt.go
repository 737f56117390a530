package bpfgen

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// PreemptCount is where a program finds its CPU's preempt count, whose
// hardirq, NMI and serving-softirq bits say that it runs in an
// interrupt rather than for the current task. The program starts from
// the current task_struct, loads the pointer at each offset of Chain in
// turn, and reads the count's u32 at Off from where it ends.
type PreemptCount struct {
	Chain []int16
	Off   int32
}

// interruptBits are the preempt count's NMI and hardirq bits and
// SOFTIRQ_OFFSET, which is set while softirqs are served (not while
// they are only disabled).
const interruptBits = 0x00f00000 | 0x000f0000 | 0x100

// PreemptCountIn finds the preempt count in a kernel's BTF. With
// THREAD_INFO_IN_TASK and a count in thread_info (arm64 and most
// others) it is in the task_struct. On x86-64 it is a per-CPU variable,
// __preempt_count (pcpu_hot.preempt_count from 6.2 to 6.14): the
// program reaches its CPU's copy from its CPU's runqueue, the running
// task's se.cfs_rq->rq (its CPU's, group or not), a per-CPU variable
// too, at the distance between the two in the per-CPU section. That needs no kernel symbol address
// (kallsyms without CONFIG_KALLSYMS_ALL has none of variables).
func PreemptCountIn(spec *btf.Spec) (*PreemptCount, error) {
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return nil, errors.New("no task_struct in the kernel's BTF")
	}
	// arm64: a u64 preempt_count in a union with preempt's u32 count
	// and need_resched, in the order of the CPU's endianness.
	if off, t, ok := member(task, "thread_info", "preempt", "count"); ok && size(t) == 4 {
		return &PreemptCount{Off: int32(off)}, nil
	}
	if off, t, ok := member(task, "thread_info", "preempt_count"); ok && size(t) == 4 {
		return &PreemptCount{Off: int32(off)}, nil
	}
	cfsRq, t, ok := member(task, "se", "cfs_rq")
	if !ok {
		return nil, errors.New("no task_struct.se.cfs_rq in the kernel's BTF")
	}
	p, ok := btf.UnderlyingType(t).(*btf.Pointer)
	if !ok {
		return nil, errors.New("sched_entity.cfs_rq is not a pointer")
	}
	rq, _, ok := member(p.Target, "rq")
	if !ok {
		return nil, errors.New("no cfs_rq.rq in the kernel's BTF (no CONFIG_FAIR_GROUP_SCHED)")
	}
	var ds *btf.Datasec
	if err := spec.TypeByName(".data..percpu", &ds); err != nil {
		return nil, errors.New("no per-CPU section in the kernel's BTF")
	}
	runqueues, ok := percpuVar(ds, "runqueues")
	if !ok {
		return nil, errors.New("no per-CPU runqueues in the kernel's BTF")
	}
	count, ok := percpuVar(ds, "__preempt_count")
	if ok && count.Size != 4 {
		return nil, fmt.Errorf("__preempt_count has %d bytes, not 4", count.Size)
	}
	if !ok {
		hot, ok := percpuVar(ds, "pcpu_hot")
		if !ok {
			return nil, errors.New("no per-CPU preempt count in the kernel's BTF")
		}
		off, t, ok := member(hot.Type.(*btf.Var).Type, "preempt_count")
		if !ok || size(t) != 4 {
			return nil, errors.New("no pcpu_hot.preempt_count in the kernel's BTF")
		}
		count = hot
		count.Offset += off
	}
	return &PreemptCount{
		Chain: []int16{int16(cfsRq), int16(rq)},
		Off:   int32(int64(count.Offset) - int64(runqueues.Offset)),
	}, nil
}

// member returns the byte offset and type of a member of a struct
// type, down a path of names; it looks into the anonymous structs and
// unions on the way.
func member(t btf.Type, path ...string) (uint32, btf.Type, bool) {
	off := uint32(0)
	for _, name := range path {
		o, m, ok := field(t, name)
		if !ok {
			return 0, nil, false
		}
		off, t = off+o, m
	}
	return off, t, true
}

// field is member with a single name.
func field(t btf.Type, name string) (uint32, btf.Type, bool) {
	var members []btf.Member
	switch c := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		members = c.Members
	case *btf.Union:
		members = c.Members
	default:
		return 0, nil, false
	}
	for _, m := range members {
		if m.BitfieldSize != 0 {
			continue
		}
		if m.Name == name {
			return m.Offset.Bytes(), m.Type, true
		}
		if m.Name == "" {
			if o, t, ok := field(m.Type, name); ok {
				return m.Offset.Bytes() + o, t, true
			}
		}
	}
	return 0, nil, false
}

// size returns the size of a type, or 0.
func size(t btf.Type) int {
	n, err := btf.Sizeof(t)
	if err != nil {
		return 0
	}
	return n
}

// percpuVar returns a variable of the per-CPU section.
func percpuVar(ds *btf.Datasec, name string) (btf.VarSecinfo, bool) {
	for _, v := range ds.Vars {
		if vv, ok := v.Type.(*btf.Var); ok && vv.Name == name {
			return v, true
		}
	}
	return btf.VarSecinfo{}, false
}

// emitTaskContext jumps to out when the program runs for the current
// task, not in an interrupt: an event of gtrace's own process is
// ignored only then, and when the count cannot be read. It reads the
// count into the u32 at R10+key. Clobbers R0-R5.
func (p *PreemptCount) emitTaskContext(b *Builder, key int16, out string) {
	b.Comment("gtrace's own process: return unless in an interrupt (the preempt count's hardirq, NMI or softirq bits)")
	b.Emit(asm.FnGetCurrentTaskBtf.Call())
	if len(p.Chain) > 0 {
		b.Comment("from the task, the pointers at offsets %v: the preempt count is at %+d from there", p.Chain, p.Off)
	}
	for _, off := range p.Chain {
		b.Emit(asm.LoadMem(asm.R0, asm.R0, off, asm.DWord))
	}
	b.Comment("read the preempt count at %+d", p.Off)
	b.Emit(
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Add.Imm(asm.R3, p.Off),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(key)),
		asm.Mov.Imm(asm.R2, 4),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, out),
		asm.LoadMem(asm.R0, asm.R10, key, asm.Word),
	)
	b.Comment("no interrupt bit: in gtrace's task context, return")
	b.Emit(
		asm.And.Imm(asm.R0, interruptBits),
		asm.JEq.Imm(asm.R0, 0, out),
	)
}
