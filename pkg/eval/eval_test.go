package eval

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

// madeUpFormat is a made-up event with the field kinds that the real
// formats of the tests (internal/testutil) lack.
const madeUpFormat = `name: made_up
ID: 7
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:__data_loc char[] name;	offset:8;	size:4;	signed:0;
	field:__rel_loc char[] path;	offset:12;	size:4;	signed:0;
	field:__data_loc cpumask_t mask;	offset:16;	size:4;	signed:0;
	field:unsigned char small;	offset:20;	size:1;	signed:0;
	field:signed char tiny;	offset:21;	size:1;	signed:1;
	field:short half;	offset:22;	size:2;	signed:1;
	field:long big;	offset:24;	size:8;	signed:1;
	field:unsigned long addr;	offset:32;	size:8;	signed:0;

print fmt: "name=%s", __get_str(name)
`

func format(t testing.TB, src string) *parse.Format {
	t.Helper()
	f, err := parse.ParseFormat("format", src)
	if err != nil {
		t.Fatalf("ParseFormat: %+v", err)
	}
	f.System = "test"
	return f
}

func bind(t testing.TB, f *parse.Format, src string) *parse.BoundFilter {
	t.Helper()
	e, err := parse.ParseFilter("f", src)
	if err != nil {
		t.Fatalf("ParseFilter(%q) = %+v", src, err)
	}
	bf, err := parse.BindFilter("f", src, e, f)
	if err != nil {
		t.Fatalf("BindFilter(%q) = %+v", src, err)
	}
	return bf
}

// record builds a raw record of a format.
type record struct {
	f   *parse.Format
	buf []byte
}

func newRecord(f *parse.Format) *record {
	n := 0
	for _, fld := range f.Fields {
		n = max(n, fld.Offset+fld.Size)
	}
	r := &record{f: f, buf: make([]byte, n)}
	r.num("common_type", uint64(f.ID))
	return r
}

func (r *record) num(name string, v uint64) *record {
	fld := r.f.Field(name)
	b := r.buf[fld.Offset:]
	switch fld.Size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
	return r
}

// str stores a static string, or appends a dynamic one and points the
// field at it (with n bytes of payload, or the string and a NUL if n < 0).
func (r *record) str(name, s string, n int) *record {
	fld := r.f.Field(name)
	if fld.Class == parse.ClassString {
		copy(r.buf[fld.Offset:fld.Offset+fld.Size], s)
		return r
	}
	payload := append([]byte(s), 0)
	if n >= 0 {
		payload = make([]byte, n)
		copy(payload, s)
	}
	off := len(r.buf)
	if fld.Class == parse.ClassRelLoc {
		off -= fld.Offset + 4
	}
	binary.LittleEndian.PutUint32(r.buf[fld.Offset:], uint32(len(payload))<<16|uint32(off))
	r.buf = append(r.buf, payload...)
	return r
}

func (r *record) bytes(name string, b []byte) *record {
	fld := r.f.Field(name)
	binary.LittleEndian.PutUint32(r.buf[fld.Offset:], uint32(len(b))<<16|uint32(len(r.buf)))
	r.buf = append(r.buf, b...)
	return r
}

