package hist

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.golden files")

// checkGolden compares got with testdata/<name>.golden, or rewrites the
// file with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/hist -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// Fixture helpers: plans are built by hand so that these tests need neither
// the spec parser nor event formats.

func fld(name string, mod parse.HistMod) parse.HistField {
	return parse.HistField{Name: name, Mod: mod}
}

func numKey(name string, mod parse.HistMod) Key {
	return Key{Spec: fld(name, mod), Kind: KeyNumber}
}

func sgnKey(name string, mod parse.HistMod) Key {
	return Key{Spec: fld(name, mod), Kind: KeyNumber, Signed: true}
}

func strKey(name string) Key {
	return Key{Spec: fld(name, parse.ModNone), Kind: KeyString}
}

func bucketsKey(name string, n uint64) Key {
	return Key{Spec: parse.HistField{Name: name, Mod: parse.ModBuckets, Buckets: n}, Kind: KeyNumber}
}

// plan builds a plan; vals lists the spec's values in order (hitcount.percent
// and hitcount.graph included), as the planner does.
func plan(event string, keys []Key, vals []parse.HistField, sorts ...parse.SortKey) *Plan {
	p := &Plan{Event: event, Spec: &parse.HistSpec{Vals: vals, Sort: sorts}, Keys: keys, Size: 2048}
	for _, k := range keys {
		p.Spec.Keys = append(p.Spec.Keys, k.Spec)
	}
	for _, v := range vals {
		if v.Name == "hitcount" {
			p.HitcountMod = v.Mod
			continue
		}
		p.Vals = append(p.Vals, Val{Spec: v})
	}
	return p
}

func num(v uint64) KeyValue          { return KeyValue{Num: v} }
func str(s string) KeyValue          { return KeyValue{Str: s} }
func neg(v int64) KeyValue           { return KeyValue{Num: uint64(v)} }
func asc(name string) parse.SortKey  { return parse.SortKey{Name: name} }
func desc(name string) parse.SortKey { return parse.SortKey{Name: name, Descending: true} }

func entry(hits uint64, comm string, keys []KeyValue, vals ...uint64) Entry {
	return Entry{Keys: keys, Comm: comm, Hitcount: hits, Vals: vals}
}

func keys(kv ...KeyValue) []KeyValue { return kv }

// testResolver knows a few x86-64 syscalls and kernel symbols; other
// numbers print as the kernel prints unknown ones.
var testResolver = Resolver{
	Syscall: func(nr uint64) (string, bool) {
		name, ok := map[uint64]string{0: "read", 1: "sys_write", 16: "ioctl", 39: "getpid", 110: "getppid", 257: "openat"}[nr]
		return name, ok
	},
	Sym: func(addr uint64) string {
		if name, ok := map[uint64]string{
			0xffffffff811e2a1b: "seq_buf_alloc",
			0xffffffff8125847d: "ext4_htree_store_dirent",
			0xffffffffa046041c: "i915_gem_execbuffer2 [i915]",
		}[addr]; ok {
			return name
		}
		return fmt.Sprintf("0x%x", addr)
	},
	SymOffset: func(addr uint64) string {
		if name, ok := map[uint64]string{
			0xffffffff811e2a1b: "seq_buf_alloc+0x1b/0x50",
			0xffffffffa046041c: "i915_gem_execbuffer2+0x6c/0x2c0 [i915]",
			0xffffffff8120010b: "__kmalloc_track_caller+0x10b/0x1a0",
			0xffffffff81300020: "kmemdup+0x20/0x50",
			0xffffffff81400030: "seq_read+0x30/0x400",
		}[addr]; ok {
			return name
		}
		return fmt.Sprintf("0x%x", addr)
	},
}

// goldenCase is one set of tables written by every format; testdata holds
// <name>.golden (text), <name>.json.golden, <name>.csv.golden and
// <name>.table.golden.
type goldenCase struct {
	name    string
	tables  []*Table
	trigger []string
	r       Resolver
}

