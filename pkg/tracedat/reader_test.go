package tracedat

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const sampleFile = "testdata/sched_switch.dat"

// reportLine is a record as trace-cmd report -t prints it: CPU, seconds
// with 9 decimals, pid.
func reportLine(r Record) string {
	return fmt.Sprintf("%03d %d.%09d %d", r.CPU, r.TS/1e9, r.TS%1e9, int32(binary.LittleEndian.Uint32(r.Data[4:])))
}

// readAllRecords reads every record of it, Data copied.
func readAllRecords(t testing.TB, it *Iterator) ([]Record, error) {
	t.Helper()
	var recs []Record
	for it.Next() {
		r := it.Record()
		r.Data = bytes.Clone(r.Data)
		recs = append(recs, r)
	}
	return recs, it.Err()
}

func TestSampleMetadata(t *testing.T) {
	f, err := Open(sampleFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checks := []struct {
		name      string
		got, want any
	}{
		{"Version", f.Version, 7},
		{"BigEndian", f.BigEndian, false},
		{"LongSize", f.LongSize, 8},
		{"PageSize", f.PageSize, 4096},
		{"Compression", f.Compression, "zstd"},
		{"CompressionVersion", f.CompressionVersion, "1.5.4"},
		{"len(HeaderPage)", len(f.HeaderPage), 205},
		{"HeaderPage", f.HeaderPage, readTestdata(t, "header_page")},
		{"HeaderEvent", f.HeaderEvent, readTestdata(t, "header_event")},
		{"len(Events)", len(f.Events), 2305 + 18},
		{"len(Kallsyms)", len(f.Kallsyms), 2710839},
		{"len(Printk)", len(f.Printk), 4316},
		{"Cmdlines[13152]", f.Cmdlines[13152], "capture.sh"},
		{"Clock", f.Clock, "local"},
		{"Uname", f.Uname, "Linux vm 6.18.44-fc-v669 x86_64"},
		{"TracerVersion", f.TracerVersion, "3.1.6 not-a-git-repo"},
		{"TraceID", f.TraceID, uint64(0xE27BB0CEBE048765)},
		{"CPUCount", f.CPUCount, 2},
		{"TSOffset", f.TSOffset, int64(0)},
		{"len(CPUStats)", len(f.CPUStats), 2},
		{"CPUs", fmt.Sprint(f.CPUs), "[{0 622592 532} {1 626688 520}]"},
		{"len(Buffers)", len(f.Buffers), 1},
		{"Buffers[0]", fmt.Sprintf("%+v", *f.Buffers[0]), "{Name: Clock:local PageSize:4096 Compressed:true CPUs:[{CPU:0 Offset:622592 Size:532} {CPU:1 Offset:626688 Size:520}]}"},
		{"Layout", f.Layout(), PageLayout{Size: 4096, LongSize: 8, DataOffset: 16}},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Options as trace-cmd dump --options lists them (DONE excluded).
	var ids []string
	for _, o := range f.Options {
		ids = append(ids, o.ID.String())
	}
	wantIDs := "HEADER_INFO FTRACE_EVENTS EVENT_FORMATS KALLSYMS PRINTK TRACECLOCK UNAME VERSION TRACEID CPUSTAT CPUSTAT CMDLINES CPUCOUNT BUFFER"
	if got := strings.Join(ids, " "); got != wantIDs {
		t.Errorf("options = %s\nwant %s", got, wantIDs)
	}
	if o := f.Options[5]; string(o.Data) != "[local] global counter uptime perf mono mono_raw boot tai x86-tsc\n\x00" {
		t.Errorf("TRACECLOCK option = %q", o.Data)
	}
	wantStats := []string{
		"CPU: 0\nentries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 0\noldest event ts:   637.828761\nnow ts:   638.039581\ndropped events: 0\nread events: 53\n",
		"CPU: 1\nentries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 0\noldest event ts:   637.826270\nnow ts:   638.039603\ndropped events: 0\nread events: 42\n",
	}
	if !slices.Equal(f.CPUStats, wantStats) {
		t.Errorf("CPUStats = %q\nwant %q", f.CPUStats, wantStats)
	}
	ev := f.Events[372]
	if ev == nil || ev.Format.FullName() != "sched:sched_switch" || ev.Text != readTestdata(t, "sched_switch.format") {
		t.Errorf("Events[372] = %+v, want sched:sched_switch with the tracefs text", ev)
	}
	if ev := f.Events[5]; ev == nil || ev.Format.FullName() != "ftrace:print" {
		t.Errorf("Events[5] = %+v, want ftrace:print", ev)
	}
}

func TestSampleRecords(t *testing.T) {
	f, err := Open(sampleFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := readAllRecords(t, f.Records())
	if err != nil {
		t.Fatal(err)
	}
	// trace-cmd 3.1.6's `report -t`: CPU, timestamp and pid per record.
	want := strings.Split(strings.TrimSpace(readTestdata(t, "sched_switch.report-t.txt")), "\n")
	var got []string
	perCPU := map[int]int{}
	for _, r := range recs {
		got = append(got, reportLine(r))
		perCPU[r.CPU]++
		if binary.LittleEndian.Uint16(r.Data) != 372 || len(r.Data) != 64 || r.Missed != 0 {
			t.Errorf("record %s: type %d, %d bytes, missed %d; want sched_switch (372), 64 bytes", reportLine(r), binary.LittleEndian.Uint16(r.Data), len(r.Data), r.Missed)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("records differ from trace-cmd report -t:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(recs) != 95 || perCPU[0] != 53 || perCPU[1] != 42 {
		t.Errorf("got %d records, per CPU %v; want 95, cpu0 53, cpu1 42", len(recs), perCPU)
	}
	// report rounds to µs: 637.826270 .. 638.029555.
	if first, last := (recs[0].TS+500)/1000, (recs[len(recs)-1].TS+500)/1000; first != 637826270 || last != 638029555 {
		t.Errorf("first/last µs = %d/%d, want 637826270/638029555", first, last)
	}
	for _, tc := range []struct {
		cpus []int
		want int
	}{{[]int{1}, 42}, {[]int{0}, 53}, {[]int{0, 1}, 95}, {[]int{7}, 0}} {
		n := 0
		for it := f.Records(tc.cpus...); it.Next(); {
			if r := it.Record(); !slices.Contains(tc.cpus, r.CPU) {
				t.Errorf("Records(%v) yielded cpu %d", tc.cpus, r.CPU)
			}
			n++
		}
		if n != tc.want {
			t.Errorf("Records(%v) yielded %d records, want %d", tc.cpus, n, tc.want)
		}
	}
}

// convertedSamples makes an uncompressed v7 and a v6 copy of the sample
// with trace-cmd convert, in a temporary directory (each is 4.7 MB, too
// big to commit). It skips the test when trace-cmd is not installed.
func convertedSamples(t testing.TB) map[string]string {
	t.Helper()
	tc, err := exec.LookPath("trace-cmd")
	if err != nil {
		t.Skip("trace-cmd not installed: cannot make v6 and uncompressed v7 files from the sample")
	}
	dir := t.TempDir()
	files := map[string]string{"v7 none": filepath.Join(dir, "none.dat"), "v6": filepath.Join(dir, "v6.dat")}
	args := map[string][]string{"v7 none": {"--compression", "none"}, "v6": {"--file-version", "6"}}
	for name, out := range files {
		cmd := exec.Command(tc, append([]string{"convert", "-i", sampleFile, "-o", out}, args[name]...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("trace-cmd convert %s: %v\n%s", name, err, b)
		}
	}
	return files
}

// TestConvertedSamples reads the sample converted to uncompressed v7 and
// to v6: same metadata, same records.
func TestConvertedSamples(t *testing.T) {
	ref, err := Open(sampleFile)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want, err := readAllRecords(t, ref.Records())
	if err != nil {
		t.Fatal(err)
	}
	for name, path := range convertedSamples(t) {
		t.Run(name, func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			wantVersion := 7
			if name == "v6" {
				wantVersion = 6
			}
			if f.Version != wantVersion || f.Compression != "none" || f.Buffers[0].Compressed {
				t.Errorf("Version %d, Compression %q, Compressed %v; want %d, none, false", f.Version, f.Compression, f.Buffers[0].Compressed, wantVersion)
			}
			same := []struct {
				name      string
				got, want any
			}{
				{"HeaderPage", f.HeaderPage, ref.HeaderPage},
				{"HeaderEvent", f.HeaderEvent, ref.HeaderEvent},
				{"len(Events)", len(f.Events), len(ref.Events)},
				{"Kallsyms", f.Kallsyms, ref.Kallsyms},
				{"Printk", f.Printk, ref.Printk},
				{"len(Cmdlines)", len(f.Cmdlines), len(ref.Cmdlines)},
				{"Clock", f.Clock, ref.Clock},
				{"Uname", f.Uname, ref.Uname},
				{"TracerVersion", f.TracerVersion, ref.TracerVersion},
				{"TraceID", f.TraceID, ref.TraceID},
				{"CPUCount", f.CPUCount, ref.CPUCount},
				{"CPUStats", fmt.Sprint(f.CPUStats), fmt.Sprint(ref.CPUStats)},
				{"len(CPUs)", len(f.CPUs), 2},
			}
			for _, c := range same {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
			for id, ev := range ref.Events {
				if e := f.Events[id]; e == nil || e.Text != ev.Text || e.Format.System != ev.Format.System {
					t.Errorf("Events[%d] differs", id)
				}
			}
			got, err := readAllRecords(t, f.Records())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i].CPU != want[i].CPU || got[i].TS != want[i].TS || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Fatalf("record %d = %s, want %s", i, reportLine(got[i]), reportLine(want[i]))
				}
			}
		})
	}
}

// mergedPageRecords decodes the pages of the given CPUs directly and merges
// them by (timestamp, CPU), as the iterator must.
func mergedPageRecords(t *testing.T, l PageLayout, tsOffset uint64, cpus []testCPU) []Record {
	t.Helper()
	var all []Record
	for _, c := range cpus {
		recs, err := decodePages(t, l, c.pages...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			r.CPU = c.cpu
			r.TS += tsOffset
			all = append(all, r)
		}
	}
	slices.SortStableFunc(all, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.CPU, b.CPU))
	})
	return all
}

