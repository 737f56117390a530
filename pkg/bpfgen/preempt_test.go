package bpfgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/gtrace/gtrace/internal/testutil"
)

// kernelSpec marshals types into a BTF spec.
func kernelSpec(t *testing.T, types ...btf.Type) *btf.Spec {
	t.Helper()
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestPreemptCountIn finds the preempt count in the layouts of x86-64
// (a per-CPU variable, alone or in pcpu_hot, reached from the
// runqueue), of arm64 (in thread_info, in a union) and of the others
// with an int in thread_info, and refuses a kernel without
// group scheduling.
func TestPreemptCountIn(t *testing.T) {
	u32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	u64 := &btf.Int{Name: "long unsigned int", Size: 8}
	rq := &btf.Struct{Name: "rq", Size: 64, Members: []btf.Member{{Name: "nr_running", Type: u32}}}
	cfsRq := &btf.Struct{Name: "cfs_rq", Size: 64, Members: []btf.Member{
		{Name: "load", Type: u64}, {Name: "rq", Type: &btf.Pointer{Target: rq}, Offset: 16 * 8}}}
	se := &btf.Struct{Name: "sched_entity", Size: 32, Members: []btf.Member{
		{Name: "load", Type: u64}, {Name: "cfs_rq", Type: &btf.Pointer{Target: cfsRq}, Offset: 8 * 8}}}
	x86Info := &btf.Struct{Name: "thread_info", Size: 8, Members: []btf.Member{{Name: "flags", Type: u64}}}
	task := func(ti btf.Type) *btf.Struct {
		return &btf.Struct{Name: "task_struct", Size: 256, Members: []btf.Member{
			{Name: "thread_info", Type: ti}, {Name: "se", Type: se, Offset: 64 * 8}}}
	}
	percpu := func(vars ...btf.VarSecinfo) *btf.Datasec {
		return &btf.Datasec{Name: ".data..percpu", Size: 0x2000, Vars: vars}
	}
	runqueues := btf.VarSecinfo{Type: &btf.Var{Name: "runqueues", Type: rq, Linkage: btf.GlobalVar}, Offset: 0x1000, Size: 64}
	count := btf.VarSecinfo{Type: &btf.Var{Name: "__preempt_count", Type: u32, Linkage: btf.GlobalVar}, Offset: 0x20, Size: 4}
	hot := &btf.Struct{Name: "pcpu_hot", Size: 64, Members: []btf.Member{
		{Name: "current_task", Type: u64}, {Name: "preempt_count", Type: u32, Offset: 8 * 8}}}
	hotVar := btf.VarSecinfo{Type: &btf.Var{Name: "pcpu_hot", Type: hot, Linkage: btf.GlobalVar}, Offset: 0x40, Size: 64}
	arm64Info := &btf.Struct{Name: "thread_info", Size: 24, Members: []btf.Member{
		{Name: "flags", Type: u64},
		{Type: &btf.Union{Size: 8, Members: []btf.Member{
			{Name: "preempt_count", Type: u64},
			{Name: "preempt", Type: &btf.Struct{Size: 8, Members: []btf.Member{
				{Name: "count", Type: u32}, {Name: "need_resched", Type: u32, Offset: 4 * 8}}}},
		}}, Offset: 16 * 8},
	}}
	intInfo := &btf.Struct{Name: "thread_info", Size: 16, Members: []btf.Member{
		{Name: "flags", Type: u64}, {Name: "preempt_count", Type: u32, Offset: 12 * 8}}}
	noGroups := &btf.Struct{Name: "task_struct", Size: 256, Members: []btf.Member{
		{Name: "thread_info", Type: x86Info},
		{Name: "se", Type: &btf.Struct{Name: "sched_entity", Size: 8, Members: []btf.Member{{Name: "load", Type: u64}}}, Offset: 64 * 8}}}
	tests := []struct {
		name  string
		types []btf.Type
		want  *PreemptCount // nil: an error
	}{
		{"x86-64 __preempt_count", []btf.Type{task(x86Info), percpu(count, runqueues)}, &PreemptCount{Chain: []int16{72, 16}, Off: 0x20 - 0x1000}},
		{"x86-64 pcpu_hot", []btf.Type{task(x86Info), percpu(runqueues, hotVar)}, &PreemptCount{Chain: []int16{72, 16}, Off: 0x48 - 0x1000}},
		{"arm64", []btf.Type{task(arm64Info)}, &PreemptCount{Off: 16}},
		{"int in thread_info", []btf.Type{task(intInfo)}, &PreemptCount{Off: 12}},
		{"no per-CPU count", []btf.Type{task(x86Info), percpu(runqueues)}, nil},
		{"no group scheduling", []btf.Type{noGroups, percpu(count, runqueues)}, nil},
	}
	for _, tt := range tests {
		got, err := PreemptCountIn(kernelSpec(t, tt.types...))
		if tt.want == nil {
			if err == nil {
				t.Errorf("%s: PreemptCountIn = %+v, want an error", tt.name, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: PreemptCountIn = %+v, %v, want %+v", tt.name, got, err, tt.want)
		}
	}
}

// TestGatePreemptGolden: the gate that reads the preempt count, in the
// listing of a program (--dry-run), for x86-64 and arm64.
func TestGatePreemptGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		pc   *PreemptCount
	}{
		{"x86_64", &PreemptCount{Chain: []int16{296, 312}, Off: -93328}},
		{"arm64", &PreemptCount{Off: 16}},
	} {
		p := &Prog{Name: "gate", Source: Tracepoint{}, Gate: Gate{ExcludeTGID: 42, OnlyTGIDs: []uint32{7}, Preempt: c.pc}}
		ps, err := p.Generate()
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("%v", ps.Instructions)
		path := filepath.Join("testdata", "gate", "preempt_"+c.name+".golden")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the golden file:\n%s", c.name, testutil.FirstDiff(got, string(want)))
		}
	}
}
