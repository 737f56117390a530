package catalog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// uprobeOracleDefs are uprobe definitions the kernel takes: entry and
// return, every fetch argument and type a uprobe has. G is the group, F
// the file.
var uprobeOracleDefs = []string{
	"p:G/e1 F:0x1000",
	"r:G/e2 F:0x1000",
	"p:G/e3 F:0x1000%return",
	"p:G/e4 F:4096(0x20)",
	"p:G/e5 F:0x1000 fd=%di:s32 len=%dx:u64 buf=+0(%si):string",
	"p:G/e6 F:0x1000 %ax %bx:u8 %cx:u16 %dx:u32 %si:u64 %di:s8 %bp:s16 %sp:s32 %r8:s64 %r9:x8 %r10:x16 %r11:x32 %r12:x64 %r13:char",
	"p:G/e7 F:0x1000 a=%r14 b=%r15 c=%ip d=%flags e=%cs f=%ss g=%orig_ax",
	"p:G/e8 F:0x1000 m=@0x10 mm=@4096:u32 f=@+16 ff=@+0x20:s16 st=$stack st0=$stack0 st5=$stack5:u8",
	"p:G/e9 F:0x1000 c=$comm C=$COMM s=\\\"hello\" i=\\1 j=\\-1:s32 k=\\+7:x8 l=\\0x10:u16 cs=$comm:string",
	"p:G/e10 F:0x1000 a=+0(%si):ustring b=+u8(%si):u32 c=-8(+0x10(%sp)):s64 d=+0(+0(+0(%di))):x16",
	"p:G/e11 F:0x1000 a=+0(%si):u16[3] b=+0(%si):string[2] c=+0(%si):char[16] d=@0x10:s8[64] e=+0(%si):ustring[2]",
	"p:G/e12 F:0x1000 a=+0(%si):b3@2/8 b=+0(%si):b1@0/16 c=+0(%si):b32@32/64 d=%ax:b4@4/32",
	"r:G/e13 F:0x1000 ret=$retval s=$retval:s32 r=+0($retval):string x=$stack1",
	"r:G/e14 F:0x1000%return(0x40) ret=$retval:u8",
	"p:G.e15 F:0x1000 a=+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(%di))))))))))))):u8",
	"p:G/e16 F:010",
	"p:G/e17 F:0x1000 a=+0(%si):b4@0/8[2] b=+2(%di):b3@5/16[4]",
}

// uprobeOracleMulti are multi-probe events: definitions of one event at
// other places, with the same argument names and types, which the kernel
// lists a line each under the first's format.
var uprobeOracleMulti = [][]string{
	{"p:G/m1 F:0x1000 a=%di:s32 b=+0(%si):string", "p:G/m1 F:0x2000 a=%dx:s32 b=+8(%di):string", "p:G/m1 F:0x3000(0x20) a=$stack1:s32 b=+0(%ax):string"},
	{"r:G/m2 F:0x1000 ret=$retval:u16", "r:G/m2 F:0x3000 ret=%ax:u16"},
	{"p:G/m3 F:0x1000 v=+0(%si):string[2]", "p:G/m3 F:0x1000 v=+8(%si):string[2]"},
}

// uprobeOracleExt are uprobes that gtrace takes beyond the kernel: at a
// symbol of the file (L is libc), with $argN; the kernel is given Kernel()'s
// translation, and lists and formats it as gtrace does.
var uprobeOracleExt = []string{
	"p:G/x1 L:write a=$arg1 b=$arg2:s32 c=+0($arg3):string d=$arg6:u8 e=$arg7 f=+8($arg8):x32",
	"r:G/x2 L:write+4 ret=$retval",
	"p:G/x3 L:write%return",
	"p:G/x4 L:write(0x10)",
}

