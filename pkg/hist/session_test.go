package hist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

// sessRec is one record of a session test: an event, its time stamp in
// ns and its fields by name (numbers, or strings for char arrays).
type sessRec struct {
	event  string
	ts     uint64
	pid    int32
	fields map[string]any
}

// sessRecord builds the raw record of r with the format of its event.
func sessRecord(tb testing.TB, r sessRec) []byte {
	tb.Helper()
	fm := testutil.Format(tb, r.event)
	size := 0
	for _, f := range fm.Fields {
		size = max(size, f.Offset+f.Size)
	}
	b := header(uint16(fm.ID), r.pid, size)
	for name, v := range r.fields {
		f := fm.Field(name)
		if f == nil {
			tb.Fatalf("%s has no field %s", r.event, name)
		}
		switch v := v.(type) {
		case string:
			copy(b[f.Offset:f.Offset+f.Size-1], v)
		case int:
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], uint64(v))
			copy(b[f.Offset:f.Offset+f.Size], n[:])
		}
	}
	return b
}

// newTestSession binds hists ("EVENT hist:..." each) and synthetic event
// definitions, the formats of real events from internal/testutil.
func newTestSession(tb testing.TB, synth []string, hists []string) (*Session, error) {
	tb.Helper()
	return newTestSessionFor(tb, synth, hists, false)
}

// newTestSessionFor is newTestSession for records (live false) or for
// BPF.
func newTestSessionFor(tb testing.TB, synth []string, hists []string, live bool) (*Session, error) {
	tb.Helper()
	var defs []SynthEvent
	for i, src := range synth {
		d, err := parse.ParseSynth("--synth", src)
		if err != nil {
			tb.Fatal(err)
		}
		defs = append(defs, SynthEvent{Def: d, Format: d.Format(0xffff - i)})
	}
	var hs []SessionHist
	for _, h := range hists {
		ev, src, _ := strings.Cut(h, " ")
		spec, err := parse.ParseHist("hist", src)
		if err != nil {
			tb.Fatal(err)
		}
		var fm *parse.Format
		for _, d := range defs {
			if "synthetic:"+d.Def.Name == ev {
				fm = d.Format
			}
		}
		if fm == nil {
			fm = testutil.Format(tb, ev)
		}
		hs = append(hs, SessionHist{Format: fm, Spec: spec})
	}
	return newSession(hs, defs, nil, live)
}

