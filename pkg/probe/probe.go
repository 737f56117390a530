package probe

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/pkg/attach"
	"github.com/gtrace/gtrace/pkg/bpfgen"
)

// ErrPermission is wrapped by errors caused by missing privileges.
var ErrPermission = errors.New("permission denied")

// Objects is a loaded collection with its attached links.
type Objects struct {
	coll  *ebpf.Collection
	links []link.Link
}

// Load loads a collection. A verifier rejection is returned as a
// *LoadError that carries the verifier's log and the program listing;
// missing privileges wrap ErrPermission with the capabilities to grant.
func Load(p *bpfgen.Program) (*Objects, error) { return load(p, nil) }

// load loads a collection, its maps named in shared taken from there.
func load(p *bpfgen.Program, shared Shared) (*Objects, error) {
	_ = rlimit.RemoveMemlock()
	coll, err := ebpf.NewCollectionWithOptions(p.Collection, ebpf.CollectionOptions{
		Programs:        ebpf.ProgramOptions{LogSizeStart: 1 << 16},
		MapReplacements: shared,
	})
	if err != nil {
		err = explain("load BPF program", err)
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			err = &LoadError{Err: err, Listing: p.Listing()}
		}
		return nil, err
	}
	return &Objects{coll: coll}, nil
}

// LoadBest loads best and, if the kernel refuses it and there is a
// fallback (generated up front: classic tracepoints instead of raw ones,
// no attach cookies), the fallback. It returns the program it loaded.
// Some kernels refuse tracing programs (lockdown, LSM policy) or lack
// bpf_get_attach_cookie (Linux < 5.15): the fallback records and counts
// the same events, at a higher cost per event.
func LoadBest(best, fallback *bpfgen.Program) (*Objects, *bpfgen.Program, error) {
	return LoadBestSharing(best, fallback, nil)
}

// Shared names maps of loaded collections that a collection uses
// instead of making its own: the control map of a session of several
// collections (bpfgen.Control), the table of a named hist of several
// events.
type Shared map[string]*ebpf.Map

// Take adds the maps named names of from, a loaded collection (nil:
// none).
func (s Shared) Take(from *Objects, names ...string) error {
	if from == nil {
		return nil
	}
	for _, n := range names {
		m := from.Map(n)
		if m == nil {
			return fmt.Errorf("share map %s: the loaded collection has none", n)
		}
		s[n] = m
	}
	return nil
}

// LoadBestSharing is LoadBest for a collection that uses the maps of
// shared instead of making its own (nil: none).
func LoadBestSharing(best, fallback *bpfgen.Program, shared Shared) (*Objects, *bpfgen.Program, error) {
	o, err := load(best, shared)
	if err == nil || fallback == nil {
		return o, best, err
	}
	o, ferr := load(fallback, shared)
	if ferr != nil {
		return nil, nil, errors.Join(err, ferr)
	}
	return o, fallback, nil
}

// LoadError is a program that the kernel's verifier refused.
type LoadError struct {
	Err     error
	Listing string // the generated programs, as --dry-run prints them
}

