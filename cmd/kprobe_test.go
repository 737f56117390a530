package cmd

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/tracefs"
)

func TestKprobeCmdFlags(t *testing.T) {
	var got *kprobeOptions
	c := newKprobeCmd(&Deps{}, func(o *kprobeOptions) error { got = o; return nil })
	c.SetArgs([]string{"p vfs_read", "--list", "-F", "r vfs_read"})
	if err := c.Execute(); err != nil || got == nil || !reflect.DeepEqual(*got, kprobeOptions{Defs: []string{"p vfs_read", "r vfs_read"}, List: true, Format: true}) {
		t.Fatalf("Execute() = %v, opts %+v", err, got)
	}
}

// probeDeps are fakeDeps with a kallsyms of a few symbols, one twice.
func probeDeps(t *testing.T) *Deps {
	d, _, _ := fakeDeps(t)
	syms := filepath.Join(t.TempDir(), "kallsyms")
	text := "ffffffff81000000 T vfs_read\nffffffff81000100 T vfs_write\nffffffff81000200 t dup_sym\nffffffff81000300 t dup_sym\n"
	if err := os.WriteFile(syms, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := d.TraceFS()
	if err != nil {
		t.Fatal(err)
	}
	root := fs.Root
	d.TraceFS = func() (*tracefs.FS, error) {
		f := tracefs.At(root)
		f.KallsymsPath = syms
		return f, nil
	}
	return d
}

// TestKprobeCmd runs gtrace kprobe --list and -F, list --probe and
// --probes, and bad definitions with their carets, exit 2.
func TestKprobeCmd(t *testing.T) {
	defs := []string{"p:myprobe vfs_read dfd=%ax name=+0(%si):string", "r16:myret vfs_read ret=$retval:s32", "p:myprobe vfs_write dfd=%cx name=+8(%si):string"}
	d := probeDeps(t)
	out, errb := d.Out.(interface{ String() string }), d.Err.(interface{ String() string })
	if code := runDeps(d, append([]string{"kprobe", "--list"}, defs...)...); code != 0 {
		t.Fatalf("kprobe --list: exit %d: %s", code, errb.String())
	}
	want := "p:kprobes/myprobe vfs_read dfd=%ax name=+0(%si):string\np:kprobes/myprobe vfs_write dfd=%cx name=+8(%si):string\nr16:kprobes/myret vfs_read ret=$retval:s32\n"
	if out.String() != want {
		t.Errorf("kprobe --list printed\n%s\nwant\n%s", out, want)
	}

	d = probeDeps(t)
	out = d.Out.(interface{ String() string })
	if code := runDeps(d, append([]string{"kprobe", "-F"}, defs...)...); code != 0 {
		t.Fatalf("kprobe -F: exit %d", code)
	}
	golden := filepath.Join("testdata", "kprobe.format.golden")
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
		t.Errorf("kprobe -F printed\n%s\nwant\n%s", out, b)
	}

	file := filepath.Join(t.TempDir(), "probes")
	if err := os.WriteFile(file, []byte("# probes\n\n"+defs[1]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d = probeDeps(t)
	out, errb = d.Out.(interface{ String() string }), d.Err.(interface{ String() string })
	if code := runDeps(d, "list", "--probe", defs[0], "--probes", file, "-F", "kprobes:*"); code != 0 {
		t.Fatalf("list --probe: exit %d: %s", code, errb.String())
	}
	for _, l := range []string{"kprobes:myprobe\n", "kprobes:myret\n", "\tfield:unsigned long __probe_ret_ip;\toffset:16;\tsize:8;\tsigned:0;\n", "\tfield:s32 ret;\toffset:24;\tsize:4;\tsigned:1;\n"} {
		if !strings.Contains(out.String(), l) {
			t.Errorf("list --probe -F printed\n%s\nwant a line %q", out, l)
		}
	}
}

func TestKprobeCmdErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"kprobe", "p vfs_read $retval"}, "gtrace: kprobe:1:12: $retval is not available on probe\n  p vfs_read $retval\n             ^~~~~~~\n  hint: $retval is for return probes: r:[GRP/]EV PLACE\n"},
		{[]string{"kprobe", "p no_such_sym"}, "gtrace: kprobe:1:3: Invalid probed address or symbol\n  p no_such_sym\n    ^~~~~~~~~~~\n  hint: no_such_sym is not a kernel symbol (/proc/kallsyms)\n"},
		{[]string{"kprobe", "p dup_sym"}, "gtrace: kprobe:1:3: The symbol is not unique\n  p dup_sym\n    ^~~~~~~\n  hint: 2 kernel symbols are called dup_sym: probe one by its address\n"},
		{[]string{"kprobe", "p:ev vfs_read", "r:ev vfs_read"}, "gtrace: kprobe:1:3: Probe type is different from existing probe\n  r:ev vfs_read\n    ^~\n  hint: a probe joins an event of its own kind: kprobes:ev is a probe\n"},
		{[]string{"kprobe", "p:ev vfs_read a=%ax", "p:ev vfs_write b=%ax"}, "gtrace: kprobe:1:16: Argument type or name is different from existing probe\n  p:ev vfs_write b=%ax\n                 ^~~~~\n  hint: a probe joins an event with the same argument names and types: p:kprobes/ev vfs_read a=%ax\n"},
		{[]string{"kprobe", "p:ev vfs_read", "p:ev vfs_read"}, "gtrace: kprobe:1:3: There is already the exact same probe event\n  p:ev vfs_read\n    ^~\n  hint: the same probe is defined twice\n"},
		{[]string{"kprobe", "--", "-:ev"}, "gtrace: kprobe:1:1: no probe event ev to remove\n  -:ev\n  ^~~~\n  hint: a removal takes away a probe defined before it\n"},
		{[]string{"kprobe", "p /nonexistent/gtrace:0x10"}, "gtrace: kprobe:1:3: Failed to find the given file\n  p /nonexistent/gtrace:0x10\n    ^~~~~~~~~~~~~~~~~~~\n  hint: no such file or directory\n"},
		{[]string{"list", "--probe", "p:sched/sched_switch vfs_read", "sched:*"}, "gtrace: --probe:1:3: Given group/event name is already used by another event\n  p:sched/sched_switch vfs_read\n    ^~~~~~~~~~~~~~~~~~\n  hint: sched:sched_switch is an event already: give the probe another name\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			d := probeDeps(t)
			out, errb := d.Out.(interface{ String() string }), d.Err.(interface{ String() string })
			if code := runDeps(d, tt.args...); code != 2 || errb.String() != tt.want || out.String() != "" {
				t.Errorf("gtrace %q: exit %d, stderr\n%s\nwant exit 2, stderr\n%s", tt.args, code, errb, tt.want)
			}
		})
	}
	// A removal takes away the event: nothing is listed.
	d := probeDeps(t)
	out := d.Out.(interface{ String() string })
	if code := runDeps(d, "kprobe", "--list", "--", "p:ev vfs_read", "-:kprobes/ev"); code != 0 || out.String() != "" {
		t.Errorf("kprobe --list with a removal: exit %d, printed %q", code, out)
	}
}
