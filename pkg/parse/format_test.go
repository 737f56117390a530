// An external test, so that it may use internal/testutil, which imports
// parse.
package parse_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

func TestParseFormatFields(t *testing.T) {
	tests := []struct {
		event, field string
		want         parse.Field
	}{
		{"raw_syscalls:sys_enter", "id", parse.Field{Name: "id", Type: "long", Offset: 8, Size: 8, Signed: true, Class: parse.ClassNumeric}},
		{"raw_syscalls:sys_enter", "args", parse.Field{Name: "args", Type: "unsigned long[6]", Offset: 16, Size: 48, Class: parse.ClassArray, ArrayLen: 6}},
		{"raw_syscalls:sys_enter", "common_pid", parse.Field{Name: "common_pid", Type: "int", Offset: 4, Size: 4, Signed: true, Class: parse.ClassNumeric, Common: true}},
		{"sched:sched_switch", "prev_comm", parse.Field{Name: "prev_comm", Type: "char[16]", Offset: 8, Size: 16, Class: parse.ClassString, ArrayLen: 16}},
		{"sched:sched_process_exec", "filename", parse.Field{Name: "filename", Type: "__data_loc char[]", Offset: 8, Size: 4, Class: parse.ClassDataLoc}},
		{"syscalls:sys_enter_write", "buf", parse.Field{Name: "buf", Type: "const char *", Offset: 24, Size: 8, Class: parse.ClassStringPtr}},
		{"syscalls:sys_enter_write", "fd", parse.Field{Name: "fd", Type: "unsigned int", Offset: 16, Size: 8, Class: parse.ClassNumeric}},
		{"timer:hrtimer_start", "function", parse.Field{Name: "function", Type: "void *", Offset: 16, Size: 8, Class: parse.ClassNumeric}},
	}
	for _, tc := range tests {
		t.Run(tc.event+"/"+tc.field, func(t *testing.T) {
			f, err := parse.ParseFormat(tc.event, testutil.FormatText(t, tc.event))
			if err != nil {
				t.Fatalf("ParseFormat() = %v", err)
			}
			got := f.Field(tc.field)
			if got == nil || *got != tc.want {
				t.Errorf("Field(%q) = %+v, want %+v", tc.field, got, tc.want)
			}
		})
	}
}

func TestParseFormatHeader(t *testing.T) {
	f, err := parse.ParseFormat("x", testutil.FormatText(t, "sched:sched_switch"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "sched_switch" || f.ID == 0 || len(f.Fields) != 11 || !strings.HasPrefix(f.PrintFmt, `"prev_comm=%s`) {
		t.Errorf("ParseFormat() = name %q id %d %d fields, print fmt %q", f.Name, f.ID, len(f.Fields), f.PrintFmt)
	}
	if got := f.Field("prev_comm").Decl(); got != "char prev_comm[16]" {
		t.Errorf("Decl() = %q", got)
	}
}

func TestParseFormatErrors(t *testing.T) {
	tests := []struct {
		src, msg string
		off      int
	}{
		{"name: x\nID: zz\nformat:\n", `bad event ID "zz"`, 11},
		{"name: x\nID: 1\nformat:\n\tfield:int a;\toffset:q;\tsize:4;\tsigned:1;\n", `bad offset value "q"`, 43},
		{"name: x\nID: 1\nformat:\n\tfield:int;\toffset:0;\tsize:4;\n", `no type in declaration`, 29},
		{"name: x\nID: 1\nformat:\n\tfield:int a;\tsize:4;\n", `field line has no offset:`, 23},
		{"name: x\nID: 1\n", `format file has no format: section`, 0},
		{"ID: 1\nformat:\n", `format file has no name: line`, 0},
		{"name: x\nbogus\n", `unexpected line in format file`, 8},
	}
	for _, tc := range tests {
		_, err := parse.ParseFormat("f", tc.src)
		var pe *parse.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Msg, tc.msg) || pe.Off != tc.off {
			t.Errorf("ParseFormat(%q) = %v (off %d), want %q at %d", tc.src, err, offOf(pe), tc.msg, tc.off)
		}
	}
}

func offOf(e *parse.Error) int {
	if e == nil {
		return -1
	}
	return e.Off
}

func TestFieldValueAndBytes(t *testing.T) {
	f, err := parse.ParseFormat("x", testutil.FormatText(t, "sched:sched_process_exec"))
	if err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, 32)
	rec[8], rec[9], rec[10], rec[11] = 20, 0, 5, 0 // filename: offset 20, length 5
	copy(rec[20:], "/bin\x00")
	rec[12], rec[13], rec[14], rec[15] = 0xfe, 0xff, 0xff, 0xff // pid = -2
	if got := string(f.Field("filename").Bytes(rec)); got != "/bin" {
		t.Errorf("filename = %q", got)
	}
	if got := f.Field("pid").Value(rec); got != 1<<64-2 {
		t.Errorf("pid = %d, want sign-extended -2", got)
	}
	if got := f.Field("pid").Uint(rec); got != 0xfffffffe {
		t.Errorf("pid Uint = %#x", got)
	}
	if got := f.Field("filename").Bytes(rec[:16]); got != nil {
		t.Errorf("truncated record gave %q", got)
	}
}

func FuzzParseFormat(f *testing.F) {
	files, _ := fs.Glob(testutil.FormatFiles(), "*.format")
	for _, p := range files {
		b, _ := fs.ReadFile(testutil.FormatFiles(), p)
		f.Add(string(b))
	}
	f.Add("name: x\nID: 1\nformat:\n\tfield:char a[];\toffset:0;\tsize:0;\tsigned:0;\n")
	f.Fuzz(func(t *testing.T, src string) {
		got, err := parse.ParseFormat("fuzz", src)
		if (got == nil) == (err == nil) {
			t.Fatalf("ParseFormat() = %v, %v: want exactly one of format and error", got, err)
		}
		var pe *parse.Error
		if err != nil {
			if !errors.As(err, &pe) || pe.Off < 0 || pe.End > len(src) || pe.Off > pe.End {
				t.Fatalf("error %v has offsets outside the input", err)
			}
			_ = pe.Caret()
			return
		}
		rec := make([]byte, 64)
		for i := range got.Fields {
			got.Fields[i].Value(rec)
			got.Fields[i].Bytes(rec)
			_ = got.Fields[i].Decl()
		}
	})
}

func TestParseFormatMultiLinePrintFmt(t *testing.T) {
	src := "name: x\nID: 1\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"a=%d\\n\"\n\t\"b\", REC->a\n"
	f, err := parse.ParseFormat("x", src)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\"a=%d\\n\"\n\t\"b\", REC->a"; f.PrintFmt != want {
		t.Errorf("PrintFmt = %q, want %q", f.PrintFmt, want)
	}
}
