package bpfgen

// The probe source: the program of a kprobe, kretprobe, uprobe or
// uretprobe event (docs/probes.md) builds the event's record from the
// probe's fetch arguments, field for field as the derived format
// (parse.ProbeDef.Format) lays it out, in this CPU's entry of the
// probe_rec map, and leaves it in R6 for the actions:
//
//	0    common fields: common_type = the event's ID, common_pid
//	8    __probe_ip (entry), or __probe_func and __probe_ret_ip (return)
//	...  each argument in its size, packed without alignment; a string's
//	     __data_loc word (length << 16 | offset)
//	...  the strings' data, one after the other, each with its NUL
//
// What the kernel's fetch code stores (kernel/trace/trace_probe_tmpl.h,
// trace_uprobe.c, trace_kprobe.c): registers are read from pt_regs,
// $stackN from the stack (user memory for a uprobe), memory with the
// user or kernel read helper; a dereference adds its offset to the value
// of its inner argument and reads a word there; the last dereference
// reads the type's size, or a string at that address. A string is
// recorded with its NUL and its length in the __data_loc word; one that
// cannot be read has length 0, which the kernel prints as (fault). A
// number that cannot be read is 0. Bitfields are shifted out of their
// container as the kernel's FETCH_OP_MOD_BF does.
//
// Registers: R8 holds pt_regs, R7 the record, R6 the offset of the next
// string's data; R9 keeps pid_tgid. The source's stack slot holds the
// map key, then each read's word.

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/attach"
	"github.com/gtrace/gtrace/pkg/parse"
)

// ProbeRecordMapName names the per-CPU map that a probe's record is
// built in.
const ProbeRecordMapName = "probe_rec"

// Sizes of a probe's record: the map entry it is built in, and the most
// bytes of one string (the kernel's MAX_STRING_SIZE).
const (
	ProbeRecordMax = 8192
	ProbeStringMax = 4096
)

// probeRecordMap is the spec of the map probe records are built in.
func probeRecordMap() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: ProbeRecordMapName, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: ProbeRecordMax, MaxEntries: 1}
}

// pt_regs offsets of the registers a probe names, per architecture:
// x86-64's struct pt_regs, arm64's user_pt_regs (the head of its
// pt_regs).
var probeRegOffsets = map[string]map[string]int16{
	"amd64": {
		"r15": 0, "r14": 8, "r13": 16, "r12": 24, "bp": 32, "bx": 40, "r11": 48, "r10": 56,
		"r9": 64, "r8": 72, "ax": 80, "cx": 88, "dx": 96, "si": 104, "di": 112, "orig_ax": 120,
		"ip": 128, "cs": 136, "flags": 144, "sp": 152, "ss": 160,
	},
	"arm64": arm64RegOffsets(),
}

func arm64RegOffsets() map[string]int16 {
	m := map[string]int16{"lr": 30 * 8, "sp": 31 * 8, "pc": 32 * 8, "pstate": 33 * 8}
	for i := 0; i <= 30; i++ {
		m[fmt.Sprintf("x%d", i)] = int16(8 * i)
	}
	return m
}

// probeRetReg and probeIPReg are the registers of a function's return
// value and the instruction pointer.
var (
	probeRetReg = map[string]string{"amd64": "ax", "arm64": "x0"}
	probeIPReg  = map[string]string{"amd64": "ip", "arm64": "pc"}
)

// Probe is the source of a probe event's program.
type Probe struct {
	Def  *parse.ProbeDef
	arch string
	// symbols are the kernel addresses of the @SYM fetch arguments.
	symbols map[string]uint64
	// fn is the function event whose record the probe builds (nil: the
	// probe's own); offs are then where each argument goes, and end the
	// end of the record's fixed part.
	fn   *parse.FuncEvent
	offs []int
	end  int
	// more are the event's other probes (the kernel's multi-probe
	// event), each with a program of its own (Collection.Add).
	more []*Probe
	// fentry puts the program on the function's fentry (fexit for a
	// return probe) instead of its kprobe; nargs is then the function's
	// number of arguments in the kernel's BTF. why says why the probe
	// runs where it does (fentry.go).
	fentry bool
	nargs  int
	why    string
}

// NewProbe returns the source of the probe d for the machine's
// architecture. syms resolves a kernel symbol to its address (lo), for
// a kprobe's @SYM arguments (nil when it has none). It refuses what gtrace does not
// build: a uprobe at a symbol not yet resolved.
func NewProbe(d *parse.ProbeDef, syms parse.FuncResolver) (*Probe, error) {
	return newProbe(d, runtime.GOARCH, syms)
}

