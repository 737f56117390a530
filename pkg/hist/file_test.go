package hist

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// Besides the real formats of raw_syscalls:sys_enter, sched:sched_switch
// and sched:sched_process_exec (from internal/testutil), the test files
// hold a made-up event and the headers, as tracefs prints them.
const (
	// fooSwitchFormat is an event of another system with the name
	// sched_switch, to make the bare name ambiguous.
	fooSwitchFormat = `name: sched_switch
ID: 900
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

print fmt: "x"
`
	headerPage = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n" +
		"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n" +
		"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n" +
		"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n"
	headerEvent = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n" +
		"\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n"
)

// testCmdlines are the saved cmdlines of the test files: pids 100 to 107
// have names (one longer than a task name may be), others do not.
var testCmdlines = map[int]string{
	100: "bash", 101: "sshd", 102: "a-very-long-task-name", 103: "make",
	104: "cc1", 105: "ld", 106: "git", 107: "go",
}

// fileRec is one record of a test file.
type fileRec struct {
	cpu  int
	ts   uint64
	data []byte
	lost uint64 // events lost on the CPU just before this record
}

// writeFile writes a trace.dat file of cpus CPUs holding recs and opens it.
func writeFile(tb testing.TB, cpus int, recs []fileRec) *tracedat.File {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "trace.dat")
	w, err := tracedat.Create(path, tracedat.Meta{
		PageSize:    4096,
		HeaderPage:  headerPage,
		HeaderEvent: headerEvent,
		Formats: []tracedat.FormatText{
			{System: "raw_syscalls", Text: testutil.FormatText(tb, "raw_syscalls:sys_enter")},
			{System: "sched", Text: testutil.FormatText(tb, "sched:sched_switch")},
			{System: "sched", Text: testutil.FormatText(tb, "sched:sched_process_exec")},
			{System: "foo", Text: fooSwitchFormat},
		},
		Cmdlines: testCmdlines,
		Uname:    "Linux test 6.18.0 x86_64",
		Version:  "gtrace test",
		CPUs:     cpus,
	}, tracedat.WriteOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Abort()
	for _, r := range recs {
		pw := w.CPU(r.cpu)
		pw.Lost(r.lost)
		if err := pw.Add(r.ts, r.data); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	f, err := tracedat.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// eventIDs caches eventID's answers: the tests make many records.
var eventIDs sync.Map

// eventID is the ID of a real format (the records' common_type).
func eventID(tb testing.TB, name string) uint16 {
	tb.Helper()
	if id, ok := eventIDs.Load(name); ok {
		return id.(uint16)
	}
	id := uint16(testutil.Format(tb, name).ID)
	eventIDs.Store(name, id)
	return id
}

func header(typ uint16, pid int32, size int) []byte {
	b := make([]byte, size)
	binary.LittleEndian.PutUint16(b, typ)
	binary.LittleEndian.PutUint32(b[4:], uint32(pid))
	return b
}

func sysEnter(tb testing.TB, pid int32, id int64) []byte {
	b := header(eventID(tb, "raw_syscalls:sys_enter"), pid, 64)
	binary.LittleEndian.PutUint64(b[8:], uint64(id))
	return b
}

func schedSwitch(tb testing.TB, pid int32, prevComm string, prevPID, prevPrio int32, nextComm string, nextPID, nextPrio int32) []byte {
	b := header(eventID(tb, "sched:sched_switch"), pid, 64)
	copy(b[8:24], prevComm)
	binary.LittleEndian.PutUint32(b[24:], uint32(prevPID))
	binary.LittleEndian.PutUint32(b[28:], uint32(prevPrio))
	copy(b[40:56], nextComm)
	binary.LittleEndian.PutUint32(b[56:], uint32(nextPID))
	binary.LittleEndian.PutUint32(b[60:], uint32(nextPrio))
	return b
}

func exec(tb testing.TB, pid int32, filename string) []byte {
	n := len(filename) + 1
	b := header(eventID(tb, "sched:sched_process_exec"), pid, (20+n+3)&^3)
	binary.LittleEndian.PutUint32(b[8:], uint32(n)<<16|20)
	binary.LittleEndian.PutUint32(b[12:], uint32(pid))
	copy(b[20:], filename)
	return b
}

// randomRecs makes n records per CPU, interleaved in time, from mk.
func randomRecs(cpus, n int, seed uint64, mk func(r *rand.Rand, cpu int) []byte) []fileRec {
	r := rand.New(rand.NewPCG(seed, 1))
	var recs []fileRec
	for cpu := range cpus {
		ts := uint64(1000)
		for range n {
			ts += 1 + r.Uint64N(50)
			recs = append(recs, fileRec{cpu: cpu, ts: ts, data: mk(r, cpu)})
		}
	}
	return recs
}

// testComm names pid as trace-cmd does.
func testComm(pid int32) string {
	if pid == 0 {
		return "<idle>"
	}
	if c, ok := testCmdlines[int(pid)]; ok {
		return c
	}
	return "<...>"
}

// engineTable is the oracle: an Engine fed the file's records in the
// merged order, each with the comm trace-cmd gives its common_pid.
func engineTable(t *testing.T, spec *parse.HistSpec, f *tracedat.File, event string) *Table {
	t.Helper()
	fm, err := FileFormat(f, event)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(spec, fm, nil)
	if err != nil {
		t.Fatal(err)
	}
	it := f.Records()
	for it.Next() {
		rec := it.Record()
		e.Add(rec.Data, rec.CPU, testComm(int32(binary.LittleEndian.Uint32(rec.Data[4:]))))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return e.Table()
}

func histText(t *testing.T, spec *parse.HistSpec, tab *Table) string {
	t.Helper()
	tab.Sort()
	var b bytes.Buffer
	if err := WriteText(&b, []*Table{tab}, []string{spec.String() + " [active]"}, testResolver); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRunFile compares RunFile, for every worker count, with an Engine fed
// the same records in the file's order.
func TestRunFile(t *testing.T) {
	comms := []string{"bash", "sshd", "swapper/0", "kworker/0:1", "a-sixteen-chars!"}
	pids := []int32{0, 100, 101, 102, 103, 104, 105, 106, 107, 4242, -5}
	longName := "/usr/lib/" + strings.Repeat("x", 300)
	switchRecs := randomRecs(4, 3000, 1, func(r *rand.Rand, cpu int) []byte {
		return schedSwitch(t, pids[r.IntN(len(pids))], comms[r.IntN(len(comms))], int32(r.IntN(40)), int32(r.IntN(140)),
			comms[r.IntN(len(comms))], int32(r.IntN(40)), int32(r.IntN(140)-20))
	})
	sysRecs := randomRecs(4, 5000, 2, func(r *rand.Rand, cpu int) []byte {
		// Mostly the CPU's own tasks, as on a real system.
		pid := pids[cpu*2+r.IntN(3)]
		if r.IntN(10) == 0 {
			pid = pids[r.IntN(len(pids))]
		}
		return sysEnter(t, pid, int64(r.IntN(60))-2)
	})
	mixed := append(append([]fileRec(nil), switchRecs...), sysRecs...)
	execRecs := randomRecs(2, 500, 3, func(r *rand.Rand, cpu int) []byte {
		names := []string{"/bin/sh", "/usr/bin/make", "", longName, longName + "y"}
		return exec(t, pids[r.IntN(len(pids))], names[r.IntN(len(names))])
	})
	for _, tc := range []struct {
		name  string
		cpus  int
		recs  []fileRec
		event string
		hist  string
	}{
		{"pid_id", 4, sysRecs, "raw_syscalls:sys_enter", "keys=common_pid,id"},
		{"execname_syscall", 4, mixed, "sys_enter", "keys=common_pid.execname,id.syscall:sort=common_pid,hitcount"},
		{"filter_comm", 4, sysRecs, "sys_enter", `keys=id:vals=id if comm == "b*" || id < 3`},
		{"comm_cpu_keys", 4, mixed, "sys_enter", "keys=comm,common_cpu"},
		{"log2_buckets", 4, sysRecs, "sys_enter", "keys=id.log2,common_pid.buckets=3"},
		{"hex_values", 4, sysRecs, "sys_enter", "keys=id.hex:vals=hitcount.percent,id:sort=id.descending"},
		{"string_keys", 4, mixed, "sched:sched_switch", "keys=next_comm,prev_comm:vals=prev_prio,next_prio:sort=next_prio.descending"},
		{"string_filter", 4, switchRecs, "sched:sched_switch", `keys=prev_pid,common_pid.execname:vals=next_prio if next_comm ~ "kworker*" && prev_prio < 100`},
		{"data_loc_key", 2, execRecs, "sched_process_exec", "keys=filename,pid"},
		{"one_cpu", 1, randomRecs(1, 2000, 4, func(r *rand.Rand, _ int) []byte { return sysEnter(t, pids[r.IntN(4)], int64(r.IntN(40))) }), "sys_enter", "keys=common_pid,id"},
		{"full_table", 2, randomRecs(2, 3000, 5, func(r *rand.Rand, cpu int) []byte {
			return sysEnter(t, int32(100+cpu), int64(r.IntN(200)))
		}), "sys_enter", "keys=common_pid,id:size=128"},
		{"full_table_execname", 4, sysRecs, "sys_enter", "keys=common_pid.execname,id:vals=id:size=128"},
		{"no_records", 2, nil, "sys_enter", "keys=id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := parse.ParseHist("hist", tc.hist)
			if err != nil {
				t.Fatal(err)
			}
			f := writeFile(t, tc.cpus, tc.recs)
			want := engineTable(t, spec, f, tc.event)
			if full := strings.Contains(tc.name, "full"); (want.Hits() == 0) != (tc.recs == nil) || (want.Dropped > 0) != full {
				t.Fatalf("Engine: hits %d, dropped %d: the case does not test what it is named for", want.Hits(), want.Dropped)
			}
			wantText := histText(t, spec, want)
			for _, workers := range []int{0, 1, 2, 4} {
				got, err := RunFile(context.Background(), spec, f, tc.event, FileOptions{Workers: workers})
				if err != nil {
					t.Fatalf("RunFile(workers %d) = %v", workers, err)
				}
				if got.Dropped != want.Dropped || got.Hits() != want.Hits() {
					t.Errorf("RunFile(workers %d): hits %d dropped %d, want %d %d", workers, got.Hits(), got.Dropped, want.Hits(), want.Dropped)
				}
				if gotText := histText(t, spec, got); gotText != wantText {
					t.Errorf("RunFile(workers %d) and Engine differ\nRunFile:\n%s\nEngine:\n%s", workers, gotText, wantText)
				}
			}
		})
	}
}

// TestRunFileFullOrder checks the order RunFile counts a full table in:
// the merged timeline, not one CPU after the other. CPU 1's keys come
// first in time, so they are the ones kept.
func TestRunFileFullOrder(t *testing.T) {
	var recs []fileRec
	for i := range 200 {
		recs = append(recs, fileRec{cpu: 1, ts: uint64(100 + i), data: sysEnter(t, 101, int64(i))})
	}
	for i := range 200 {
		recs = append(recs, fileRec{cpu: 0, ts: uint64(1000 + i), data: sysEnter(t, 100, int64(i))})
	}
	f := writeFile(t, 2, recs)
	spec, err := parse.ParseHist("hist", "keys=common_pid,id:size=128")
	if err != nil {
		t.Fatal(err)
	}
	got, err := RunFile(context.Background(), spec, f, "sys_enter", FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 128 || got.Dropped != 400-128 {
		t.Fatalf("RunFile: %d entries, %d dropped, want 128, 272", len(got.Entries), got.Dropped)
	}
	for _, e := range got.Entries {
		if e.Keys[0].Num != 101 || e.Keys[1].Num >= 128 {
			t.Fatalf("RunFile kept key {%d, %d}, want only CPU 1's first 128 keys", int64(e.Keys[0].Num), e.Keys[1].Num)
		}
	}
}

// TestRunFilePIDs counts only the records of the tasks of FileOptions.PIDs,
// by common_pid, at one worker and at several.
func TestRunFilePIDs(t *testing.T) {
	var recs []fileRec
	for i, pid := range []int32{100, 101, 102, 100, 103, 101, 100} {
		recs = append(recs, fileRec{cpu: i % 2, ts: uint64(10 + i), data: sysEnter(t, pid, 1)})
	}
	f := writeFile(t, 2, recs)
	spec, err := parse.ParseHist("hist", "keys=common_pid")
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		got, err := RunFile(context.Background(), spec, f, "sys_enter", FileOptions{Workers: workers, PIDs: []int{100, 101, 999}})
		if err != nil {
			t.Fatal(err)
		}
		counts := map[uint64]uint64{}
		for _, e := range got.Entries {
			counts[e.Keys[0].Num] += e.Hitcount
		}
		if want := map[uint64]uint64{100: 3, 101: 2}; !reflect.DeepEqual(counts, want) {
			t.Errorf("RunFile(workers %d, PIDs 100,101,999) = %v, want %v", workers, counts, want)
		}
	}
}

// TestRunFileLost counts the events the ring buffer lost.
func TestRunFileLost(t *testing.T) {
	f := writeFile(t, 2, []fileRec{
		{cpu: 0, ts: 10, data: sysEnter(t, 100, 1)},
		{cpu: 0, ts: 20, data: sysEnter(t, 100, 1), lost: 5},
		{cpu: 1, ts: 15, data: schedSwitch(t, 0, "a", 1, 2, "b", 3, 4), lost: 7},
	})
	spec, err := parse.ParseHist("hist", "keys=id")
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		got, err := RunFile(context.Background(), spec, f, "sys_enter", FileOptions{Workers: workers})
		if err != nil || got.Lost != 12 || got.Hits() != 2 {
			t.Errorf("RunFile(workers %d) = lost %d, hits %d, %v; want 12, 2, nil", workers, got.Lost, got.Hits(), err)
		}
	}
}

func TestRunFileErrors(t *testing.T) {
	f := writeFile(t, 1, []fileRec{{cpu: 0, ts: 1, data: sysEnter(t, 1, 1)}})
	run := func(event, hist string) error {
		spec, err := parse.ParseHist("hist", hist)
		if err != nil {
			t.Fatal(err)
		}
		_, err = RunFile(context.Background(), spec, f, event, FileOptions{})
		return err
	}
	var pe *parse.Error
	if err := run("sys_enter", "keys=id if nosuch == 1"); !errors.As(err, &pe) || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("RunFile with an unknown filter field = %v, want a *parse.Error naming it", err)
	}
	if err := run("sys_enter", "keys=nosuch"); !errors.As(err, &pe) {
		t.Errorf("RunFile with an unknown key = %v, want a *parse.Error", err)
	}
	if err := run("sys_entr", "keys=id"); !errors.Is(err, ErrNoEvent) || !strings.Contains(err.Error(), `did you mean "raw_syscalls:sys_enter"`) {
		t.Errorf("RunFile of a misspelt event = %v, want ErrNoEvent and a hint", err)
	}
	if err := run("sched:sys_enter", "keys=id"); !errors.Is(err, ErrNoEvent) {
		t.Errorf("RunFile of an event of the wrong system = %v, want ErrNoEvent", err)
	}
	if err := run("sched_switch", "keys=common_pid"); err == nil || !strings.Contains(err.Error(), "foo:sched_switch, sched:sched_switch") {
		t.Errorf("RunFile of an ambiguous name = %v, want both events named", err)
	}
}

func TestRunFileCanceled(t *testing.T) {
	f := writeFile(t, 2, randomRecs(2, 20000, 6, func(r *rand.Rand, cpu int) []byte { return sysEnter(t, 100, int64(r.IntN(10))) }))
	spec, err := parse.ParseHist("hist", "keys=id")
	if err != nil {
		t.Fatal(err)
	}
	// A canceled run returns the counts so far, a few thousand records a
	// worker at most, and the cause.
	stop := errors.New("stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stop)
	for _, workers := range []int{1, 2} {
		got, err := RunFile(ctx, spec, f, "sys_enter", FileOptions{Workers: workers})
		if !errors.Is(err, stop) || got == nil {
			t.Fatalf("RunFile(workers %d) with a canceled context = %v, %v; want the counts so far, the cause", workers, got, err)
		}
		var hits uint64
		for _, e := range got.Entries {
			hits += e.Hitcount
		}
		if hits == 0 || hits > uint64(workers*checkEvery) {
			t.Errorf("RunFile(workers %d) with a canceled context counted %d records, want 1 to %d", workers, hits, workers*checkEvery)
		}
	}
}

func sysExit(tb testing.TB, pid int32, id, ret int64) []byte {
	b := header(eventID(tb, "raw_syscalls:sys_exit"), pid, 24)
	binary.LittleEndian.PutUint64(b[8:], uint64(id))
	binary.LittleEndian.PutUint64(b[16:], uint64(ret))
	return b
}

// engineEvent is one event fed to an Engine.
type engineEvent struct {
	rec  []byte
	cpu  int
	comm string
}

// runEngine runs hist over the events of format event and returns its table.
func runEngine(t *testing.T, event, hist string, events []engineEvent) *Table {
	t.Helper()
	spec, err := parse.ParseHist("hist", hist)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(spec, testutil.Format(t, event), nil)
	if err != nil {
		t.Fatalf("NewEngine(%q) = %v", hist, err)
	}
	for _, ev := range events {
		e.Add(ev.rec, ev.cpu, ev.comm)
	}
	return e.Table()
}

func entriesEqual(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Comm != y.Comm || x.Hitcount != y.Hitcount || !slices.Equal(x.Keys, y.Keys) || !slices.Equal(x.Vals, y.Vals) {
			return false
		}
	}
	return true
}

// TestEngine checks the Engine's keys, sums and saved comms against tables
// worked out by hand, entries in the order of their first events.
func TestEngine(t *testing.T) {
	exit := func(pid int32, id, ret int64, comm string) engineEvent {
		return engineEvent{rec: sysExit(t, pid, id, ret), comm: comm}
	}
	next := func(nextComm string) engineEvent {
		return engineEvent{rec: schedSwitch(t, 1, "prev", 1, 120, nextComm, 2, 120), comm: "c"}
	}
	for _, tc := range []struct {
		name   string
		event  string
		hist   string
		events []engineEvent
		want   []Entry
	}{
		{
			name: "execname_keeps_first_comm", event: "raw_syscalls:sys_exit", hist: "keys=common_pid.execname:vals=ret",
			events: []engineEvent{
				exit(7, 0, 1, "first"),
				exit(7, 0, 2, "second"), // the task exec'd: its entry keeps the old name
				exit(8, 0, 3, "a-very-long-task-name"),
				exit(0, 0, 4, "swapper/0"),
			},
			want: []Entry{
				entry(2, "first", keys(num(7)), 3),
				entry(1, "a-very-long-tas", keys(num(8)), 3),
				entry(1, "swapper/0", keys(num(0)), 4),
			},
		},
		{
			name: "values_wrap", event: "raw_syscalls:sys_exit", hist: "keys=id:vals=ret,id",
			events: []engineEvent{exit(1, 1, -1, "a"), exit(1, 1, 2, "a"), exit(1, 2, -2, "a")},
			want: []Entry{
				entry(2, "", keys(num(1)), 1, 2),
				entry(1, "", keys(num(2)), math.MaxUint64-1, 2),
			},
		},
		{
			name: "comm_key_truncated", event: "raw_syscalls:sys_exit", hist: "keys=comm",
			events: []engineEvent{exit(1, 0, 0, "a-very-long-task-name"), exit(2, 0, 0, "a-very-long-task-other"), exit(3, 0, 0, "")},
			want: []Entry{
				entry(2, "", keys(str("a-very-long-tas"))),
				entry(1, "", keys(str(""))),
			},
		},
		{
			name: "cpu_and_pid_keys", event: "raw_syscalls:sys_exit", hist: "keys=common_cpu,common_pid",
			events: []engineEvent{
				{rec: sysExit(t, -5, 0, 0), cpu: 1},
				{rec: sysExit(t, -5, 0, 0), cpu: 0},
				{rec: sysExit(t, 42, 0, 0), cpu: 1},
				{rec: sysExit(t, -5, 0, 0), cpu: 1},
			},
			want: []Entry{
				entry(2, "", keys(num(1), neg(-5))),
				entry(1, "", keys(num(0), neg(-5))),
				entry(1, "", keys(num(1), num(42))),
			},
		},
		{
			name: "string_field_keys", event: "sched:sched_switch", hist: "keys=next_comm",
			events: []engineEvent{next("a-sixteen-chars!"), next("sh"), next("sh\x00junk"), next("")},
			want: []Entry{
				entry(1, "", keys(str("a-sixteen-chars!"))),
				entry(2, "", keys(str("sh"))),
				entry(1, "", keys(str(""))),
			},
		},
		{
			name: "filter", event: "raw_syscalls:sys_exit", hist: `keys=id if comm ~ "ba*" && ret < 0`,
			events: []engineEvent{exit(1, 1, -1, "bash"), exit(1, 2, 0, "bash"), exit(1, 3, -1, "sh"), exit(1, 1, -4, "banana")},
			want:   []Entry{entry(2, "", keys(num(1)))},
		},
		{
			name: "other_events", event: "raw_syscalls:sys_exit", hist: "keys=id",
			events: []engineEvent{
				{rec: sysEnter(t, 1, 1), comm: "a"},
				{rec: schedSwitch(t, 1, "a", 1, 2, "b", 3, 4), comm: "a"},
				{rec: []byte{1}, comm: "a"},
				{rec: nil, comm: "a"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runEngine(t, tc.event, tc.hist, tc.events)
			if !entriesEqual(got.Entries, tc.want) || got.Dropped != 0 || got.Lost != 0 {
				t.Errorf("Engine(%q): entries %+v, dropped %d, lost %d; want %+v, 0, 0", tc.hist, got.Entries, got.Dropped, got.Lost, tc.want)
			}
		})
	}
}

// TestEngineDrops fills a table of 128 entries: new keys are then dropped,
// each time they come, while the keys it holds keep being updated.
func TestEngineDrops(t *testing.T) {
	var events []engineEvent
	for id := range int64(128) {
		events = append(events, engineEvent{rec: sysExit(t, 1, id, id)})
	}
	events = append(events,
		engineEvent{rec: sysExit(t, 1, 200, 30)}, // full: dropped
		engineEvent{rec: sysExit(t, 1, 200, 30)}, // the same new key is dropped again
		engineEvent{rec: sysExit(t, 1, 1, 5)},    // a key of the table is updated
		engineEvent{rec: sysExit(t, 1, -1, 1)},   // dropped
		engineEvent{rec: sysEnter(t, 1, 300)},    // another event: neither counted nor dropped
	)
	got := runEngine(t, "raw_syscalls:sys_exit", "keys=id:vals=ret:size=128", events)
	if len(got.Entries) != 128 || got.Dropped != 3 || got.Hits() != 129 {
		t.Fatalf("entries, dropped, hits = %d, %d, %d, want 128, 3, 129", len(got.Entries), got.Dropped, got.Hits())
	}
	if e := got.Entries[1]; !entriesEqual([]Entry{e}, []Entry{entry(2, "", keys(num(1)), 6)}) {
		t.Errorf("entry of id 1 = %+v, want hitcount 2, ret 6", e)
	}
}

// TestEngineBuckets checks the .log2 and .buckets=N keys: the bucket of
// each value, and values of one bucket sharing an entry.
func TestEngineBuckets(t *testing.T) {
	const hist = "keys=id.log2,ret.buckets=10"
	tests := []struct {
		id, ret     uint64
		log2, start uint64
	}{
		{0, 0, 0, 0},
		{1, 9, 0, 0},
		{2, 10, 1, 10},
		{3, 19, 2, 10},
		{4, 20, 2, 20},
		{100, 12345, 7, 12340},
		{4096, 1, 12, 0},
		{4097, 1, 13, 0},
		{1 << 63, 1, 63, 0},
		{1<<63 + 1, 1, 64, 0},
		{math.MaxUint64, math.MaxUint64, 64, math.MaxUint64 / 10 * 10},
	}
	for _, tt := range tests {
		got := runEngine(t, "raw_syscalls:sys_exit", hist, []engineEvent{{rec: sysExit(t, 1, int64(tt.id), int64(tt.ret))}})
		if k := got.Entries[0].Keys; k[0].Num != tt.log2 || k[1].Num != tt.start {
			t.Errorf("Engine(%q) of id %d, ret %d: keys %d, %d, want %d, %d", hist, tt.id, tt.ret, k[0].Num, k[1].Num, tt.log2, tt.start)
		}
	}
	got := runEngine(t, "raw_syscalls:sys_exit", hist, []engineEvent{{rec: sysExit(t, 1, 5, 11)}, {rec: sysExit(t, 1, 8, 19)}})
	if len(got.Entries) != 1 || got.Entries[0].Hitcount != 2 || got.Dropped != 0 {
		t.Errorf("Engine(%q) of 5/11 and 8/19 = %+v, dropped %d, want one entry with hitcount 2", hist, got.Entries, got.Dropped)
	}
}

// TestEngineModel checks the Engine against a plain map on random events
// that overflow a small table.
func TestEngineModel(t *testing.T) {
	type key struct {
		pid  int32
		next string
	}
	comms := []string{"bash", "sshd", "swapper/0", "a-very-long-task-name"}
	rng := rand.New(rand.NewPCG(7, 8))
	spec, err := parse.ParseHist("hist", "keys=common_pid.execname,next_comm:vals=prev_prio:size=128")
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(spec, testutil.Format(t, "sched:sched_switch"), nil)
	if err != nil {
		t.Fatal(err)
	}
	model := map[key]*Entry{}
	var dropped uint64
	for range 5000 {
		k := key{int32(rng.IntN(64)), comms[rng.IntN(len(comms))][:rng.IntN(3)+1]}
		prio, comm := int32(rng.Uint32()), comms[rng.IntN(len(comms))]
		e.Add(schedSwitch(t, k.pid, "prev", 1, prio, k.next, 2, 3), rng.IntN(2), comm)
		if m, ok := model[k]; ok {
			m.Hitcount++
			m.Vals[0] += uint64(int64(prio))
		} else if len(model) < 128 {
			model[k] = &Entry{Comm: comm[:min(len(comm), 15)], Hitcount: 1, Vals: []uint64{uint64(int64(prio))}}
		} else {
			dropped++
		}
	}
	tbl := e.Table()
	if len(tbl.Entries) != len(model) || tbl.Dropped != dropped || dropped == 0 {
		t.Fatalf("entries, dropped = %d, %d, want %d, %d (> 0)", len(tbl.Entries), tbl.Dropped, len(model), dropped)
	}
	for _, got := range tbl.Entries {
		m := model[key{int32(got.Keys[0].Num), got.Keys[1].Str}]
		if m == nil || m.Comm != got.Comm || m.Hitcount != got.Hitcount || m.Vals[0] != got.Vals[0] {
			t.Errorf("entry %+v, model %+v", got, m)
		}
	}
}

// TestEngineTable checks that a Table is a snapshot: later Adds do not
// change it, and changing it does not change the Engine.
func TestEngineTable(t *testing.T) {
	spec, err := parse.ParseHist("hist", "keys=comm:vals=ret")
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(spec, testutil.Format(t, "raw_syscalls:sys_exit"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Add(sysExit(t, 1, 0, 2), 0, "sh")
	e.Add(sysExit(t, 1, 0, 2), 0, "sh")
	first := e.Table()
	first.Entries[0].Vals[0] = 99
	first.Entries[0].Keys[0].Str = "changed"
	e.Add(sysExit(t, 1, 0, 1), 0, "sh")
	want := entry(3, "", keys(str("sh")), 5)
	if got := e.Table(); !entriesEqual(got.Entries, []Entry{want}) {
		t.Errorf("after editing a Table, Table() = %+v, want %+v", got.Entries, want)
	}
	if first.Entries[0].Hitcount != 2 {
		t.Errorf("an Add changed an earlier Table: hitcount %d, want 2", first.Entries[0].Hitcount)
	}
}

func TestEngineAddAllocs(t *testing.T) {
	spec, err := parse.ParseHist("hist", `keys=id.log2,comm:vals=ret:size=128 if comm != "x"`)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(spec, testutil.Format(t, "raw_syscalls:sys_exit"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := sysExit(t, 1, 100, 1)
	e.Add(rec, 0, "bash")
	if n := testing.AllocsPerRun(100, func() { e.Add(rec, 0, "bash") }); n != 0 {
		t.Errorf("Add on an existing key: %v allocations, want 0", n)
	}
	for b := range 64 { // 64 log2 buckets for each of two comms
		e.Add(sysExit(t, 1, 1<<b, 1), 0, "fill")
		e.Add(sysExit(t, 1, 1<<b, 1), 0, "fill2")
	}
	if got := e.Table(); got.Dropped == 0 {
		t.Fatalf("the table is not full: %d entries", len(got.Entries))
	}
	if n := testing.AllocsPerRun(100, func() { e.Add(rec, 0, "dropped") }); n != 0 {
		t.Errorf("Add of a dropped key: %v allocations, want 0", n)
	}
}

func TestNewEngineErrors(t *testing.T) {
	for _, hist := range []string{"keys=nosuch", "keys=id if nosuch == 1", "keys=id:vals=nosuch"} {
		spec, err := parse.ParseHist("hist", hist)
		if err != nil {
			t.Fatal(err)
		}
		var pe *parse.Error
		if _, err := NewEngine(spec, testutil.Format(t, "raw_syscalls:sys_exit"), nil); !errors.As(err, &pe) || !strings.Contains(err.Error(), "nosuch") {
			t.Errorf("NewEngine(%q) = %v, want a *parse.Error naming nosuch", hist, err)
		}
	}
}

// TestRunFileProgress: RunFile reads the data of every CPU to its end,
// as the File's Progress counts it, with one worker and with fewer
// workers than CPUs; a full table stops the parallel pass and has the
// data read once more, in order, to its end.
func TestRunFileProgress(t *testing.T) {
	recs := randomRecs(5, 3000, 4, func(r *rand.Rand, cpu int) []byte {
		return sysEnter(t, int32(100+cpu), int64(r.IntN(60)))
	})
	for _, tc := range []struct {
		workers int
		hist    string
		full    bool
	}{
		{1, "keys=common_pid,id", false},
		{3, "keys=common_pid,id", false},
		{3, "keys=common_pid,id:size=128", true},
	} {
		spec, err := parse.ParseHist("hist", tc.hist)
		if err != nil {
			t.Fatal(err)
		}
		f := writeFile(t, 5, recs)
		var want int64
		for _, cd := range f.CPUs {
			want += cd.Size
		}
		if _, err := RunFile(context.Background(), spec, f, "sys_enter", FileOptions{Workers: tc.workers}); err != nil {
			t.Fatal(err)
		}
		p := f.Progress()
		switch {
		case !tc.full && (p.Done != want || p.Total != want):
			t.Errorf("%d workers, %s: Progress after RunFile = %+v, want Done = Total = %d", tc.workers, tc.hist, p, want)
		case tc.full && (p.Total != 2*want || p.Done <= want || p.Done >= 2*want):
			t.Errorf("%d workers, %s: Progress after RunFile = %+v, want Total %d (two passes), Done between %d and it", tc.workers, tc.hist, p, 2*want, want)
		}
	}
}