// exprCase is a hist of signed expressions and common_timestamp, counted
// by the file engine: keys and sums print signed, expression values under
// their text.
func exprCase(tb testing.TB) goldenCase {
	spec, err := parse.ParseHist("hist", "hist:keys=ret/2,common_timestamp/1000000:vals=ret*3-id,common_timestamp.usecs:sort=ret/2,common_timestamp/1000000.descending:clock=mono")
	if err != nil {
		tb.Fatal(err)
	}
	e, err := NewEngine(spec, testutil.Format(tb, "raw_syscalls:sys_exit"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	for i, ev := range []struct {
		ts      uint64
		id, ret int64
	}{{1_499_600, 0, -7}, {2_500_000, 1, -6}, {3_000_000, 2, 5}, {999_400, 3, -7}, {1_000_400, 4, 2}} {
		e.AddAt(sysExit(tb, 1, ev.id, ev.ret), i%2, "sh", ev.ts)
	}
	return goldenCase{name: "expr", tables: []*Table{e.Table()}, trigger: []string{spec.String() + " [active]"}, r: testResolver}
}

func goldenCases(tb testing.TB) []goldenCase {
	one := func(name, trigger string, t *Table) goldenCase {
		return goldenCase{name: name, tables: []*Table{t}, trigger: []string{trigger}, r: testResolver}
	}
	none := []parse.HistField(nil)
	cases := []goldenCase{
		one("syscall_execname", "hist:keys=id.syscall,common_pid.execname:vals=hitcount:sort=id.syscall,hitcount:size=2048 [active]",
			&Table{
				Plan: plan("raw_syscalls:sys_enter", []Key{sgnKey("id", parse.ModSyscall), sgnKey("common_pid", parse.ModExecname)}, none, asc("id"), asc("hitcount")),
				Entries: []Entry{
					entry(1808, "Xorg", keys(num(16), num(1267))),
					entry(12, "bash", keys(num(0), num(3112))),
					entry(7, "<idle>", keys(num(0), num(0))),
					entry(3, "systemd-journal", keys(num(257), num(402))),
					entry(2, "kworker/1:1H-kb", keys(num(335), num(1))),
					entry(1, "bash", keys(neg(-1), num(3112))),
				},
			}),
		one("sym", "hist:keys=call_site.sym:vals=hitcount,bytes_req:sort=bytes_req.descending:size=2048 [active]",
			&Table{
				Plan: plan("kmem:kmalloc", []Key{numKey("call_site", parse.ModSym)}, []parse.HistField{fld("bytes_req", parse.ModNone)}, desc("bytes_req")),
				Entries: []Entry{
					entry(55759, "", keys(num(0xffffffff8125847d)), 5074265),
					entry(1, "", keys(num(0xffffffff811e2a1b)), 4096),
					entry(9, "", keys(num(0xffffffffa046041c)), 288),
					entry(2, "", keys(num(0xffffffff81000010)), 0),
				},
				Dropped: 3,
			}),
		one("sym_offset", "hist:keys=call_site.sym-offset:vals=hitcount:sort=hitcount.descending:size=2048 [active]",
			&Table{
				Plan: plan("kmem:kmalloc", []Key{numKey("call_site", parse.ModSymOffset)}, none, desc("hitcount")),
				Entries: []Entry{
					entry(4, "", keys(num(0xffffffffa046041c))),
					entry(40, "", keys(num(0xffffffff811e2a1b))),
					entry(1, "", keys(num(0xdead))),
				},
			}),
		one("hex", "hist:name=foo:keys=skbaddr.hex:vals=hitcount,len.hex:sort=hitcount:size=2048 [active]",
			&Table{
				Plan: plan("net:netif_rx", []Key{numKey("skbaddr", parse.ModHex)}, []parse.HistField{fld("len", parse.ModHex)}),
				Entries: []Entry{
					entry(3, "", keys(num(0xffff8800baee5e00)), 0x5dc),
					entry(1, "", keys(num(0)), 0),
					entry(2, "", keys(num(0xa)), math.MaxUint64),
				},
			}),
		one("log2", "hist:keys=pid,prio,lat.log2:vals=hitcount:sort=pid,lat.log2:size=2048 [active]",
			&Table{
				Plan: plan("sched:sched_wakeup", []Key{sgnKey("pid", parse.ModNone), sgnKey("prio", parse.ModNone), numKey("lat", parse.ModLog2)}, none, asc("pid"), asc("lat")),
				Entries: []Entry{
					entry(43, "", keys(num(2035), num(9), num(2))),
					entry(5, "", keys(num(2035), num(9), num(13))),
					entry(1, "", keys(num(2035), num(9), num(0))),
					entry(2, "", keys(num(17), num(120), num(64))),
				},
			}),
		one("buckets", "hist:keys=lat.buckets=10:vals=hitcount:sort=lat.buckets=10:size=2048 [active]",
			&Table{
				Plan: plan("sched:sched_switch", []Key{bucketsKey("lat", 10)}, none, asc("lat")),
				Entries: []Entry{
					entry(7, "", keys(num(10))),
					entry(3, "", keys(num(0))),
					entry(1, "", keys(num(12340))),
				},
			}),
		// The kernel's sample of a stack key (grammar §6.3), and a stack
		// that is not the last key.
		one("stack", "hist:keys=common_stacktrace:vals=hitcount,bytes_req:sort=bytes_req.descending:size=2048 [active]",
			&Table{
				Plan: plan("kmem:kmalloc", []Key{{Spec: fld("common_stacktrace", parse.ModNone), Kind: KeyStack}}, []parse.HistField{fld("bytes_req", parse.ModNone)}, desc("bytes_req")),
				Entries: []Entry{
					entry(3, "", keys(KeyValue{Num: 7, Stack: NewStack([]uint64{0xffffffff8120010b, 0xffffffff81300020, 0, 0})}), 21),
					entry(1, "", keys(KeyValue{Num: 9, Stack: NewStack([]uint64{0xffffffff8120010b, 0xffffffff81400030, 0xdead})}), 8),
				},
			}),
		one("stack_pid", "hist:keys=common_stacktrace,common_pid:vals=hitcount:sort=hitcount:size=2048 [active]",
			&Table{
				Plan: plan("kmem:kmalloc", []Key{{Spec: fld("common_stacktrace", parse.ModNone), Kind: KeyStack}, sgnKey("common_pid", parse.ModNone)}, none),
				Entries: []Entry{
					entry(2, "", keys(KeyValue{Num: 7, Stack: NewStack([]uint64{0xffffffff8120010b, 0xffffffff81300020})}, num(42))),
				},
			}),
		// The kernel's example of a synthetic event's stack field as a
		// key (histogram.rst): "stack.stacktrace:" and a newline, as
		// common_stacktrace, not the kernel's first frame glued on.
		one("synth_stack", "hist:keys=delta.buckets=100,stack.stacktrace:vals=hitcount:sort=delta.buckets=100:size=2048 [active]",
			&Table{
				Plan: plan("synthetic:block_lat", []Key{bucketsKey("delta", 100), {Spec: fld("stack", parse.ModStacktrace), Kind: KeyStack, Frames: true}}, none, asc("delta")),
				Entries: []Entry{
					entry(4, "", keys(num(0), KeyValue{Stack: NewStack([]uint64{0xffffffff8120010b, 0xffffffff81300020, 0, 0})})),
					entry(1, "", keys(num(100), KeyValue{Stack: NewStack([]uint64{0xffffffff8120010b, 0xffffffff81400030})})),
				},
			}),
		one("string", "hist:keys=child_comm,child_pid:vals=hitcount:sort=hitcount:size=2048 [active]",
			&Table{
				Plan: plan("sched:sched_process_fork", []Key{strKey("child_comm"), sgnKey("child_pid", parse.ModNone)}, none),
				Entries: []Entry{
					entry(2, "", keys(str("bash"), num(3112))),
					entry(1, "", keys(str("kworker/u16:2"), num(7))),
					entry(1, "", keys(str("h\u00e9llo\x00junk"), num(8))),
					entry(5, "", keys(str(strings.Repeat("x", 60)), num(9))),
				},
			}),
		one("percent_graph", "hist:keys=fd:vals=hitcount.percent,count.graph,count.percent,hitcount.graph:sort=fd:size=2048 [active]",
			&Table{
				Plan: plan("syscalls:sys_enter_write", []Key{numKey("fd", parse.ModNone)},
					[]parse.HistField{fld("hitcount", parse.ModPercent), fld("count", parse.ModGraph), fld("count", parse.ModPercent), fld("hitcount", parse.ModGraph)}, asc("fd")),
				Entries: []Entry{
					entry(30, "", keys(num(100)), 3000, 3000),
					entry(10, "", keys(num(1)), 7, 7),
					entry(0, "", keys(num(2)), 0, 0),
				},
			}),
		one("percent_error", "hist:keys=fd:vals=hitcount,count.percent,count.graph:sort=fd:size=2048 [active]",
			&Table{
				// the column total wraps to 0: percent prints [ERROR]
				Plan: plan("syscalls:sys_enter_write", []Key{numKey("fd", parse.ModNone)},
					[]parse.HistField{fld("count", parse.ModPercent), fld("count", parse.ModGraph)}, asc("fd")),
				Entries: []Entry{
					entry(1, "", keys(num(1)), 1<<63, 1<<63),
					entry(1, "", keys(num(2)), 1<<63, 1<<63),
					entry(1, "", keys(num(3)), 0, 0),
				},
			}),
		one("percent_big", "hist:keys=fd:vals=hitcount,count.percent,count.graph:sort=fd:size=2048 [active]",
			&Table{
				// values above U64_MAX/10000 take the kernel's divide-the-total path
				Plan: plan("syscalls:sys_enter_write", []Key{numKey("fd", parse.ModNone)},
					[]parse.HistField{fld("count", parse.ModPercent), fld("count", parse.ModGraph)}, asc("fd")),
				Entries: []Entry{
					entry(1, "", keys(num(1)), 1<<62, 1<<62),
					entry(1, "", keys(num(2)), 3<<60, 3<<60),
					entry(1, "", keys(num(3)), 1000, 1000),
				},
			}),
		one("nohitcount", "hist:keys=common_pid.execname:vals=hitcount.percent,bytes_alloc:sort=hitcount.descending:size=2048:nohitcount [active]",
			func() *Table {
				p := plan("kmem:kmalloc", []Key{sgnKey("common_pid", parse.ModExecname)},
					[]parse.HistField{fld("hitcount", parse.ModPercent), fld("bytes_alloc", parse.ModNone)}, desc("hitcount"))
				p.Spec.NoHitcount = true
				return &Table{Plan: p, Entries: []Entry{
					entry(1, "cat", keys(num(4242)), 64),
					entry(3, "bash", keys(num(3112)), 1024),
				}}
			}()),
		one("signed", "hist:keys=ret:vals=hitcount:sort=ret:size=2048 [active]",
			&Table{
				Plan: plan("syscalls:sys_exit_openat", []Key{sgnKey("ret", parse.ModNone)}, none, asc("ret")),
				Entries: []Entry{
					entry(4, "", keys(num(3))),
					entry(9, "", keys(neg(-2))),
					entry(1, "", keys(neg(-13))),
					entry(2, "", keys(num(0))),
				},
			}),
		one("usecs", "hist:keys=common_timestamp.usecs:vals=hitcount:sort=hitcount:size=2048:clock=global [active]",
			&Table{
				Plan: plan("sched:sched_switch", []Key{numKey("common_timestamp", parse.ModUsecs)}, none),
				Entries: []Entry{
					entry(1, "", keys(num(123456789))),
				},
			}),
		exprCase(tb),
		one("empty", "hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [paused]",
			&Table{Plan: plan("sched:sched_switch", []Key{sgnKey("common_pid", parse.ModNone)}, none), Dropped: 5}),
		{
			name: "two_tables",
			tables: []*Table{
				{
					Plan:    plan("kmem:kmalloc", []Key{numKey("bytes_req", parse.ModNone)}, []parse.HistField{fld("bytes_alloc", parse.ModNone)}),
					Entries: []Entry{entry(2, "", keys(num(32)), 64), entry(1, "", keys(num(8)), 8)},
				},
				{
					Plan:    plan("kmem:kmalloc", []Key{numKey("call_site", parse.ModSym)}, none),
					Entries: []Entry{entry(3, "", keys(num(0xffffffff811e2a1b)))},
					Dropped: 1,
				},
			},
			trigger: []string{
				"hist:keys=bytes_req:vals=hitcount,bytes_alloc:sort=hitcount:size=2048 [active]",
				"hist:keys=call_site.sym:vals=hitcount:sort=hitcount:size=2048 if bytes_req > 16 [active]",
			},
			r: testResolver,
		},
		{
			name: "nil_resolver",
			tables: []*Table{{
				Plan: plan("raw_syscalls:sys_enter", []Key{sgnKey("id", parse.ModSyscall), numKey("ip", parse.ModSym), numKey("ret_ip", parse.ModSymOffset)}, none),
				Entries: []Entry{
					entry(1, "", keys(num(0), num(0xffffffff811e2a1b), num(0xffffffff8125847d))),
				},
			}},
			trigger: []string{"hist:keys=id.syscall,ip.sym,ret_ip.sym-offset:vals=hitcount:sort=hitcount:size=2048 [active]"},
		},
	}
	for _, c := range cases {
		for _, t := range c.tables {
			t.Sort()
		}
	}
	return cases
}

func TestWriteTextGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, c.tables, c.trigger, c.r); err != nil {
				t.Fatalf("WriteText() = %v", err)
			}
			checkGolden(t, c.name, b.Bytes())
		})
	}
}

