package bpfgen

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/attach"
	"github.com/gtrace/gtrace/pkg/parse"
)

var update = flag.Bool("update", false, "rewrite the testdata/probe/*.golden files")

// probeCases are kprobe and uprobe definitions whose generated programs
// are golden: every fetch argument and type the probe source builds.
var probeCases = []struct {
	name, arch, def string
	nargs           int // > 0: on fentry or fexit, the function having nargs arguments
}{
	{"kprobe_regs", "amd64", "p:kp vfs_read fd=%di:s32 count=%dx:u64 ip=%ip flags=%flags:x32 ax=%ax:s8", 0},
	{"kprobe_nested", "amd64", "p:kp vfs_read pos=+0(+8(+16(%si))):s64 neg=-8(+0(%di)):x16 user=+u0(+u8(%si)):u32", 0},
	{"kprobe_bitfield", "amd64", "p:kp vfs_read b=+0(%si):b3@2/8 w=+4(%si):b12@4/32 r=%di:b1@63/64", 0},
	{"kprobe_array", "amd64", "p:kp vfs_read a=+0(%si):u8[16] w=+8(%di):x32[4] s=+0(%dx):s16[2]", 0},
	{"kprobe_bitfield_array", "amd64", "p:kp vfs_read a=+0(%si):b4@2/8[3] w=+8(%di):b12@4/32[2]", 0},
	{"kprobe_string_array", "amd64", "p:kp vfs_read a=+8(%si):string[2] u=+0(%di):ustring[2] p=+u0(%dx):string[2]", 0},
	{"kprobe_symstr", "amd64", "p:kp vfs_read f=%ip:symstr n=+0(%si):string p=+8(%di):symstr c=$comm", 0},
	{"uprobe_string_array", "amd64", "p:up /bin/true:0x1000 argv=+0(%si):string[3] n=%di:s32", 0},
	{"kprobe_strings", "amd64", `p:kp do_sys_openat2 name=+0(%si):string u=+0(%si):ustring uu=+u0(%si):string comm=$comm lit=\"gtrace" n=+0(\4096):string`, 0},
	{"kprobe_symbols", "amd64", "p:kp vfs_read f=%ip:symbol j=@jiffies:u64 o=@jiffies+8:x32 a=@0xffffffff81000000:u8 s=$stack2 sp=$stack a9=$arg9 a2=$arg2", 0},
	{"kretprobe", "amd64", "r16:kr vfs_read ret=$retval:s64 a1=$arg1", 0},
	{"uprobe_args", "amd64", "p:up /bin/true:0x1000 a1=$arg1:s32 a7=$arg7 s=+0($arg2):string f=@+16:x32 st=$stack0 i=\\42", 0},
	{"uretprobe", "amd64", "r:ur /bin/true:0x1000 ret=$retval:u32 name=+0($retval):string", 0},
	{"uprobe_arm64", "arm64", "p:up /bin/true:0x1000 a1=$arg1:s32 a9=$arg9 x=%x3 lr=%lr s=+0(%sp):string", 0},
	{"kretprobe_arm64", "arm64", "r:kr vfs_read ret=$retval:s64 pc=%pc pstate=%pstate", 0},
	{"fentry", "amd64", "p:kl __x64_sys_lseek fd=+112(%di):s32 w=+96(%di):u32 b=+104(%di):b4@1/64 cm=$comm a=$arg1 j=@jiffies", 1},
	{"fexit", "amd64", "r:klr __x64_sys_lseek ret=$retval:s64 s=+0($retval):string", 1},
	{"fentry_arrays", "amd64", "p:kp vfs_read a=+8(%si):string[2] b=+0(%di):b4@2/8[3] s=%dx:symstr c=$comm", 4},
	{"fexit_symstr", "amd64", "r:kr vfs_read ret=$retval:symstr", 4},
}

