package probe

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// fentryKey is a function and whether its fexit is asked for.
type fentryKey struct {
	fn   string
	exit bool
}

type fentryAnswer struct {
	nargs int
	err   error
}

var (
	fentryMu    sync.Mutex
	fentryCache = map[fentryKey]fentryAnswer{}
)

// FentryArgs reports whether a program runs on the kernel function fn's
// fentry (exit: its fexit) on this kernel, and how many arguments the
// kernel's BTF gives fn; its error says why not: no kernel BTF, fn not
// in it, an argument or return value that is not a number or pointer
// (gtrace reads each in one word), more than six arguments, or the
// kernel refusing a tracing program on fn. The answer is cached. It is a
// bpfgen.FentryCheck.
func FentryArgs(fn string, exit bool) (int, error) {
	fentryMu.Lock()
	defer fentryMu.Unlock()
	k := fentryKey{fn, exit}
	a, ok := fentryCache[k]
	if !ok {
		a.nargs, a.err = fentryArgs(fn, exit)
		fentryCache[k] = a
	}
	return a.nargs, a.err
}

func fentryArgs(fn string, exit bool) (int, error) {
	_ = rlimit.RemoveMemlock()
	if !HaveKernelBTF() {
		return 0, errors.New("no kernel BTF (/sys/kernel/btf/vmlinux)")
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return 0, fmt.Errorf("read the kernel's BTF: %w", err)
	}
	var f *btf.Func
	if err := spec.TypeByName(fn, &f); err != nil {
		return 0, fmt.Errorf("%s is not a function of the kernel's BTF", fn)
	}
	proto, ok := f.Type.(*btf.FuncProto)
	if !ok {
		return 0, fmt.Errorf("%s has no prototype in the kernel's BTF", fn)
	}
	if len(proto.Params) > 6 {
		return 0, fmt.Errorf("%s has %d arguments, more than the 6 gtrace reads from a trampoline", fn, len(proto.Params))
	}
	for i, p := range proto.Params {
		if !wordType(p.Type) {
			return 0, fmt.Errorf("%s's argument %d is not a number or pointer", fn, i+1)
		}
	}
	if exit && proto.Return != nil && !wordType(proto.Return) {
		return 0, fmt.Errorf("%s returns neither a number nor a pointer", fn)
	}
	if err := loadTracing(fn, exit); err != nil {
		return 0, err
	}
	return len(proto.Params), nil
}

// wordType reports whether t is a number, enum or pointer of at most
// eight bytes, which a trampoline saves in one word.
func wordType(t btf.Type) bool {
	switch u := btf.UnderlyingType(t).(type) {
	case *btf.Int, *btf.Enum:
		n, err := btf.Sizeof(u)
		return err == nil && n <= 8
	case *btf.Pointer:
		return true
	}
	return false
}

// loadTracing loads (and closes) an empty fentry or fexit program on fn:
// the kernel's answer to whether tracing programs run there.
func loadTracing(fn string, exit bool) error {
	at, kind := ebpf.AttachTraceFEntry, "fentry"
	if exit {
		at, kind = ebpf.AttachTraceFExit, "fexit"
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "gtrace_fentry", Type: ebpf.Tracing, AttachType: at, AttachTo: fn, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if errors.Is(err, unix.EPERM) {
		err = unix.EPERM // not cilium/ebpf's guess at a memlock limit
	}
	if err != nil {
		return fmt.Errorf("the kernel refuses a %s program on %s: %w", kind, fn, err)
	}
	return p.Close()
}
