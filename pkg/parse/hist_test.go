package parse

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Every line of grammar §6.2 that has no variables or actions, without
// the trailing state.
var histKernelLines = []string{
	"hist:keys=call_site.sym:vals=hitcount,bytes_req:sort=bytes_req.descending:size=2048",
	"hist:keys=id.syscall,common_pid.execname:vals=hitcount:sort=id.syscall,hitcount:size=2048 if id == 16",
	"hist:keys=skbaddr.hex:vals=hitcount,len:sort=hitcount:size=2048",
	"hist:name=foo:keys=skbaddr.hex:vals=hitcount,len:sort=hitcount:size=2048",
}

func TestParseHistKernelLines(t *testing.T) {
	for _, line := range histKernelLines {
		spec, err := ParseHist("hist", line)
		if err != nil {
			t.Errorf("ParseHist(%q) = %v", line, err)
			continue
		}
		if got := spec.String(); got != line {
			t.Errorf("ParseHist(%q).String() = %q, want the same", line, got)
		}
	}
}

func TestParseHistString(t *testing.T) {
	tests := []struct{ src, want string }{
		// The user forms of the §6.2 examples.
		{"hist:key=call_site.sym:val=bytes_req:sort=bytes_req.descending",
			"hist:keys=call_site.sym:vals=hitcount,bytes_req:sort=bytes_req.descending:size=2048"},
		{"hist:keys=id.syscall,common_pid.execname:sort=id,hitcount if id == 16",
			"hist:keys=id.syscall,common_pid.execname:vals=hitcount:sort=id.syscall,hitcount:size=2048 if id == 16"},
		{"hist:keys=skbaddr.hex:vals=len",
			"hist:keys=skbaddr.hex:vals=hitcount,len:sort=hitcount:size=2048"},
		// The brief's example.
		{"hist:keys=common_pid.execname,id.syscall:vals=hitcount,count.hex:sort=hitcount.descending,id:size=100 if id == 1",
			"hist:keys=common_pid.execname,id.syscall:vals=hitcount,count.hex:sort=hitcount.descending,id.syscall:size=128 if id == 1"},
		// Prefix optional, blanks around the whole trimmed.
		{"keys=pid", "hist:keys=pid:vals=hitcount:sort=hitcount:size=2048"},
		{"  hist:keys=pid \n", "hist:keys=pid:vals=hitcount:sort=hitcount:size=2048"},
		{"hist: keys=pid", "hist:keys=pid:vals=hitcount:sort=hitcount:size=2048"},
		{"hist keys=pid", "hist:keys=pid:vals=hitcount:sort=hitcount:size=2048"},
		// Keyword forms.
		{"hist:keys=a:values=b", "hist:keys=a:vals=hitcount,b:sort=hitcount:size=2048"},
		{"hist:vals=b:key=a", "hist:keys=a:vals=hitcount,b:sort=hitcount:size=2048"},
		// hitcount de-duplicated; its percent and graph forms kept.
		{"hist:keys=a:vals=hitcount,b,hitcount", "hist:keys=a:vals=hitcount,b:sort=hitcount:size=2048"},
		{"hist:keys=a:vals=hitcount,hitcount.percent,b.graph",
			"hist:keys=a:vals=hitcount,hitcount.percent,b.graph:sort=hitcount:size=2048"},
		// nohitcount and NOHC.
		{"hist:keys=a:vals=hitcount.percent:nohitcount",
			"hist:keys=a:vals=hitcount.percent:sort=hitcount:size=2048:nohitcount"},
		{"hist:keys=a:vals=b,c:NOHC", "hist:keys=a:vals=b,c:sort=hitcount:size=2048:nohitcount"},
		// Legacy names.
		{"hist:keys=cpu,CPU", "hist:keys=common_cpu,common_cpu:vals=hitcount:sort=hitcount:size=2048"},
		{"hist:keys=stacktrace:sort=STACKTRACE",
			"hist:keys=common_stacktrace:vals=hitcount:sort=common_stacktrace:size=2048"},
		{"hist:keys=common_stacktrace", "hist:keys=common_stacktrace:vals=hitcount:sort=hitcount:size=2048"},
		{"hist:keys=stack.stacktrace", "hist:keys=stack.stacktrace:vals=hitcount:sort=hitcount:size=2048"},
		// Key modifiers.
		{"hist:keys=a.hex,b.sym,c.sym-offset", "hist:keys=a.hex,b.sym,c.sym-offset:vals=hitcount:sort=hitcount:size=2048"},
		{"hist:keys=a.log2,b.bucket=0x10,c.buckets=010",
			"hist:keys=a.log2,b.buckets=16,c.buckets=8:vals=hitcount:sort=hitcount:size=2048"},
		{"hist:keys=common_pid.execname:vals=common_pid.execname",
			"hist:keys=common_pid.execname:vals=hitcount,common_pid.execname:sort=hitcount:size=2048"},
		// Sort: default hitcount, .ascending never printed, a sort field
		// printed with its modifier, values searched before keys.
		{"hist:keys=a:sort=hitcount.ascending", "hist:keys=a:vals=hitcount:sort=hitcount:size=2048"},
		{"hist:keys=lat.log2:sort=lat.descending,hitcount.descending",
			"hist:keys=lat.log2:vals=hitcount:sort=lat.log2.descending,hitcount.descending:size=2048"},
		{"hist:keys=lat.buckets=10:sort=lat.buckets=0xa.descending",
			"hist:keys=lat.buckets=10:vals=hitcount:sort=lat.buckets=10.descending:size=2048"},
		{"hist:keys=b.log2:vals=b.hex:sort=b", "hist:keys=b.log2:vals=hitcount,b.hex:sort=b.hex:size=2048"},
		{"hist:keys=a:vals=hitcount.graph:sort=hitcount", "hist:keys=a:vals=hitcount,hitcount.graph:sort=hitcount:size=2048"},
		{"hist:keys=cpu:sort=cpu.ascending", "hist:keys=common_cpu:vals=hitcount:sort=common_cpu:size=2048"},
		// Size: base auto-detect, the effective power of two printed.
		{"hist:keys=a:size=65", "hist:keys=a:vals=hitcount:sort=hitcount:size=128"},
		{"hist:keys=a:size=0x20000", "hist:keys=a:vals=hitcount:sort=hitcount:size=131072"},
		{"hist:keys=a:size=0400", "hist:keys=a:vals=hitcount:sort=hitcount:size=256"},
		// common_timestamp: :clock= follows size=, mono unless given.
		{"hist:keys=common_timestamp", "hist:keys=common_timestamp:vals=hitcount:sort=hitcount:size=2048:clock=mono"},
		{"hist:keys=a:vals=common_timestamp.usecs:clock=boot:nohitcount",
			"hist:keys=a:vals=common_timestamp.usecs:sort=hitcount:size=2048:clock=boot:nohitcount"},
		// Expressions: the kernel's text, constants in decimal, no parentheses
		// but the unary -(...).
		{"hist:keys=a:vals=b-c", "hist:keys=a:vals=hitcount,b-c:sort=hitcount:size=2048"},
		{"hist:keys=a/0x10:vals=b*010+c", "hist:keys=a/16:vals=hitcount,b*8+c:sort=hitcount:size=2048"},
		{"hist:keys=-(a-b):vals=common_timestamp.usecs-common_timestamp.usecs",
			"hist:keys=-(a-b):vals=hitcount,common_timestamp.usecs-common_timestamp.usecs:sort=hitcount:size=2048:clock=mono"},
		{"hist:keys=b.sym-offset", "hist:keys=b.sym-offset:vals=hitcount:sort=hitcount:size=2048"},
		// Filter: the text after "if " as typed, trailing blanks dropped.
		{"hist:keys=a if  a==1 ", "hist:keys=a:vals=hitcount:sort=hitcount:size=2048 if  a==1"},
		{"hist:keys=a\tif\ta == 1 && b != 2", "hist:keys=a:vals=hitcount:sort=hitcount:size=2048 if a == 1 && b != 2"},
		{"hist:keys=diff if a > 1", "hist:keys=diff:vals=hitcount:sort=hitcount:size=2048 if a > 1"},
		{"hist:keys=a:size=256 if b < 2", "hist:keys=a:vals=hitcount:sort=hitcount:size=256 if b < 2"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			spec, err := ParseHist("hist", tt.src)
			if err != nil {
				t.Fatalf("ParseHist(%q) = %v", tt.src, err)
			}
			if got := spec.String(); got != tt.want {
				t.Errorf("ParseHist(%q).String() = %q, want %q", tt.src, got, tt.want)
			}
			again, err := ParseHist("hist", spec.String())
			if err != nil || again.String() != tt.want {
				t.Errorf("ParseHist(%q) = %v, %v, want %q", spec.String(), again, err, tt.want)
			}
		})
	}
}

