package report

import (
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

// specOf parses one conversion as bindFormat does.
func specOf(t *testing.T, spec string) cspec {
	t.Helper()
	ps := parse.ParseFormatPieces(spec)
	if len(ps) == 0 || !ps[0].Conv {
		t.Fatalf("%q is not a conversion", spec)
	}
	c := newCspec(&ps[0])
	c.bits = lsBits(lengthCount(ps[0].Spec))
	c.finish()
	return c
}

// TestAppendInt checks integer conversions against glibc's printf (the
// expected strings are what glibc 2.36 prints).
func TestAppendInt(t *testing.T) {
	tests := []struct {
		spec string
		v    int64
		want string
	}{
		{"%d", -5, "-5"},
		{"%u", 4294967291, "4294967291"},
		{"%5d", 42, "   42"},
		{"%-5d", 42, "42   "},
		{"%05d", -42, "-0042"},
		{"%.3d", 7, "007"},
		{"%8.3d", -7, "    -007"},
		{"%#x", 255, "0xff"},
		{"%#X", 255, "0XFF"},
		{"%#o", 8, "010"},
		{"%#o", 0, "0"},
		{"%#x", 0, "0"},
		{"%.0d", 0, ""},
		{"%#.0o", 0, "0"},
		{"%+d", 5, "+5"},
		{"% d", 5, " 5"},
		{"%hhd", 200, "-56"},
		{"%hhu", -1, "255"},
		{"%hd", 40000, "-25536"},
		{"%lld", -1, "-1"},
		{"%llx", -1, "ffffffffffffffff"},
		{"%lu", -1, "18446744073709551615"},
		{"%016llx", 2748, "0000000000000abc"},
		{"%-#10x", 2748, "0xabc     "},
		{"%08.3x", 171, "     0ab"},
		{"%o", 8, "10"},
		{"%i", -3, "-3"},
		{"%x", -1, "ffffffff"},
		{"%zu", -1, "18446744073709551615"},
	}
	for _, tt := range tests {
		c := specOf(t, tt.spec)
		if got := string(c.appendInt(nil, uint64(tt.v))); got != tt.want {
			t.Errorf("%s of %d = %q, want %q", tt.spec, tt.v, got, tt.want)
		}
	}
}

func TestAppendStr(t *testing.T) {
	tests := []struct {
		spec, s, want string
	}{
		{"%s", "abc", "abc"},
		{"%5s", "abc", "  abc"},
		{"%-5s", "abc", "abc  "},
		{"%.2s", "abc", "ab"},
		{"%05s", "ab", "   ab"},
		{"%8.2s", "abcd", "      ab"},
	}
	for _, tt := range tests {
		c := specOf(t, tt.spec)
		if got := string(c.appendStr(nil, []byte(tt.s))); got != tt.want {
			t.Errorf("%s of %q = %q, want %q", tt.spec, tt.s, got, tt.want)
		}
	}
	c := specOf(t, "%*s").star(-4, true)
	if got := string(c.appendStr(nil, []byte("ab"))); got != "ab  " {
		t.Errorf("%%*s with -4 = %q, want %q", got, "ab  ")
	}
	c = specOf(t, "%.*s").star(1, true)
	if got := string(c.appendStr(nil, []byte("ab"))); got != "a" {
		t.Errorf("%%.*s with 1 = %q, want %q", got, "a")
	}
}

func TestAppendTime(t *testing.T) {
	tests := []struct {
		ts   uint64
		prec int
		div  uint64
		want string
	}{
		{637826270123, 6, 1000, "  637.826270"},
		{637826270500, 6, 1000, "  637.826271"},
		{999999, 6, 1000, "    0.001000"},
		{123456789012345, 6, 1000, "123456.789012"},
		{637826270123, 9, 1, "  637.826270123"},
	}
	for _, tt := range tests {
		if got := string(appendTime(nil, tt.ts, tt.prec, tt.div)); got != tt.want {
			t.Errorf("appendTime(%d, %d, %d) = %q, want %q", tt.ts, tt.prec, tt.div, got, tt.want)
		}
	}
}

// TestFuncMap checks libtraceevent's symbol lookup: no size limit, the
// last symbol only at its address, aliases found as glibc's bsearch
// finds them, absolute and ARM mapping symbols dropped.
func TestFuncMap(t *testing.T) {
	m := newFuncMap(helperKallsyms)
	tests := []struct {
		addr uint64
		want string
	}{
		{0xffffffff80000000, ""},
		{0xffffffff81000000, "_stext"},
		{0xffffffff81000fff, "_stext"},
		{0xffffffff81001000, "do_thing_alias"},
		{0xffffffff81001010, "do_thing"},
		{0xffffffff81003000, "helper_fn"},
		{0xffffffff81005fff, "mod_fn"},
		{0xffffffff81006000, "last_sym"},
		{0xffffffff81006001, ""},
	}
	for _, tt := range tests {
		e, ok := m.find(tt.addr)
		if got := e.name; !ok && got != "" || got != tt.want {
			t.Errorf("find(%#x) = %q, %v, want %q", tt.addr, got, ok, tt.want)
		}
	}
	if got := m.lookupName("helper_fn"); got != 0xffffffff81002000 {
		t.Errorf("lookupName(helper_fn) = %#x", got)
	}
	if got := m.lookupName("abs_sym"); got != 0 {
		t.Errorf("lookupName(abs_sym) = %#x, want 0 (absolute symbols are dropped)", got)
	}
	// A line libtraceevent cannot read ends the table.
	m = newFuncMap("ffffffff81000000 T a\nbad\nffffffff81001000 T b\n")
	if len(m.syms) != 1 {
		t.Errorf("a table with a bad line has %d symbols, want 1", len(m.syms))
	}
}

func TestPrintkMap(t *testing.T) {
	m := newPrintkMap(helperPrintk)
	for addr, want := range map[uint64]string{
		0xffffffff82000000: "constant string",
		0xffffffff82000200: `unquoted\n`,
		0xffffffff82000300: "pointer %p end",
	} {
		if got := m[addr]; got != want {
			t.Errorf("printk %#x = %q, want %q", addr, got, want)
		}
	}
}

func TestComms(t *testing.T) {
	c := newComms(map[int]string{1: "init"})
	c.register(1, []byte("other"))
	c.register(2, []byte("new"))
	c.register(0, []byte("zero"))
	for pid, want := range map[int32]string{0: "<idle>", 1: "init", 2: "new", 3: "<...>"} {
		if got := c.find(pid); got != want {
			t.Errorf("find(%d) = %q, want %q", pid, got, want)
		}
	}
}

func TestMasks(t *testing.T) {
	p := &printer{}
	for _, tt := range []struct {
		data          []byte
		bitmask, cpus string
	}{
		{[]byte{0x0f, 0x0f}, "0f0f", "0-3,8-11"},
		{[]byte{1, 0, 0, 0, 0x80, 0, 0, 0}, "00000080,00000001", "0,39"},
		{[]byte{0xff, 0xff}, "ffff", "0-15"},
		{nil, "", ""},
	} {
		if got := string(p.bitmask(tt.data)); got != tt.bitmask {
			t.Errorf("bitmask(% x) = %q, want %q", tt.data, got, tt.bitmask)
		}
		if got := string(p.cpumask(tt.data)); got != tt.cpus {
			t.Errorf("cpumask(% x) = %q, want %q", tt.data, got, tt.cpus)
		}
	}
}

func TestIP6Compressed(t *testing.T) {
	for _, tt := range []struct {
		a    []byte
		want string
	}{
		{[]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "2001:db8::1"},
		{make([]byte, 16), "::"},
		{[]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}, "::ffff:10.0.0.1"},
		{[]byte{0xfe, 0x80, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3}, "fe80:1:0:2::3"},
	} {
		if got := string(appendIP6c(nil, tt.a)); got != tt.want {
			t.Errorf("appendIP6c(% x) = %q, want %q", tt.a, got, tt.want)
		}
	}
}