// TestProbeGolden generates each probe's program (a record action after
// it) and compares its listing with testdata/probe/NAME.golden.
func TestProbeGolden(t *testing.T) {
	syms := func(name string, _ uint64) (uint64, uint64, error) {
		if name != "jiffies" {
			return 0, 0, fmt.Errorf("no kernel symbol %q", name)
		}
		return 0xffffffff82a05000, 0xffffffff82a05008, nil
	}
	for _, c := range probeCases {
		t.Run(c.name, func(t *testing.T) {
			d, p := mustProbe(t, c.def, c.arch, syms)
			if c.nargs > 0 {
				p.TryFentry(func(string, bool) (int, error) { return c.nargs, nil })
				if !p.fentry {
					t.Fatalf("not on fentry: %s", p.Why())
				}
			}
			f := d.Format(65279)
			f.Probes = []*parse.ProbeDef{d}
			prog := &Prog{Name: "probe", Source: p, Gate: Gate{ExcludeTGID: 1}, ID: EventID{Const: f.ID},
				Actions: []Action{&RecordAction{Format: f, MaxRecord: 4064, shared: recordMaps(&RecordSpec{CPUs: 2, RingSize: 1 << 16})}}}
			ps, err := prog.Generate()
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("# %s\n# %s\n%v", c.def, p.Point(f), ps.Instructions)
			path := filepath.Join("testdata", "probe", c.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the golden file:\n%s", c.name, testutil.FirstDiff(got, string(want)))
			}
		})
	}
}

// TestProbeRecordLayout checks that the program stores each argument at
// the offset the derived format gives it, in its size.
func TestProbeRecordLayout(t *testing.T) {
	d, p := mustProbe(t, "p:up /bin/true:0x1000 a=%di:s32 b=%si:u8 c=+0(%dx):string d=%cx:x16 e=+0(%r8):u64[3] f=$comm", "amd64", nil)
	f := d.Format(65279)
	b := &Builder{}
	p.emit(b, -16, EventID{Const: f.ID}, "out")
	b.Mark("out")
	insns := b.Instructions()
	stores := map[int16]asm.Size{}
	for _, ins := range insns {
		if ins.OpCode.Class().IsStore() && ins.Dst == asm.R7 {
			stores[ins.Offset] = ins.OpCode.Size()
		}
	}
	for _, fld := range f.Fields {
		if fld.Common {
			continue
		}
		size := fld.Size
		if fld.Class == parse.ClassDataLoc {
			size = 4
		}
		if fld.Name == "e" {
			continue // an array is read into the record by the helper
		}
		got, ok := stores[int16(fld.Offset)]
		if !ok || got != sizes[size] {
			t.Errorf("field %s at %d, %d bytes: stored %v (%v)", fld.Name, fld.Offset, size, got, ok)
		}
	}
	if fixed, _ := RecordLayout(f); fixed != p.fixed() {
		t.Errorf("fixed part %d, the format's %d", p.fixed(), fixed)
	}
}

// TestProbeRefused: what the source does not build is refused by name.
func TestProbeRefused(t *testing.T) {
	for def, want := range map[string]string{
		"p:kp vfs_read s=@jiffies":        "@jiffies needs the kernel's symbols",
		"p:up /bin/true:write a=%di":      "is not resolved to a file offset",
		"p:kp vfs_read a=%di b=%si c=%dx": "",
		"p:kp vfs_read a=+0(%di):u64[64] b=+0(%di):u64[64] c=+0(%di):u64[64] d=+0(%di):u64[64] e=+0(%di):u64[64] f=+0(%di):u64[64] g=+0(%di):u64[64] h=+0(%di):u64[64]": "its fields take",
	} {
		d, err := parse.ParseProbe("def", def, parse.ProbeOptions{Arch: "amd64"})
		if err != nil {
			t.Fatalf("%s: %v", def, err)
		}
		_, err = newProbe(d, "amd64", nil)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", def, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: error %v, want %q", def, err, want)
		}
	}
}

// TestProbePoint: the attach point of each kind of probe.
func TestProbePoint(t *testing.T) {
	for def, want := range map[string]attach.Point{
		"p:up /bin/true:0x1234 a=%di":    {Kind: attach.Uprobe, Target: "/bin/true", Offset: 0x1234},
		"r:ur /bin/true:0x1234":          {Kind: attach.Uretprobe, Target: "/bin/true", Offset: 0x1234},
		"p:kp vfs_read+4":                {Kind: attach.Kprobe, Target: "vfs_read", Offset: 4},
		"r:kr ext4:ext4_file_write_iter": {Kind: attach.Kretprobe, Target: "ext4_file_write_iter"},
	} {
		_, p := mustProbe(t, def, "amd64", nil)
		if got := p.Point(nil); got != want {
			t.Errorf("%s: point %+v, want %+v", def, got, want)
		}
	}
}

