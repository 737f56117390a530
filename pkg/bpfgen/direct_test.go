package bpfgen

import (
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestHistDirect checks the hist program on a raw tracepoint: the record
// built at the bottom of the stack, below the filter's scratch area, and
// the classic tracepoint when keys and values leave no room for it or the
// event has no builder.
func TestHistDirect(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("records are built on raw tracepoints only on amd64")
	}
	exit := testutil.Format(t, "raw_syscalls:sys_exit")
	var scratch StackArea
	spec := func(f *HistSpec) *HistSpec {
		f.KeySize, f.ValueSize, f.MaxEntries, f.CommOff = 8, 8, 16, -1
		f.Keys = []KeySlot{{Src: SrcField, Field: exit.Field("ret"), Size: 8}}
		f.Filter = func(b *Builder, miss string, s StackArea) error { scratch = s; return nil }
		f.Direct, f.Event = &DirectOptions{TaskStatusOff: 16}, exit
		return f
	}
	p, err := Hist(spec(&HistSpec{}))
	if err != nil {
		t.Fatal(err)
	}
	ps := p.Collection.Programs[HistProgName]
	if ps.Type != ebpf.Tracing || ps.AttachType != ebpf.AttachTraceRawTp || ps.AttachTo != "sys_exit" {
		t.Errorf("program %v, %v, %q, want tp_btf on sys_exit", ps.Type, ps.AttachType, ps.AttachTo)
	}
	if scratch != (StackArea{Off: -448, Size: 448}) {
		t.Errorf("filter scratch %+v, want the 448 bytes above the record", scratch)
	}
	got := lines(ps.Instructions)
	for _, frag := range []string{
		"LdXMemDW dst: r2 src: r1 off: 120 imm: 0\nLShImm dst: r2 imm: 32\nArShImm dst: r2 imm: 32\nStXMemDW dst: rfp src: r2 off: -504 imm: 0",
		"OrImm dst: r1 imm: 442\nStXMemDW dst: rfp src: r1 off: -512 imm: 0\nMovReg dst: r6 src: rfp\nAddImm dst: r6 imm: -512",
		"LdXMemDW dst: r0 src: r6 off: 16 imm: 0", // the key, ret, read from the record
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("hist program lacks\n%s\nin\n%s", frag, got)
		}
	}
	checkReturnsZero(t, ps.Instructions)

	big := spec(&HistSpec{})
	big.KeySize = maxStack - directRecordMax
	sw := spec(&HistSpec{})
	sw.Event = testutil.Format(t, "sched:sched_switch")
	classic := spec(&HistSpec{})
	classic.Direct = nil
	for name, s := range map[string]*HistSpec{"no room": big, "no builder": sw, "not Direct": classic} {
		if HistDirect(s) {
			t.Errorf("%s: HistDirect() = true", name)
		}
	}
	if !HistDirect(spec(&HistSpec{})) {
		t.Error("HistDirect(sys_exit) = false")
	}
}
