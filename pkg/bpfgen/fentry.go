package bpfgen

// A kernel probe at a function's entry, or a return probe, runs on the
// function's fentry or fexit (a BPF trampoline) instead of its kprobe
// when the kernel allows it and every fetch argument can be read from
// the function's arguments (docs/probes.md, "Fentry and fexit"). The
// record stays the kprobe event's, field for field:
//
//	__probe_ip      the kprobe's address: the function's, past an
//	                ENDBR64 there (its fentry call)
//	__probe_func    the same
//	__probe_ret_ip  the caller's return address, read in the
//	                trampoline's frame (emitCallerRet)
//
// On x86-64, %di, %si, %dx, %cx, %r8 and %r9 at a function's entry are
// its arguments 1 to 6: the trampoline saved them, and bpf_get_func_arg
// reads them; $retval is bpf_get_func_ret.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// FentryCheck reports whether a program can run on the kernel function
// fn's fentry (exit: its fexit), with the number of arguments the
// kernel's BTF gives it; its error says why not.
type FentryCheck func(fn string, exit bool) (nargs int, err error)

// TryFentry puts a kernel probe on its function's fentry (a return
// probe on its fexit) when check allows it and the probe reads only the
// function's arguments (and memory, constants, $comm, $retval), and
// notes why it does or does not (Why). A nil check leaves the probe on
// its kprobe.
func (p *Probe) TryFentry(check FentryCheck) {
	d := p.Def
	if d.User {
		return
	}
	kind := "fentry"
	if d.Return {
		kind = "fexit"
	}
	fn := p.Point(nil).Target
	need, why := p.fentryNeeds()
	if why == "" {
		switch nargs, err := check.try(fn, d.Return); {
		case err != nil:
			why = err.Error()
		case need > nargs:
			why = fmt.Sprintf("it reads argument %d, and %s has %d in the kernel's BTF", need, fn, nargs)
		default:
			p.fentry, p.nargs = true, nargs
			p.why = fmt.Sprintf("%s: %s has %d argument(s) in the kernel's BTF, and the probe reads only them", kind, fn, nargs)
			return
		}
	}
	p.why = fmt.Sprintf("kprobe, not %s: %s", kind, why)
}

// try calls the check; nil refuses.
func (c FentryCheck) try(fn string, exit bool) (int, error) {
	if c == nil {
		return 0, fmt.Errorf("fentry is not tried")
	}
	return c(fn, exit)
}

// Why says why a kernel probe runs on its fentry, fexit or kprobe ("" for
// a uprobe), for --dry-run.
func (p *Probe) Why() string { return p.why }

// fentryNeeds returns the highest argument the probe reads (1-based, 0
// for none), or why its fetch arguments need a kprobe.
func (p *Probe) fentryNeeds() (int, string) {
	d := p.Def
	switch {
	case p.arch != "amd64":
		return 0, fmt.Sprintf("gtrace maps a function's arguments for fentry on amd64, not %s", p.arch)
	case d.IsAddr:
		return 0, "the probe is at an address"
	case strings.Contains(d.Symbol, ":"):
		return 0, "the function is in a module"
	case d.Offset != 0:
		return 0, fmt.Sprintf("the probe is at +%#x, not at the function's entry", d.Offset)
	}
	need := 0
	for _, a := range d.Args {
		for f := a.Fetch; f != nil; f = f.Inner {
			switch f.Op {
			case parse.FetchArg:
				if d.Return {
					return 0, fmt.Sprintf("argument %s reads $arg%d at the return, where the kprobe reads its register", a.Name, f.N)
				}
				need = max(need, int(f.N))
			case parse.FetchReg:
				n := probeRegArg(p.arch, f.Reg)
				if n == 0 {
					return 0, fmt.Sprintf("argument %s reads %%%s, which is none of the function's arguments", a.Name, f.Reg)
				}
				if d.Return {
					return 0, fmt.Sprintf("argument %s reads %%%s at the return, where it is no argument", a.Name, f.Reg)
				}
				need = max(need, n)
			case parse.FetchStack, parse.FetchStackPointer:
				return 0, fmt.Sprintf("argument %s reads the stack", a.Name)
			}
		}
	}
	return need, ""
}