// uprobeOracleBad are uprobe definitions the kernel refuses; col is the
// kernel's column when it differs from gtrace's (docs/probes.md), -1 when
// the kernel gives none, 0 when it is gtrace's.
var uprobeOracleBad = []struct {
	src string
	col int
}{
	{"p:G/b1 F:0x1000 a=$retval", 0},
	{"p:G/b2 F:0x1000 a=%rax", 0},
	{"p:G/b3 F:0x1000 a=@sym", 0},
	{"p:G/b4 F:0x1000 a=+0(%di", 0},
	{"p:G/b5 F:0x1000 a=+0(@0", 0},
	{"p:G/b6 F:0x1000 a=+0(%di):u8[10", 0},
	{"p:G/b7 F:0x1000 a=+0(%di):u8[10]x", 0},
	{"p:G/b8 F:0x1000 a=+0(%di):u8[0]", 0},
	{"p:G/b9 F:0x1000 a=+0(%di):u8[65]", 0},
	{"p:G/b10 F:0x1000 a=@11:unknown_type", 0},
	{"p:G/b11 F:0x1000 a=%ax:symbol", 0},
	{"p:G/b12 F:0x1000 &1", 0},
	{"p:G/b13 F:0x1000 a=", 0},
	{"p:G/b14 F:0x1000 =%ax", 0},
	{"p:G/b15 F:0x1000 1a=%ax", 0},
	{"p:G/b16 F:0x1000 a=%ax a=%bx", 0},
	{"p:G/b17 F:0x1000 __probe_ip=%ax", 0},
	{"p:G/b18 F:0x1000 abcdefghijabcdefghijabcdefghijabc=%ax", 0},
	{"p:G/b19 F:0x1000 a=+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(%di)))))))))))))))", 0},
	{"p:G/b20 F:0x1000 a=$stack0x1", 0},
	{"r:G/b21 F:0x1000 a=$arg1", 0},
	{"p:G/b22 F:0x1000 a=$foo", 0},
	{"p:G/b23 F:0x1000 a=\\x", 0},
	{"p:G/b24 F:0x1000 a=\\\"abc", 0},
	{"p:G/b25 F:0x1000 a=@+x", 0},
	{"p:G/b26 F:0x1000 a=@0xzz", 0},
	{"p:G/b27 F:0x1000 a=+0%di", 0},
	{"p:G/b28 F:0x1000 a=+z(%di)", 0},
	{"p:G/b29 F:0x1000 a=+0($comm)", 0},
	{"p:G/b30 F:0x1000 a=$comm:u32", 0},
	{"p:G/b31 F:0x1000 a=%ax:string", 0},
	{"p:G/b32 F:0x1000 a=%ax:u8[2]", 0},
	{"p:G/b33 F:0x1000 a=%ax:b4@5/8", 0},
	{"p:G/b34 F:0x1000 a=+0(%ax):b4@6/8", 3}, // the kernel's column moves on by the dereference's "+0("
	{"p:G/b35 F:0x1000 a=foo", 0},
	{"p:G/b36 F:0x1000 a=+0(%ax):abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd", 0},
	{"p:G/b37 F:0x1000%ret", 0},
	{"p:G/b38 F:0x1000(0x10", 0},
	{"p:G/b39 F:0x1000(0x10)x", 0},
	{"p:G/b40 F:0x1000(zz)", 0},
	{"p:G/b41 F:0x10zz", 0},
	{"p:/b42 F:0x1000", 0},
	{"p:G/4b F:0x1000", 0},
	{"p:G/b.1 F:0x1000", 0},
	{"p:G/abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd F:0x1000", 0},
	{"p:1G/b46 F:0x1000", 0},
	{"p:G/b47 F:0x1000 a=+0(%ax):symstr", 0},
	{"p:G/b48 F:0x1000 a=+0(%ax):b0@1/8", 3},
	{"p:G/b49 F:0x1000 a=+0(%ax):b4@6/12", 0},
	{"p:G/b50 /nonexistent/gtrace:0x1000", -1},
	{"p:G/b51 /:0x1000", 0},
	{"p:G/b52 F:0x1000 a=\\\"", 0},
}