// entryLine prints one entry with WriteText and returns its line, without
// the newline.
func entryLine(t *testing.T, p *Plan, e Entry, r Resolver) string {
	t.Helper()
	return entryLines(t, &Table{Plan: p, Entries: []Entry{e}}, r)[0]
}

// entryLines prints t and returns its entry lines.
func entryLines(t *testing.T, tbl *Table, r Resolver) []string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, []*Table{tbl}, []string{"x"}, r); err != nil {
		t.Fatalf("WriteText() = %v", err)
	}
	const head = "# event histogram\n#\n# trigger info: x\n#\n\n"
	s, ok := strings.CutPrefix(b.String(), head)
	if !ok {
		t.Fatalf("WriteText() = %q, want a %q header", b.String(), head)
	}
	s, _, ok = strings.Cut(s, "\nTotals:\n")
	if !ok {
		t.Fatalf("WriteText() = %q, want totals", b.String())
	}
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// TestWriteTextKernelExamples checks the exact example lines of the
// reference (grammar.md, section 6.3).
func TestWriteTextKernelExamples(t *testing.T) {
	none := []parse.HistField(nil)
	tests := []struct {
		name string
		p    *Plan
		e    Entry
		want string
	}{
		{
			"syscall and execname",
			plan("raw_syscalls:sys_enter", []Key{sgnKey("id", parse.ModSyscall), sgnKey("common_pid", parse.ModExecname)}, none),
			entry(1808, "Xorg", keys(num(16), num(1267))),
			"{ id: sys_ioctl                     [ 16], common_pid: Xorg            [      1267] } hitcount:       1808",
		},
		{
			"sym with a value",
			plan("kmem:kmalloc", []Key{numKey("call_site", parse.ModSym)}, []parse.HistField{fld("bytes_req", parse.ModNone)}),
			entry(55759, "", keys(num(0xffffffff8125847d)), 5074265),
			"{ call_site: [ffffffff8125847d] ext4_htree_store_dirent                       } hitcount:      55759  bytes_req:    5074265",
		},
		{
			"log2",
			plan("sched:sched_wakeup", []Key{sgnKey("pid", parse.ModNone), sgnKey("prio", parse.ModNone), numKey("lat", parse.ModLog2)}, none),
			entry(43, "", keys(num(2035), num(9), num(2))),
			"{ pid:       2035, prio:          9, lat: ~ 2^2  } hitcount:         43",
		},
		{
			"plain",
			plan("sched:sched_switch", []Key{sgnKey("common_pid", parse.ModNone)}, none),
			entry(1, "", keys(num(1234))),
			"{ common_pid:       1234 } hitcount:          1",
		},
		{
			"hex",
			plan("net:netif_rx", []Key{numKey("skbaddr", parse.ModHex)}, none),
			entry(1, "", keys(num(0xffff8800baee5e00))),
			"{ skbaddr: ffff8800baee5e00 } hitcount:          1",
		},
		{
			"sym",
			plan("kmem:kmalloc", []Key{numKey("call_site", parse.ModSym)}, none),
			entry(1, "", keys(num(0xffffffff811e2a1b))),
			"{ call_site: [ffffffff811e2a1b] seq_buf_alloc" + strings.Repeat(" ", 45-len("seq_buf_alloc")) + " } hitcount:          1",
		},
		{
			"sym-offset",
			plan("kmem:kmalloc", []Key{numKey("call_site", parse.ModSymOffset)}, none),
			entry(1, "", keys(num(0xffffffffa046041c))),
			"{ call_site: [ffffffffa046041c] i915_gem_execbuffer2+0x6c/0x2c0 [i915]" +
				strings.Repeat(" ", 55-len("i915_gem_execbuffer2+0x6c/0x2c0 [i915]")) + " } hitcount:          1",
		},
		{
			"execname",
			plan("sched:sched_switch", []Key{sgnKey("common_pid", parse.ModExecname)}, none),
			entry(1, "bash", keys(num(3112))),
			"{ common_pid: bash            [      3112] } hitcount:          1",
		},
		{
			"syscall",
			plan("raw_syscalls:sys_enter", []Key{sgnKey("id", parse.ModSyscall)}, none),
			entry(1, "", keys(num(0))),
			"{ id: sys_read                      [  0] } hitcount:          1",
		},
		{
			"buckets",
			plan("sched:sched_switch", []Key{bucketsKey("lat", 10)}, none),
			entry(1, "", keys(num(10))),
			"{ lat: ~ 10-19 } hitcount:          1",
		},
		{
			"string",
			plan("sched:sched_process_fork", []Key{strKey("child_comm")}, none),
			entry(1, "", keys(str("bash"))),
			"{ child_comm: bash" + strings.Repeat(" ", 46) + " } hitcount:          1",
		},
		{
			// The kernel prints 18446744073709551614 (grammar §12.6).
			"signed prints signed",
			plan("syscalls:sys_exit_openat", []Key{sgnKey("ret", parse.ModNone)}, none),
			entry(1, "", keys(neg(-2))),
			"{ ret:         -2 } hitcount:          1",
		},
		{
			"signed hex prints as u64",
			plan("syscalls:sys_exit_openat", []Key{sgnKey("ret", parse.ModHex)}, none),
			entry(1, "", keys(neg(-2))),
			"{ ret: fffffffffffffffe } hitcount:          1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := entryLine(t, tt.p, tt.e, testResolver); got != tt.want {
				t.Errorf("entry line =\n%q, want\n%q", got, tt.want)
			}
		})
	}

	// "{ fd:        100 } hitcount:         30  hitcount (%):  75.00" needs
	// a second entry holding the other quarter of the hits.
	tbl := &Table{
		Plan:    plan("syscalls:sys_enter_write", []Key{numKey("fd", parse.ModNone)}, []parse.HistField{fld("hitcount", parse.ModPercent)}),
		Entries: []Entry{entry(30, "", keys(num(100))), entry(10, "", keys(num(1)))},
	}
	want := []string{
		"{ fd:        100 } hitcount:         30  hitcount (%):  75.00",
		"{ fd:          1 } hitcount:         10  hitcount (%):  25.00",
	}
	if got := entryLines(t, tbl, testResolver); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entry lines =\n%q, want\n%q", got, want)
	}
}