func (e *LoadError) Error() string { return e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

// VerifierTail returns the last n lines of the verifier's log.
func (e *LoadError) VerifierTail(n int) string { return VerifierTail(e.Err, n) }

// ProgramListing returns the listing of the refused programs.
func (e *LoadError) ProgramListing() string { return e.Listing }

// Attach attaches the named program at p: a tracepoint program to a
// classic tracepoint (with p's cookie), a tracing program to the raw
// tracepoint or function it was loaded for, a kprobe or uprobe program to
// its function or instruction.
func (o *Objects) Attach(prog string, p attach.Point) error {
	pr := o.coll.Programs[prog]
	if pr == nil {
		return fmt.Errorf("attach %s: no program %q", p, prog)
	}
	var l link.Link
	var err error
	switch p.Kind {
	case attach.Tracepoint:
		var opts *link.TracepointOptions
		if p.Cookie != 0 {
			opts = &link.TracepointOptions{Cookie: p.Cookie}
		}
		l, err = link.Tracepoint(p.System, p.Event, pr, opts)
	case attach.TpBTF, attach.Fentry, attach.Fexit:
		l, err = link.AttachTracing(link.TracingOptions{Program: pr, Cookie: p.Cookie})
	case attach.RawTracepoint:
		l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: p.Target, Program: pr})
	case attach.Kprobe, attach.Kretprobe:
		if !haveKprobes() {
			return fmt.Errorf("attach %s: %w", p, ErrNoKprobes)
		}
		if p.Target == "" {
			return fmt.Errorf("attach %s: gtrace attaches a kprobe at a symbol, not an address: write SYMBOL+OFFSET", p)
		}
		opts := &link.KprobeOptions{Cookie: p.Cookie, Offset: p.Offset}
		if p.Kind == attach.Kprobe {
			l, err = link.Kprobe(p.Target, pr, opts)
		} else {
			l, err = link.Kretprobe(p.Target, pr, opts)
		}
	case attach.Uprobe, attach.Uretprobe:
		var ex *link.Executable
		if ex, err = link.OpenExecutable(p.Target); err == nil {
			opts := &link.UprobeOptions{Cookie: p.Cookie, Offset: p.Offset}
			if p.Symbol == "" {
				opts.Address, opts.Offset = p.Offset, 0
			}
			if p.Kind == attach.Uprobe {
				l, err = ex.Uprobe(p.Symbol, pr, opts)
			} else {
				l, err = ex.Uretprobe(p.Symbol, pr, opts)
			}
		}
	default:
		err = fmt.Errorf("unknown attach point kind %v", p.Kind)
	}
	if err != nil {
		return explain("attach "+p.String(), err)
	}
	o.links = append(o.links, l)
	return nil
}

// AttachTracepoint attaches the named program to the classic tracepoint
// system:event, or, for a tracing program, to the raw tracepoint that it
// was loaded for.
func (o *Objects) AttachTracepoint(prog, system, event string) error {
	if p := o.coll.Programs[prog]; p != nil && p.Type() == ebpf.Tracing {
		return o.Attach(prog, attach.Point{Kind: attach.TpBTF, Target: event})
	}
	return o.Attach(prog, attach.TracepointAt(system, event))
}

// ErrNoKprobes is wrapped by the error of attaching a kprobe or
// kretprobe on a kernel without them.
var ErrNoKprobes = errors.New("this kernel has no kprobes (it is built without CONFIG_KPROBES and CONFIG_KPROBE_EVENTS): " +
	"probe a tracepoint instead (gtrace list), or a user-space function with a uprobe ('p:EV PATH:SYMBOL')")

// haveKprobes reports whether the kernel has kprobe events: its kprobe
// PMU, which CONFIG_KPROBE_EVENTS registers (and cilium/ebpf attaches
// through), or tracefs's kprobe_events.
var haveKprobes = sync.OnceValue(func() bool {
	for _, p := range []string{"/sys/bus/event_source/devices/kprobe/type", "/sys/kernel/tracing/kprobe_events", "/sys/kernel/debug/tracing/kprobe_events"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
})

// HaveKprobes reports whether kprobes attach on this kernel
// (CONFIG_KPROBES, CONFIG_KPROBE_EVENTS).
func HaveKprobes() bool { return haveKprobes() }

// haveKernelBTF reports whether the kernel describes its types in BTF
// (CONFIG_DEBUG_INFO_BTF), which programs on BTF-enabled raw tracepoints
// need.
var haveKernelBTF = sync.OnceValue(func() bool {
	_, err := os.Stat("/sys/kernel/btf/vmlinux")
	return err == nil
})

// HaveKernelBTF reports whether the kernel has BTF (CONFIG_DEBUG_INFO_BTF).
func HaveKernelBTF() bool { return haveKernelBTF() }

// Map returns a map of the collection by name, or nil.
func (o *Objects) Map(name string) *ebpf.Map { return o.coll.Maps[name] }

// Close detaches and unloads everything.
func (o *Objects) Close() error {
	var errs []error
	for _, l := range o.links {
		errs = append(errs, l.Close())
	}
	o.coll.Close()
	return errors.Join(errs...)
}

// ForEach calls fn for every key and value of a hash map. The slices are
// reused between calls.
func ForEach(m *ebpf.Map, fn func(key, value []byte)) error {
	key := make([]byte, m.KeySize())
	val := make([]byte, m.ValueSize())
	it := m.Iterate()
	for it.Next(&key, &val) {
		fn(key, val)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read map %s: %w", mapName(m), err)
	}
	return nil
}

// Drain calls fn for every key and value of a hash map and deletes each
// entry as it is read (lookup-and-delete), so counts that arrive while it
// runs stay in the map for the next read.
func Drain(m *ebpf.Map, fn func(key, value []byte)) error {
	key := make([]byte, m.KeySize())
	val := make([]byte, m.ValueSize())
	var keys [][]byte
	it := m.Iterate()
	for it.Next(&key, &val) {
		keys = append(keys, append([]byte(nil), key...))
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read map %s: %w", mapName(m), err)
	}
	for _, k := range keys {
		err := m.LookupAndDelete(k, &val)
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read map %s: %w", mapName(m), err)
		}
		fn(k, val)
	}
	return nil
}