func TestParseHistSpec(t *testing.T) {
	src := "hist:keys=common_pid.execname,id.syscall:vals=hitcount,count.hex:sort=hitcount.descending,id:size=100 if id == 1"
	spec, err := ParseHist("hist", src)
	if err != nil {
		t.Fatalf("ParseHist(%q) = %v", src, err)
	}
	want := &HistSpec{
		Src: src,
		Keys: []HistField{
			{Name: "common_pid", Mod: ModExecname, Off: 10, End: 29},
			{Name: "id", Mod: ModSyscall, Off: 30, End: 40},
		},
		Vals: []HistField{{Name: "count", Mod: ModHex, Off: 55, End: 64}},
		Sort: []SortKey{
			{Name: "hitcount", Descending: true, Off: 70, End: 89},
			{Name: "id", Off: 90, End: 92},
		},
		Size:       100,
		Filter:     spec.Filter,
		FilterText: "id == 1",
		FilterOff:  105,
		srcName:    "hist",
	}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("ParseHist(%q) = %+v, want %+v", src, spec, want)
	}
	for _, f := range append(spec.Keys, spec.Vals...) {
		if got := src[f.Off:f.End]; got != f.String() {
			t.Errorf("field %v spans %q", f, got)
		}
	}
	pred, ok := spec.Filter.(*Pred)
	if !ok || src[pred.FieldOff:pred.FieldEnd] != "id" || src[pred.Value.Off:pred.Value.End] != "1" {
		t.Errorf("ParseHist(%q).Filter = %#v, want id == 1 with offsets into src", src, spec.Filter)
	}
	if spec.EffectiveSize() != 128 {
		t.Errorf("EffectiveSize() = %d, want 128", spec.EffectiveSize())
	}
}