// TestPrivilegedUprobeOracle defines the uprobes of uprobeOracleDefs in
// the kernel (uprobe_events) and in gtrace and requires the same listing
// and the same format file but for the ID line; and the kernel's refusals
// of uprobeOracleBad in error_log: the same message, at the same column.
func TestPrivilegedUprobeOracle(t *testing.T) {
	testutil.RequirePrivileged(t)
	fs, err := tracefs.Open()
	if err != nil {
		t.Skipf("no tracefs: %v", err)
	}
	if _, err := os.Stat(fs.Path("uprobe_events")); err != nil {
		t.Skipf("kernel without uprobe events: %v", err)
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the table names x86-64 registers")
	}
	group := fmt.Sprintf("gtrace_%d", rand.IntN(1e9))
	file := filepath.Join(t.TempDir(), "prog")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o755); err != nil {
		t.Fatal(err)
	}
	events := fs.Path("uprobe_events")
	write := func(cmd string) error {
		f, err := os.OpenFile(events, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(cmd + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	t.Cleanup(func() { _ = write("-:" + group + "/") })
	expand := func(s string) string {
		s = strings.Replace(s, "G/", group+"/", 1)
		s = strings.Replace(s, "G.", group+".", 1)
		return strings.Replace(s, " F:", " "+file+":", 1)
	}
	for _, tmpl := range uprobeOracleDefs {
		src := expand(tmpl)
		t.Run(tmpl, func(t *testing.T) {
			d, err := parse.ParseProbe("probe", src, parse.ProbeOptions{})
			if err != nil {
				t.Fatalf("ParseProbe(%q) = %+v", src, err)
			}
			if err := write(d.Kernel()); err != nil {
				msg, col := lastError(t, fs)
				t.Fatalf("kernel refuses %q: %v: %s at %d", d.Kernel(), err, msg, col)
			}
			defer func() {
				if err := write("-:" + d.Group + "/" + d.Event); err != nil {
					t.Errorf("remove %s: %v", d.FullName(), err)
				}
			}()
			list, err := fs.ReadFile("uprobe_events")
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, l := range strings.Split(string(list), "\n") {
				if strings.Contains(l, ":"+group+"/"+d.Event+" ") {
					got = l
				}
			}
			if got != d.String() {
				t.Errorf("listing:\nkernel %s\ngtrace %s", got, d.String())
			}
			text, err := fs.ReadFile("events", d.Group, d.Event, "format")
			if err != nil {
				t.Fatal(err)
			}
			if k, g := dropID(string(text)), dropID(d.FormatFile(0)); k != g {
				t.Errorf("format: %s\nkernel:\n%s\ngtrace:\n%s", testutil.FirstDiff(g, k), k, g)
			}
		})
	}
	for _, tmpls := range uprobeOracleMulti {
		t.Run(strings.Join(tmpls, "; "), func(t *testing.T) {
			var defs []*parse.ProbeDef
			for _, tmpl := range tmpls {
				d, err := parse.ParseProbe("probe", expand(tmpl), parse.ProbeOptions{})
				if err != nil {
					t.Fatalf("ParseProbe(%q) = %+v", expand(tmpl), err)
				}
				defs = append(defs, d)
			}
			c, err := WithProbes(Live(fs), defs, "probe")
			if err != nil {
				t.Fatalf("WithProbes: %v", err)
			}
			d := defs[0]
			_, format, err := c.Format(Event{d.Group, d.Event})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := write("-:" + d.Group + "/" + d.Event); err != nil {
					t.Errorf("remove %s: %v", d.FullName(), err)
				}
			}()
			for _, e := range defs {
				if err := write(e.Kernel()); err != nil {
					msg, col := lastError(t, fs)
					t.Fatalf("kernel refuses %q: %v: %s at %d", e.Kernel(), err, msg, col)
				}
			}
			list, err := fs.ReadFile("uprobe_events")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(string(list), "\n") {
				if strings.Contains(l, ":"+group+"/"+d.Event+" ") {
					got = append(got, l)
				}
			}
			if want := ProbeListing(c); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("listing:\nkernel %s\ngtrace %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
			}
			text, err := fs.ReadFile("events", d.Group, d.Event, "format")
			if err != nil {
				t.Fatal(err)
			}
			if k, g := dropID(string(text)), dropID(format); k != g {
				t.Errorf("format: %s\nkernel:\n%s\ngtrace:\n%s", testutil.FirstDiff(g, k), k, g)
			}
		})
	}
	libc, _ := filepath.Glob("/usr/lib/*/libc.so.6")
	for _, tmpl := range uprobeOracleExt {
		if len(libc) == 0 {
			t.Logf("no libc.so.6: %d cases left out", len(uprobeOracleExt))
			break
		}
		src := strings.Replace(expand(tmpl), " L:", " "+libc[0]+":", 1)
		t.Run(tmpl, func(t *testing.T) {
			d, err := parse.ParseProbe("probe", src, parse.ProbeOptions{})
			if err == nil {
				err = CheckProbe("probe", d, "")
			}
			if err != nil {
				t.Fatalf("ParseProbe(%q) = %+v", src, err)
			}
			k, err := parse.ParseProbe("kernel", d.Kernel(), parse.ProbeOptions{})
			if err != nil {
				t.Fatalf("ParseProbe(%q) = %+v", d.Kernel(), err)
			}
			if err := write(d.Kernel()); err != nil {
				msg, col := lastError(t, fs)
				t.Fatalf("kernel refuses %q: %v: %s at %d", d.Kernel(), err, msg, col)
			}
			defer func() {
				if err := write("-:" + d.Group + "/" + d.Event); err != nil {
					t.Errorf("remove %s: %v", d.FullName(), err)
				}
			}()
			list, err := fs.ReadFile("uprobe_events")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(list), k.String()+"\n") {
				t.Errorf("listing:\nkernel %s\ngtrace %s", list, k.String())
			}
			text, err := fs.ReadFile("events", d.Group, d.Event, "format")
			if err != nil {
				t.Fatal(err)
			}
			if k, g := dropID(string(text)), dropID(d.FormatFile(0)); k != g {
				t.Errorf("format: %s\nkernel:\n%s\ngtrace:\n%s", testutil.FirstDiff(g, k), k, g)
			}
		})
	}
	for _, tt := range uprobeOracleBad {
		src := expand(tt.src)
		t.Run(tt.src, func(t *testing.T) {
			if err := os.WriteFile(fs.Path("error_log"), []byte("\n"), 0); err != nil {
				t.Fatal(err)
			}
			if err := write(src); err == nil {
				_ = write("-:" + group + "/")
				t.Fatalf("the kernel takes %q", src)
			}
			msg, col := lastError(t, fs)
			_, gerr := parse.ParseProbe("probe", src, parse.ProbeOptions{})
			if gerr == nil {
				gerr = checkProbePlace(src)
			}
			var e *parse.Error
			if !errors.As(gerr, &e) {
				t.Fatalf("ParseProbe(%q) = %v, want the kernel's %q", src, gerr, msg)
			}
			if e.Msg != msg {
				t.Errorf("ParseProbe(%q) = %q, kernel %q", src, e.Msg, msg)
			}
			want := e.Off + tt.col
			if tt.col >= 0 && col != want {
				t.Errorf("ParseProbe(%q) = %q at %d, kernel at %d (%+v)", src, e.Msg, e.Off, col, e)
			}
		})
	}
}

// checkProbePlace checks a definition's place as the catalog does.
func checkProbePlace(src string) error {
	d, err := parse.ParseProbe("probe", src, parse.ProbeOptions{})
	if err != nil {
		return err
	}
	return CheckProbe("probe", d, "")
}

// lastError returns the message and column of error_log's last entry.
func lastError(t *testing.T, fs *tracefs.FS) (string, int) {
	t.Helper()
	b, err := fs.ReadFile("error_log")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 3 {
		return "", -1
	}
	lines = lines[len(lines)-3:]
	_, msg, ok := strings.Cut(lines[0], "error: ")
	if !ok {
		t.Fatalf("error_log: %q", b)
	}
	return msg, strings.IndexByte(lines[2], '^') - len("  Command: ")
}

func dropID(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "ID: ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