func newProbe(d *parse.ProbeDef, arch string, syms parse.FuncResolver) (*Probe, error) {
	if d.Remove {
		return nil, fmt.Errorf("probe %s: a removal has no program", d.FullName())
	}
	if probeRegOffsets[arch] == nil {
		return nil, fmt.Errorf("probe %s: gtrace builds probes for amd64 and arm64, not %s", d.FullName(), arch)
	}
	if d.User && !d.Resolved {
		return nil, fmt.Errorf("probe %s: %s:%s is not resolved to a file offset", d.FullName(), d.Path, d.PathSymbol)
	}
	p := &Probe{Def: d, arch: arch, symbols: map[string]uint64{}}
	for _, a := range d.Args {
		for f := a.Fetch; f != nil; f = f.Inner {
			if f.Op != parse.FetchSymbol {
				continue
			}
			if syms == nil {
				return nil, fmt.Errorf("probe %s: argument %s: @%s needs the kernel's symbols", d.FullName(), a.Name, f.Symbol)
			}
			v, _, err := syms(f.Symbol, 0)
			if err != nil {
				return nil, fmt.Errorf("probe %s: argument %s: %w", d.FullName(), a.Name, err)
			}
			p.symbols[f.Symbol] = v
		}
	}
	if fixed := p.fixed(); fixed > ProbeRecordMax-ProbeStringMax {
		return nil, fmt.Errorf("probe %s: its fields take %d bytes, at most %d", d.FullName(), fixed, ProbeRecordMax-ProbeStringMax)
	}
	return p, nil
}

// NewFuncEventProbe returns the source of the function event e's
// program: its equivalent probe d (e.Probe) at the function's entry,
// building e's record as e's format lays it out: __parent_ip (the
// caller's address: the return address at the entry), __ip (the
// function's, bpf_get_func_ip), then each argument at its field's
// offset. The probe's arguments must be e's fields, name for name and
// size for size. syms is as NewProbe's.
func NewFuncEventProbe(e *parse.FuncEvent, d *parse.ProbeDef, syms parse.FuncResolver) (*Probe, error) {
	return newFuncEventProbe(e, d, runtime.GOARCH, syms)
}

func newFuncEventProbe(e *parse.FuncEvent, d *parse.ProbeDef, arch string, syms parse.FuncResolver) (*Probe, error) {
	if d.Return {
		return nil, fmt.Errorf("function event %s: its probe %s is a return probe", e.FullName(), d.FullName())
	}
	if len(d.Args) != len(e.Fields) {
		return nil, fmt.Errorf("function event %s: %d fields, its probe %s reads %d", e.FullName(), len(e.Fields), d.FullName(), len(d.Args))
	}
	p, err := newProbe(d, arch, syms)
	if err != nil {
		return nil, err
	}
	p.fn, p.end = e, parse.CommonSize+16
	for i, f := range e.Fields {
		a := d.Args[i]
		size := f.Type.Size * max(f.Array, 1)
		if a.Name != f.Name || a.Type.Size*max(a.Count, 1) != size {
			return nil, fmt.Errorf("function event %s: field %s (%d bytes) is not its probe's argument %s (%d bytes)", e.FullName(), f.Name, size, a.Name, a.Type.Size*max(a.Count, 1))
		}
		p.offs = append(p.offs, f.RecOff)
		p.end = max(p.end, f.RecOff+size)
	}
	if p.end > ProbeRecordMax-ProbeStringMax {
		return nil, fmt.Errorf("function event %s: its fields take %d bytes, at most %d", e.FullName(), p.end, ProbeRecordMax-ProbeStringMax)
	}
	return p, nil
}

// Point returns the probe's uprobe, uretprobe, kprobe or kretprobe.
func (p *Probe) Point(*parse.Format) attach.Point {
	d := p.Def
	if d.User {
		k := attach.Uprobe
		if d.Return {
			k = attach.Uretprobe
		}
		return attach.Point{Kind: k, Target: d.Path, Offset: d.FileOffset}
	}
	k := attach.Kprobe
	if d.Return {
		k = attach.Kretprobe
	}
	if p.fentry {
		k = attach.Fentry
		if d.Return {
			k = attach.Fexit
		}
	}
	sym := d.Symbol
	if i := strings.IndexByte(sym, ':'); i >= 0 {
		sym = sym[i+1:]
	}
	if d.IsAddr {
		return attach.Point{Kind: k, Offset: d.Addr}
	}
	return attach.Point{Kind: k, Target: sym, Offset: d.Offset}
}