func TestParseHistFlags(t *testing.T) {
	spec, err := ParseHist("hist", "hist:keys=a:NOHC:vals=common_timestamp:clock= mono ")
	if err != nil {
		t.Fatal(err)
	}
	if !spec.NoHitcount || spec.Clock != "mono" {
		t.Errorf("ParseHist() = %+v, want nohitcount, clock mono", spec)
	}
}

// TestParseHistPause checks that pause starts a hist paused and cont (or
// continue) counting, neither shown in its description: the kernel lists
// the state as " [paused]" or " [active]" after it.
func TestParseHistPause(t *testing.T) {
	for _, tt := range []struct {
		src         string
		pause, cont bool
	}{
		{"hist:keys=a", false, false},
		{"hist:keys=a:pause", true, false},
		{"hist:pause:keys=a if a == 1", true, false},
		{"hist:keys=a:cont:size=256", false, true},
		{"hist:keys=a:continue", false, true},
	} {
		spec, err := ParseHist("hist", tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if spec.Pause != tt.pause || spec.Cont != tt.cont {
			t.Errorf("%s: pause %v cont %v, want %v %v", tt.src, spec.Pause, spec.Cont, tt.pause, tt.cont)
		}
		if s := spec.String(); strings.Contains(s, "pause") || strings.Contains(s, "cont") {
			t.Errorf("%s: description %q shows the state", tt.src, s)
		}
	}
}

// TestParseHistRefused checks that the kernel's attributes gtrace cannot
// honour are refused, with the caret on the attribute and a hint saying
// what to do instead, rather than accepted and ignored.
func TestParseHistRefused(t *testing.T) {
	tests := []struct {
		src, msg, hint string
		off, end       int
	}{
		{"hist:keys=a:clear if b == 1", "clear empties a hist already there", "--interval D --clear", 12, 17},
		{"hist:clear:keys=a", "clear empties a hist already there", "a hist of gtrace starts empty", 5, 10},
		{"hist:keys=a:pause:cont", "cont after pause or cont", "give one of them", 18, 22},
		{"hist:keys=a:cont:pause", "pause after pause or cont", "give one of them", 17, 22},
		{"hist:pause:keys=a:pause", "pause after pause or cont", "give one of them", 18, 23},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			spec, err := ParseHist("hist", tt.src)
			var e *Error
			if !errors.As(err, &e) || spec != nil {
				t.Fatalf("ParseHist(%q) = %v, %v, want *Error %q", tt.src, spec, err, tt.msg)
			}
			if e.Msg != tt.msg || e.Off != tt.off || e.End != tt.end || !strings.Contains(e.Hint, tt.hint) {
				t.Errorf("ParseHist(%q) = %q at %d:%d (hint %q), want %q at %d:%d (hint with %q)",
					tt.src, e.Msg, e.Off, e.End, e.Hint, tt.msg, tt.off, tt.end, tt.hint)
			}
		})
	}
}