// TestWriteTextTemplates builds the expected bytes of every key and value
// form from the kernel's printf templates (hist_trigger_print_key,
// hist_trigger_print_val), translated to Go verbs.
func TestWriteTextTemplates(t *testing.T) {
	const addr uint64 = 0xffffffff811e2a1b
	none := []parse.HistField(nil)
	keyTests := []struct {
		k    Key
		v    KeyValue
		comm string
		want string
	}{
		{numKey("n", parse.ModNone), num(42), "", fmt.Sprintf("n: %10d", 42)},
		{numKey("n", parse.ModNone), num(math.MaxUint64), "", fmt.Sprintf("n: %10d", uint64(math.MaxUint64))},
		{numKey("n", parse.ModUsecs), num(7), "", fmt.Sprintf("n: %10d", 7)},
		{numKey("n", parse.ModHex), num(0xbeef), "", fmt.Sprintf("n: %x", 0xbeef)},
		{numKey("n", parse.ModSym), num(addr), "", fmt.Sprintf("n: [%x] %-45s", addr, "seq_buf_alloc")},
		{numKey("n", parse.ModSymOffset), num(addr), "", fmt.Sprintf("n: [%x] %-55s", addr, "seq_buf_alloc+0x1b/0x50")},
		{numKey("n", parse.ModSym), num(0x10), "", fmt.Sprintf("n: [%x] %-45s", 0x10, "0x10")},
		{numKey("n", parse.ModExecname), num(1), "systemd", fmt.Sprintf("n: %-16s[%10d]", "systemd", 1)},
		{numKey("n", parse.ModSyscall), num(110), "", fmt.Sprintf("n: %-30s[%3d]", "sys_getppid", 110)},
		{numKey("n", parse.ModSyscall), num(1), "", fmt.Sprintf("n: %-30s[%3d]", "sys_write", 1)},
		{numKey("n", parse.ModSyscall), num(1000), "", fmt.Sprintf("n: %-30s[%3d]", "unknown_syscall", 1000)},
		{numKey("n", parse.ModLog2), num(7), "", fmt.Sprintf("n: ~ 2^%-2d", 7)},
		{numKey("n", parse.ModLog2), num(13), "", fmt.Sprintf("n: ~ 2^%-2d", 13)},
		{bucketsKey("n", 100), num(200), "", fmt.Sprintf("n: ~ %d-%d", 200, 299)},
		{strKey("n"), str("sshd"), "", fmt.Sprintf("n: %-50s", "sshd")},
	}
	for _, tt := range keyTests {
		p := plan("a:b", []Key{tt.k}, none)
		want := "{ " + tt.want + " } hitcount:          1"
		if got := entryLine(t, p, entry(1, tt.comm, keys(tt.v)), testResolver); got != want {
			t.Errorf("key %s.%s = %+v: line\n%q, want\n%q", tt.k.Spec.Name, tt.k.Spec.Mod, tt.v, got, want)
		}
	}

	// Values: " hitcount: %10llu", then per value " " + " NAME: ...".
	p := plan("a:b", []Key{numKey("k", parse.ModNone)}, []parse.HistField{
		fld("v", parse.ModNone), fld("v", parse.ModHex), fld("hitcount", parse.ModPercent), fld("v", parse.ModGraph),
	})
	tbl := &Table{Plan: p, Entries: []Entry{
		entry(1, "", keys(num(1)), 255, 255, 255),
		entry(2, "", keys(num(2)), 1020, 1020, 1020),
	}}
	key := func(k uint64) string { return fmt.Sprintf("{ k: %10d }", k) }
	val := func(hits, v uint64, pc uint64, bar int) string {
		return fmt.Sprintf(" hitcount: %10d", hits) +
			" " + fmt.Sprintf(" v: %10d", v) +
			" " + fmt.Sprintf(" v: %10x", v) +
			" " + fmt.Sprintf(" hitcount (%%): %3d.%02d", pc/100, pc%100) +
			" " + fmt.Sprintf(" v: %20s", strings.Repeat("#", bar)+strings.Repeat(" ", 20-bar))
	}
	want := []string{
		key(1) + val(1, 255, 3333, 5), // 255*10000/1020 = 2500 -> 2500*20/10000 = 5
		key(2) + val(2, 1020, 6666, 20),
	}
	if got := entryLines(t, tbl, testResolver); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("value lines =\n%q, want\n%q", got, want)
	}
}