// String describes the source for --dry-run.
func (p *Probe) String() string { return p.Point(nil).String() }

func (p *Probe) stack() int { return 8 }
func (p *Probe) maps() []*ebpf.MapSpec {
	if p.symstrs() == nil {
		return []*ebpf.MapSpec{probeRecordMap()}
	}
	return []*ebpf.MapSpec{probeRecordMap(), probeFormatMap()}
}
func (p *Probe) program(ps *ebpf.ProgramSpec) {
	if !p.fentry {
		ps.Type = ebpf.Kprobe
		return
	}
	ps.Type, ps.AttachType, ps.AttachTo = ebpf.Tracing, ebpf.AttachTraceFEntry, p.Point(nil).Target
	if p.Def.Return {
		ps.AttachType = ebpf.AttachTraceFExit
	}
}
func (p *Probe) reg(name string) int16 { return probeRegOffsets[p.arch][name] }
func (p *Probe) loadReg(b *Builder, name string) {
	b.Emit(asm.LoadMem(asm.R0, asm.R8, p.reg(name), asm.DWord))
}

// fixed returns the end of the record's fixed part.
func (p *Probe) fixed() int {
	if p.fn != nil {
		return p.end
	}
	n := parse.CommonSize + 8
	if p.Def.Return {
		n += 8
	}
	for _, a := range p.Def.Args {
		n += a.Type.Size * max(a.Count, 1)
	}
	return n
}

// emit builds the record (see the top of this file).
func (p *Probe) emit(b *Builder, rec int16, id EventID, out string) {
	d := p.Def
	b.Comment("build the record of %s from %s", d.FullName(), p.Point(nil))
	b.Emit(asm.Mov.Reg(asm.R8, asm.R6))
	b.Emit(asm.StoreImm(asm.R10, rec, 0, asm.Word))
	emitLookup(b, ProbeRecordMapName, rec)
	b.Emit(asm.JEq.Imm(asm.R0, 0, out), asm.Mov.Reg(asm.R7, asm.R0))
	emitCommon(b, asm.R7, 0, id)
	off := int16(parse.CommonSize)
	if p.fn != nil {
		p.emitFuncHeader(b, rec)
		b.Emit(asm.Mov.Imm(asm.R6, int32(p.fixed())))
		for i, a := range d.Args {
			b.Comment("%s=%s at %d", a.Name, a.Comm, p.offs[i])
			p.emitArg(b, a, int16(p.offs[i]), rec)
		}
		p.emitSymstrLens(b)
		b.Comment("R6 = the record")
		b.Emit(asm.Mov.Reg(asm.R6, asm.R7))
		return
	}
	if d.Return {
		b.Comment("__probe_func, __probe_ret_ip")
		b.Emit(asm.Mov.Reg(asm.R1, asm.R8), asm.FnGetFuncIp.Call())
		if !d.User && p.arch == "amd64" {
			p.emitEndbr(b, rec)
		}
		b.Emit(asm.StoreMem(asm.R7, off, asm.R0, asm.DWord))
		if p.fentry {
			p.emitCallerRet(b, rec)
		} else {
			p.loadReg(b, probeIPReg[p.arch])
		}
		b.Emit(asm.StoreMem(asm.R7, off+8, asm.R0, asm.DWord))
		off += 16
	} else if p.fentry {
		b.Comment("__probe_ip: the function's address past its ENDBR64, where its kprobe is")
		p.emitCallSite(b, rec)
		b.Emit(asm.StoreMem(asm.R7, off, asm.R0, asm.DWord))
		off += 8
	} else {
		b.Comment("__probe_ip")
		p.loadReg(b, probeIPReg[p.arch])
		if !d.User && p.arch == "amd64" {
			// A kprobe's handlers run with ip past its int3 (the
			// ftrace and optimized kprobes set it so too).
			b.Emit(asm.Sub.Imm(asm.R0, 1))
		}
		b.Emit(asm.StoreMem(asm.R7, off, asm.R0, asm.DWord))
		off += 8
	}
	b.Emit(asm.Mov.Imm(asm.R6, int32(p.fixed())))
	for _, a := range d.Args {
		b.Comment("%s=%s", a.Name, a.Comm)
		p.emitArg(b, a, off, rec)
		off += int16(a.Type.Size * max(a.Count, 1))
	}
	p.emitSymstrLens(b)
	b.Comment("R6 = the record")
	b.Emit(asm.Mov.Reg(asm.R6, asm.R7))
}

