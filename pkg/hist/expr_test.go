package hist

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

// TestEngineExpressions checks expressions and common_timestamp in the
// file engine: exact division (the kernel gives 100/1000 = 1), -1 for a
// division by zero, signed division and printing, the kernel's operator
// order, and .usecs rounding to the nearest microsecond.
func TestEngineExpressions(t *testing.T) {
	for _, tc := range []struct {
		hist  string
		ts    uint64
		id    int64
		ret   int64
		entry string
	}{
		{"keys=id/1000:vals=ret/1000", 0, 100, 1999, "{ id/1000:          0 } hitcount:          1  ret/1000:          1"},
		{"keys=id:vals=id/ret", 0, 7, 0, "{ id:          7 } hitcount:          1  id/ret:         -1"},
		{"keys=ret/2:vals=ret*3-id", 0, 4, -7, "{ ret/2:         -3 } hitcount:          1  ret*3-id:        -25"},
		{"keys=id-ret-1:vals=id*2+ret*3", 0, 10, 2, "{ id-ret-1:          7 } hitcount:          1  id*2+ret*3:         26"},
		{"keys=-(id-ret):vals=id/2/2", 0, 2, 5, "{ -(id-ret):          3 } hitcount:          1  id/2/2:          0"},
		{"keys=id:vals=common_timestamp.usecs", 1499, 1, 0, "{ id:          1 } hitcount:          1  common_timestamp:          1"},
		{"keys=common_timestamp.usecs", 1500, 1, 0, "{ common_timestamp:          2 } hitcount:          1"},
		{"keys=common_timestamp/1000+id", 123456, 1, 0, "{ common_timestamp/1000+id:        124 } hitcount:          1"},
		{"keys=common_cpu*10+common_pid", 0, 0, 0, "{ common_cpu*10+common_pid:         37 } hitcount:          1"},
	} {
		t.Run(tc.hist, func(t *testing.T) {
			spec, err := parse.ParseHist("hist", tc.hist)
			if err != nil {
				t.Fatal(err)
			}
			e, err := NewEngine(spec, testutil.Format(t, "raw_syscalls:sys_exit"), nil)
			if err != nil {
				t.Fatal(err)
			}
			e.AddAt(sysExit(t, 7, tc.id, tc.ret), 3, "sh", tc.ts)
			var b strings.Builder
			if err := WriteText(&b, []*Table{e.Table()}, []string{spec.String()}, Resolver{}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "\n"+tc.entry+"\n") {
				t.Errorf("hist:\n%s\nwant the entry line\n%s", b.String(), tc.entry)
			}
		})
	}
}

// TestPlanExpressionErrors checks the errors that need the event's format.
func TestPlanExpressionErrors(t *testing.T) {
	for _, tc := range []struct {
		event, hist, msg string
		off, end         int
	}{
		{"sched:sched_switch", "keys=prev_comm+1", "string type can not be an operand in expression", 5, 14},
		{"sched:sched_switch", "keys=prev_pid:vals=comm*2", "string type can not be an operand in expression", 19, 23},
		{"sched:sched_switch", "keys=prev_pid:vals=nosuch-1", `unknown field "nosuch" in sched:sched_switch`, 19, 25},
		{"sched:sched_switch", "keys=common_flags-1", `field "common_flags" is not available to BPF programs (only common_pid of the common header is)`, 5, 17},
	} {
		spec, err := parse.ParseHist("hist", tc.hist)
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewPlan(spec, testutil.Format(t, tc.event))
		pe, ok := err.(*parse.Error)
		if !ok || pe.Msg != tc.msg || pe.Off != tc.off || pe.End != tc.end {
			t.Errorf("NewPlan(%q) = %v, want %q at %d:%d", tc.hist, err, tc.msg, tc.off, tc.end)
		}
	}
}