// sessionText runs the session over recs and returns its hists as text.
func sessionText(tb testing.TB, s *Session, recs []sessRec) string {
	tb.Helper()
	for _, r := range recs {
		s.Add(sessRecord(tb, r), 0, "task", r.ts)
	}
	tables, infos := s.Tables()
	var b bytes.Buffer
	if err := WriteText(&b, tables, infos, Resolver{}); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

func waking(ts uint64, pid int) sessRec {
	return sessRec{event: "sched:sched_waking", ts: ts, pid: 1, fields: map[string]any{"pid": pid, "prio": 120, "comm": fmt.Sprintf("t%d", pid)}}
}

func switchTo(ts uint64, prev, next int) sessRec {
	return sessRec{event: "sched:sched_switch", ts: ts, pid: int32(prev), fields: map[string]any{
		"prev_pid": prev, "prev_prio": 120, "prev_comm": fmt.Sprintf("t%d", prev),
		"next_pid": next, "next_prio": 100 + next%10, "next_comm": fmt.Sprintf("t%d", next),
	}}
}

const wakeupLatency = "wakeup_latency u64 lat; pid_t pid; int prio"

// wakeupRecs: pid 200 woken at 1000 us, on CPU 17 us later, then switched
// to again with no new wakeup (its ts0 was read once: skipped); 201
// woken twice (the second wakeup's time counts), on 5 us later; 300
// switched to, never woken (skipped); 202 woken, on 1 ms later.
var wakeupRecs = []sessRec{
	waking(1_000_000, 200),
	switchTo(1_017_000, 1, 200),
	switchTo(1_020_000, 1, 200),
	waking(2_000_000, 201),
	waking(2_005_000, 201),
	switchTo(2_010_400, 200, 201),
	switchTo(2_500_000, 201, 300),
	waking(3_000_000, 202),
	switchTo(4_000_000, 300, 202),
}

func TestSessionGolden(t *testing.T) {
	for _, c := range []struct {
		name  string
		synth []string
		hists []string
		recs  []sessRec
	}{
		{"wakeup_latency", []string{wakeupLatency}, []string{
			"sched:sched_waking hist:keys=pid:ts0=common_timestamp.usecs",
			"sched:sched_switch hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio)",
			"synthetic:wakeup_latency hist:keys=pid,lat:sort=pid",
			"synthetic:wakeup_latency hist:keys=lat.log2:sort=lat",
		}, wakeupRecs},
		{"trace_keyword_field_var", []string{wakeupLatency}, []string{
			"sched:sched_waking hist:keys=pid:ts0=common_timestamp.usecs",
			"sched:sched_switch hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).trace(wakeup_latency,$wakeup_lat,next_pid,sched.sched_waking.prio)",
			"synthetic:wakeup_latency hist:keys=pid,prio:vals=lat",
		}, wakeupRecs},
		{"onmax_save", nil, []string{
			"sched:sched_waking hist:keys=pid:ts0=common_timestamp.usecs",
			"sched:sched_switch hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmax($wakeup_lat).save(next_comm,prev_pid,prev_prio,prev_comm)",
		}, append(append([]sessRec{}, wakeupRecs...),
			waking(5_000_000, 200), switchTo(5_003_000, 7, 200), // 3 us: below 200's max, 17
			waking(6_000_000, 200), switchTo(6_040_000, 8, 200), // 40 us: the new max, saved with prev 8
		)},
		{"onchange_snapshot", nil, []string{
			"sched:sched_waking hist:keys=pid:ts0=common_timestamp.usecs",
			"sched:sched_switch hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onchange($wakeup_lat).save(prev_pid):onmax($wakeup_lat).snapshot()",
		}, append(append([]sessRec{}, wakeupRecs...),
			waking(5_000_000, 200), switchTo(5_017_000, 7, 200), // 17 again: no change, prev 7 not saved
			waking(6_000_000, 200), switchTo(6_009_000, 8, 200), // 9: a change, saved with prev 8
			waking(7_000_000, 201), switchTo(7_002_000, 9, 201), // 2: a change for 201; no snapshot (17 is the max)
		)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := newTestSession(t, c.synth, c.hists)
			if err != nil {
				t.Fatalf("%+v", err)
			}
			got := sessionText(t, s, c.recs)
			path := filepath.Join("testdata", "session", c.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestSessionSyscallLatency: sys_enter to sys_exit keyed on common_pid,
// the latency of each call, and onmax saving the slowest call's id.
func TestSessionSyscallLatency(t *testing.T) {
	s, err := newTestSession(t, []string{"sys_lat u64 lat; long id"}, []string{
		"raw_syscalls:sys_enter hist:keys=common_pid:t0=common_timestamp",
		"raw_syscalls:sys_exit hist:keys=common_pid:lat=common_timestamp-$t0:onmatch(raw_syscalls.sys_enter).sys_lat($lat,id):onmax($lat).save(id,ret)",
		"synthetic:sys_lat hist:keys=id,lat",
	})
	if err != nil {
		t.Fatalf("%+v", err)
	}
	enter := func(ts uint64, pid int32, id int) sessRec {
		return sessRec{event: "raw_syscalls:sys_enter", ts: ts, pid: pid, fields: map[string]any{"id": id}}
	}
	exit := func(ts uint64, pid int32, id, ret int) sessRec {
		return sessRec{event: "raw_syscalls:sys_exit", ts: ts, pid: pid, fields: map[string]any{"id": id, "ret": ret}}
	}
	got := sessionText(t, s, []sessRec{
		enter(100, 7, 35), enter(150, 8, 0), exit(1_000_100, 7, 35, 0), // nanosleep of 1 ms
		exit(200, 8, 0, 5), exit(300, 8, 0, 5), // the second exit has no enter: skipped
	})
	for _, want := range []string{
		"{ common_pid:          7 } hitcount:          1\n\tmax:    1000000  id:         35  ret:          0\n",
		"{ common_pid:          8 } hitcount:          1\n\tmax:         50  id:          0  ret:          5\n",
		"{ id:         35, lat:    1000000 } hitcount:          1\n",
		"{ id:          0, lat:         50 } hitcount:          1\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

// TestSessionErrors: the binding errors, with the kernel's messages and
// the caret on the token at fault.
func TestSessionErrors(t *testing.T) {
	waking := "sched:sched_waking hist:keys=pid:ts0=common_timestamp.usecs"
	sw := "sched:sched_switch hist:keys=next_pid:lat=common_timestamp.usecs-$ts0"
	syn := []string{wakeupLatency}
	for _, c := range []struct {
		synth []string
		hists []string
		msg   string
		token string // the text under the caret
	}{
		{nil, []string{"sched:sched_switch hist:keys=next_pid:lat=common_timestamp.usecs-$ts1"},
			"couldn't find variable", "$ts1"},
		{nil, []string{waking, "sched:sched_switch hist:keys=next_pid:lat=common_timestamp.usecs-sched.sched_wakeup.$ts0"},
			"couldn't find variable", "sched.sched_wakeup.$ts0"},
		{nil, []string{waking, "raw_syscalls:sys_enter hist:keys=common_pid:ts0=common_timestamp.usecs", sw},
			"variable name not unique, need to use fully qualified name (subsys.event.var) for variable", "$ts0"},
		{nil, []string{waking, "sched:sched_switch hist:keys=next_pid:lat=common_timestamp-$ts0"},
			"timestamp units in expression don't match", "common_timestamp-$ts0"},
		{nil, []string{waking, "sched:sched_switch hist:keys=next_comm:lat=common_timestamp.usecs-$ts0"},
			"the keys of sched:sched_waking's hist do not match this hist's: key 1 is a string (next_comm) against a number (pid)", "$ts0"},
		{nil, []string{waking, "sched:sched_switch hist:keys=next_pid,prev_pid:lat=common_timestamp.usecs-$ts0"},
			"the keys of sched:sched_waking's hist do not match this hist's: 2 keys against 1", "$ts0"},
		{syn, []string{waking, sw + ":onmatch(sched.sched_wakeup).wakeup_latency($lat,next_pid,next_prio)"},
			"matching event histogram not found", "sched.sched_wakeup"},
		{nil, []string{waking, sw + ":onmatch(sched.sched_waking).wakeup_latency($lat,next_pid,next_prio)"},
			"couldn't find synthetic event", "wakeup_latency"},
		{syn, []string{waking, sw + ":onmatch(sched.sched_waking).wakeup_latency($lat,next_pid)"},
			"param count doesn't match synthetic event field count", "onmatch(sched.sched_waking).wakeup_latency($lat,next_pid)"},
		{syn, []string{waking, sw + ":onmatch(sched.sched_waking).wakeup_latency($lat,next_comm,next_prio)"},
			"param type doesn't match synthetic event field type", "next_comm"},
		{syn, []string{waking, sw + ":onmatch(sched.sched_waking).wakeup_latency($lat,next_pid,prev_state)"},
			"param type doesn't match synthetic event field type", "prev_state"},
		// common_pid is an int: from the hist's own event it is a target
		// field variable, which the kernel checks as unsigned against
		// the signed pid_t (6.12 refuses it so).
		{syn, []string{waking, sw + ":onmatch(sched.sched_waking).wakeup_latency($lat,common_pid,next_prio)"},
			"param type doesn't match synthetic event field type", "common_pid"},
		{syn, []string{waking, sw + ":onmatch(sched.sched_waking).wakeup_latency($lat,next_pid,sched.sched_waking.nice)"},
			"couldn't find field", "sched.sched_waking.nice"},
		{nil, []string{waking, sw + ":onmax($latency).save(prev_pid)"},
			"couldn't find onmax or onchange variable", "$latency"},
		{nil, []string{waking, sw + ":onmax($ts0).save(prev_pid)"},
			"couldn't find onmax or onchange variable", "$ts0"},
		{nil, []string{waking, sw + ":onmax($lat).save(pid)"},
			"couldn't find field", "pid"},
		{nil, []string{"sched:sched_waking hist:keys=pid:x=comm", "sched:sched_switch hist:keys=next_pid:lat=common_timestamp.usecs-$x"},
			"string type can not be an operand in expression", "common_timestamp.usecs-$x"},
		{nil, []string{"sched:sched_waking hist:keys=pid:ts0=nope"},
			`unknown field "nope" in sched:sched_waking`, "nope"},
	} {
		_, err := newTestSession(t, c.synth, c.hists)
		var pe *parse.Error
		if !errors.As(err, &pe) {
			t.Errorf("%v: got %v, want a *parse.Error", c.hists, err)
			continue
		}
		if pe.Msg != c.msg || pe.Src[pe.Off:pe.End] != c.token {
			t.Errorf("%v:\ngot  %q at %q\nwant %q at %q", c.hists, pe.Msg, pe.Src[pe.Off:pe.End], c.msg, c.token)
		}
	}
}

// TestSessionJSON: the actions of an entry and the snapshot in JSON.
func TestSessionJSON(t *testing.T) {
	s, err := newTestSession(t, nil, []string{
		"sched:sched_waking hist:keys=pid:ts0=common_timestamp.usecs",
		"sched:sched_switch hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmax($lat).save(next_comm,prev_pid):onmax($lat).snapshot()",
	})
	if err != nil {
		t.Fatalf("%+v", err)
	}
	for _, r := range []sessRec{waking(1_000_000, 200), switchTo(1_017_000, 1, 200)} {
		s.Add(sessRecord(t, r), 0, "task", r.ts)
	}
	tables, infos := s.Tables()
	var b bytes.Buffer
	if err := WriteNDJSON(&b, tables[1:], infos[1:], Resolver{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"actions":[{"handler":"onmax","value":17,"saved":{"next_comm":"t200","prev_pid":1}}]`,
		`"snapshot":{"handler":"onmax($lat)","value":17,"keys":{"next_pid":200}}`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %s in\n%s", want, b.String())
		}
	}
}
