package parse

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestFuncEventGolden parses each testdata/funcevent/NAME.in, a
// prototype, and compares its listing, the equivalent probe definition
// and the derived format file with NAME.golden (x86-64).
func TestFuncEventGolden(t *testing.T) {
	goldenFiles(t, "funcevent", func(t *testing.T, input string) (string, string) {
		src := strings.TrimSuffix(input, "\n")
		e, err := ParseFuncEvent("funcevent", src, ProbeOptions{Arch: "amd64"})
		if err != nil {
			t.Fatalf("ParseFuncEvent(%q) = %+v", src, err)
		}
		if e.User() {
			e.Resolve(0x1140)
		}
		probe := ""
		if d, err := e.Probe("funcevent"); err != nil {
			probe = fmt.Sprintf("%+v", err)
		} else {
			probe = d.Kernel() + "\n"
		}
		return e.String() + "\n" + probe + e.FormatFile(1500), fmt.Sprintf("ParseFuncEvent(%q)", src)
	})
}

// TestFuncEventFormat checks the derived format as the rest of gtrace
// reads it: the names by content, alignment, sizes, classes, and the
// print fmt of §9.
func TestFuncEventFormat(t *testing.T) {
	e, err := ParseFuncEvent("funcevent", "ip_rcv(int skb[32], x64 dev, char[16] name, string path, u16[3] w, char c)", ProbeOptions{Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	f := e.Format(7)
	if f.System != "functions" || f.Name != "ip_rcv" || f.ID != 7 {
		t.Fatalf("Format() = %s (ID %d)", f.FullName(), f.ID)
	}
	want := []struct {
		name      string
		off, size int
		signed    bool
		class     FieldClass
	}{
		{"__parent_ip", 8, 8, false, ClassNumeric},
		{"__ip", 16, 8, false, ClassNumeric},
		{"skb", 24, 4, true, ClassNumeric},
		{"dev", 32, 8, false, ClassNumeric},
		{"name", 40, 16, true, ClassString},
		{"path", 56, 4, false, ClassDataLoc},
		{"w", 60, 6, false, ClassArray},
		{"c", 66, 1, true, ClassNumeric},
	}
	for _, w := range want {
		fld := f.Field(w.name)
		if fld == nil || fld.Offset != w.off || fld.Size != w.size || fld.Signed != w.signed || fld.Class != w.class {
			t.Errorf("Field(%q) = %+v, want offset %d size %d signed %v class %v", w.name, fld, w.off, w.size, w.signed, w.class)
		}
	}
	pf := `"%pS->%pS(skb=%d, dev=%llx, name=%s, path=%s, w=%u,%u,%u, c=%c)", REC->__parent_ip, REC->__ip, REC->skb, REC->dev, REC->name, __get_str(path), REC->w[0], REC->w[1], REC->w[2], REC->c`
	if got := e.PrintFmt(); got != pf {
		t.Errorf("PrintFmt() =\n%s\nwant\n%s", got, pf)
	}
}

// TestFuncEventSlots checks which argument each field reads: NULL and ','
// move on, '|' stays, a fixed address takes none.
func TestFuncEventSlots(t *testing.T) {
	e, err := ParseFuncEvent("funcevent", "f(NULL, int a | int b, int c=0x10, int d, NULL, NULL, int g)", ProbeOptions{Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range e.Fields {
		got = append(got, fmt.Sprintf("%s:%d", f.Name, f.Slot))
	}
	if s := strings.Join(got, " "); s != "a:1 b:1 c:-1 d:2 g:5" || e.Slots != 6 {
		t.Errorf("slots %s (%d), want a:1 b:1 c:-1 d:2 g:5 (6)", s, e.Slots)
	}
	if _, err := ParseFuncEvent("funcevent", "f(int a, int b, int c, int d, int e, int f, int g, int h)", ProbeOptions{Arch: "arm64"}); err != nil {
		t.Errorf("arm64 passes 8 arguments: %v", err)
	}
	e, err = ParseFuncEvent("funcevent", "/bin/app:f(int a, char b, NULL, x64 c[1])", ProbeOptions{Arch: "arm64"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Fields[1].Type.Signed {
		t.Errorf("arm64's char is signed")
	}
	e.Resolve(0x10)
	d, err := e.Probe("funcevent")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Kernel(), "p:functions/f /bin/app:0x10 a=%x0:s32 b=%x1:char c=+8(%x3):x64"; got != want {
		t.Errorf("Probe() = %q, want %q", got, want)
	}
}

// funcEventErrorTests are bad prototypes: gtrace's message (the
// prototype had none but -EINVAL) and the caret's column and width.
var funcEventErrorTests = []struct {
	src      string
	msg      string
	col, len int
}{
	{"ip_rcv(x64 skb, x86 dev)", "unknown type 'x86'", 17, 3},
	{"", "no function event", 1, 0},
	{"9f()", "a function event starts with the function's name", 1, 2},
	{"f", "expected '(' after the function's name", 2, 0},
	{"f[int a)", "expected '(' after the function's name", 2, 1},
	{"f(int a", "the arguments are not closed with ')'", 8, 0},
	{"f(int a) x", "nothing follows the ')' of a function event", 10, 1},
	{"f(int a,)", "expected a field", 9, 1},
	{"f(int)", "expected a field name after the type, found ')'", 6, 1},
	{"f(int 1a)", "expected a field name after the type, found '1a'", 7, 2},
	{"f(unsigned x64 a)", "unsigned applies to char, short, int and long", 3, 12},
	{"f(unsigned)", "unknown type ')'", 11, 1},
	{"f(string[2] s)", "string has no arrays", 9, 1},
	{"f(int[0] a)", "array size 0 is out of range", 7, 1},
	{"f(int[65] a)", "array size 65 is out of range", 7, 2},
	{"f(int[x] a)", "expected an array size, found 'x'", 7, 1},
	{"f(int[2 a)", "expected ']' after the array size, found 'a'", 9, 1},
	{"f(int a b)", "unexpected 'b' after field a", 9, 1},
	{"f(int a+)", "expected an offset after '+', found ')'", 9, 1},
	{"f(int a[1)", "expected ']' after the index, found ')'", 10, 1},
	{"f(int a[-1])", "expected an index after '[', found '-'", 9, 1},
	{"f(int a+4294967296)", "offset 4294967296 is too big", 9, 10},
	{"f(int a[0][0][0][0][0][0][0][0][0])", "too many dereferences", 32, 1},
	{"f(int a=12)", "expected an address after '=', found '12'", 9, 2},
	{"f(int a=0xzz)", "bad address '0xzz'", 9, 4},
	{"f(int a, int a)", "field a is named twice", 14, 1},
	{"f(int __ip)", "__ip is a field of every function event", 7, 4},
	{"f(int common_pid)", "common_pid is a field of every function event", 7, 10},
	{"f(int abcdefghijabcdefghijabcdefghijabc)", "field name is too long", 7, 33},
	{"f(NULL | int a)", "expected ',' or ')' after NULL, found '|'", 8, 1},
	{"f(int a | NULL)", "NULL after '|'", 11, 4},
	{"f(int a, int b, int c, int d, int e, int g, int h)", "too many arguments: x86-64 passes 6 in registers", 45, 5},
	{"f(NULL, NULL, NULL, NULL, NULL, NULL, NULL)", "too many arguments: x86-64 passes 6 in registers", 39, 4},
	{"/bin/app:f(symbol s)", "symbol is a kernel address", 12, 6},
	{"/bin/app f(int a)", "a user-space function is PATH:FUNC", 1, 10},
	{"f(int a", "the arguments are not closed with ')'", 8, 0},
}

func TestFuncEventErrors(t *testing.T) {
	for _, tt := range funcEventErrorTests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := ParseFuncEvent("--funcevent", tt.src, ProbeOptions{Arch: "amd64"})
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("ParseFuncEvent(%q) = %v, %v, want *Error", tt.src, e, err)
			}
			_, col := pe.Position()
			if pe.Msg != tt.msg || col != tt.col || pe.End-pe.Off != tt.len {
				t.Errorf("ParseFuncEvent(%q) = %q at column %d width %d, want %q at %d width %d\n%+v",
					tt.src, pe.Msg, col, pe.End-pe.Off, tt.msg, tt.col, tt.len, pe)
			}
		})
	}
}

// TestFuncEventProbeErrors checks fields that no probe argument reads:
// the caret is on the field (or the step) in the prototype.
func TestFuncEventProbeErrors(t *testing.T) {
	for _, tt := range []struct {
		src      string
		msg      string
		col, len int
	}{
		{"f(x64 a+8)", "no probe reads a value plus an offset", 8, 2},
		{"f(symbol read+40[0]+16)", "no probe reads a value plus an offset", 20, 3},
		{"f(x64 a[200000000][200000000][200000000][200000000][200000000])", "no kprobe reads this field: Argument expression is too long", 3, 60},
	} {
		e, err := ParseFuncEvent("funcevent", tt.src, ProbeOptions{Arch: "amd64"})
		if err != nil {
			t.Fatalf("ParseFuncEvent(%q) = %v", tt.src, err)
		}
		_, err = e.Probe("funcevent")
		var pe *Error
		if !errors.As(err, &pe) {
			t.Fatalf("Probe(%q) = %v, want *Error", tt.src, err)
		}
		_, col := pe.Position()
		if pe.Msg != tt.msg || col != tt.col || pe.End-pe.Off != tt.len {
			t.Errorf("Probe(%q) = %q at column %d width %d, want %q at %d width %d\n%+v",
				tt.src, pe.Msg, col, pe.End-pe.Off, tt.msg, tt.col, tt.len, pe)
		}
	}
}