func TestEffectiveSize(t *testing.T) {
	for _, tt := range []struct{ size, want int }{
		{0, 2048}, {65, 128}, {128, 128}, {129, 256}, {2048, 2048}, {100000, 131072}, {131072, 131072},
	} {
		if got := (&HistSpec{Size: tt.size}).EffectiveSize(); got != tt.want {
			t.Errorf("HistSpec{Size: %d}.EffectiveSize() = %d, want %d", tt.size, got, tt.want)
		}
	}
}

func TestWrittenName(t *testing.T) {
	src := "hist:keys=cpu.hex,STACKTRACE,pid"
	spec, err := ParseHist("hist", src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range spec.Keys {
		got = append(got, k.Name+"/"+spec.WrittenName(k))
	}
	want := []string{"common_cpu/cpu", "common_stacktrace/STACKTRACE", "pid/pid"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("names/written names = %q, want %q", got, want)
	}
}

// errorTest is an input that a parser rejects, with the message and the
// exact offsets of the error.
type errorTest struct {
	src      string
	msg      string
	off, end int
}

// checkErrors runs parse, a parser of sources named name, on each input of
// tests, and requires its *Error (message, offsets, source and name) and
// no result besides.
func checkErrors[T any](t *testing.T, name string, parse func(name, src string) (*T, error), tests []errorTest) {
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := parse(name, tt.src)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("parse(%q) = %v, %v, want *Error %q", tt.src, got, err, tt.msg)
			}
			if got != nil {
				t.Errorf("parse(%q) = %v with error %v, want nil", tt.src, got, err)
			}
			if e.Msg != tt.msg || e.Off != tt.off || e.End != tt.end || e.Src != tt.src || e.Name != name {
				t.Errorf("parse(%q) = %q at %d:%d of %q (%s), want %q at %d:%d",
					tt.src, e.Msg, e.Off, e.End, e.Src, e.Name, tt.msg, tt.off, tt.end)
			}
		})
	}
}

