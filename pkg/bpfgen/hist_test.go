package bpfgen

import (
	"regexp"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestHistDropSums checks the dropped sums of a layout with DropSums: a
// per-CPU array of one u64 per value, to which a dropped event adds each
// of its values after the drop counter; without DropSums the program and
// its maps are those of before.
func TestHistDropSums(t *testing.T) {
	write := testutil.Format(t, "syscalls:sys_enter_write")
	count := write.Field("count")
	spec := func(dropSums bool) *HistSpec {
		s := &HistSpec{Event: write}
		s.KeySize, s.ValueSize, s.MaxEntries, s.CommOff = 8, 24, 128, -1
		s.Keys = []KeySlot{{Src: SrcField, Field: count, Size: 8}}
		s.Vals = []ValSlot{
			{Field: count, Off: 8},
			{Expr: &Expr{Op: '*', L: &Expr{Src: SrcField, Field: count}, R: &Expr{Src: SrcConst, Const: 2}}, Off: 16},
		}
		s.DropSums = dropSums
		return s
	}
	plain, err := Hist(spec(false))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := Hist(spec(true))
	if err != nil {
		t.Fatal(err)
	}
	if m := plain.Collection.Maps[DropSumsMapName]; m != nil {
		t.Errorf("a hist without DropSums has map %+v", m)
	}
	m := sums.Collection.Maps[DropSumsMapName]
	if m == nil || m.Type != ebpf.PerCPUArray || m.MaxEntries != 1 || m.ValueSize != 16 || m.KeySize != 4 {
		t.Fatalf("dropped-sums map %+v, want a PerCPUArray of 1 entry of 16 bytes", m)
	}
	// The same program up to the drop counter, whose failed lookup now
	// goes on to the sums (jumps compared without their targets).
	jump := regexp.MustCompile(`(?m) off: -?\d+( imm: -?\d+)? <\w+>$`)
	before := jump.ReplaceAllString(lines(plain.Collection.Programs[HistProgName].Instructions), "$1")
	got := jump.ReplaceAllString(lines(sums.Collection.Programs[HistProgName].Instructions), "$1")
	const ret = "MovImm dst: r0 imm: 0\nExit"
	before = strings.TrimSuffix(before, ret)
	tail, ok := strings.CutPrefix(got, before)
	if !ok {
		t.Fatalf("with DropSums the program does not start as without it:\n%s\nwant a prefix of\n%s", got, before)
	}
	want := `LoadMapPtr dst: r1 fd: 0 <dropsums>
MovReg dst: r2 src: rfp
AddImm dst: r2 imm: -40
Call FnMapLookupElem
JEqImm dst: r0 imm: 0
MovReg dst: r8 src: r0
LdXMemDW dst: r1 src: r6 off: 32 imm: 0
StXAtomicAddDW dst: r8 src: r1 off: 0
`
	if !strings.HasPrefix(tail, want) || !strings.Contains(tail, "StXAtomicAddDW dst: r8 src: r1 off: 8\n"+ret) {
		t.Errorf("dropped sums:\n%s\nwant\n%s...\nStXAtomicAddDW dst: r8 src: r1 off: 8\n%s", tail, want, ret)
	}
	checkReturnsZero(t, sums.Collection.Programs[HistProgName].Instructions)
}
