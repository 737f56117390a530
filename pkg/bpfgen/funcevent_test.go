package bpfgen

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// funcEventCases are function events on kernel and user-space functions,
// of every type and layout: aligned fields, arrays, strings, chains,
// fixed addresses, '|' and NULL slots.
var funcEventCases = []struct{ arch, proto string }{
	{"amd64", "vfs_read(x64 file, string buf, size_t count, long pos[0])"},
	{"amd64", "ip_rcv(x64 skb | int len[32], NULL, x8[6] perm_addr+558)"},
	{"amd64", "f(char c, u64 a, short s, u8 b, int i, unsigned long l)"},
	{"amd64", "__vfs_read(symbol read+40[0]+16[0], char[16] name+8[0], u16[3] w)"},
	{"amd64", "g(NULL, int a | int b, int c=0x10, int d, NULL, NULL, int h)"},
	{"arm64", "vfs_read(x64 file, string buf, size_t count, u32 a, u32 b, u32 c, u32 d, u8 e)"},
	{"amd64", "/bin/true:main(int argc, string argv[0], x64 envp)"},
}

// TestFuncEventRecordLayout: the probe of each function event reads its
// fields name for name and size for size, and the program stores the
// header and each field at the offset the event's format gives it, in
// its size; the fixed part ends where the format's does.
func TestFuncEventRecordLayout(t *testing.T) {
	for _, c := range funcEventCases {
		t.Run(c.proto, func(t *testing.T) {
			e, err := parse.ParseFuncEvent("funcevent", c.proto, parse.ProbeOptions{Arch: c.arch})
			if err != nil {
				t.Fatal(err)
			}
			if e.User() {
				e.Resolve(0x1000)
			}
			d, err := e.Probe("funcevent")
			if err != nil {
				t.Fatal(err)
			}
			syms := func(string, uint64) (uint64, uint64, error) { return 0xffffffff81000000, 0xffffffff81000008, nil }
			p, err := newFuncEventProbe(e, d, c.arch, syms)
			if err != nil {
				t.Fatal(err)
			}
			f := e.Format(61183)
			b := &Builder{}
			p.emit(b, -16, EventID{Const: f.ID}, "out")
			b.Mark("out")
			stores := map[int16]asm.Size{}
			for _, ins := range b.Instructions() {
				if ins.OpCode.Class().IsStore() && ins.Dst == asm.R7 {
					stores[ins.Offset] = ins.OpCode.Size()
				}
			}
			for _, fld := range f.Fields {
				if fld.Common || fld.ArrayLen > 0 {
					continue // an array is read into the record by the helper
				}
				size := fld.Size
				if fld.Class == parse.ClassDataLoc {
					size = 4
				}
				if got, ok := stores[int16(fld.Offset)]; !ok || got != sizes[size] {
					t.Errorf("field %s at %d, %d bytes: stored %v (%v)", fld.Name, fld.Offset, size, got, ok)
				}
			}
			if fixed, _ := RecordLayout(f); fixed != p.fixed() {
				t.Errorf("fixed part %d, the format's %d", p.fixed(), fixed)
			}
		})
	}
}

// TestFuncEventSource: a function event's format gives the probe source
// that builds its record at the function's entry (a fentry where the
// check allows it and the function has the arguments it reads, else a
// kprobe; a uprobe at the file offset), and its program generates.
func TestFuncEventSource(t *testing.T) {
	nargs := func(n int) FentryCheck { return func(string, bool) (int, error) { return n, nil } }
	for _, c := range []struct {
		proto string
		check FentryCheck
		point string
	}{
		{"vfs_read(x64 file, string buf, size_t count)", nil, "kprobe vfs_read"},
		{"vfs_read(x64 file, string buf, size_t count)", nargs(4), "fentry vfs_read"},
		{"vfs_read(x64 file, string buf, size_t count)", nargs(2), "kprobe vfs_read"},
		{"vfs_read(x64 file, int jiffies=0xffffffff82a05000)", nargs(4), "fentry vfs_read"},
		{"vfs_read(x64 file)", func(string, bool) (int, error) { return 0, fmt.Errorf("no kernel BTF") }, "kprobe vfs_read"},
		{"/bin/true:main(int argc)", nargs(4), "uprobe /bin/true+0x1000"},
	} {
		if runtime.GOARCH != "amd64" && c.check != nil {
			continue // fentry's arguments are mapped for amd64
		}
		e, err := parse.ParseFuncEvent("funcevent", c.proto, parse.ProbeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if e.User() {
			e.Resolve(0x1000)
		}
		d, err := e.Probe("funcevent")
		if err != nil {
			t.Fatal(err)
		}
		f := e.Format(61183)
		f.Func, f.Probes = e, []*parse.ProbeDef{d}
		src, err := ProbeSource(f, nil, c.check)
		if err != nil {
			t.Fatal(err)
		}
		if got := src.Point(f).String(); got != c.point {
			t.Errorf("%s: at %q, want %q (%s)", c.proto, got, c.point, src.(*Probe).Why())
		}
		prog := &Prog{Name: "fn", Source: src, Gate: Gate{ExcludeTGID: 1}, ID: EventID{Const: f.ID},
			Actions: []Action{&RecordAction{Format: f, MaxRecord: 4064, shared: recordMaps(&RecordSpec{CPUs: 2, RingSize: 1 << 16})}}}
		ps, err := prog.Generate()
		if err != nil {
			t.Fatal(err)
		}
		if text := fmt.Sprint(ps.Instructions); !strings.Contains(text, "__parent_ip: the return address") || !strings.Contains(text, "FnGetFuncIp") {
			t.Errorf("%s: no __parent_ip and __ip in:\n%s", c.proto, text)
		}
	}
}

// TestFuncEventProbeMismatch: a probe that does not read the event's
// fields is refused, naming the field.
func TestFuncEventProbeMismatch(t *testing.T) {
	e, err := parse.ParseFuncEvent("funcevent", "vfs_read(x64 file, int n)", parse.ProbeOptions{Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := parse.ParseProbe("def", "p:functions/vfs_read vfs_read file=%di:x64 n=%si:u64", parse.ProbeOptions{Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newFuncEventProbe(e, d, "amd64", nil); err == nil || !strings.Contains(err.Error(), "field n (4 bytes) is not its probe's argument n (8 bytes)") {
		t.Errorf("got %v", err)
	}
}
