package report

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// helperKallsyms has aliases, an absolute symbol and an ARM mapping symbol
// (both ignored), a module symbol, and a last symbol that only holds its
// own address.
const helperKallsyms = `ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81001000 T do_thing
ffffffff81001000 t do_thing_alias
ffffffff81002000 t helper_fn
ffffffff81003000 A abs_sym
ffffffff81003000 t $x
ffffffff81004000 T tick_nohz_handler
ffffffff81005000 T mod_fn	[mymod]
ffffffff81006000 T last_sym
`

const helperPrintk = `0xffffffff82000000 : "constant string\n"
0xffffffff82000100 : "bprint %d %s %lu %pS\n"
0xffffffff82000200 : "unquoted\n
0xffffffff82000300 : "pointer %p end"
`

// testEvents are formats written for the helpers test: one event per
// group of print fmt features.
var testEvents = []struct {
	name     string
	fields   []tfield
	printFmt string
}{
	{"ints", []tfield{{"int a", 4, true}, {"unsigned int b", 4, false}, {"long c", 8, true}, {"unsigned long d", 8, false}, {"short e", 2, true}, {"unsigned char f", 1, false}, {"u64 g", 8, false}},
		`"a=%d b=%u c=%ld d=%lu e=%hd f=%hhx g=%llx x=%08lx y=%-5d| z=%#x o=%o oo=%#o p=%5.3d i=%i X=%X zu=%zu zd=%zd L=%Lu h=%hhd", REC->a, REC->b, REC->c, REC->d, REC->e, REC->f, REC->g, REC->d, REC->a, REC->b, REC->b, REC->b, REC->a, REC->a, REC->b, REC->d, REC->c, REC->g, REC->a`},
	{"badconv", []tfield{{"char ch", 1, true}, {"int a", 4, true}, {"int w", 4, true}, {"int n", 4, true}, {"unsigned long d", 8, false}, {"__data_loc char[] s", 4, false}},
		`"c=%c plus=%+d space=% d px=%px star=[%*d] prec=[%.*s] pct=100%% end", REC->ch, REC->a, REC->a, REC->d, REC->w, REC->a, REC->n, __get_str(s)`},
	{"exprs", []tfield{{"int a", 4, true}, {"unsigned int b", 4, false}, {"long c", 8, true}},
		`"r=%d rot=%d x=%d q=%d t=%s n=%d bang=%d tilde=%x cmp=%d sh=%u neg=%d u8=%u s16=%d int=%u size=%d fold=%d folds=%s sym=%lx idx=%d", REC->a - REC->b - 1, REC->a * (REC->b + 1), REC->a ^ REC->b, REC->a / REC->c, REC->a > 5 ? "big" : "small", -REC->a, !REC->b, ~REC->b, REC->a == REC->b, REC->b << 2 >> 1, 2 * -REC->a, (u8)REC->c, (short)REC->c, (int)REC->c, sizeof(int) + sizeof(long) + sizeof(REC->a), 3 + 4 * 2, 1 + 2, do_thing, REC->b ? REC->a : REC->c + 1`},
	{"strings", []tfield{{"char comm[16]", 16, false}, {"__data_loc char[] name", 4, false}, {"__rel_loc char[] rname", 4, false}, {"const char * ptr", 8, false}, {"int len", 4, true}, {"int w", 4, true}},
		`"comm=%s name=%s rname=%s ptr=%s w=[%-10s] p=[%.3s] atom=%s raw=%s prec=[%.*s] star=[%*s]", REC->comm, __get_str(name), __get_rel_str(rname), REC->ptr, REC->comm, __get_str(name), "lit\n", REC->len, REC->len, __get_str(name), REC->w, __get_str(name)`},
	{"flags", []tfield{{"unsigned long flags", 8, false}, {"int sym", 4, true}},
		`"f=%s g=%s s=%s w=[%-6s] cond=%s", __print_flags(REC->flags, "|", { 1, "A" }, { 2, "B" }, { 4, "C" }), __print_flags(REC->flags, , { 0, "NONE" }, { 8, "D" }), __print_symbolic(REC->sym, { 0, "ZERO" }, { 1, "ONE" }, { HRTIMER_RESTART, "RESTART" }, { TIMER_SOFTIRQ, "TIMER" }, { -1, "MINUS" }), __print_symbolic(REC->sym, { 5, "five" }), REC->sym ? __print_flags(REC->flags, "+", { 1, "a" }) : "none"`},
	{"arrays", []tfield{{"__data_loc u8[] buf", 4, false}, {"__data_loc u32[] words", 4, false}, {"u8 mac[6]", 6, false}, {"unsigned long args[3]", 24, false}, {"__data_loc unsigned long[] mask", 4, false}, {"__data_loc cpumask_t cpus", 4, false}},
		`"hex=%s hexs=%s arr=%s arr8=%s bad=%s len=%d a1=%lx mask=%s cpus=%s", __print_hex(__get_dynamic_array(buf), __get_dynamic_array_len(buf)), __print_hex_str(REC->mac, 6), __print_array(__get_dynamic_array(words), __get_dynamic_array_len(words) / 4, 4), __print_array(REC->args, 3, 8), __print_array(REC->mac, 2, 3), __get_dynamic_array_len(buf), REC->args[1], __get_bitmask(mask), __get_cpumask(cpus)`},
	{"pointers", []tfield{{"unsigned long ip", 8, false}, {"void * p", 8, false}, {"u8 mac[6]", 6, false}, {"__u8 ip4[4]", 4, false}, {"u8 ip6[16]", 16, false}, {"__data_loc u8[] sa", 4, false}, {"u8 uuid[16]", 16, false}, {"__data_loc u8[] raw", 4, false}, {"u32 wrong", 4, false}},
		`"S=%pS s=%ps F=%pF f=%pf B=%pB M=%pM m=%pm MR=%pMR MF=%pMF I4=%pI4 i4=%pi4 I4h=%pI4h I6=%pI6 i6=%pi6 I6c=%pI6c IS=%pISpc U=%pU Ul=%pUl UL=%pUL Ub=%pUb h=%ph hC=%*phC p=%p nil=%p bad=%pI4 badm=%pM", (void *)REC->ip, (void *)REC->ip, (void *)REC->ip, (void *)REC->ip, REC->ip, REC->mac, REC->mac, REC->mac, REC->mac, REC->ip4, REC->ip4, REC->ip4, REC->ip6, REC->ip6, REC->ip6, __get_sockaddr(sa), REC->uuid, REC->uuid, REC->uuid, REC->uuid, __get_dynamic_array(raw), 4, __get_dynamic_array(raw), REC->p, REC->wrong - REC->wrong, REC->wrong, REC->wrong`},
	{"index_dyn", []tfield{{"__data_loc u32[] words", 4, false}},
		`"w=%d", ((u32 *)__get_dynamic_array(words))[1]`},
	{"unknown_func", []tfield{{"int a", 4, true}},
		`"%s", no_such_helper(REC->a)`},
	{"sizeof_u64", []tfield{{"int a", 4, true}},
		`"%d", sizeof(u64)`},
	{"too_few", []tfield{{"int a", 4, true}},
		`"%d %d", REC->a`},
	{"bad_length", []tfield{{"int a", 4, true}},
		`"%hhhd", REC->a`},
	{"statement", []tfield{{"int a", 4, true}},
		`"%d", ({ int x = REC->a; x; })`},
	{"helpers", []tfield{{"unsigned long j", 8, false}, {"unsigned int dev", 4, false}},
		`"ms=%lu dev=%s", jiffies_to_msecs(REC->j), jbd2_dev_to_name(REC->dev)`},
	{"noargs", nil, `"hello\tworld\n"`},
}