// histErrorTests are inputs that ParseHist rejects.
var histErrorTests = []errorTest{
	// Attributes.
	{"hist:keys=pid:bogus", `unknown attribute "bogus"`, 14, 19},
	{"hist:keys=pid:pasue", `unknown attribute "pasue"`, 14, 19},
	{"hist:keys=pid:=x", `malformed assignment`, 14, 16},
	{"hist:keys=pid:vals=$lat.hex", "invalid field modifier", 23, 27},
	{"hist:keys=$x", "using variable references in keys not supported", 10, 12},
	{"hist:keys=pid:onmax($x).snapshot():onmax($x).snapshot():onmax($x).snapshot():onmax($x).snapshot():onmax($x).snapshot():onmax($x).snapshot():onmax($x).snapshot():onmax($x).snapshot():onmax($x).snapshot()", "too many actions (max = 8)", 182, 202},
	{"hist:keys=pid::sort=pid", "empty attribute", 14, 14},
	{"hist:keys=pid:", "empty attribute", 14, 14},
	{"hist:keys=pid:keys=comm", "keys= given more than once", 14, 19},
	{"hist:key=pid:vals=a:val=b", "vals= given more than once", 20, 24},
	{"hist:keys=", `missing value after "keys="`, 5, 10},
	{"hist:keys=a:sort=", `missing value after "sort="`, 12, 17},
	{"hist:keys=a:clock= ", `missing value after "clock="`, 12, 18},
	{"hist:keys=a:name=a b", `invalid name "a b"`, 17, 20},
	{"hist:keys=a:name=", `missing value after "name="`, 12, 17},
	{"hist:name=x:keys=a:name=y", "name= given more than once", 19, 24},
	{"hist:vals=x", "missing keys", 5, 11},
	{"hist:", "missing keys", 5, 5},
	{"", "missing keys", 0, 0},
	{"hist", "missing keys", 4, 4},
	{"histo:keys=a", `unknown attribute "histo"`, 0, 5},
	{"hist:pause if a == 1", "missing keys", 5, 10},
	{"hist:vals=a:clear", "clear empties a hist already there", 12, 17},
	// Not supported yet.
	{"hist:keys=pid:vals=a.sym-offset-b", "invalid field modifier", 21, 31},
	{"hist:keys=pid:vals=a.hex*2", "invalid field modifier", 21, 24},
	{"hist:keys=pid:vals=10", "a constant alone cannot be a value", 19, 21},
	{"hist:keys=pid:vals=a+b+c+d+e", "too many subexpressions (3 max)", 20, 21},
	{"hist:keys=-(-(a))", "unary minus not supported in sub-expressions", 12, 13},
	{"hist:keys=-a", "invalid unary minus", 10, 12},
	{"hist:keys=pid:vals=a/0", "division by zero", 21, 22},
	{"hist:keys=pid:vals=a/00", "division by zero", 21, 23},
	{"hist:keys=pid:vals=a+1x", "expecting numeric literal", 21, 23},
	{"hist:keys=pid:vals=a+", "missing operand", 21, 21},
	{"hist:keys=pid:vals=hitcount*2", "hitcount cannot be an operand in an expression", 19, 27},
	{"hist:keys=pid:vals=common_timestamp.usecs-common_timestamp", "timestamp units in expression don't match", 19, 58},
	{"hist:keys=pid.usecs", "invalid field modifier", 14, 19},
	{"hist:keys=pid:clock=mono", "clock= applies only to a hist that uses common_timestamp", 14, 24},
	{"hist:keys=common_timestamp:clock=glob", `unknown clock "glob"`, 33, 37},
	// Fields.
	{"hist:keys=pid,,comm", "empty key", 14, 14},
	{"hist:keys=pid:vals=a,", "empty value", 21, 21},
	{"hist:keys=pid :vals=a", `invalid field name "pid "`, 10, 14},
	{"hist:keys=p@d", `invalid field name "p@d"`, 10, 13},
	{"hist:keys=.hex", "missing field name before '.'", 10, 11},
	{"hist:keys=hitcount", "hitcount cannot be a key", 10, 18},
	{"hist:keys=a:vals=stacktrace", "common_stacktrace cannot be a value", 17, 27},
	{"hist:keys=a,b,c,d,e", "too many keys (max = 3)", 16, 19},
	{"hist:keys=a:vals=b,hitcount,c,d", "too many values (max = 2 besides hitcount)", 30, 31},
	{"hist:keys=a:vals=hitcount.percent,c,d", "too many values (max = 2 besides hitcount)", 36, 37},
	// Modifiers (grammar §4.3).
	{"hist:keys=pid.bogus", "invalid field modifier", 14, 19},
	{"hist:keys=pid.", "invalid field modifier", 13, 14},
	{"hist:keys=pid.hex.hex", "invalid field modifier", 14, 21},
	{"hist:keys=pid.execname", "invalid field modifier", 14, 22},
	{"hist:keys=pid.percent", "invalid field modifier", 14, 21},
	{"hist:keys=pid.graph", "invalid field modifier", 14, 19},
	{"hist:keys=pid.usecs", "invalid field modifier", 14, 19},
	{"hist:keys=pid.buckets=0", "invalid field modifier", 14, 23},
	{"hist:keys=pid.buckets=x", "invalid field modifier", 14, 23},
	{"hist:keys=pid.buckets", "invalid field modifier", 14, 21},
	{"hist:keys=pid.buckets=99999999999999999999", "invalid field modifier", 14, 42},
	{"hist:keys=stacktrace.hex", "invalid field modifier", 21, 24},
	{"hist:keys=a:vals=b.log2", "invalid field modifier", 19, 23},
	{"hist:keys=a:vals=b.sym", "invalid field modifier", 19, 22},
	{"hist:keys=a:vals=b.sym-offset", "invalid field modifier", 19, 29},
	{"hist:keys=a:vals=b.syscall", "invalid field modifier", 19, 26},
	{"hist:keys=a:vals=b.buckets=10", "invalid field modifier", 19, 29},
	{"hist:keys=a:vals=b.stacktrace", "invalid field modifier", 19, 29},
	{"hist:keys=a:vals=b.execname", "invalid field modifier", 19, 27},
	{"hist:keys=a:vals=hitcount.hex", "invalid field modifier", 26, 29},
	// Sort.
	{"hist:keys=a,b:sort=a,b,hitcount", "too many sort fields (max = 2)", 23, 31},
	{"hist:keys=a:sort=a,,", "empty sort field", 19, 19},
	{"hist:keys=a:sort=.descending", "empty sort field", 17, 28},
	{"hist:keys=pid,pi:sort=pi,pd", "sort field must be a key or a val", 25, 27},
	{"hist:keys=common_pid:sort=common_pid,^junk", "sort field must be a key or a val", 37, 42},
	{"hist:keys=common_pid:sort=common_pid.^junk", "invalid sort modifier", 37, 42},
	{"hist:keys=a:sort=a.", "invalid sort modifier", 18, 19},
	{"hist:keys=a:sort=a..descending", "invalid sort modifier", 18, 19},
	{"hist:keys=a:sort=hitcount.percent", "invalid sort modifier", 26, 33},
	{"hist:keys=a.log2:sort=a.hex", "invalid sort modifier", 24, 27},
	{"hist:keys=a.buckets=10:sort=a.buckets=20.descending", "invalid sort modifier", 30, 40},
	{"hist:keys=a:sort=a.descending.ascending", "invalid sort modifier", 19, 29},
	// Size.
	{"hist:keys=a:size=abc", `invalid size "abc"`, 17, 20},
	{"hist:keys=a:size=-1", `invalid size "-1"`, 17, 19},
	{"hist:keys=a:size=1_000", `invalid size "1_000"`, 17, 22},
	{"hist:keys=a:size=09", `invalid size "09"`, 17, 19},
	{"hist:keys=a:size=64", "size 64 out of range", 17, 19},
	{"hist:keys=a:size=0", "size 0 out of range", 17, 18},
	{"hist:keys=a:size=131073", "size 131073 out of range", 17, 23},
	{"hist:keys=a:size=0xffffffffffffffff", "size 0xffffffffffffffff out of range", 17, 35},
	// nohitcount.
	{"hist:keys=a:nohitcount", "nohitcount requires a value other than hitcount", 12, 22},
	{"hist:keys=a:vals=hitcount:NOHC", "nohitcount requires a value other than hitcount", 26, 30},
	// Filter.
	{"hist:keys=a if", `missing filter after "if"`, 12, 14},
	{"hist:keys=a if \t ", `missing filter after "if"`, 12, 14},
}