func TestMatch(t *testing.T) {
	write, waking, madeUp := testutil.Format(t, "syscalls:sys_enter_write"), testutil.Format(t, "sched:sched_waking"), format(t, madeUpFormat)
	ctx := Context{PID: 42, CPU: 3, Comm: "kv_worker"}
	w := func(fd, count uint64) []byte {
		return newRecord(write).num("common_pid", 7).num("__syscall_nr", 1).num("fd", fd).num("count", count).buf
	}
	wk := func(comm string, pid int32, prio int32) []byte {
		return newRecord(waking).str("comm", comm, 0).num("pid", uint64(uint32(pid))).num("prio", uint64(uint32(prio))).num("target_cpu", 2).buf
	}
	mu := func() *record { return newRecord(madeUp) }
	tests := []struct {
		f    *parse.Format
		src  string
		rec  []byte
		ctx  Context
		want bool
	}{
		{write, "fd == 1", w(1, 10), ctx, true},
		{write, "fd == 1", w(2, 10), ctx, false},
		{write, "fd != 1", w(2, 10), ctx, true},
		{write, "count > 10", w(1, 10), ctx, false},
		{write, "count >= 10", w(1, 10), ctx, true},
		{write, "count < 10", w(1, 10), ctx, false},
		{write, "count <= 10", w(1, 10), ctx, true},
		{write, "count & 0x3", w(1, 4), ctx, false},
		{write, "count & 0x5", w(1, 4), ctx, true},
		{write, "count > 0xffffffff", w(1, 1<<32), ctx, true},
		{write, "count == 18446744073709551615", w(1, 1<<64-1), ctx, true},
		// fd is unsigned int in an 8-byte slot: the low 4 bytes count.
		{write, "fd == 1", w(1<<32|1, 10), ctx, true},
		{write, "fd == 4294967295", w(1<<32-1, 10), ctx, true},
		{write, "fd > 0", w(1<<32, 10), ctx, false},
		{write, "fd == 1 && count == 2", w(1, 2), ctx, true},
		{write, "fd == 1 && count == 2", w(1, 3), ctx, false},
		{write, "fd == 9 || count == 2", w(1, 2), ctx, true},
		{write, "fd == 9 || count == 3", w(1, 2), ctx, false},
		{write, "!(fd == 9 || count == 3)", w(1, 2), ctx, true},
		{write, "!!(fd == 1)", w(1, 2), ctx, true},
		{write, "fd == 1 && (count == 1 || count == 2) && !(count == 1)", w(1, 2), ctx, true},
		{write, fmt.Sprintf("common_type == %d", write.ID), w(1, 2), ctx, true},
		{write, "common_pid == 42", w(1, 2), ctx, true},
		{write, "common_pid == 7", w(1, 2), Context{PID: -1}, true},
		{write, "common_pid == 42", w(1, 2), Context{PID: -1}, false},
		{write, "cpu == 3 && CPU >= 3 && common_cpu < 4", w(1, 2), ctx, true},
		{write, "cpu > -1", w(1, 2), ctx, true},
		{write, "cpu & CPUS{0-2,4}", w(1, 2), ctx, false},
		{write, "cpu & CPUS{0-2,3}", w(1, 2), ctx, true},
		{write, "cpu == CPUS{3}", w(1, 2), ctx, true},
		{write, "cpu == CPUS{3,3}", w(1, 2), ctx, true},
		{write, "cpu == CPUS{3-4}", w(1, 2), ctx, false},
		{write, "cpu != CPUS{3-4}", w(1, 2), ctx, true},
		{write, "cpu != CPUS{3}", w(1, 2), ctx, false},
		{write, "cpu & CPUS{3}", w(1, 2), ctx, true},
		{write, "count & CPUS{100-200}", w(1, 150), ctx, true},
		{write, "count & CPUS{100-200}", w(1, 1<<32+150), ctx, false},
		{write, `comm == "kv_worker"`, w(1, 2), ctx, true},
		{write, `comm == kv_worker`, w(1, 2), ctx, true},
		{write, `comm ~ "*_worker"`, w(1, 2), ctx, true},
		{write, `COMM ~ "kv*"`, w(1, 2), ctx, true},
		{write, `comm ~ "*_work*"`, w(1, 2), ctx, true},
		{write, `comm ~ "kv?wor[j-l]er"`, w(1, 2), ctx, true},
		{write, `comm ~ "!kv*"`, w(1, 2), ctx, false},
		{write, `comm != "kv_worker"`, w(1, 2), ctx, false},
		// buf is a pointer into memory the record does not hold.
		{write, `buf == "x"`, w(1, 2), ctx, false},
		{write, `!(buf.ustring ~ "*")`, w(1, 2), ctx, true},
		{write, "fd == 1", w(1, 2)[:18], ctx, false},
		{write, "fd == 0", w(1, 2)[:18], ctx, true},
		{write, "count == 0", w(1, 2)[:39], ctx, true},
		// comm is a field of sched_waking and shadows the task's name.
		{waking, `comm == "kv_worker"`, wk("kv_worker", 1, 120), Context{Comm: "other"}, true},
		{waking, `comm ~ "*_worker"`, wk("kv_worker", 1, 120), ctx, true},
		{waking, `comm ~ "*emon"`, wk("daemon", 1, 120), ctx, true},
		{waking, `comm ~ "dae*"`, wk("daemon", 1, 120), ctx, true},
		{waking, `comm ~ "*ae*"`, wk("daemon", 1, 120), ctx, true},
		{waking, `comm ~ "*x*"`, wk("daemon", 1, 120), ctx, false},
		{waking, `comm == "daemo"`, wk("daemon", 1, 120), ctx, false},
		{waking, `comm == "daemon1"`, wk("daemon", 1, 120), ctx, false},
		{waking, `comm == "0123456789abcdef"`, wk("0123456789abcdef", 1, 120), ctx, true},
		{waking, `comm ~ "*cdef"`, wk("0123456789abcdef", 1, 120), ctx, true},
		{waking, `comm == ""`, wk("", 1, 120), ctx, true},
		{waking, "pid == -1", wk("x", -1, 120), ctx, true},
		{waking, "pid < 0", wk("x", -1, 120), ctx, true},
		{waking, "pid > 0", wk("x", -1, 120), ctx, false},
		{waking, "prio & 0x80000000", wk("x", -1, 120), ctx, false},
		{waking, "pid & 0x80000000", wk("x", -1, 120), ctx, true},
		{waking, "target_cpu == CPUS{2}", wk("x", 1, 1), ctx, true},
		{madeUp, `name == "abc"`, mu().str("name", "abc", -1).buf, ctx, true},
		{madeUp, `name == "abc"`, mu().str("name", "abc", 3).buf, ctx, true},
		{madeUp, `name == "abc"`, mu().str("name", "abc\x00def", 8).buf, ctx, true},
		{madeUp, `name ~ "*bc"`, mu().str("name", "abc", 10).buf, ctx, true},
		{madeUp, `name == "ab"`, mu().str("name", "abc", -1).buf, ctx, false},
		{madeUp, `name ~ "a*"`, mu().str("name", "abc", -1).buf, ctx, true},
		{madeUp, `name ~ "*"`, mu().str("name", "", -1).buf, ctx, true},
		{madeUp, `name ~ "!*"`, mu().str("name", "", -1).buf, ctx, false},
		{madeUp, `name ~ "*b*"`, mu().str("name", "abc", -1).buf, ctx, true},
		{madeUp, `name == "abc"`, append(mu().str("name", "abc", -1).buf[:20], 0), ctx, false},
		{madeUp, `path ~ "/usr/*"`, mu().str("path", "/usr/bin/ls", -1).buf, ctx, true},
		{madeUp, `path ~ "*/ls"`, mu().str("path", "/usr/bin/ls", -1).buf, ctx, true},
		{madeUp, `path ~ "*/l[a-s]"`, mu().str("path", "/usr/bin/ls", -1).buf, ctx, true},
		{madeUp, "small == 255", mu().num("small", 255).buf, ctx, true},
		{madeUp, "small > 200", mu().num("small", 201).buf, ctx, true},
		{madeUp, "tiny < 0", mu().num("tiny", 0xff).buf, ctx, true},
		{madeUp, "tiny == -1", mu().num("tiny", 0xff).buf, ctx, true},
		{madeUp, "tiny == 255", mu().num("tiny", 0xff).buf, ctx, true},
		{madeUp, "half < -100", mu().num("half", uint64(0x10000-200)).buf, ctx, true},
		{madeUp, "big < -1", mu().num("big", uint64(1<<64-5)).buf, ctx, true},
		{madeUp, "big > 0", mu().num("big", uint64(1<<64-5)).buf, ctx, false},
		{madeUp, "addr.function == foo", mu().num("addr", 5).buf, ctx, false},
		{madeUp, "addr.function != foo", mu().num("addr", 5).buf, ctx, false},
		{madeUp, "!(addr.function == foo)", mu().num("addr", 5).buf, ctx, true},
		{write, `buf != "x"`, w(1, 2), ctx, false},
		{madeUp, "mask & CPUS{9}", mu().bytes("mask", []byte{0, 2, 0, 0, 0, 0, 0, 0}).buf, ctx, true},
		{madeUp, "mask & CPUS{0-8,10-63}", mu().bytes("mask", []byte{0, 2, 0, 0, 0, 0, 0, 0}).buf, ctx, false},
		{madeUp, "mask & CPUS{100}", mu().bytes("mask", []byte{0, 2, 0, 0, 0, 0, 0, 0}).buf, ctx, false},
		{madeUp, "mask == CPUS{9}", mu().bytes("mask", []byte{0, 2, 0, 0, 0, 0, 0, 0}).buf, ctx, true},
		{madeUp, "mask == CPUS{9,10}", mu().bytes("mask", []byte{0, 2, 0, 0, 0, 0, 0, 0}).buf, ctx, false},
		{madeUp, "mask == CPUS{9,100}", mu().bytes("mask", []byte{0, 2, 0, 0, 0, 0, 0, 0}).buf, ctx, false},
		{madeUp, "mask != CPUS{9}", mu().bytes("mask", []byte{0, 3, 0, 0, 0, 0, 0, 0}).buf, ctx, true},
		{madeUp, "mask == CPUS{0-15}", mu().bytes("mask", []byte{0xff, 0xff}).buf, ctx, true},
	}
	for _, tt := range tests {
		t.Run(tt.f.Name+"/"+tt.src, func(t *testing.T) {
			bf := bind(t, tt.f, tt.src)
			if got := Match(bf, tt.rec, tt.ctx); got != tt.want {
				t.Errorf("Match(%q) = %v, want %v", tt.src, got, tt.want)
			}
		})
	}
}