// pluginEvents are real 6.18 formats that trace-cmd's plugins print.
var pluginEvents = []string{
	"sched:sched_switch", "sched:sched_wakeup", "sched:sched_wakeup_new", "kmem:kmalloc", "kmem:kfree",
	"timer:hrtimer_start", "timer:hrtimer_expire_entry", "syscalls:sys_enter_futex", "tlb:tlb_flush",
	"kvm:kvm_exit", "kvm:kvm_entry", "kvm:kvm_emulate_insn", "kvmmmu:kvm_mmu_get_page",
	"ftrace:function", "ftrace:print", "ftrace:bprint", "ftrace:bputs", "ftrace:kernel_stack",
	"ftrace:funcgraph_entry", "ftrace:funcgraph_exit", "ftrace:raw_data", "ftrace:func_repeats",
}

// helperFile builds the helpers test file.
func helperFile(t testing.TB) string {
	t.Helper()
	all := openDat(t, filepath.Join("testdata", "captured", "all2.dat"))
	byName := map[string]*tracedat.Event{}
	for _, e := range all.Events {
		byName[e.Format.FullName()] = e
	}
	m := buildMeta{
		kallsyms: helperKallsyms,
		printk:   helperPrintk,
		cmdlines: map[int]string{100: "bash", 101: "a-very-long-command-name", 102: "sh"},
		cpus:     2,
	}
	fms := map[string]*parse.Format{}
	for i, e := range testEvents {
		text := formatText(e.name, 3000+i, e.fields, e.printFmt)
		fm, err := parse.ParseFormat(e.name, text)
		if err != nil {
			t.Fatalf("format %s: %v", e.name, err)
		}
		fms[e.name] = fm
		m.formats = append(m.formats, tracedat.FormatText{System: "gtrace", Text: text})
	}
	for _, name := range pluginEvents {
		e := byName[name]
		if e == nil {
			t.Fatalf("no format %s in all2.dat", name)
		}
		fms[name] = e.Format
		m.formats = append(m.formats, tracedat.FormatText{System: e.Format.System, Text: e.Text})
	}
	var recs []trec
	ts := uint64(5_000_000_000)
	add := func(cpu int, name string, pid int32, vals map[string]any) {
		ts += 1234567
		recs = append(recs, trec{cpu: cpu, ts: ts, data: recordOf(t, fms[name], pid, vals)})
	}
	u := func(v int64) uint64 { return uint64(v) }
	add(0, "ints", 100, map[string]any{"a": -5, "b": 7, "c": -1, "d": 255, "e": -2, "f": 0xab, "g": u(-1)})
	add(1, "ints", 101, map[string]any{"a": 123456, "b": 0, "c": 1 << 40, "d": 0, "e": 32767, "f": 0, "g": 0})
	add(0, "badconv", 102, map[string]any{"ch": 65, "a": 42, "w": 6, "n": 3, "d": 0x10, "s": "string"})
	add(0, "badconv", 102, map[string]any{"ch": 66, "a": 42, "w": 4, "n": -1, "d": 0, "s": "neg"})
	add(1, "exprs", 100, map[string]any{"a": 10, "b": 3, "c": -2})
	add(1, "exprs", 100, map[string]any{"a": 2, "b": 0, "c": 0x12345678abcd})
	add(0, "strings", 100, map[string]any{"comm": "swapper/0", "name": "dynamic", "rname": "relative", "ptr": uint64(0xffffffff82000000), "len": 4, "w": 9})
	add(0, "strings", 103, map[string]any{"comm": "0123456789abcdef", "name": "", "rname": "r", "ptr": uint64(0xffffffff81000010), "len": -1, "w": 0})
	add(0, "strings", 0, map[string]any{"comm": "", "name": "x", "ptr": uint64(0xffffffff82000200), "len": 20, "w": 2})
	add(1, "flags", 100, map[string]any{"flags": 7, "sym": 1})
	add(1, "flags", 100, map[string]any{"flags": 0, "sym": 0})
	add(1, "flags", 100, map[string]any{"flags": 0x1b, "sym": -1})
	add(1, "flags", 100, map[string]any{"flags": 9, "sym": 5})
	add(0, "arrays", 100, map[string]any{
		"buf": []byte{1, 2, 0xab}, "words": le32(1, 2, 0xffffffff), "mac": []byte{0, 1, 2, 3, 4, 5},
		"args": le64(1, 0xdead, 3), "mask": le64(0x8000000100000003), "cpus": le64(0x0f0f),
	})
	add(0, "arrays", 100, map[string]any{"buf": []byte{}, "words": []byte{}, "mask": []byte{}, "cpus": le64(0xffffffffffffffff)})
	sa4 := []byte{2, 0, 0x1f, 0x90, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
	sa6 := make([]byte, 28)
	sa6[0], sa6[2], sa6[3], sa6[23] = 10, 0, 53, 1
	ip6 := []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	add(1, "pointers", 100, map[string]any{
		"ip": uint64(0xffffffff81001010), "p": uint64(0xffff888012345678), "mac": []byte{0xde, 0xad, 0xbe, 0xef, 0, 1},
		"ip4": []byte{192, 168, 1, 2}, "ip6": ip6, "sa": sa4, "raw": []byte{1, 2, 3, 4, 5, 6},
		"uuid": []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, "wrong": 9,
	})
	v4mapped := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}
	add(1, "pointers", 100, map[string]any{"ip": uint64(0xffffffff81006000), "ip6": v4mapped, "sa": sa6, "raw": []byte{7}})
	add(1, "pointers", 100, map[string]any{"ip": uint64(0xffffffff81006001), "ip6": make([]byte, 16), "sa": []byte{2, 0}})
	add(1, "pointers", 100, map[string]any{"ip": uint64(0xffffffff80000000), "sa": []byte{9, 0, 0, 0}})
	add(0, "index_dyn", 100, map[string]any{"words": le32(1, 2)})
	add(0, "unknown_func", 100, map[string]any{"a": 1})
	add(0, "sizeof_u64", 100, map[string]any{"a": 1})
	add(0, "too_few", 100, map[string]any{"a": 1})
	add(0, "bad_length", 100, map[string]any{"a": 1})
	add(0, "statement", 100, map[string]any{"a": 1})
	add(0, "helpers", 100, map[string]any{"j": 1500, "dev": 8<<20 | 3})
	add(1, "noargs", 100, nil)

	// Plugins. A task not in cmdlines is learned from sched_switch.
	add(0, "sched:sched_switch", 0, map[string]any{"prev_comm": "swapper/0", "prev_pid": 0, "prev_prio": 120, "prev_state": 0, "next_comm": "newtask", "next_pid": 4242, "next_prio": 120})
	add(0, "sched:sched_switch", 4242, map[string]any{"prev_comm": "newtask", "prev_pid": 4242, "prev_prio": 120, "prev_state": 0x21, "next_comm": "bash", "next_pid": 100, "next_prio": 100})
	add(0, "sched:sched_switch", 100, map[string]any{"prev_comm": "renamed", "prev_pid": 100, "prev_prio": 120, "prev_state": 0x100, "next_comm": "swapper/0", "next_pid": 0, "next_prio": 120})
	add(1, "sched:sched_wakeup", 4242, map[string]any{"comm": "wakee", "pid": 4343, "prio": 120, "target_cpu": 1})
	add(1, "sched:sched_wakeup_new", 4343, map[string]any{"comm": "child", "pid": 4444, "prio": 120, "target_cpu": 12})
	add(1, "kmem:kmalloc", 4343, map[string]any{"call_site": uint64(0xffffffff81002010), "ptr": uint64(0xffff888000001000), "bytes_req": 100, "bytes_alloc": 128, "gfp_flags": 0xcc0, "node": -1})
	add(1, "kmem:kfree", 4444, map[string]any{"call_site": uint64(0xffffffff70000000), "ptr": uint64(0xffff888000001000)})
	add(0, "timer:hrtimer_start", 4444, map[string]any{"hrtimer": uint64(0xffff888000002000), "function": uint64(0xffffffff81004000), "expires": 5000, "softexpires": 4000, "mode": 1})
	add(0, "timer:hrtimer_expire_entry", 0, map[string]any{"hrtimer": uint64(0xffff888000002000), "now": 5001, "function": uint64(0xffffffff81004010)})
	add(0, "syscalls:sys_enter_futex", 100, map[string]any{"uaddr": 0x7f0000001000, "op": 0x80, "val": 1, "utime": 0, "uaddr2": 0, "val3": 0})
	add(0, "syscalls:sys_enter_futex", 100, map[string]any{"uaddr": 0x7f0000001000, "op": 0x189, "val": 2, "utime": 0x7ffc0000, "uaddr2": 0, "val3": 0xffffffff})
	add(0, "syscalls:sys_enter_futex", 100, map[string]any{"uaddr": 0x7f0000001000, "op": 40, "val": 2})
	add(1, "tlb:tlb_flush", 100, map[string]any{"reason": 1, "pages": -1})
	add(1, "tlb:tlb_flush", 100, map[string]any{"reason": 9, "pages": 3})
	add(1, "kvm:kvm_exit", 100, map[string]any{"exit_reason": 30, "guest_rip": uint64(0xffffffff81001000), "isa": 1, "info1": 1, "info2": 2})
	add(1, "kvm:kvm_exit", 100, map[string]any{"exit_reason": 0x7c, "guest_rip": 0x1000, "isa": 2})
	add(1, "kvm:kvm_exit", 100, map[string]any{"exit_reason": 3, "guest_rip": 0x1000, "isa": 1})
	add(1, "kvm:kvm_entry", 100, map[string]any{"vcpu_id": 3, "rip": uint64(0xffffffff81001000)})
	add(1, "kvm:kvm_emulate_insn", 100, map[string]any{"rip": 0x1000, "csbase": 0, "len": 3, "insn": []byte{0x0f, 0x01, 0xc1}, "flags": 1, "failed": 1})
	add(1, "kvm:kvm_emulate_insn", 100, map[string]any{"rip": 0x1003, "csbase": 0, "len": 0, "flags": 1, "failed": 0})
	add(1, "kvmmmu:kvm_mmu_get_page", 100, map[string]any{"gfn": 0x1234, "role": 0x01001f93, "root_count": 2, "unsync": 1, "created": 1})

	// Function tracing: indentation from parents, a leaf and a nested
	// call of the function graph, a stack.
	add(0, "ftrace:function", 100, map[string]any{"ip": uint64(0xffffffff81002000), "parent_ip": uint64(0xffffffff81001000)})
	add(0, "ftrace:function", 100, map[string]any{"ip": uint64(0xffffffff81004000), "parent_ip": uint64(0xffffffff81002000)})
	add(0, "ftrace:function", 100, map[string]any{"ip": uint64(0xffffffff81005000), "parent_ip": 0x10})
	add(1, "ftrace:funcgraph_entry", 100, map[string]any{"func": uint64(0xffffffff81002000), "depth": 1})
	add(1, "ftrace:funcgraph_exit", 100, map[string]any{"func": uint64(0xffffffff81002000), "depth": 1, "calltime": 1000, "rettime": 15500})
	add(1, "ftrace:funcgraph_entry", 100, map[string]any{"func": uint64(0xffffffff81001000), "depth": 0})
	add(1, "ftrace:funcgraph_entry", 101, map[string]any{"func": uint64(0xffffffff81004000), "depth": 1})
	add(1, "ftrace:funcgraph_exit", 100, map[string]any{"func": uint64(0xffffffff81001000), "depth": 0, "calltime": 0, "rettime": 2000000000})
	add(0, "ftrace:kernel_stack", 100, map[string]any{"size": 3, "caller": le64(0xffffffff81001004, 0xffffffff81004000, 0x1234, ^uint64(0), 0, 0, 0, 0)})
	add(0, "ftrace:raw_data", 100, map[string]any{"id": 0x42, "buf": []byte{1, 2, 3}})
	add(0, "ftrace:func_repeats", 100, map[string]any{"ip": uint64(0xffffffff81002000), "parent_ip": uint64(0xffffffff81001000), "count": 5, "top_delta_ts": 0, "bottom_delta_ts": 12345})
	add(0, "ftrace:print", 100, map[string]any{"ip": uint64(0xffffffff81001010), "buf": "marker text\n"})
	add(0, "ftrace:bputs", 100, map[string]any{"ip": uint64(0xffffffff81001010), "str": uint64(0xffffffff82000000)})
	bp := append(le32(42), []byte("word\x00\x00\x00\x00")...)
	bp = append(bp, le64(7)...)
	bp = append(bp, le64(0xffffffff81002004)...)
	add(0, "ftrace:bprint", 100, map[string]any{"ip": uint64(0xffffffff81001010), "fmt": uint64(0xffffffff82000100), "buf": bp})
	add(0, "ftrace:bprint", 100, map[string]any{"ip": uint64(0xffffffff81001010), "fmt": uint64(0xffffffff89999999), "buf": []byte{}})

	// An unknown event, and events lost before a record.
	ts += 1000
	recs = append(recs, trec{cpu: 1, ts: ts, data: []byte{0x39, 0x30, 0, 0, 100, 0, 0, 0}})
	ts += 1000
	recs = append(recs, trec{cpu: 1, ts: ts, lost: 17, data: recordOf(t, fms["noargs"], 0, nil)})
	return buildDat(t, m, recs)
}

func le32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func le64(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// TestHelpers prints a file whose events use every print fmt helper,
// conversion and plugin, and compares with trace-cmd's report of it.
func TestHelpers(t *testing.T) {
	dat := helperFile(t)
	f := openDat(t, dat)
	for _, tt := range []struct {
		golden string
		o      Options
		args   []string
	}{
		{"helpers.report.txt", Options{}, nil},
		{"helpers.report-R.txt", Options{Raw: true}, []string{"-R"}},
		{"helpers.report-t.txt", Options{NsTimestamps: true}, []string{"-t"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := Text(context.Background(), &b, f, tt.o); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", tt.golden), b.Bytes(), func() []byte { return traceCmd(t, dat, tt.args...) })
		})
	}
}