func TestParseHistErrors(t *testing.T) {
	checkErrors(t, "hist", ParseHist, histErrorTests)
}

func TestParseHistFilterError(t *testing.T) {
	for _, src := range []string{
		"hist:keys=a if a ==",
		"hist:keys=a if  (a == 1",
		"hist:keys=a:vals=b if a == 1 &&& b",
		"hist:keys=a\tif\t(b == 1",
	} {
		_, err := ParseHist("hist", src)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("ParseHist(%q) = %v, want *Error", src, err)
		}
		i := strings.Index(src, "if") + 3
		_, ferr := ParseFilter("hist", src[i:])
		var fe *Error
		if !errors.As(ferr, &fe) {
			t.Fatalf("ParseFilter(%q) = %v, want *Error", src[i:], ferr)
		}
		if e.Msg != fe.Msg || e.Hint != fe.Hint || e.Off != fe.Off+i || e.End != fe.End+i || e.Src != src {
			t.Errorf("ParseHist(%q) = %q at %d:%d, want %q at %d:%d", src, e.Msg, e.Off, e.End, fe.Msg, fe.Off+i, fe.End+i)
		}
	}
}

func TestHistFromFlags(t *testing.T) {
	tests := []struct {
		flags HistFlags
		want  string
	}{
		{HistFlags{Keys: []string{"common_pid.execname", "id.syscall"}, Vals: []string{"count"},
			Sort: []string{"hitcount.descending"}, Size: "256", Filter: "id == 1"},
			"hist:keys=common_pid.execname,id.syscall:vals=hitcount,count:sort=hitcount.descending:size=256 if id == 1"},
		{HistFlags{Keys: []string{"id"}}, "hist:keys=id:vals=hitcount:sort=hitcount:size=2048"},
		{HistFlags{Keys: []string{"id.syscall"}, Sort: []string{"id", "hitcount.descending"}, Filter: " "},
			"hist:keys=id.syscall:vals=hitcount:sort=id.syscall,hitcount.descending:size=2048"},
		{HistFlags{Keys: []string{"lat.log2"}, Vals: []string{"hitcount.percent", "x.graph"}},
			"hist:keys=lat.log2:vals=hitcount,hitcount.percent,x.graph:sort=hitcount:size=2048"},
	}
	for _, tt := range tests {
		spec, err := HistFromFlags(tt.flags)
		if err != nil {
			t.Errorf("HistFromFlags(%+v) = %v", tt.flags, err)
			continue
		}
		if got := spec.String(); got != tt.want {
			t.Errorf("HistFromFlags(%+v).String() = %q, want %q", tt.flags, got, tt.want)
		}
		again, err := ParseHist("hist", spec.Src)
		spec.segs = nil // only the flag form knows where its flags are
		if err != nil || !reflect.DeepEqual(again, spec) {
			t.Errorf("ParseHist(%q) = %+v, %v, want %+v", spec.Src, again, err, spec)
		}
	}
}

