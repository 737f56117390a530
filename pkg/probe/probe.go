package probe

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/pkg/bpfgen"
)

// ErrPermission is wrapped by errors caused by missing privileges.
var ErrPermission = errors.New("permission denied")

// Objects is a loaded collection with its attached links.
type Objects struct {
	coll  *ebpf.Collection
	links []link.Link
}

// Load loads a collection. A verifier rejection is returned as an error
// that VerifierTail can shorten; missing privileges wrap ErrPermission
// with the capabilities to grant.
func Load(spec *ebpf.CollectionSpec) (*Objects, error) {
	_ = rlimit.RemoveMemlock()
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{LogSizeStart: 1 << 16},
	})
	if err != nil {
		return nil, explain("load BPF program", err)
	}
	return &Objects{coll: coll}, nil
}

// AttachTracepoint attaches the named program to system:event: a
// tracepoint program to the classic tracepoint, a tracing program (tp_btf)
// to the raw tracepoint that it was loaded for.
func (o *Objects) AttachTracepoint(prog, system, event string) error {
	p := o.coll.Programs[prog]
	if p == nil {
		return fmt.Errorf("attach %s:%s: no program %q", system, event, prog)
	}
	var l link.Link
	var err error
	if p.Type() == ebpf.Tracing {
		l, err = link.AttachTracing(link.TracingOptions{Program: p})
	} else {
		l, err = link.Tracepoint(system, event, p, nil)
	}
	if err != nil {
		return explain(fmt.Sprintf("attach %s:%s", system, event), err)
	}
	o.links = append(o.links, l)
	return nil
}

// HaveKernelBTF reports whether the kernel describes its types in BTF
// (CONFIG_DEBUG_INFO_BTF), which programs on BTF-enabled raw tracepoints
// need.
func HaveKernelBTF() bool {
	_, err := os.Stat("/sys/kernel/btf/vmlinux")
	return err == nil
}

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
// loaded.
func DirectOptions() *bpfgen.DirectOptions {
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
}

// btfSize returns the size of a type, or 0.
func btfSize(t btf.Type) int {
	n, err := btf.Sizeof(t)
	if err != nil {
		return 0
	}
	return n
}