// TestProbeArgLoc: $argN reads what parse.ProbeDef.ArgRegister names.
func TestProbeArgLoc(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		d, err := parse.ParseProbe("def", "p:up /bin/true:0x10", parse.ProbeOptions{Arch: arch})
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= 16; n++ {
			want, _ := d.ArgRegister(n)
			reg, stack := probeArgLoc(arch, n)
			got := "%" + reg
			if reg == "" {
				got = fmt.Sprintf("$stack%d", stack)
			}
			if got != want {
				t.Errorf("%s $arg%d: %s, parse says %s", arch, n, got, want)
			}
		}
	}
}

// TestProbeMulti: an event of several probes (the kernel's multi-probe
// event) has a program per probe, each building the one event's record
// (its ID) from its own fetch arguments, and the recorder names where
// each runs.
func TestProbeMulti(t *testing.T) {
	var defs []*parse.ProbeDef
	for _, src := range []string{"p:up /bin/true:0x1000 n=%di:u32", "p:up /bin/true:0x2000 n=%si:u32"} {
		d, err := parse.ParseProbe("def", src, parse.ProbeOptions{Arch: "amd64"})
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, d)
	}
	f := defs[0].Format(65279)
	f.Probes = defs
	src, err := ProbeSource(f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Record(&RecordSpec{CPUs: 2, RingSize: 1 << 16, MaxRecord: 4064, Events: []RecordEvent{{Format: f, Source: src}}})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Recorders[0]
	want := []Recorder{{Prog: RecordProgName(0) + "_1", Point: attach.Point{Kind: attach.Uprobe, Target: "/bin/true", Offset: 0x2000}}}
	if r.Point != (attach.Point{Kind: attach.Uprobe, Target: "/bin/true", Offset: 0x1000}) || !reflect.DeepEqual(r.More, want) {
		t.Fatalf("recorder %+v, want the first probe's point and More %+v", r, want)
	}
	for i, reg := range []int64{112, 104} { // %di, %si in pt_regs
		name := RecordProgName(0)
		if i > 0 {
			name = want[i-1].Prog
		}
		ps := p.Collection.Programs[name]
		if ps == nil {
			t.Fatalf("no program %s", name)
		}
		text := ps.Instructions.String()
		if !strings.Contains(text, fmt.Sprintf("src: r8 off: %d ", reg)) || !strings.Contains(text, fmt.Sprintf("imm: %d", f.ID)) {
			t.Errorf("program %s does not read %d(pt_regs) into event %d's record:\n%s", name, reg, f.ID, text)
		}
	}
	if n := len(p.Collection.Programs); n != 2 {
		t.Errorf("%d programs, want 2", n)
	}
}