func TestHistFromFlagsErrors(t *testing.T) {
	tests := []struct {
		flags          HistFlags
		name, src, msg string
		off, end       int
	}{
		{HistFlags{}, "--keys", "", "missing keys", 0, 0},
		{HistFlags{Keys: []string{""}}, "--keys", "", "missing keys", 0, 0},
		{HistFlags{Keys: []string{"pid", "id.sycall"}}, "--keys", "pid,id.sycall", "invalid field modifier", 7, 13},
		{HistFlags{Keys: []string{"pid", ""}}, "--keys", "pid,", "empty key", 4, 4},
		{HistFlags{Keys: []string{"a", "b", "c", "d"}}, "--keys", "a,b,c,d", "too many keys (max = 3)", 6, 7},
		{HistFlags{Keys: []string{"pid", " comm"}}, "--keys", "pid, comm", `unexpected " "`, 4, 5},
		{HistFlags{Keys: []string{"pid:vals=x"}}, "--keys", "pid:vals=x", `unexpected ":"`, 3, 4},
		{HistFlags{Keys: []string{"pid if x"}}, "--keys", "pid if x", `unexpected " "`, 3, 4},
		{HistFlags{Keys: []string{"pid"}, Vals: []string{"a.log2"}}, "--vals", "a.log2", "invalid field modifier", 2, 6},
		{HistFlags{Keys: []string{"pid"}, Sort: []string{"pid", "pd"}}, "--sort", "pid,pd", "sort field must be a key or a val", 4, 6},
		{HistFlags{Keys: []string{"pid"}, Sort: []string{"pid.up"}}, "--sort", "pid.up", "invalid sort modifier", 4, 6},
		{HistFlags{Keys: []string{"a", "b"}, Sort: []string{"a", "b", "hitcount"}}, "--sort", "a,b,hitcount", "too many sort fields (max = 2)", 4, 12},
		{HistFlags{Keys: []string{"pid"}, Size: "7"}, "--size", "7", "size 7 out of range", 0, 1},
		{HistFlags{Keys: []string{"pid"}, Size: "-256"}, "--size", "-256", `invalid size "-256"`, 0, 4},
		{HistFlags{Keys: []string{"pid"}, Size: "0"}, "--size", "0", "size 0 out of range", 0, 1},
		{HistFlags{Keys: []string{"pid"}, Size: "1:vals=x"}, "--size", "1:vals=x", `unexpected ":"`, 1, 2},
		{HistFlags{Keys: []string{"pid"}, Name: "a b"}, "--name", "a b", `unexpected " "`, 1, 2},
		{HistFlags{Keys: []string{"pid"}, Name: "a:keys=x"}, "--name", "a:keys=x", `unexpected ":"`, 1, 2},
	}
	for _, tt := range tests {
		spec, err := HistFromFlags(tt.flags)
		var e *Error
		if !errors.As(err, &e) || spec != nil {
			t.Errorf("HistFromFlags(%+v) = %v, %v, want *Error", tt.flags, spec, err)
			continue
		}
		if e.Name != tt.name || e.Src != tt.src || e.Msg != tt.msg || e.Off != tt.off || e.End != tt.end {
			t.Errorf("HistFromFlags(%+v) = %s %q at %d:%d of %q, want %s %q at %d:%d of %q",
				tt.flags, e.Name, e.Msg, e.Off, e.End, e.Src, tt.name, tt.msg, tt.off, tt.end, tt.src)
		}
	}
}

func TestHistFromFlagsFilterError(t *testing.T) {
	filter := "pid == 1 &&"
	_, err := HistFromFlags(HistFlags{Keys: []string{"pid"}, Filter: filter})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("HistFromFlags() = %v, want *Error", err)
	}
	_, ferr := ParseFilter("--filter", filter)
	var fe *Error
	if !errors.As(ferr, &fe) {
		t.Fatalf("ParseFilter(%q) = %v, want *Error", filter, ferr)
	}
	e.Hint, fe.Hint = "", ""
	if !reflect.DeepEqual(e, fe) {
		t.Errorf("HistFromFlags() = %#v, want %#v", e, fe)
	}
}

// TestParseHistGolden parses testdata/hist/*.in and compares the
// canonical string, or the error with its caret, with the .golden file.
// go test -update rewrites the golden files.
func TestParseHistGolden(t *testing.T) {
	goldenFiles(t, "hist", func(t *testing.T, src string) (string, string) {
		what := fmt.Sprintf("ParseHist(%q)", src)
		spec, err := ParseHist("hist", strings.TrimSuffix(src, "\n"))
		if err != nil {
			return fmt.Sprintf("%+v\n", err), what
		}
		return spec.String() + "\n", what
	})
}
