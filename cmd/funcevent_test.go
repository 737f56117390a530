package cmd

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFuncEventCmdFlags(t *testing.T) {
	var got *funcEventOptions
	c := newFuncEventCmd(&Deps{}, func(o *funcEventOptions) error { got = o; return nil })
	c.SetArgs([]string{"vfs_read(int fd)", "--list", "-F", "--dry-run", "vfs_write()"})
	if err := c.Execute(); err != nil || got == nil || !reflect.DeepEqual(*got, funcEventOptions{Protos: []string{"vfs_read(int fd)", "vfs_write()"}, List: true, Format: true, DryRun: true}) {
		t.Fatalf("Execute() = %v, opts %+v", err, got)
	}
}

// TestFuncEventCmd runs gtrace funcevent --list, -F and --dry-run (whose
// definition gtrace kprobe takes), and list --funcevent -F.
func TestFuncEventCmd(t *testing.T) {
	protos := []string{"vfs_read(x64 file | symbol read+40[0]+16[0], NULL, u64   count)", "vfs_write(int total=0xffffffff82354c18, string name+32[0])"}
	d := probeDeps(t)
	out, errb := d.Out.(interface{ String() string }), d.Err.(interface{ String() string })
	if code := runDeps(d, append([]string{"funcevent", "--list", "--dry-run"}, protos...)...); code != 0 {
		t.Fatalf("funcevent --list --dry-run: exit %d: %s", code, errb.String())
	}
	want := "vfs_read(x64 file | symbol read+40[0]+16[0], NULL, u64 count)\n" +
		"vfs_write(int total=0xffffffff82354c18, string name+32[0])\n" +
		"p:functions/vfs_read vfs_read file=%di:x64 read=+16(+40(%di)):symbol count=%dx:u64\n" +
		"p:functions/vfs_write vfs_write total=@0xffffffff82354c18:s32 name=+0(+32(%di)):string\n"
	if out.String() != want {
		t.Fatalf("funcevent --list --dry-run printed\n%s\nwant\n%s", out, want)
	}
	for _, def := range strings.Split(strings.TrimSpace(out.String()), "\n")[2:] {
		d := probeDeps(t)
		if code := runDeps(d, "kprobe", def); code != 0 {
			t.Errorf("gtrace kprobe %q: exit %d: %s", def, code, d.Err)
		}
	}

	d = probeDeps(t)
	out = d.Out.(interface{ String() string })
	if code := runDeps(d, append([]string{"funcevent", "-F"}, protos...)...); code != 0 {
		t.Fatalf("funcevent -F: exit %d", code)
	}
	golden := filepath.Join("testdata", "funcevent.format.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(b) {
		t.Errorf("funcevent -F printed\n%s\nwant\n%s", out, b)
	}

	d = probeDeps(t)
	out, errb = d.Out.(interface{ String() string }), d.Err.(interface{ String() string })
	if code := runDeps(d, "list", "--funcevent", protos[0], "--funcevent", protos[1], "-F", "functions:*"); code != 0 {
		t.Fatalf("list --funcevent: exit %d: %s", code, errb.String())
	}
	for _, l := range []string{"functions:vfs_read\n", "functions:vfs_write\n", "\tfield:unsigned long __parent_ip;\toffset:8;\tsize:8;\tsigned:0;\n", "\tfield:symbol read;\toffset:32;\tsize:8;\tsigned:0;\n", "\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n"} {
		if !strings.Contains(out.String(), l) {
			t.Errorf("list --funcevent -F printed\n%s\nwant a line %q", out, l)
		}
	}
}

func TestFuncEventCmdErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"funcevent", "ip_rcv(x64 skb, x86 dev)"}, "gtrace: funcevent:1:17: unknown type 'x86'\n  ip_rcv(x64 skb, x86 dev)\n                  ^~~\n  hint: the types are u8 u16 u32 u64 s8 s16 s32 s64 x8 x16 x32 x64 char short int long size_t symbol string, and unsigned before char, short, int or long\n"},
		{[]string{"funcevent", "no_such_sym(int a)"}, "gtrace: funcevent:1:1: Invalid probed address or symbol\n  no_such_sym(int a)\n  ^~~~~~~~~~~\n  hint: no_such_sym is not a kernel symbol (/proc/kallsyms)\n"},
		{[]string{"funcevent", "vfs_read()", "vfs_read(int fd)"}, "gtrace: funcevent:1:1: functions:vfs_read is an event already\n  vfs_read(int fd)\n  ^~~~~~~~\n  hint: a function has one function event: give its fields in one prototype\n"},
		{[]string{"funcevent", "/nonexistent/gtrace:f(int a)"}, "gtrace: funcevent:1:1: Failed to find the given file\n  /nonexistent/gtrace:f(int a)\n  ^~~~~~~~~~~~~~~~~~~\n  hint: no such file or directory\n"},
		{[]string{"funcevent", "--dry-run", "vfs_read(x64 file+8)"}, "gtrace: funcevent:1:18: no probe reads a value plus an offset\n  vfs_read(x64 file+8)\n                   ^~\n  hint: a probe's fetch argument reads memory at an offset: end the chain with [N] to read there\n"},
		{[]string{"record", "--funcevent", "vfs_read(x64 file+8)", "-e", "functions:vfs_read", "--dry-run"}, "gtrace: --funcevent:1:18: no probe reads a value plus an offset\n  vfs_read(x64 file+8)\n                   ^~\n  hint: a probe's fetch argument reads memory at an offset: end the chain with [N] to read there\n"},
		{[]string{"hist", "-i", "x.dat", "--funcevent", "vfs_read(int fd)", "-e", "functions:vfs_read", "-k", "fd"}, "gtrace: --funcevent:1:1: a function event runs on live events: not with -i\n  vfs_read(int fd)\n  ^~~~~~~~~~~~~~~~\n  hint: a recording's function events are in its file: gtrace hist -i FILE -e functions:FUNC\n"},
		{[]string{"list", "--funcevent", "vfs_read(int a, int b, int c, int d, int e, int f, int g)"}, "gtrace: --funcevent:1:52: too many arguments: x86-64 passes 6 in registers\n  vfs_read(int a, int b, int c, int d, int e, int f, int g)\n                                                     ^~~~~\n  hint: a function event reads the arguments the calling convention passes in registers\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			d := probeDeps(t)
			out, errb := d.Out.(interface{ String() string }), d.Err.(interface{ String() string })
			if code := runDeps(d, tt.args...); code != 2 || errb.String() != tt.want || out.String() != "" {
				t.Errorf("gtrace %q: exit %d, stdout %q, stderr\n%s\nwant exit 2, stderr\n%s", tt.args, code, out, errb, tt.want)
			}
		})
	}
}