// TestBuildClock checks that a live hist's common_timestamp is in a clock
// BPF reads, and that other clocks are refused at clock=.
func TestBuildClock(t *testing.T) {
	f := testutil.Format(t, "raw_syscalls:sys_exit")
	for clock, want := range map[string]string{"": "mono", "mono": "mono", "boot": "boot", "tai": "tai"} {
		src := "keys=common_timestamp"
		if clock != "" {
			src += ":clock=" + clock
		}
		spec, err := parse.ParseHist("hist", src)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Build(spec, f, LiveOptions{})
		if err != nil {
			t.Fatalf("Build(%q) = %v", src, err)
		}
		if got := c.Layout.Clock.String(); got != want {
			t.Errorf("Build(%q) clock %s, want %s", src, got, want)
		}
	}
	spec, err := parse.ParseHist("hist", "keys=id:vals=common_timestamp:clock=global")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(spec, f, LiveOptions{})
	if pe, ok := err.(*parse.Error); !ok || pe.Msg != `clock "global" cannot be read from BPF` || spec.Src[pe.Off:pe.End] != "clock=global" {
		t.Errorf("Build(clock=global) = %v", err)
	}
}

// TestRunFileTimestamp checks that common_timestamp over a file is the
// records' time stamp, in the file's clock, which the hist must name.
func TestRunFileTimestamp(t *testing.T) {
	f := writeFile(t, 1, []fileRec{{cpu: 0, ts: 1000, data: sysEnter(t, 1, 1)}, {cpu: 0, ts: 2600, data: sysEnter(t, 1, 1)}})
	run := func(hist string) (*Table, error) {
		spec, err := parse.ParseHist("hist", hist)
		if err != nil {
			t.Fatal(err)
		}
		return RunFile(context.Background(), spec, f, "sys_enter", FileOptions{})
	}
	if _, err := run("keys=common_timestamp"); err == nil || err.Error() != "common_timestamp: the trace.dat file was recorded with clock local: add :clock=local to the hist" {
		t.Errorf("RunFile without clock= = %v", err)
	}
	_, err := run("keys=id:vals=common_timestamp:clock=mono")
	var pe *parse.Error
	if !errors.As(err, &pe) || pe.Msg != "the trace.dat file was recorded with clock local" || pe.Src[pe.Off:pe.End] != "clock=mono" {
		t.Errorf("RunFile with another clock = %v", err)
	}
	tbl, err := run("keys=id:vals=common_timestamp.usecs,common_timestamp-1000:clock=local")
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Entries) != 1 || tbl.Entries[0].Vals[0] != 1+3 || tbl.Entries[0].Vals[1] != 0+1600 {
		t.Errorf("entries %+v, want one with sums 4 and 1600", tbl.Entries)
	}
}

// TestStringPointerKey checks that a char * key is a string key read in
// BPF (from user memory for a syscall's) and refused over records, which
// do not hold the string; with a modifier it is the pointer, a number.
func TestStringPointerKey(t *testing.T) {
	f := testutil.Format(t, "syscalls:sys_enter_openat")
	spec, err := parse.ParseHist("hist", "keys=filename")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(spec, f)
	if err != nil {
		t.Fatal(err)
	}
	if k, s := p.Keys[0], p.Layout.Keys[0]; k.Kind != KeyString || s.Size != 256 || !s.User {
		t.Errorf("key %+v, slot %+v: want a string key of 256 bytes read from user memory", k, s)
	}
	_, err = NewEngine(spec, f, nil)
	var pe *parse.Error
	if !errors.As(err, &pe) || pe.Msg != `"filename" is a char *: the string it points to is not in the records` || pe.Src[pe.Off:pe.End] != "filename" {
		t.Errorf("NewEngine(keys=filename) = %v", err)
	}
	spec, err = parse.ParseHist("hist", "keys=filename.hex")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := NewPlan(spec, f); err != nil || p.Keys[0].Kind != KeyNumber {
		t.Errorf("NewPlan(keys=filename.hex) = %v: want a number key", err)
	}
}

// TestSortSignedValue checks that a signed sum sorts as it prints.
func TestSortSignedValue(t *testing.T) {
	spec, err := parse.ParseHist("hist", "keys=id:vals=ret*2:sort=ret*2")
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(spec, testutil.Format(t, "raw_syscalls:sys_exit"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, ret := range []int64{3, -5, 0, -1} {
		e.Add(sysExit(t, 1, int64(id), ret), 0, "sh")
	}
	tbl := e.Table()
	tbl.Sort()
	var got []int64
	for _, en := range tbl.Entries {
		got = append(got, int64(en.Vals[0]))
	}
	if want := []int64{-10, -2, 0, 6}; !slices.Equal(got, want) {
		t.Errorf("sorted sums %v, want %v", got, want)
	}
}