func TestMatchAllocs(t *testing.T) {
	f := testutil.Format(t, "syscalls:sys_enter_write")
	bf := bind(t, f, `fd == 1 && count > 10 || comm ~ "*sh" || comm ~ "b?sh"`)
	rec := newRecord(f).num("fd", 2).buf
	c := Context{PID: 1, CPU: 0, Comm: "bash"}
	if n := testing.AllocsPerRun(100, func() { Match(bf, rec, c) }); n != 0 {
		t.Errorf("Match allocates %v times per call", n)
	}
}

func BenchmarkMatch(b *testing.B) {
	f := testutil.Format(b, "syscalls:sys_enter_write")
	bf := bind(b, f, `fd == 100 && count > 50 || comm ~ "*sh" && cpu & CPUS{0-3}`)
	rec := newRecord(f).num("fd", 100).num("count", 10).buf
	c := Context{PID: 1, CPU: 2, Comm: "bash"}
	b.ReportAllocs()
	for b.Loop() {
		Match(bf, rec, c)
	}
}

// TestMatchFunction checks .function against the range that
// ResolveFunctions found, by name or by an address inside the function,
// and that an unresolved predicate matches nothing.
func TestMatchFunction(t *testing.T) {
	f := format(t, madeUpFormat)
	resolve := func(name string, addr uint64) (uint64, uint64, error) {
		if name == "foo" || (addr >= 0x1000 && addr < 0x1100) {
			return 0x1000, 0x1100, nil
		}
		return 0, 0, fmt.Errorf("no kernel function %q", name)
	}
	tests := []struct {
		src  string
		addr uint64
		want bool
	}{
		{"addr.function == foo", 0x1000, true},
		{"addr.function == foo", 0x10ff, true},
		{"addr.function == foo", 0x1100, false},
		{"addr.function == foo", 0xfff, false},
		{"addr.function != foo", 0x1100, true},
		{"addr.function != foo", 0x1080, false},
		{"addr.function == 0x1010", 0x1080, true},
	}
	for _, tc := range tests {
		bf := bind(t, f, tc.src)
		if err := bf.ResolveFunctions(resolve); err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		rec := newRecord(f).num("addr", tc.addr)
		if got := Match(bf, rec.buf, Context{PID: -1}); got != tc.want {
			t.Errorf("%s with addr %#x = %v, want %v", tc.src, tc.addr, got, tc.want)
		}
	}
	if Match(bind(t, f, "addr.function == foo"), newRecord(f).num("addr", 0x1000).buf, Context{PID: -1}) {
		t.Error("an unresolved .function matched")
	}
}