// emitFuncHeader stores a function event's __parent_ip, the return
// address at the function's entry (x86-64: the word at the stack
// pointer, 0 when it cannot be read; arm64: the link register), and
// __ip, the function's address.
func (p *Probe) emitFuncHeader(b *Builder, tmp int16) {
	off := int16(parse.CommonSize)
	b.Comment("__parent_ip: the return address")
	if p.fentry {
		p.emitCallerRet(b, tmp)
	} else if p.arch == "arm64" {
		p.loadReg(b, "lr")
	} else {
		fault := b.Label("parent_fault")
		done := b.Label("parent_done")
		p.loadReg(b, "sp")
		p.emitRead(b, p.Def.User, 8, tmp, fault)
		b.Emit(asm.Ja.Label(done))
		b.Mark(fault)
		b.Emit(asm.Mov.Imm(asm.R0, 0))
		b.Mark(done)
	}
	b.Emit(asm.StoreMem(asm.R7, off, asm.R0, asm.DWord))
	b.Comment("__ip: the function's address")
	if p.fentry {
		p.emitFuncStart(b, tmp)
	} else {
		b.Emit(asm.Mov.Reg(asm.R1, asm.R8), asm.FnGetFuncIp.Call())
	}
	b.Emit(asm.StoreMem(asm.R7, off+8, asm.R0, asm.DWord))
}

// emitArg stores an argument at R7+off.
func (p *Probe) emitArg(b *Builder, a parse.ProbeArg, off, tmp int16) {
	fault := b.Label("fault")
	done := b.Label("stored")
	t := a.Type
	if t.String && a.Count > 0 {
		p.emitStringArray(b, a, off, tmp)
		return
	}
	if t.Name == "symstr" {
		p.emitSymstr(b, a, off, tmp)
		return
	}
	if t.String {
		p.emitString(b, a, off, tmp)
		return
	}
	f := a.Fetch
	if a.Count > 0 {
		n := t.Size * a.Count
		p.emitAddr(b, f, tmp, fault)
		b.Emit(
			asm.Mov.Reg(asm.R3, asm.R0),
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Imm(asm.R1, int32(off)),
			asm.Mov.Imm(asm.R2, int32(n)),
			p.readHelper(f).Call(),
		)
		// A failed read leaves the array zero, and so its bitfields.
		if w := a.BitWidth; w > 0 {
			b.Comment("each element's bitfield")
			for i := 0; i < a.Count; i++ {
				at := off + int16(i*t.Size)
				b.Emit(
					asm.LoadMem(asm.R0, asm.R7, at, sizes[t.Size]),
					asm.LSh.Imm(asm.R0, int32(64-w-a.BitOffset)),
					asm.RSh.Imm(asm.R0, int32(64-w)),
					asm.StoreMem(asm.R7, at, asm.R0, sizes[t.Size]),
				)
			}
		}
		return
	}
	if isMemory(f.Op) {
		p.emitAddr(b, f, tmp, fault)
		p.emitRead(b, p.userRead(f), t.Size, tmp, fault)
	} else {
		p.emitValue(b, f, tmp, fault)
	}
	if w := a.BitWidth; w > 0 {
		b.Emit(
			asm.LSh.Imm(asm.R0, int32(64-w-a.BitOffset)),
			asm.RSh.Imm(asm.R0, int32(64-w)),
		)
	}
	b.Emit(asm.StoreMem(asm.R7, off, asm.R0, sizes[t.Size]))
	if b.referenced(fault) {
		b.Emit(asm.Ja.Label(done))
		b.Mark(fault)
		b.Comment("a failed read records 0")
		b.Emit(asm.Mov.Imm(asm.R0, 0), asm.StoreMem(asm.R7, off, asm.R0, sizes[t.Size]))
		b.Mark(done)
	}
}

