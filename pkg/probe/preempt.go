package probe

import (
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/gtrace/gtrace/pkg/bpfgen"
)

// PreemptCount returns where gtrace's programs read the preempt count
// to keep the events raised in interrupts while one of gtrace's threads
// is current (bpfgen.Gate's Preempt), or nil when the kernel has no BTF,
// its BTF does not say, or it refuses the code: then the programs ignore
// every event while a gtrace thread is current, as before. It asks the
// kernel once.
func PreemptCount() *bpfgen.PreemptCount { return preemptCount() }

var preemptCount = sync.OnceValue(func() *bpfgen.PreemptCount {
	if !HaveKernelBTF() {
		return nil
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil
	}
	pc, err := bpfgen.PreemptCountIn(spec)
	if err != nil {
		return nil
	}
	// The gate's code on a classic tracepoint, which the kernel must
	// take (get_current_task_btf, loads through BTF pointers).
	p := &bpfgen.Prog{Name: "gtrace_preempt", Source: bpfgen.Tracepoint{}, Gate: bpfgen.Gate{ExcludeTGID: 1, Preempt: pc}}
	ps, err := p.Generate()
	if err != nil {
		return nil
	}
	_ = rlimit.RemoveMemlock()
	prog, err := ebpf.NewProgram(ps)
	if err != nil {
		return nil
	}
	prog.Close()
	return pc
})