func TestWriteTextLayout(t *testing.T) {
	none := []parse.HistField(nil)
	empty := &Table{Plan: plan("a:b", []Key{numKey("k", parse.ModNone)}, none), Dropped: 2}
	full := &Table{Plan: plan("a:b", []Key{numKey("k", parse.ModNone)}, none), Entries: []Entry{entry(3, "", keys(num(5)))}}
	tests := []struct {
		name    string
		tables  []*Table
		trigger []string
		want    string
	}{
		{"none", nil, nil, ""},
		{"empty", []*Table{empty}, []string{"hist:keys=k [active]"},
			"# event histogram\n#\n# trigger info: hist:keys=k [active]\n#\n\n" +
				"\nTotals:\n    Hits: 0\n    Entries: 0\n    Dropped: 2\n"},
		{"two", []*Table{full, empty}, []string{"one [active]", "two [paused]"},
			"# event histogram\n#\n# trigger info: one [active]\n#\n\n" +
				"{ k:          5 } hitcount:          3\n" +
				"\nTotals:\n    Hits: 3\n    Entries: 1\n    Dropped: 0\n" +
				"\n\n" +
				"# event histogram\n#\n# trigger info: two [paused]\n#\n\n" +
				"\nTotals:\n    Hits: 0\n    Entries: 0\n    Dropped: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, tt.tables, tt.trigger, Resolver{}); err != nil || b.String() != tt.want {
				t.Errorf("WriteText() = %v,\n%q, want\n%q", err, b.String(), tt.want)
			}
		})
	}
	if err := WriteText(&bytes.Buffer{}, []*Table{full}, nil, Resolver{}); err == nil {
		t.Errorf("WriteText(1 table, 0 trigger lines) = nil, want an error")
	}
}

