package parse

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestProbeGolden parses each testdata/probe/NAME.in, a definition, and
// compares its listing, the kernel's form and the derived format file
// with NAME.golden (x86-64 registers).
func TestProbeGolden(t *testing.T) {
	goldenFiles(t, "probe", func(t *testing.T, input string) (string, string) {
		src := strings.TrimSuffix(input, "\n")
		d, err := ParseProbe("probe", src, ProbeOptions{Arch: "amd64"})
		if err != nil {
			t.Fatalf("ParseProbe(%q) = %+v", src, err)
		}
		if d.Remove {
			return d.String() + "\n", fmt.Sprintf("ParseProbe(%q)", src)
		}
		if d.PathSymbol != "" {
			d.Resolve(0xf8340)
		}
		return d.String() + "\n" + d.Kernel() + "\n" + d.FormatFile(1500), fmt.Sprintf("ParseProbe(%q)", src)
	})
}

// TestProbeFormat checks that the derived format is one the rest of
// gtrace reads like any event's: offsets, sizes, classes.
func TestProbeFormat(t *testing.T) {
	d, err := ParseProbe("probe", "r:g/ev /bin/true:0x10 ret=$retval:s32 buf=+0(%si):string c=+0(%si):u8[3] x=%ax:x16", ProbeOptions{Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	f := d.Format(7)
	if f.System != "g" || f.Name != "ev" || f.ID != 7 {
		t.Fatalf("Format() = %s (ID %d)", f.FullName(), f.ID)
	}
	checkFields(t, f, []fieldWant{
		{"__probe_func", 8, 8, false, ClassNumeric},
		{"__probe_ret_ip", 16, 8, false, ClassNumeric},
		{"ret", 24, 4, true, ClassNumeric},
		{"buf", 28, 4, true, ClassDataLoc},
		{"c", 32, 3, false, ClassArray},
		{"x", 35, 2, false, ClassNumeric},
	})
}

// TestProbeDefaults checks the names the kernel (and gtrace, where it
// departs) gives a probe without one.
func TestProbeDefaults(t *testing.T) {
	for _, tt := range []struct{ src, full string }{
		{"p vfs_read", "kprobes:p_vfs_read_0"},
		{"r vfs_read", "kprobes:r_vfs_read_0"},
		{"p vfs_read%return", "kprobes:r_vfs_read_0"},
		{"p vfs_read+0x10", "kprobes:p_vfs_read_16"},
		{"p ext4:ext4_sync_fs", "kprobes:p_ext4_ext4_sync_fs_0"},
		{"p 0x10", "kprobes:p_0x0000000000000010"},
		{"p:grp/ vfs_read", "grp:p_vfs_read_0"},
		{"p /lib/libc.so.6:0x10", "uprobes:p_libc_0x10"},
		{"r /lib/libc.so.6:0x10", "uprobes:r_libc_0x10"},
		{"p /bin/my_tool:16", "uprobes:p_my_0x10"},
		{"p /lib/libc.so.6:write", "uprobes:p_libc_write"},
		{"r /lib/libc.so.6:write+8", "uprobes:r_libc_write_8"},
	} {
		d, err := ParseProbe("probe", tt.src, ProbeOptions{Arch: "amd64"})
		if err != nil || d.FullName() != tt.full || !d.DefaultName {
			t.Errorf("ParseProbe(%q) = %v, %v, want %s", tt.src, d, err, tt.full)
		}
	}
	d, err := ParseProbe("probe", "p vfs_read %ax a=%bx %cx", ProbeOptions{Arch: "amd64"})
	if err != nil || d.Args[0].Name != "arg1" || d.Args[2].Name != "arg3" {
		t.Errorf("ParseProbe = %+v, %v: want args arg1, a, arg3", d, err)
	}
}

// TestProbeArm64 checks arm64's registers and $argN.
func TestProbeArm64(t *testing.T) {
	d, err := ParseProbe("probe", "p:e /bin/true:0x10 a=%x0 b=%lr c=%pstate d=$arg8 e=$arg9 f=$arg1", ProbeOptions{Arch: "arm64"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Kernel(), "p:uprobes/e /bin/true:0x10 a=%x0 b=%lr c=%pstate d=%x7 e=$stack0 f=%x0"; got != want {
		t.Errorf("Kernel() = %q, want %q", got, want)
	}
	if _, err := ParseProbe("probe", "p:e /bin/true:0x10 a=%di", ProbeOptions{Arch: "arm64"}); err == nil {
		t.Errorf("arm64 takes %%di")
	}
}

// probeErrorTests are bad definitions: the kernel's message (or gtrace's
// where the kernel takes it or has none) and the caret's column and
// width. The kernel selftests' positions (§8.2) are among them.
var probeErrorTests = []struct {
	src      string
	msg      string
	col, len int
}{
	{"p vfs_read $retval", "$retval is not available on probe", 12, 7},
	{"p:foo/bar.1 vfs_read", "Event name must follow the same rules as C identifiers", 7, 5},
	{"p vfs_read +0(+0(@0)", "Dereference brace is not closed", 20, 0},
	{"p vfs_read +0(@11):u8[10", "Array is not closed", 25, 0},
	{"p vfs_read @11:unknown_type", "Unknown type is specified", 16, 12},
	{"p vfs_read &1", "Invalid fetch argument", 12, 2},
	{"p vfs_read arg1=", "No argument expression", 17, 0},
	{"p5 vfs_read", "Maxactive is only for function exit", 2, 1},
	{"r0 vfs_read", "Invalid maxactive number", 2, 1},
	{"rX vfs_read", "a probe command is p or r[MAXACTIVE], then :[GRP/]EV", 2, 1},
	{"r4097 vfs_read", "Maxactive is too big", 2, 4},
	{"r5 /bin/true:0x10", "maxactive is not available with uprobe", 2, 1},
	{"p vfs_read%foo", "Invalid probed address suffix", 11, 4},
	{"p vfs_read-4", "Invalid probed address or symbol", 3, 10},
	{"r vfs_read+4", "Retprobe address must be an function entry", 3, 10},
	{"p vfs_read+4 a=$arg1", "$arg* can be used only on function entry or exit", 16, 5},
	{"p:/ev vfs_read", "Group name is not specified", 3, 1},
	{"p:1g/ev vfs_read", "Group name must follow the same rules as C identifiers", 3, 2},
	{"p: vfs_read", "Event name is not specified", 3, 0},
	{"p vfs_read @+4", "File offset is not available with kprobe", 12, 3},
	{"p /bin/true:0x10 @sym", "Symbol is not available with uprobe", 18, 4},
	{"p /bin/true:0x10 a=%ax:symbol", "Unknown type is specified", 24, 6},
	{"p vfs_read a=%ax:%pd", "Unknown type is specified", 18, 3},
	{"p vfs_read a=$stack2049", "Invalid stack number", 14, 10},
	{"p vfs_read a=$arg0", "Invalid argument number", 14, 5},
	{"p vfs_read a=$args", "Invalid $-variable specified", 14, 5},
	{"p vfs_read a=$arg*", "BTF is not available or not supported", 14, 5},
	{"p vfs_read a=$retvalx", "Invalid $-variable specified", 14, 8},
	{"p vfs_read file", "BTF is not available or not supported", 12, 4},
	{"r /bin/true:0x10 a=$arg1", "$arg* can be used only on function entry or exit", 20, 5},
	{"p /bin/true:0x10 a=$arg17", "Invalid argument number", 20, 6},
	{"p vfs_read a=+u0(%ax", "Dereference brace is not closed", 21, 0},
	{"p vfs_read a=+0(%ax)x", "Invalid fetch argument", 21, 1},
	{"p vfs_read a=+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(%di)))))))))))))))", "Dereference is too much nested", 17, 59},
	{"p vfs_read a=+0(@sym):string[2]x", "Array has wrong suffix", 32, 1},
	{"p vfs_read a=%ax:s32[2]", "String accepts only memory argument", 18, 6},
	{"p vfs_read a=+u0(%ax):s32[2]", "String accepts only memory argument", 23, 6},
	{"p vfs_read a=@jiffies:symstr[2]", "String accepts only memory argument", 23, 9},
	{"p vfs_read a=\\\"x\":symstr", "$comm and immediate-string only accepts string type", 19, 6},
	{"p vfs_read a=\\1:symstr", "Symbol String doesn't accept data/userdata", 17, 6},
	{"p vfs_read a=%ax:b9@0/8", "Invalid bitfield", 18, 6},
	{"p vfs_read a=%ax:b4@0/24", "Unknown type is specified", 18, 7},
	{"p vfs_read abcdefghijabcdefghijabcdefghijabc=%ax", "Argument name is too long", 12, 33},
	{"p vfs_read a=%ax b=%bx a=%cx", "This argument name is already used", 24, 1},
	{"p vfs_read common_pid=%ax", "This argument name is already used", 12, 10},
	{"q vfs_read", "a probe command starts with p, r or -:", 1, 1},
	{"p", "no probe place", 2, 0},
	{"", "no probe definition", 1, 0},
	{"-:", "Event name is not specified", 3, 0},
	{"-:ev x", "a removal names an event and nothing else", 6, 1},
	{"- ev", "a removal is -:[GRP/]EV", 1, 1},
	{"p /bin/true", "Invalid uprobe offset", 3, 9},
	{"p /bin/true:1x", "Invalid uprobe offset", 13, 2},
	{"p /bin/true:sym+z", "Invalid uprobe offset", 16, 2},
	{"p /bin/true:0x10(4", "Reference counter brace is not closed", 19, 0},
	{"p /bin/true:0x10(4)x", "Reference counter has wrong suffix", 20, 1},
	{"p /bin/true:0x10(z)", "Invalid reference counter offset", 18, 1},
}

func TestProbeErrors(t *testing.T) {
	many := "p vfs_read"
	for i := 0; i <= ProbeArgsMax; i++ {
		many += " %ax"
	}
	tests := append(probeErrorTests, struct {
		src      string
		msg      string
		col, len int
	}{many, "Too many arguments are specified", 12, 3})
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			d, err := ParseProbe("--probe", tt.src, ProbeOptions{Arch: "amd64"})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("ParseProbe(%q) = %v, %v, want *Error", tt.src, d, err)
			}
			_, col := e.Position()
			if e.Msg != tt.msg || col != tt.col || e.End-e.Off != tt.len {
				t.Errorf("ParseProbe(%q) = %q at column %d width %d, want %q at %d width %d\n%+v",
					tt.src, e.Msg, col, e.End-e.Off, tt.msg, tt.col, tt.len, e)
			}
		})
	}
}
