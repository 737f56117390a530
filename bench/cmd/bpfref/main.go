// Command bpfref attaches one of the baseline programs of
// bench/hist-overhead.sh to raw_syscalls:sys_enter, prints "ready" on
// stdout once attached, and holds until SIGINT or SIGTERM.
//
// -attach chooses the attach point:
//
//   - tp: the classic tracepoint raw_syscalls:sys_enter, whose program gets
//     the record the kernel built for perf (the syscall number at the
//     offset of "id" in the format file);
//   - btf: the BTF-enabled raw tracepoint sys_enter (tp_btf), whose program
//     gets the tracepoint's C arguments, sys_enter(struct pt_regs *regs,
//     long id), as an array of u64: the syscall number is ctx[1]. This is
//     where gtrace attaches its own program for this event when the kernel
//     has BTF;
//   - uprobe: a uprobe at -uprobe PATH:OFFSET (a file offset, as
//     uprobe_events takes it), with -mode empty only: the cost of running
//     any program on a uprobe, bench/uprobe-overhead.sh's floor.
//
// With -mode empty the program returns 0 and does nothing else: the cost
// of running any program at that attach point. With -mode ref it is a
// minimal hand-written version of what `gtrace hist -k common_pid,id` must
// do per event:
//
//	key = {u32 pid; u32 pad; u64 id}   // pid from bpf_get_current_pid_tgid
//	if (v = lookup(&counts, &key)) atomic_add(v, 1)
//	else update(&counts, &key, &one, BPF_NOEXIST)
//	return 0
//
// The map is a hash of -size entries (2048 by default, gtrace's default
// hist size); once it is full, events of new keys are not counted. The pid
// is the thread id (the low half of pid_tgid), which is what common_pid
// holds. On a lost insert race the event is not counted: a benchmark
// baseline need not be exact.
//
// On exit, the ref mode prints one line on stdout,
//
//	hits N getppid M
//
// the sum of all counts and of those whose id is getppid's syscall number,
// so that a caller can check that every event of its workload was
// counted. This program deliberately uses none of gtrace's packages: it is
// the yardstick gtrace's generated code is measured against.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// The traced event: the classic tracepoint and the raw one.
const (
	group         = "raw_syscalls"
	event         = "sys_enter"
	field         = "id"
	rawTracepoint = "sys_enter"
	rawIDOff      = 8 // ctx[1], the id argument of the raw tracepoint
)

// Stack slots of the ref program, as offsets from R10.
const (
	keyOff = -16 // key: pid u32 at -16, pad u32 at -12, id u64 at -8
	oneOff = -24 // the u64 value 1 stored on a miss
)