func TestPercentage(t *testing.T) {
	tests := []struct {
		v, total uint64
		want     uint32
	}{
		{0, 0, 0},
		{1, 0, math.MaxUint32},
		{30, 40, 7500},
		{1, 3, 3333},
		{2, 3, 6666},
		{math.MaxUint64 / 10000, math.MaxUint64 / 10000 * 2, 5000}, // total/10000 path
		{math.MaxUint64, 9999, math.MaxUint32},                     // total/10000 == 0
	}
	for _, tt := range tests {
		if got := percentage(tt.v, tt.total); got != tt.want {
			t.Errorf("percentage(%d, %d) = %d, want %d", tt.v, tt.total, got, tt.want)
		}
	}
}

func TestAppendBar(t *testing.T) {
	tests := []struct {
		v, max uint64
		want   string
	}{
		{0, 0, "                    "},
		{5, 10, "##########          "},
		{10, 10, "####################"},
		{1, 21, "                    "}, // 476*20/10000 = 0
		{1, 0, "             [ERROR]"},
	}
	for _, tt := range tests {
		if got := string(appendBar(nil, tt.v, tt.max)); got != tt.want {
			t.Errorf("appendBar(%d, %d) = %q, want %q", tt.v, tt.max, got, tt.want)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestWritersReportErrors(t *testing.T) {
	tbl := &Table{Plan: plan("a:b", []Key{numKey("k", parse.ModNone)}, nil), Entries: []Entry{entry(1, "", keys(num(1)))}}
	for name, write := range map[string]func(w *failWriter) error{
		"text":  func(w *failWriter) error { return WriteText(w, []*Table{tbl}, []string{"x"}, Resolver{}) },
		"json":  func(w *failWriter) error { return WriteJSON(w, []*Table{tbl}, []string{"x"}, Resolver{}) },
		"csv":   func(w *failWriter) error { return WriteCSV(w, []*Table{tbl}, []string{"x"}, Resolver{}) },
		"table": func(w *failWriter) error { return WriteTable(w, []*Table{tbl}, []string{"x"}, Resolver{}) },
	} {
		if err := write(&failWriter{}); err == nil {
			t.Errorf("%s: write to a failing writer = nil, want an error", name)
		}
	}
}

// TestStackSymbolizedOnce checks that a stack shared by entries is
// symbolized once, whatever prints it.
func TestStackSymbolizedOnce(t *testing.T) {
	calls := 0
	r := Resolver{SymOffset: func(addr uint64) string { calls++; return fmt.Sprintf("f%x", addr) }}
	st := NewStack([]uint64{1, 2, 3, 0, 5})
	p := plan("kmem:kmalloc", []Key{{Spec: fld("common_stacktrace", parse.ModNone), Kind: KeyStack}, sgnKey("common_pid", parse.ModNone)}, nil)
	tb := &Table{Plan: p, Entries: []Entry{
		entry(1, "", keys(KeyValue{Num: 4, Stack: st}, num(1))),
		entry(2, "", keys(KeyValue{Num: 4, Stack: st}, num(2))),
	}}
	for _, format := range []string{"text", "json", "csv", "table"} {
		if err := Write(io.Discard, format, []*Table{tb}, []string{"x"}, r); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 3 {
		t.Errorf("symbolized %d frames, want 3 (the frames before the first zero, once)", calls)
	}
}