// emitString stores a string argument: its data at R7+R6, its
// __data_loc word at R7+off; R6 moves past the data.
func (p *Probe) emitString(b *Builder, a parse.ProbeArg, off, tmp int16) {
	fault := b.Label("str_fault")
	done := b.Label("str_done")
	f := a.Fetch
	b.Emit(asm.JGT.Imm(asm.R6, ProbeRecordMax-ProbeStringMax, fault))
	switch f.Op {
	case parse.FetchComm:
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, CommLen),
			asm.FnGetCurrentComm.Call(),
			// The comm's length with its NUL: copied onto itself.
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Reg(asm.R1, asm.R6),
			asm.Mov.Reg(asm.R3, asm.R1),
			asm.Mov.Imm(asm.R2, CommLen),
			asm.FnProbeReadKernelStr.Call(),
		)
	case parse.FetchString:
		s := f.Str + "\x00"
		b.Emit(asm.Mov.Reg(asm.R1, asm.R7), asm.Add.Reg(asm.R1, asm.R6))
		for i := 0; i < len(s); i++ {
			b.Emit(asm.StoreImm(asm.R1, int16(i), int64(s[i]), asm.Byte))
		}
		b.Emit(asm.Mov.Imm(asm.R0, int32(len(s))))
	default:
		if f.Op == parse.FetchImm {
			b.Emit(asm.LoadImm(asm.R0, int64(f.N), asm.DWord))
		} else {
			p.emitAddr(b, f, tmp, fault)
		}
		b.Emit(
			asm.JGT.Imm(asm.R6, ProbeRecordMax-ProbeStringMax, fault),
			asm.Mov.Reg(asm.R3, asm.R0),
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, ProbeStringMax),
			p.strHelper(a).Call(),
		)
	}
	emitLocStore(b, off, fault, done)
}

// emitLocStore ends a string's read, its length (or an error) in R0:
// the __data_loc word at R7+at, and R6 past the data; at fault (a
// failed read) the word of no data, R6 left. Marks fault and done.
func emitLocStore(b *Builder, at int16, fault, done string) {
	b.Emit(
		asm.JSLE.Imm(asm.R0, 0, fault),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.LSh.Imm(asm.R1, 16),
		asm.Or.Reg(asm.R1, asm.R6),
		asm.StoreMem(asm.R7, at, asm.R1, asm.Word),
		asm.Add.Reg(asm.R6, asm.R0),
		asm.Ja.Label(done),
	)
	b.Mark(fault)
	b.Comment("(fault): no data")
	b.Emit(asm.StoreMem(asm.R7, at, asm.R6, asm.Word))
	b.Mark(done)
}

// emitStringArray stores an array of strings: the fetch's address holds
// the array of the strings' addresses (the kernel's FETCH_OP_LP_ARRAY
// over a dereference, kept as the pointers' read); each element's
// __data_loc word at R7+off+4*i, its data at R7+R6, one after the other.
// A string that cannot be read has length 0; so have an element whose
// pointer cannot be read and those after it (the kernel stops there and
// leaves their words as they were).
func (p *Probe) emitStringArray(b *Builder, a parse.ProbeArg, off, tmp int16) {
	f := a.Fetch
	h := asm.FnProbeReadKernelStr
	if p.Def.User || a.Type.Name == "ustring" {
		h = asm.FnProbeReadUserStr
	}
	stop := b.Label("strs_stop")
	b.Comment("%s: every element (fault) until read", a.Name)
	for i := 0; i < a.Count; i++ {
		b.Emit(asm.StoreMem(asm.R7, off+int16(4*i), asm.R6, asm.Word))
	}
	for i := 0; i < a.Count; i++ {
		at := off + int16(4*i)
		fault := b.Label("strs_fault")
		done := b.Label("strs_next")
		b.Comment("%s[%d]", a.Name, i)
		p.emitAddr(b, f, tmp, stop)
		if i > 0 {
			b.Emit(asm.Add.Imm(asm.R0, int32(8*i)))
		}
		p.emitRead(b, p.userRead(f), 8, tmp, stop)
		b.Emit(
			asm.JGT.Imm(asm.R6, ProbeRecordMax-ProbeStringMax, fault),
			asm.Mov.Reg(asm.R3, asm.R0),
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, ProbeStringMax),
			h.Call(),
		)
		emitLocStore(b, at, fault, done)
	}
	b.Mark(stop)
}

// probeFormatMapName names the read-only map of the bpf_snprintf format
// of symstr arguments; a name of .rodata is frozen when loaded, as
// bpf_snprintf wants its format.
const probeFormatMapName = ".rodata.probe"

// probeSymstrFormat is the format that prints a symstr: %pS is the
// kernel's sprint_symbol, as its symstr fetch writes it ("name+0xOFF/0xSIZE
// [module]", or the address in hex where no symbol holds it).
const probeSymstrFormat = "%pS\x00"