// probeRegArg returns the argument (from 1) that the register holds at a
// function's entry, or 0.
func probeRegArg(arch, reg string) int {
	return slices.Index(probeArgRegs[arch], reg) + 1
}

// emitFuncArg leaves the function's argument n (from 1) in R0, 0 when
// the trampoline has none.
func (p *Probe) emitFuncArg(b *Builder, n int, tmp int16) {
	b.Emit(
		storeImm64(asm.R10, tmp, 0),
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Mov.Imm(asm.R2, int32(n-1)),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, int32(tmp)),
		asm.FnGetFuncArg.Call(),
		asm.LoadMem(asm.R0, asm.R10, tmp, asm.DWord),
	)
}

// emitFuncRet leaves the function's return value in R0 (fexit).
func (p *Probe) emitFuncRet(b *Builder, tmp int16) {
	b.Emit(
		storeImm64(asm.R10, tmp, 0),
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(tmp)),
		asm.FnGetFuncRet.Call(),
		asm.LoadMem(asm.R0, asm.R10, tmp, asm.DWord),
	)
}

// emitCallSite leaves in R0 the address of the function's fentry call:
// bpf_get_func_ip, past an ENDBR64 there. Clobbers R1-R6.
func (p *Probe) emitCallSite(b *Builder, tmp int16) {
	b.Emit(asm.Mov.Reg(asm.R1, asm.R8), asm.FnGetFuncIp.Call())
	p.emitEndbr(b, tmp)
}

// emitCallerRet leaves in R0 the caller's return address (0 when it
// cannot be read). The x86-64 trampoline's frame, from its context (the
// saved arguments, nargs words): a return value word when the trampoline
// calls the function (fexit), its saved frame pointer, the return
// address into the function (the fentry call's end: its address + 5),
// then the caller's return address. The word after the arguments is the
// saved frame pointer or the return value, the next the return address
// into the function or the saved frame pointer: the one that is the
// return into the function tells which. Clobbers R1-R6.
func (p *Probe) emitCallerRet(b *Builder, tmp int16) {
	fault := b.Label("ret_fault")
	done := b.Label("ret_done")
	far := b.Label("ret_far")
	read := b.Label("ret_read")
	base := int32(8 * p.nargs)
	p.emitCallSite(b, tmp)
	b.Emit(
		asm.Add.Imm(asm.R0, 5),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.Mov.Reg(asm.R0, asm.R8),
		asm.Add.Imm(asm.R0, base+8),
	)
	p.emitRead(b, false, 8, tmp, fault)
	b.Emit(
		asm.JNE.Reg(asm.R0, asm.R6, far),
		asm.Mov.Reg(asm.R0, asm.R8),
		asm.Add.Imm(asm.R0, base+16),
		asm.Ja.Label(read),
	)
	b.Mark(far)
	b.Emit(asm.Mov.Reg(asm.R0, asm.R8), asm.Add.Imm(asm.R0, base+24))
	b.Mark(read)
	p.emitRead(b, false, 8, tmp, fault)
	b.Emit(asm.Ja.Label(done))
	b.Mark(fault)
	b.Emit(asm.Mov.Imm(asm.R0, 0))
	b.Mark(done)
}

// emitFuncStart leaves the function's address in R0 as a kprobe's
// bpf_get_func_ip gives it: the fentry call's, less an ENDBR64 just
// before it. Clobbers R1-R6.
func (p *Probe) emitFuncStart(b *Builder, tmp int16) {
	plain := b.Label("no_endbr")
	p.emitCallSite(b, tmp)
	b.Emit(
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.StoreImm(asm.R10, tmp, 0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(tmp)),
		asm.Mov.Imm(asm.R2, 4),
		asm.Mov.Reg(asm.R3, asm.R6),
		asm.Add.Imm(asm.R3, -4),
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(asm.R1, asm.R10, tmp, asm.Word),
		asm.LoadImm(asm.R2, endbr64, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, plain),
		asm.Add.Imm(asm.R6, -4),
	)
	b.Mark(plain)
	b.Emit(asm.Mov.Reg(asm.R0, asm.R6))
}