// ReadU64 reads the u64 at index 0 of an array map; with reset it also
// sets it to zero.
func ReadU64(m *ebpf.Map, reset bool) (uint64, error) {
	var v uint64
	if err := m.Lookup(uint32(0), &v); err != nil {
		return 0, fmt.Errorf("read map %s: %w", mapName(m), err)
	}
	if reset {
		if err := m.Put(uint32(0), uint64(0)); err != nil {
			return 0, fmt.Errorf("reset map %s: %w", mapName(m), err)
		}
	}
	return v, nil
}

func mapName(m *ebpf.Map) string {
	if info, err := m.Info(); err == nil {
		return info.Name
	}
	return "map"
}

// VerifierTail returns the last n lines of a verifier log carried by err,
// or "" when err is not a verifier error.
func VerifierTail(err error, n int) string {
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		return ""
	}
	lines := ve.Log
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// missingCaps names the capabilities BPF tracing needs that this process
// lacks in its effective set, or "" when it has them. CAP_SYS_ADMIN stands
// in for both on kernels older than 5.8.
func missingCaps() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		eff, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return ""
		}
		if eff&(1<<unix.CAP_SYS_ADMIN) != 0 {
			return ""
		}
		var missing []string
		if eff&(1<<unix.CAP_BPF) == 0 {
			missing = append(missing, "CAP_BPF")
		}
		if eff&(1<<unix.CAP_PERFMON) == 0 {
			missing = append(missing, "CAP_PERFMON")
		}
		return strings.Join(missing, " and ")
	}
	return ""
}

// explain turns privilege and feature errors into advice.
func explain(action string, err error) error {
	switch {
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return fmt.Errorf("%s: %w", action, err)
		}
		if missing := missingCaps(); missing != "" {
			return fmt.Errorf("%s: %w: gtrace needs %s (or root with all capabilities): run it with sudo, or grant them with setcap cap_bpf,cap_perfmon+ep on the binary", action, ErrPermission, missing)
		}
		return fmt.Errorf("%s: %w (all capabilities are held: the kernel forbids this BPF use here, see kernel lockdown and the LSM policy)", action, err)
	case errors.Is(err, unix.ENOENT) && strings.HasPrefix(action, "attach"):
		return fmt.Errorf("%s: %w: the tracepoint does not exist on this kernel", action, err)
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Errorf("%s: %w: the kernel needs CONFIG_BPF_SYSCALL and CONFIG_BPF_EVENTS", action, err)
	}
	return fmt.Errorf("%s: %w", action, err)
}

// DirectOptions returns what programs built on BTF-enabled raw
// tracepoints need to know of this kernel (see bpfgen.DirectOptions), or
// nil when it has no BTF (CONFIG_DEBUG_INFO_BTF) and they cannot be
// loaded. It reads the kernel's BTF once.
func DirectOptions() *bpfgen.DirectOptions { return directOptions() }

var directOptions = sync.OnceValue(func() *bpfgen.DirectOptions {
	if !HaveKernelBTF() {
		return nil
	}
	o := &bpfgen.DirectOptions{}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return o
	}
	var task *btf.Struct
	if spec.TypeByName("task_struct", &task) != nil {
		return o
	}
	for _, m := range task.Members {
		ti, ok := m.Type.(*btf.Struct)
		if m.Name != "thread_info" || !ok {
			continue
		}
		for _, f := range ti.Members {
			if f.Name == "status" && f.BitfieldSize == 0 && btfSize(f.Type) == 4 {
				o.TaskStatusOff = int(m.Offset.Bytes() + f.Offset.Bytes())
			}
		}
	}
	return o
})

// btfSize returns the size of a type, or 0.
func btfSize(t btf.Type) int {
	n, err := btf.Sizeof(t)
	if err != nil {
		return 0
	}
	return n
}