func checkSameRecords(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.CPU != w.CPU || g.TS != w.TS || g.Missed != w.Missed || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("record %d = cpu %d ts %d missed %d (%d bytes), want cpu %d ts %d missed %d (%d bytes)",
				i, g.CPU, g.TS, g.Missed, len(g.Data), w.CPU, w.TS, w.Missed, len(w.Data))
		}
	}
}

func testCString(s string) []byte { return append([]byte(s), 0) }

func testU32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func TestBuiltFiles(t *testing.T) {
	le := binary.LittleEndian
	pages := func(n int, ts uint64) [][]byte { return testSchedPages(le, 4096, n, ts, 1000) }
	// Records of two CPUs with equal timestamps: ties go to the lower CPU.
	tie := func(cpu int) testCPU {
		p := newTestPage(false).event(0, testSchedSwitch(le, int32(cpu), "x", "y"), false).
			event(0, testSchedSwitch(le, int32(cpu+100), "x", "y"), false).
			event(50, testSchedSwitch(le, int32(cpu+200), "x", "y"), false)
		return testCPU{cpu, [][]byte{p.bytes(4096, 100, 0, 0)}}
	}
	lost := newTestPage(false).event(0, testSchedSwitch(le, 1, "a", "b"), false).bytes(4096, 1e9, missingEvents|missingStored, 77)

	tests := []struct {
		name   string
		tf     func(*testFile)
		check  func(t *testing.T, f *File)
		buffer string // instance whose records to check
	}{{
		name: "v7 none: sparse CPUs, three options sections, repeated and unknown options",
		tf: func(tf *testFile) {
			tf.optionSections = 3
			tf.options = []Option{
				{OptionTraceClock, testCString("local [global] counter\n")},
				{OptionCPUCount, testU32(4)},
				{OptionID(200), []byte("unknown option")},
				{OptionDate, testCString("0x10")},
				{OptionOffset, testCString("5")},
				{OptionUname, testCString("Linux host 6.1 x86_64")},
				{OptionVersion, testCString("gtrace test")},
				{OptionTraceID, binary.LittleEndian.AppendUint64(nil, 99)},
				{OptionCPUStat, testCString("CPU: 2\nentries: 0\n")},
				{OptionCPUStat, testCString("CPU: 5\nentries: 0\n")},
				{OptionCPUCount, testU32(8)},
			}
			tf.buffers = []testBuffer{{"", []testCPU{{5, pages(3, 10000)}, {2, append(pages(2, 10500), lost)}}}}
		},
		check: func(t *testing.T, f *File) {
			if f.CPUCount != 8 || f.Clock != "global" || f.TSOffset != 16005 || f.Uname != "Linux host 6.1 x86_64" ||
				f.TracerVersion != "gtrace test" || f.TraceID != 99 || len(f.CPUStats) != 2 || len(f.Options) != 6+11+1 {
				t.Errorf("metadata = CPUCount %d Clock %q TSOffset %d Uname %q TracerVersion %q TraceID %d CPUStats %q, %d options",
					f.CPUCount, f.Clock, f.TSOffset, f.Uname, f.TracerVersion, f.TraceID, f.CPUStats, len(f.Options))
			}
			if got := fmt.Sprint(f.CPUs); !strings.HasPrefix(got, "[{2 ") || !strings.Contains(got, "} {5 ") {
				t.Errorf("CPUs = %s, want cpus 2 and 5", got)
			}
			if f.Cmdlines[42] != "my prog" || f.Cmdlines[1] != "init" || f.Kallsyms == "" || f.Printk == "" {
				t.Errorf("Cmdlines = %v, Kallsyms %q, Printk %q", f.Cmdlines, f.Kallsyms, f.Printk)
			}
		},
	}, {
		name: "v7 zstd: chunks of 10 pages, 25 pages per CPU",
		tf: func(tf *testFile) {
			tf.zstd = true
			tf.buffers = []testBuffer{{"", []testCPU{{0, pages(25, 1000)}, {1, pages(25, 1500)}}}}
		},
		check: func(t *testing.T, f *File) {
			if f.Compression != "zstd" || !f.Buffers[0].Compressed {
				t.Errorf("Compression %q, Compressed %v", f.Compression, f.Buffers[0].Compressed)
			}
		},
	}, {
		name: "v7 zstd: one page per chunk, ties to the lower CPU",
		tf: func(tf *testFile) {
			tf.zstd, tf.chunkPages = true, 1
			tf.buffers = []testBuffer{{"", []testCPU{tie(3), tie(1)}}}
		},
	}, {
		name: "v7 instances",
		tf: func(tf *testFile) {
			tf.buffers = []testBuffer{{"", []testCPU{{0, pages(1, 0)}}}, {"inst", []testCPU{{1, pages(2, 0)}}}}
		},
		buffer: "inst",
		check: func(t *testing.T, f *File) {
			if len(f.Buffers) != 2 || f.Buffers[1].Name != "inst" || len(f.CPUs) != 1 || f.CPUCount != 2 {
				t.Errorf("Buffers = %v, CPUs %v, CPUCount %d", f.Buffers, f.CPUs, f.CPUCount)
			}
		},
	}, {
		name: "v7 big endian",
		tf: func(tf *testFile) {
			tf.bigEndian = true
			p := newTestPage(true).event(0, []byte{1, 2, 3, 4}, false).extend(1<<30).event(9, make([]byte, 200), false)
			tf.buffers = []testBuffer{{"", []testCPU{{0, [][]byte{p.bytes(4096, 1, missingEvents, 0)}}}}}
		},
		check: func(t *testing.T, f *File) {
			if !f.BigEndian || len(f.Events) != 2 {
				t.Errorf("BigEndian %v, %d events", f.BigEndian, len(f.Events))
			}
		},
	}, {
		name: "v7 without data",
		tf:   func(tf *testFile) {},
		check: func(t *testing.T, f *File) {
			if f.CPUCount != 0 || len(f.Buffers) != 0 || f.Clock != "local" {
				t.Errorf("CPUCount %d, Buffers %v, Clock %q", f.CPUCount, f.Buffers, f.Clock)
			}
		},
	}, {
		name: "v6 with options, clock blob and an empty CPU",
		tf: func(tf *testFile) {
			tf.version = 6
			tf.options = []Option{{OptionTraceClock, testCString("[local] global\n")}, {OptionCPUStat, testCString("CPU: 0\n")}}
			tf.buffers = []testBuffer{{"", []testCPU{{0, pages(2, 0)}, {2, append(pages(3, 100), lost)}}}}
		},
		check: func(t *testing.T, f *File) {
			if f.Version != 6 || f.CPUCount != 3 || len(f.CPUs) != 2 || f.Clock != "local" || len(f.Options) != 2 {
				t.Errorf("Version %d, CPUCount %d, CPUs %v, Clock %q, %d options", f.Version, f.CPUCount, f.CPUs, f.Clock, len(f.Options))
			}
		},
	}, {
		name: "v6 without options",
		tf: func(tf *testFile) {
			tf.version = 6
			tf.buffers = []testBuffer{{"", []testCPU{{1, pages(2, 0)}}}}
		},
		check: func(t *testing.T, f *File) {
			if f.CPUCount != 2 || len(f.Options) != 0 {
				t.Errorf("CPUCount %d, %d options", f.CPUCount, len(f.Options))
			}
		},
	}, {
		name: "v6 instance",
		tf: func(tf *testFile) {
			tf.version = 6
			tf.options = []Option{{OptionTraceClock, testCString("[mono]\n")}}
			tf.buffers = []testBuffer{{"", []testCPU{{0, pages(1, 0)}}}, {"v6inst", []testCPU{{1, pages(2, 7)}}}}
		},
		buffer: "v6inst",
		check: func(t *testing.T, f *File) {
			if len(f.Buffers) != 2 || f.Buffers[1].Name != "v6inst" || f.Buffers[1].Clock != "local" || f.Clock != "local" {
				t.Errorf("Buffers = %+v %+v, Clock %q; want the clock blob's local", f.Buffers[0], f.Buffers[1], f.Clock)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tf := testBaseFile(t, 7)
			tt.tf(tf)
			data := tf.build(t)
			f, err := Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Events) != 2 || f.Events[372] == nil || f.Events[5].Format.System != "ftrace" || f.LongSize != 8 {
				t.Errorf("Events = %v, LongSize %d", f.Events, f.LongSize)
			}
			if tt.check != nil {
				tt.check(t, f)
			}
			var b *testBuffer
			for i := range tf.buffers {
				if tf.buffers[i].name == tt.buffer {
					b = &tf.buffers[i]
				}
			}
			if b == nil {
				if recs, err := readAllRecords(t, f.Records()); len(recs) != 0 || err != nil {
					t.Errorf("Records() = %d records, %v; want none", len(recs), err)
				}
				return
			}
			var fb *Buffer
			for _, x := range f.Buffers {
				if x.Name == tt.buffer {
					fb = x
				}
			}
			got, err := readAllRecords(t, f.BufferRecords(fb))
			if err != nil {
				t.Fatal(err)
			}
			l := f.Layout()
			checkSameRecords(t, got, mergedPageRecords(t, l, uint64(f.TSOffset), b.cpus))
		})
	}
}