// TestProbeFentryChoice: which kernel probes run on fentry or fexit and
// which stay on their kprobe, and why (what --dry-run prints).
func TestProbeFentryChoice(t *testing.T) {
	nargs := func(n int) FentryCheck {
		return func(fn string, exit bool) (int, error) { return n, nil }
	}
	refuse := func(string, bool) (int, error) { return 0, fmt.Errorf("no kernel BTF (/sys/kernel/btf/vmlinux)") }
	for _, c := range []struct {
		def   string
		check FentryCheck
		kind  attach.Kind
		why   string
	}{
		{"p:kl __x64_sys_lseek fd=+112(%di):s32 off=+104(%di):s64 w=+96(%di):u32 b=+104(%di):b4@1/64 cm=$comm", nargs(1), attach.Fentry,
			"fentry: __x64_sys_lseek has 1 argument(s) in the kernel's BTF, and the probe reads only them"},
		{"r:klr __x64_sys_lseek ret=$retval:s64", nargs(1), attach.Fexit,
			"fexit: __x64_sys_lseek has 1 argument(s) in the kernel's BTF, and the probe reads only them"},
		{"r8:klr __x64_sys_lseek ret=$retval:s64", nargs(1), attach.Fexit, "fexit: "},
		{"p:k vfs_read+0 a=$arg4 b=%cx c=%r9 s=\\\"x\" i=\\7 j=@0x1000:u8 u=+u0(%si):u8", nargs(6), attach.Fentry, "fentry: "},
		{"p:k vfs_read", nargs(4), attach.Fentry, "fentry: "},
		{"p:k vfs_read a=$arg4", nargs(3), attach.Kprobe, "kprobe, not fentry: it reads argument 4, and vfs_read has 3 in the kernel's BTF"},
		{"p:k vfs_read a=%r9", nargs(4), attach.Kprobe, "kprobe, not fentry: it reads argument 6, and vfs_read has 4 in the kernel's BTF"},
		{"p:k vfs_read+4 a=%di", nargs(4), attach.Kprobe, "kprobe, not fentry: the probe is at +0x4, not at the function's entry"},
		{"p:k vfs_read a=%ax", nargs(4), attach.Kprobe, "kprobe, not fentry: argument a reads %ax, which is none of the function's arguments"},
		{"p:k vfs_read a=+8(%sp)", nargs(4), attach.Kprobe, "kprobe, not fentry: argument a reads %sp, which is none of the function's arguments"},
		{"p:k vfs_read a=%ip", nargs(4), attach.Kprobe, "kprobe, not fentry: argument a reads %ip, which is none of the function's arguments"},
		{"p:k vfs_read a=$stack1", nargs(4), attach.Kprobe, "kprobe, not fentry: argument a reads the stack"},
		{"p:k vfs_read a=$stack", nargs(4), attach.Kprobe, "kprobe, not fentry: argument a reads the stack"},
		{"r:k vfs_read a=%di", nargs(4), attach.Kretprobe, "kprobe, not fexit: argument a reads %di at the return, where it is no argument"},
		{"r:k vfs_read a=$arg1", nargs(4), attach.Kretprobe, "kprobe, not fexit: argument a reads $arg1 at the return, where the kprobe reads its register"},
		{"p:k ext4:ext4_file_write_iter", nargs(3), attach.Kprobe, "kprobe, not fentry: the function is in a module"},
		{"p:k 0xffffffff81000000", nargs(3), attach.Kprobe, "kprobe, not fentry: the probe is at an address"},
		{"p:k vfs_read a=%di", refuse, attach.Kprobe, "kprobe, not fentry: no kernel BTF (/sys/kernel/btf/vmlinux)"},
		{"r:k vfs_read", refuse, attach.Kretprobe, "kprobe, not fexit: no kernel BTF (/sys/kernel/btf/vmlinux)"},
		{"p:k vfs_read a=%di", nil, attach.Kprobe, "kprobe, not fentry: fentry is not tried"},
		{"p:up /bin/true:0x10 a=%di", nargs(4), attach.Uprobe, ""},
	} {
		_, p := mustProbe(t, c.def, "amd64", nil)
		p.TryFentry(c.check)
		if got := p.Point(nil).Kind; got != c.kind {
			t.Errorf("%s: on %v, want %v (%s)", c.def, got, c.kind, p.Why())
		}
		if !strings.HasPrefix(p.Why(), c.why) || c.why == "" && p.Why() != "" {
			t.Errorf("%s: why %q, want %q", c.def, p.Why(), c.why)
		}
	}
	_, p := mustProbe(t, "p:k vfs_read a=%x0", "arm64", nil)
	p.TryFentry(nargs(4))
	if want := "kprobe, not fentry: gtrace maps a function's arguments for fentry on amd64, not arm64"; p.Why() != want {
		t.Errorf("arm64: why %q, want %q", p.Why(), want)
	}
}

// TestProbeFentryProgram: a probe on fentry or fexit is a tracing
// program of that attach type on its function.
func TestProbeFentryProgram(t *testing.T) {
	for def, want := range map[string]ebpf.AttachType{
		"p:k vfs_read a=%di": ebpf.AttachTraceFEntry,
		"r:k vfs_read":       ebpf.AttachTraceFExit,
	} {
		_, p := mustProbe(t, def, "amd64", nil)
		p.TryFentry(func(string, bool) (int, error) { return 4, nil })
		ps := &ebpf.ProgramSpec{}
		p.program(ps)
		if ps.Type != ebpf.Tracing || ps.AttachType != want || ps.AttachTo != "vfs_read" {
			t.Errorf("%s: %v %v %q, want Tracing %v vfs_read", def, ps.Type, ps.AttachType, ps.AttachTo, want)
		}
	}
}

// mustProbe parses def for arch and builds its probe (syms as
// newProbe's), failing the test on an error.
func mustProbe(t *testing.T, def, arch string, syms parse.FuncResolver) (*parse.ProbeDef, *Probe) {
	t.Helper()
	d, err := parse.ParseProbe("def", def, parse.ProbeOptions{Arch: arch})
	if err != nil {
		t.Fatalf("%s: %v", def, err)
	}
	p, err := newProbe(d, arch, syms)
	if err != nil {
		t.Fatalf("%s: %v", def, err)
	}
	return d, p
}