// probeFormatMap is the spec of the map of probeSymstrFormat.
func probeFormatMap() *ebpf.MapSpec {
	return &ebpf.MapSpec{
		Name: probeFormatMapName, Type: ebpf.Array, KeySize: 4, ValueSize: uint32(len(probeSymstrFormat)), MaxEntries: 1,
		Flags:    mapRdonlyProg,
		Contents: []ebpf.MapKV{{Key: uint32(0), Value: []byte(probeSymstrFormat)}},
	}
}

// mapRdonlyProg is BPF_F_RDONLY_PROG: programs only read the map.
const mapRdonlyProg = 1 << 7

// symstrs returns the record offsets of the probe's symstr arguments'
// __data_loc words, in order.
func (p *Probe) symstrs() []int16 {
	var out []int16
	off := parse.CommonSize + 8
	if p.Def.Return {
		off += 8
	}
	for i, a := range p.Def.Args {
		at := off
		if p.fn != nil {
			at = p.offs[i]
		}
		if a.Type.Name == "symstr" {
			out = append(out, int16(at))
		}
		off += a.Type.Size * max(a.Count, 1)
	}
	return out
}

// emitSymstr stores a symstr argument: the symbol string of the fetch's
// value as the kernel's fetch_store_symstring writes it with
// sprint_symbol (bpf_snprintf's %pS), its data at R7+R6. As the kernel
// does, R6 moves past the text but not its NUL, where the next string's
// data starts, and the __data_loc word keeps the room the kernel measured
// for it and the strings after it, which emitSymstrLens sets when they
// are stored; until then the word's length is 1 if the text is stored,
// 0 if its value cannot be read (the kernel measures it 0 then, and
// stores nothing).
func (p *Probe) emitSymstr(b *Builder, a parse.ProbeArg, off, tmp int16) {
	fault := b.Label("sym_fault")
	done := b.Label("sym_done")
	f := a.Fetch
	if isMemory(f.Op) {
		p.emitAddr(b, f, tmp, fault)
		p.emitRead(b, p.userRead(f), 8, tmp, fault)
	} else {
		p.emitValue(b, f, tmp, fault)
	}
	b.Emit(
		asm.StoreMem(asm.R10, tmp, asm.R0, asm.DWord),
		asm.JGT.Imm(asm.R6, ProbeRecordMax-ProbeStringMax, fault),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, ProbeStringMax),
		asm.LoadMapValue(asm.R3, 0, 0).WithReference(probeFormatMapName),
		asm.Mov.Reg(asm.R4, asm.R10),
		asm.Add.Imm(asm.R4, int32(tmp)),
		asm.Mov.Imm(asm.R5, 8),
		asm.FnSnprintf.Call(),
		asm.JSLE.Imm(asm.R0, 0, fault),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Or.Imm(asm.R1, 1<<16),
		asm.StoreMem(asm.R7, off, asm.R1, asm.Word),
		asm.Add.Reg(asm.R6, asm.R0),
		asm.Sub.Imm(asm.R6, 1),
		asm.Ja.Label(done),
	)
	b.Mark(fault)
	b.Comment("a value that cannot be read: no text")
	b.Emit(asm.StoreMem(asm.R7, off, asm.R6, asm.Word))
	b.Mark(done)
}

// emitSymstrLens sets the length of each symstr's __data_loc word to the
// room the kernel gives it (store_trace_args): the data from its offset
// to the end of the record's, with the NUL of each stored symstr from it
// on, which the kernel measures and then does not keep. R6 is the end of
// the data. Clobbers R0-R2.
func (p *Probe) emitSymstrLens(b *Builder) {
	offs := p.symstrs()
	if offs == nil {
		return
	}
	b.Comment("the symstrs' lengths: the room the kernel measured")
	b.Emit(asm.Mov.Imm(asm.R2, 0))
	for i := len(offs) - 1; i >= 0; i-- {
		b.Emit(
			asm.LoadMem(asm.R0, asm.R7, offs[i], asm.Word),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.RSh.Imm(asm.R1, 16),
			asm.Add.Reg(asm.R2, asm.R1),
			asm.And.Imm(asm.R0, 0xffff),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Sub.Reg(asm.R1, asm.R0),
			asm.Add.Reg(asm.R1, asm.R2),
			asm.LSh.Imm(asm.R1, 16),
			asm.Or.Reg(asm.R1, asm.R0),
			asm.StoreMem(asm.R7, offs[i], asm.R1, asm.Word),
		)
	}
}

// strHelper is the string read of an argument: user memory for a
// uprobe, a ustring and a +u dereference.
func (p *Probe) strHelper(a parse.ProbeArg) asm.BuiltinFunc {
	if p.Def.User || a.Type.Name == "ustring" || a.Fetch.Op == parse.FetchDeref && a.Fetch.User {
		return asm.FnProbeReadUserStr
	}
	return asm.FnProbeReadKernelStr
}

