package probe

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/bpfgen"
)

func TestPrivilegedVerifierTail(t *testing.T) {
	testutil.RequirePrivileged(t)
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"bad": {
		Type: ebpf.TracePoint, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Reg(asm.R0, asm.R2), asm.Return()}, // R2 is not initialised
	}}}
	_, err := Load(&bpfgen.Program{Collection: spec})
	if err == nil {
		t.Fatal("Load(bad program) = nil error")
	}
	tail := VerifierTail(err, 5)
	if !strings.Contains(tail, "R2 !read_ok") {
		t.Errorf("VerifierTail() = %q, want the verifier's complaint", tail)
	}
	if VerifierTail(errors.New("x"), 5) != "" {
		t.Error("VerifierTail(non-verifier error) != \"\"")
	}
}

func TestPrivilegedAttachUnknownTracepoint(t *testing.T) {
	testutil.RequirePrivileged(t)
	spec := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"p": {
		Type: ebpf.TracePoint, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	}}}
	o, err := Load(&bpfgen.Program{Collection: spec})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	err = o.AttachTracepoint("p", "nosuchsystem", "nosuchevent")
	if err == nil || !strings.Contains(err.Error(), "the tracepoint does not exist on this kernel") {
		t.Errorf("AttachTracepoint(unknown) = %v", err)
	}
}

// TestDirectOptions finds thread_info's status word in the kernel's BTF
// where there is BTF (on x86-64 since 5.11: offset 16, after flags and
// syscall_work).
func TestDirectOptions(t *testing.T) {
	o := DirectOptions()
	if !HaveKernelBTF() {
		if o != nil {
			t.Errorf("DirectOptions() = %+v without kernel BTF, want nil", o)
		}
		t.Skip("the kernel has no BTF (CONFIG_DEBUG_INFO_BTF)")
	}
	if o == nil {
		t.Fatal("DirectOptions() = nil with kernel BTF")
	}
	if runtime.GOARCH == "amd64" && (o.TaskStatusOff <= 0 || o.TaskStatusOff%4 != 0) {
		t.Errorf("TaskStatusOff = %d, want the offset of task_struct.thread_info.status", o.TaskStatusOff)
	}
}

// TestPrivilegedPreemptCount: the kernel takes the gate's code that
// reads the preempt count.
func TestPrivilegedPreemptCount(t *testing.T) {
	testutil.RequirePrivileged(t)
	if !HaveKernelBTF() {
		t.Skip("no kernel BTF")
	}
	if PreemptCount() == nil {
		t.Fatal("PreemptCount() = nil on a kernel with BTF")
	}
}
