package cmd

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

const sample = "../pkg/tracedat/testdata/sched_switch.dat"

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReportSample: the sample is a trace-cmd 3.1.6 file (v7, zstd); the
// goldens are trace-cmd report's own output for it.
func TestReportSample(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{[]string{"report", "-i", sample}, "sched_switch.report.txt"},
		{[]string{"report", sample}, "sched_switch.report.txt"},
		{[]string{"report", "-R", "-i", sample}, "sched_switch.report-R.txt"},
		{[]string{"report", "--stat", "-i", sample}, "sched_switch.stat.txt"},
	} {
		d, out, errb := fakeDeps(t)
		if code := runDeps(d, tc.args...); code != 0 {
			t.Fatalf("gtrace %v: exit %d: %s", tc.args, code, errb)
		}
		if want := readGolden(t, tc.golden); out.String() != want {
			t.Errorf("gtrace %v differs from trace-cmd:\n%s", tc.args, testutil.FirstDiff(out.String(), want))
		}
	}
}

func TestReportFilterAndCPUs(t *testing.T) {
	d, out, errb := fakeDeps(t)
	if code := runDeps(d, "report", "-i", sample, "-F", "sched:sched_switch: prev_pid == 0 && next_comm ~ \"rcu*\"", "--cpu", "0"); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := 0
	for _, l := range strings.Split(readGolden(t, "sched_switch.report.txt"), "\n") {
		if strings.Contains(l, " [000] ") && strings.Contains(l, "swapper/0:0 [120] R ==> rcu_preempt:") {
			want++
		}
	}
	if lines[0] != "cpus=2" || len(lines)-1 != want || want == 0 {
		t.Errorf("filtered report has %d events, want %d:\n%s", len(lines)-1, want, out)
	}
}

func TestReportFilterErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"report", "-i", sample, "-F", "sched_switch: prevpid == 0"},
			"gtrace: -F:1:15: Field not found: \"prevpid\" in sched:sched_switch\n  sched_switch: prevpid == 0\n                ^~~~~~~\n"},
		{[]string{"report", "-i", sample, "-F", "sched_swich"}, "gtrace: -F:1:1: no event \"sched_swich\" in the file\n"},
		{[]string{"report", "-i", sample, "--cpu", "0,x"}, "gtrace: --cpu:1:3: invalid CPU list item \"x\"\n"},
		{[]string{"report", "-i", "no-such-file.dat"}, "no-such-file.dat"},
	}
	for _, tc := range tests {
		d, _, errb := fakeDeps(t)
		code := runDeps(d, tc.args...)
		if !strings.HasPrefix(errb.String(), tc.want) && !strings.Contains(errb.String(), tc.want) {
			t.Errorf("gtrace %v: exit %d, stderr\n%s\nwant\n%s", tc.args, code, errb, tc.want)
		}
		if wantCode := exitUsage; tc.want == "no-such-file.dat" {
			if code != exitFailure {
				t.Errorf("missing file: exit %d, want 1", code)
			}
		} else if code != wantCode {
			t.Errorf("gtrace %v: exit %d, want %d", tc.args, code, wantCode)
		}
	}
}

// TestReportJSON: ndjson is one object per line and event; json is one
// document holding the same objects.
func TestReportJSON(t *testing.T) {
	d, out, errb := fakeDeps(t)
	if code := runDeps(d, "report", "-i", sample, "--format", "ndjson"); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 95 {
		t.Errorf("%d NDJSON lines, want one per event (95)", len(lines))
	}
	if !regexp.MustCompile(`"prev_comm":"swapper/0"`).MatchString(out.String()) {
		t.Errorf("JSON lacks typed fields:\n%.500s", out)
	}
	for _, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Fatalf("NDJSON line is not JSON: %s", line)
		}
	}

	d, out, errb = fakeDeps(t)
	if code := runDeps(d, "report", sample, "--format", "json", "--cpu", "1"); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var doc struct {
		CPUs   int `json:"cpus"`
		Events []struct {
			CPU    int            `json:"cpu"`
			TS     uint64         `json:"ts_ns"`
			Event  string         `json:"event"`
			Fields map[string]any `json:"fields"`
		} `json:"events"`
	}
	dec := json.NewDecoder(out)
	if err := dec.Decode(&doc); err != nil || dec.More() {
		t.Fatalf("--format json is not one JSON document: %v, more %v", err, dec.More())
	}
	if doc.CPUs != 2 || len(doc.Events) != 42 {
		t.Errorf("--format json --cpu 1: cpus %d, %d events, want 2 and 42", doc.CPUs, len(doc.Events))
	}
	for _, e := range doc.Events {
		if e.CPU != 1 || e.Event != "sched:sched_switch" || e.Fields["prev_comm"] == nil {
			t.Errorf("--format json event %+v", e)
		}
	}
}

// TestHistFileSample: the hist engine over a trace-cmd file.
func TestHistFileSample(t *testing.T) {
	d, out, errb := fakeDeps(t)
	if code := runDeps(d, "hist", "-i", sample, "-e", "sched:sched_switch", "-k", "prev_comm", "-s", "hitcount.descending"); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	want := "{ prev_comm: swapper/0                                          } hitcount:         26\n"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "\nTotals:\n    Hits: 95\n") {
		t.Errorf("hist -i output:\n%s\nwant a line %q and Hits: 95", out, want)
	}
}