// endbr64 is x86's ENDBR64 instruction (f3 0f 1e fa), as a
// little-endian u32.
const endbr64 = 0xfa1e0ff3

// emitEndbr moves the function's address in R0 past an ENDBR64 there:
// the kernel puts the kprobe of a function's entry after it (IBT), and
// records that address, where bpf_get_func_ip gives the function's.
// Clobbers R1-R6 and the word at R10+tmp.
func (p *Probe) emitEndbr(b *Builder, tmp int16) {
	emitSkipEndbr(b, tmp, 4)
}

// emitSkipEndbr adds by to the address in R0 when an ENDBR64 is the
// instruction by points across: at R0 when by is positive, just before
// R0 when negative. Clobbers R1-R6 and the word at R10+tmp.
func emitSkipEndbr(b *Builder, tmp int16, by int32) {
	plain := b.Label("no_endbr")
	b.Emit(
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.StoreImm(asm.R10, tmp, 0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(tmp)),
		asm.Mov.Imm(asm.R2, 4),
		asm.Mov.Reg(asm.R3, asm.R6),
	)
	if by < 0 {
		b.Emit(asm.Add.Imm(asm.R3, by))
	}
	b.Emit(
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(asm.R1, asm.R10, tmp, asm.Word),
		asm.LoadImm(asm.R2, endbr64, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, plain),
		asm.Add.Imm(asm.R6, by),
	)
	b.Mark(plain)
	b.Emit(asm.Mov.Reg(asm.R0, asm.R6))
}

// isMemory reports whether a fetch ends reading memory: its value is
// read at an address.
func isMemory(op parse.FetchOp) bool {
	switch op {
	case parse.FetchMem, parse.FetchSymbol, parse.FetchFileOffset, parse.FetchDeref:
		return true
	}
	return false
}

// userRead reports whether a memory fetch reads user memory.
func (p *Probe) userRead(f *parse.Fetch) bool {
	return p.Def.User || f.Op == parse.FetchDeref && f.User
}

// readHelper is the read of a memory fetch's bytes.
func (p *Probe) readHelper(f *parse.Fetch) asm.BuiltinFunc {
	if p.userRead(f) {
		return asm.FnProbeReadUser
	}
	return asm.FnProbeReadKernel
}

// emitAddr leaves in R0 the address a memory fetch reads.
func (p *Probe) emitAddr(b *Builder, f *parse.Fetch, tmp int16, fault string) {
	switch f.Op {
	case parse.FetchMem:
		b.Emit(asm.LoadImm(asm.R0, int64(f.N), asm.DWord))
	case parse.FetchSymbol:
		b.Emit(asm.LoadImm(asm.R0, int64(p.symbols[f.Symbol]+uint64(f.Offset)), asm.DWord))
	case parse.FetchFileOffset:
		// The file offset's address in this process: the probe's
		// address less its own file offset (translate_user_vaddr).
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.R8), asm.FnGetFuncIp.Call(),
			asm.LoadImm(asm.R1, int64(f.Offset)-int64(p.Def.FileOffset), asm.DWord),
			asm.Add.Reg(asm.R0, asm.R1),
		)
	case parse.FetchDeref:
		p.emitValue(b, f.Inner, tmp, fault)
		if f.Offset != 0 {
			b.Emit(asm.LoadImm(asm.R1, f.Offset, asm.DWord), asm.Add.Reg(asm.R0, asm.R1))
		}
	}
}

// emitRead reads size bytes at the address in R0 into R0, zero-extended;
// a failed read jumps to fault.
func (p *Probe) emitRead(b *Builder, user bool, size int, tmp int16, fault string) {
	h := asm.FnProbeReadKernel
	if user {
		h = asm.FnProbeReadUser
	}
	b.Emit(
		asm.Mov.Reg(asm.R3, asm.R0),
		storeImm64(asm.R10, tmp, 0),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(tmp)),
		asm.Mov.Imm(asm.R2, int32(size)),
		h.Call(),
		asm.JNE.Imm(asm.R0, 0, fault),
		asm.LoadMem(asm.R0, asm.R10, tmp, sizes[size]),
	)
}