// TestTraceCmdAgrees writes built files with unusual layouts and checks
// that trace-cmd report -t lists the same records (CPU, timestamp, pid)
// and the same lost-events marks as Records.
func TestTraceCmdAgrees(t *testing.T) {
	tc, err := exec.LookPath("trace-cmd")
	if err != nil {
		t.Skip("trace-cmd not installed: nothing to compare with")
	}
	le := binary.LittleEndian
	pages := func(n int, ts uint64) [][]byte { return testSchedPages(le, 4096, n, ts, 1000) }
	lost := func(ts uint64, flags uint64) []byte {
		return newTestPage(false).event(0, testSchedSwitch(le, 7, "a", "b"), false).
			discard(5, 8).event(3, testSchedSwitch(le, 8, "a", "b"), false).bytes(4096, ts, flags, 77)
	}
	files := map[string]func(*testFile){
		"v7 none, sparse CPUs, options sections, DATE and OFFSET": func(tf *testFile) {
			tf.optionSections = 3
			tf.options = []Option{
				{OptionTraceClock, testCString("[local] global\n")}, {OptionCPUCount, testU32(8)},
				{OptionID(200), []byte("?")}, {OptionDate, testCString("0x10")}, {OptionOffset, testCString("5")},
			}
			tf.buffers = []testBuffer{{"", []testCPU{{5, pages(3, 10000)}, {2, append(pages(2, 10500), lost(1e9, missingEvents|missingStored))}}}}
		},
		"v7 zstd, small chunks": func(tf *testFile) {
			tf.zstd, tf.chunkPages = true, 3
			tf.buffers = []testBuffer{{"", []testCPU{{0, pages(7, 1000)}, {1, append(pages(8, 1500), lost(1e9, missingEvents))}}}}
		},
		"v6 with an empty CPU": func(tf *testFile) {
			tf.version = 6
			tf.options = []Option{{OptionTraceClock, testCString("[local]\n")}}
			tf.buffers = []testBuffer{{"", []testCPU{{0, pages(2, 0)}, {2, append(pages(3, 100), lost(1e9, missingEvents|missingStored))}}}}
		},
	}
	for name, mod := range files {
		t.Run(name, func(t *testing.T) {
			tf := testBaseFile(t, 7)
			mod(tf)
			data := tf.build(t)
			path := filepath.Join(t.TempDir(), "built.dat")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(tc, "report", "-t", "-i", path).Output()
			if err != nil {
				t.Fatalf("trace-cmd report: %v", err)
			}
			var want []string
			for line := range strings.Lines(string(out)) {
				if m := reportRE.FindStringSubmatch(line); m != nil {
					cpu, _ := strconv.Atoi(m[1])
					want = append(want, fmt.Sprintf("%d %s", cpu, m[2]))
				} else if strings.Contains(line, "DROPPED") {
					want = append(want, strings.TrimSpace(line))
				}
			}
			f, err := Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := readAllRecords(t, f.Records())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				switch {
				case r.Missed > 0:
					got = append(got, fmt.Sprintf("CPU:%d [%d EVENTS DROPPED]", r.CPU, r.Missed))
				case r.Missed < 0:
					got = append(got, fmt.Sprintf("CPU:%d [EVENTS DROPPED]", r.CPU))
				}
				got = append(got, fmt.Sprintf("%d %d.%09d", r.CPU, r.TS/1e9, r.TS%1e9))
			}
			if !slices.Equal(got, want) {
				t.Errorf("records differ from trace-cmd report -t:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// reportRE matches a record line of trace-cmd report -t: CPU and time.
var reportRE = regexp.MustCompile(`\[(\d+)\]\s+(\d+\.\d+):`)