func main() {
	mode := flag.String("mode", "ref", "program to attach: empty or ref")
	attach := flag.String("attach", "tp", "attach point: tp (classic tracepoint), btf (tp_btf raw tracepoint) or uprobe (-uprobe)")
	size := flag.Int("size", 2048, "entries of the ref program's hash map")
	tps := flag.String("tp", "", "with -mode empty -attach tp: the classic tracepoints SYS:EVENT,... to attach the empty program to instead")
	uprobe := flag.String("uprobe", "", "with -attach uprobe: PATH:OFFSET, the file offset of the probed instruction")
	flag.Parse()
	bad := (*mode != "empty" && *mode != "ref") || (*attach != "tp" && *attach != "btf" && *attach != "uprobe") || *size <= 0 || flag.NArg() > 0
	if *attach == "uprobe" {
		bad = bad || *mode != "empty" || !strings.Contains(*uprobe, ":")
	} else {
		bad = bad || *uprobe != ""
	}
	bad = bad || *tps != "" && (*mode != "empty" || *attach != "tp")
	if bad {
		fmt.Fprintln(os.Stderr, "usage: bpfref [-mode empty|ref] [-attach tp|btf] [-size ENTRIES] [-tp SYS:EVENT,... (empty on tp)] | bpfref -mode empty -attach uprobe -uprobe PATH:OFFSET")
		os.Exit(2)
	}
	if *tps != "" {
		if err := runEmpty(strings.Split(*tps, ",")); err != nil {
			fmt.Fprintf(os.Stderr, "bpfref: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*mode, *attach, uint32(*size), *uprobe); err != nil {
		fmt.Fprintf(os.Stderr, "bpfref: %v\n", err)
		os.Exit(1)
	}
}

// run loads and attaches the program of the given mode at the given attach
// point, with a map of size entries for ref, reports "ready" and waits for
// SIGINT or SIGTERM. Closing the link on return detaches it.
func run(mode, attach string, size uint32, uprobe string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	insns := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	var counts *ebpf.Map
	if mode == "ref" {
		idOff := rawIDOff
		if attach == "tp" {
			root, err := tracefsRoot()
			if err != nil {
				return err
			}
			idOff, err = fieldOffset(filepath.Join(root, "events", group, event, "format"), field)
			if err != nil {
				return err
			}
		}
		var err error
		counts, err = ebpf.NewMap(&ebpf.MapSpec{
			Name:       "bpfref_counts",
			Type:       ebpf.Hash,
			KeySize:    16,
			ValueSize:  8,
			MaxEntries: size,
		})
		if err != nil {
			return fmt.Errorf("create map: %w", err)
		}
		defer counts.Close()
		insns = refProgram(counts.FD(), idOff)
	}
	spec := &ebpf.ProgramSpec{
		Name:         "bpfref_" + attach + "_" + mode,
		Type:         ebpf.TracePoint,
		License:      "GPL",
		Instructions: insns,
	}
	switch attach {
	case "btf":
		spec.Type, spec.AttachType, spec.AttachTo = ebpf.Tracing, ebpf.AttachTraceRawTp, rawTracepoint
	case "uprobe":
		spec.Type = ebpf.Kprobe
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return fmt.Errorf("load %s program: %+v\n%v", mode, ve, insns)
		}
		return fmt.Errorf("load %s program: %w", mode, err)
	}
	defer prog.Close()
	var l link.Link
	switch attach {
	case "btf":
		l, err = link.AttachTracing(link.TracingOptions{Program: prog})
	case "uprobe":
		l, err = attachUprobe(prog, uprobe)
	default:
		l, err = link.Tracepoint(group, event, prog, nil)
	}
	if err != nil {
		return fmt.Errorf("attach %s program: %w", attach, err)
	}
	defer l.Close()

	fmt.Println("ready")
	<-ctx.Done()
	if err := l.Close(); err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	if counts != nil {
		hits, getppid, err := sums(counts)
		if err != nil {
			return err
		}
		fmt.Printf("hits %d getppid %d\n", hits, getppid)
	}
	return nil
}

// runEmpty attaches a program that returns 0 to each classic tracepoint
// of tps (SYS:EVENT), one program each, in order, reports "ready" and
// waits for SIGINT or SIGTERM: the cost of any program at those attach
// points (bench/synth-overhead.sh).
func runEmpty(tps []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, tp := range tps {
		sys, ev, ok := strings.Cut(tp, ":")
		if !ok {
			return fmt.Errorf("tracepoint %q: want SYS:EVENT", tp)
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name:         "bpfref_empty",
			Type:         ebpf.TracePoint,
			License:      "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		})
		if err != nil {
			return fmt.Errorf("load empty program: %w", err)
		}
		defer prog.Close()
		l, err := link.Tracepoint(sys, ev, prog, nil)
		if err != nil {
			return fmt.Errorf("attach to %s: %w", tp, err)
		}
		defer l.Close()
	}
	fmt.Println("ready")
	<-ctx.Done()
	return nil
}

// sums returns the sum of all counts in the ref program's map and of
// those whose key's id is getppid's syscall number.
func sums(counts *ebpf.Map) (hits, getppid uint64, err error) {
	var key [16]byte
	var n uint64
	it := counts.Iterate()
	for it.Next(&key, &n) {
		hits += n
		if binary.NativeEndian.Uint64(key[8:]) == unix.SYS_GETPPID {
			getppid += n
		}
	}
	if err := it.Err(); err != nil {
		return 0, 0, fmt.Errorf("read map: %w", err)
	}
	return hits, getppid, nil
}

// refProgram returns the ref program for the hash map mapFD, reading the
// syscall number as a u64 at idOff in the program's context.
func refProgram(mapFD, idOff int) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), // R6 = ctx

		// key = {pid, 0, id}
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, keyOff, asm.R0, asm.Word),
		asm.StoreImm(asm.RFP, keyOff+4, 0, asm.Word),
		asm.LoadMem(asm.R1, asm.R6, int16(idOff), asm.DWord),
		asm.StoreMem(asm.RFP, keyOff+8, asm.R1, asm.DWord),

		// if (v = lookup(&key)) { *v += 1 (atomically); return 0 }
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, keyOff),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "miss"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Ja.Label("out"),

		// update(&key, &one, BPF_NOEXIST)
		asm.Mov.Imm(asm.R1, 1).WithSymbol("miss"),
		asm.StoreMem(asm.RFP, oneOff, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, keyOff),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, oneOff),
		asm.Mov.Imm(asm.R4, int32(ebpf.UpdateNoExist)),
		asm.FnMapUpdateElem.Call(),

		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}

// tracefsRoot returns the tracefs mount point, mounting tracefs at
// /sys/kernel/tracing if neither it nor the debugfs path is mounted.
func tracefsRoot() (string, error) {
	const primary = "/sys/kernel/tracing"
	for _, dir := range []string{primary, "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(filepath.Join(dir, "events")); err == nil {
			return dir, nil
		}
	}
	if err := unix.Mount("tracefs", primary, "tracefs", 0, ""); err != nil {
		return "", fmt.Errorf("mount tracefs on %s: %w", primary, err)
	}
	return primary, nil
}

// fieldOffset returns the offset of the named field in a tracefs format
// file, whose field lines read "field:TYPE NAME;\toffset:N;\tsize:N;...".
func fieldOffset(path, name string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read format: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		decl, rest, ok := strings.Cut(strings.TrimSpace(s.Text()), ";")
		if !ok || !strings.HasPrefix(decl, "field:") {
			continue
		}
		words := strings.Fields(decl)
		if words[len(words)-1] != name {
			continue
		}
		for attr := range strings.SplitSeq(rest, ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(attr), "offset:"); ok {
				off, err := strconv.Atoi(v)
				if err != nil {
					return 0, fmt.Errorf("%s: field %s: bad offset %q", path, name, v)
				}
				return off, nil
			}
		}
	}
	if err := s.Err(); err != nil {
		return 0, fmt.Errorf("read format: %w", err)
	}
	return 0, fmt.Errorf("%s: no field %q", path, name)
}

// attachUprobe attaches prog at PATH:OFFSET, OFFSET a file offset.
func attachUprobe(prog *ebpf.Program, at string) (link.Link, error) {
	i := strings.LastIndexByte(at, ':')
	off, err := strconv.ParseUint(at[i+1:], 0, 64)
	if err != nil {
		return nil, fmt.Errorf("uprobe %s: bad offset: %w", at, err)
	}
	ex, err := link.OpenExecutable(at[:i])
	if err != nil {
		return nil, err
	}
	return ex.Uprobe("", prog, &link.UprobeOptions{Address: off})
}