// emitValue leaves the value of a fetch in R0: a register, a stack word,
// a constant, or the word a memory fetch reads.
func (p *Probe) emitValue(b *Builder, f *parse.Fetch, tmp int16, fault string) {
	switch f.Op {
	case parse.FetchReg:
		if p.fentry {
			p.emitFuncArg(b, probeRegArg(p.arch, f.Reg), tmp)
		} else {
			p.loadReg(b, f.Reg)
		}
	case parse.FetchStackPointer:
		p.loadReg(b, "sp")
	case parse.FetchRetval:
		if p.fentry {
			p.emitFuncRet(b, tmp)
		} else {
			p.loadReg(b, probeRetReg[p.arch])
		}
	case parse.FetchImm:
		b.Emit(asm.LoadImm(asm.R0, int64(f.N), asm.DWord))
	case parse.FetchStack:
		p.emitStack(b, int64(f.N), tmp, fault)
	case parse.FetchArg:
		if p.fentry {
			p.emitFuncArg(b, int(f.N), tmp)
		} else if reg, n := probeArgLoc(p.arch, int(f.N)); reg != "" {
			p.loadReg(b, reg)
		} else {
			p.emitStack(b, int64(n), tmp, fault)
		}
	default:
		p.emitAddr(b, f, tmp, fault)
		p.emitRead(b, p.userRead(f), 8, tmp, fault)
	}
}

// emitStack leaves the n-th word of the stack in R0.
func (p *Probe) emitStack(b *Builder, n int64, tmp int16, fault string) {
	p.loadReg(b, "sp")
	if n != 0 {
		b.Emit(asm.LoadImm(asm.R1, 8*n, asm.DWord), asm.Add.Reg(asm.R0, asm.R1))
	}
	p.emitRead(b, p.Def.User, 8, tmp, fault)
}

// probeArgRegs are the registers of a function's first arguments at its
// entry; the next ones are on the stack from the word probeArgStack.
var (
	probeArgRegs = map[string][]string{
		"amd64": {"di", "si", "dx", "cx", "r8", "r9"},
		"arm64": {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"},
	}
	probeArgStack = map[string]int{"amd64": 1, "arm64": 0}
)

// probeArgLoc returns where $argN (from 1) is at a function's entry, as
// parse.ProbeDef.ArgRegister names it: a register, or else the stack
// word n ($stackN; a kprobe's $argN goes to 2048).
func probeArgLoc(arch string, n int) (reg string, stack int) {
	regs := probeArgRegs[arch]
	if n <= len(regs) {
		return regs[n-1], 0
	}
	return "", probeArgStack[arch] + n - 1 - len(regs)
}

// ProbeSource returns the source of a probe event's program, from its
// definitions (f.Probes), or nil for an event of the kernel's. An event
// of several probes (the kernel's multi-probe event: definitions of one
// name and arguments at other places) has a program per probe, each
// building the event's record from its own fetch arguments:
// Collection.Add adds the others' with the first's, and MoreProbes says
// where each runs. syms is as NewProbe's; check tells whether a kernel
// probe may run on its function's fentry or fexit instead
// (Probe.TryFentry), each probe of an event for itself.
func ProbeSource(f *parse.Format, syms parse.FuncResolver, check FentryCheck) (Source, error) {
	if len(f.Probes) == 0 {
		return nil, nil
	}
	if f.Func != nil {
		if len(f.Probes) > 1 {
			return nil, fmt.Errorf("function event %s has %d probes: a function event is one", f.FullName(), len(f.Probes))
		}
		p, err := NewFuncEventProbe(f.Func, f.Probes[0], syms)
		if err != nil {
			return nil, err
		}
		p.TryFentry(check)
		return p, nil
	}
	var first *Probe
	for _, d := range f.Probes {
		p, err := NewProbe(d, syms)
		if err != nil {
			return nil, err
		}
		p.TryFentry(check)
		if first == nil {
			first = p
			continue
		}
		first.more = append(first.more, p)
	}
	return first, nil
}

// MoreProbes returns the programs of the other probes of an event of
// several probes whose first probe's program, of source src, is named
// name (Collection.Add adds them), each with where it runs; none for
// another source.
func MoreProbes(name string, src Source) []Recorder {
	p, ok := src.(*Probe)
	if !ok {
		return nil
	}
	var out []Recorder
	for i, q := range p.more {
		out = append(out, Recorder{Prog: probeProgName(name, i+1), Point: q.Point(nil), Why: q.Why()})
	}
	return out
}

// probeProgName names the program of an event's probe i (from 1) after
// the first, whose program is named name.
func probeProgName(name string, i int) string { return fmt.Sprintf("%s_%d", name, i) }
