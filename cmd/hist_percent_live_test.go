package cmd

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
)

// TestPrivilegedHistPercentDropped counts a helper's n writes of 1 to n
// bytes by size in a table of 128 entries: the writes of 1 to 128 bytes
// get an entry each, the other n-128 are dropped. The .percent columns
// divide by every write (grammar §12.20): each entry is 0.50% of the
// hits, 128 of them and the dropped share 72 × 0.50 make 100; each
// entry's count (%) is its bytes over all the bytes written, and with
// the dropped bytes' share they make 100 within the print's rounding
// (a hundredth per line). .graph stays relative to the largest entry.
// A recording of the same writes gives the same bytes with hist -i.
func TestPrivilegedHistPercentDropped(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n, size = 200, 128
	filter := fmt.Sprintf(":sort=count:size=%d if fd == %d", size, workloadFD)
	hists := []string{
		"-e", "syscalls:sys_enter_write", "hist:keys=count:vals=hitcount.percent,count.percent" + filter,
		"-e", "syscalls:sys_enter_write", "hist:keys=count:vals=count.graph" + filter,
	}
	live, errOut, code := run(t, append(append([]string{"hist", "-q", "--follow"}, hists...), workload(t, fmt.Sprintf("write %d", n))...)...)
	if code != 0 {
		t.Fatalf("hist: exit %d, stderr:\n%s", code, errOut)
	}
	if want := fmt.Sprintf("\nTotals:\n    Hits: %d\n    Entries: %d\n    Dropped: %d\n", size, size, n-size); strings.Count(live, want) != 2 {
		t.Fatalf("want the totals\n%s\ntwice in\n%s", want, live)
	}
	const all = n * (n + 1) / 2 // the bytes of every write
	re := regexp.MustCompile(`(?m)^\{ count: +(\d+) \} hitcount: +1  hitcount \(%\): +(\d+)\.(\d\d)  count \(%\): +(\d+)\.(\d\d)$`)
	lines := re.FindAllStringSubmatch(live, -1)
	bars := regexp.MustCompile(`(?m)^\{ count: +(\d+) \} hitcount: +1  count: (#*) *$`).FindAllStringSubmatch(live, -1)
	if len(lines) != size || len(bars) != size {
		t.Fatalf("%d and %d entries of one write, want %d:\n%s", len(lines), len(bars), size, live)
	}
	hits, bytes := 0, 0 // the shares printed, in hundredths of a percent
	for i, m := range lines {
		v := i + 1
		if m[1] != strconv.Itoa(v) {
			t.Fatalf("entry %d is of %s bytes, want %d:\n%s", i, m[1], v, live)
		}
		hits += hundredths(m[2], m[3])
		pc := hundredths(m[4], m[5])
		if want := v * 10000 / all; pc != want {
			t.Errorf("count %d: count (%%) %d hundredths, want %d (of all %d bytes, the dropped too)", v, pc, want, all)
		}
		bytes += pc
		if want := v * 10000 / size * 20 / 10000; bars[i][1] != m[1] || len(bars[i][2]) != want {
			t.Errorf("count %s: a bar of %d, want %d (relative to the largest entry)", bars[i][1], len(bars[i][2]), want)
		}
	}
	dropped := (all - size*(size+1)/2) * 10000 / all
	if hits+(n-size)*10000/n != 10000 {
		t.Errorf("hitcount (%%) sums to %d hundredths, with the dropped share %d, want 10000", hits, (n-size)*10000/n)
	}
	if sum := bytes + dropped; sum > 10000 || sum < 10000-(size+1) {
		t.Errorf("count (%%) sums to %d hundredths, with the dropped share %d: %d, want 10000 within %d", bytes, dropped, sum, size+1)
	}

	file := t.TempDir() + "/trace.dat"
	rec := append([]string{"record", "-q", "--follow", "-e", "syscalls:sys_enter_write", "-f", fmt.Sprintf("fd == %d", workloadFD), "-o", file}, workload(t, fmt.Sprintf("write %d", n))...)
	if _, errOut, code := run(t, rec...); code != 0 {
		t.Fatalf("record: exit %d, stderr:\n%s", code, errOut)
	}
	offline, errOut, code := run(t, append([]string{"hist", "-i", file}, hists...)...)
	if code != 0 {
		t.Fatalf("hist -i: exit %d, stderr:\n%s", code, errOut)
	}
	if offline != live {
		t.Errorf("hist -i and BPF differ: %s\nBPF:\n%s\nhist -i:\n%s", testutil.FirstDiff(offline, live), live, offline)
	}
}

// hundredths reads a share printed as INT.FRAC in hundredths.
func hundredths(whole, frac string) int {
	w, _ := strconv.Atoi(whole)
	f, _ := strconv.Atoi(frac)
	return 100*w + f
}

// TestPrivilegedHistPercentDroppedClear runs two rounds of a shell's
// writes of 1 to 200 bytes, a second apart, in a table of 128 printed
// as JSON every 300 ms and cleared: over all the prints, the entries'
// bytes and the dropped bytes (dropped_values) add up to exactly the
// bytes written, and the hits and Dropped to the writes, so each clear
// starts the dropped sums over with the table.
func TestPrivilegedHistPercentDroppedClear(t *testing.T) {
	testutil.RequirePrivileged(t)
	const n, rounds = 200, 2
	round := fmt.Sprintf(`i=1; while [ $i -le %d ]; do printf "%%*s" $i x; i=$((i+1)); done >/dev/null`, n)
	out, errOut, code := run(t, "hist", "-q", "--follow", "--format", "json", "--interval", "300ms", "--clear",
		"-e", "syscalls:sys_enter_write", "--size", "128", "-k", "count", "--vals", "hitcount.percent,count.percent", "-f", "fd == 1",
		"--", "sh", "-c", round+"; sleep 1; "+round)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	type value struct {
		Name  string `json:"name"`
		Value uint64 `json:"value"`
	}
	var hits, bytes, dropped, prints uint64
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var tables []struct {
			Entries []struct {
				Hitcount uint64  `json:"hitcount"`
				Values   []value `json:"values"`
			} `json:"entries"`
			Totals struct {
				Dropped       uint64  `json:"dropped"`
				DroppedValues []value `json:"dropped_values"`
			} `json:"totals"`
		}
		if err := dec.Decode(&tables); err != nil {
			t.Fatalf("decode print %d: %v\n%s", prints+1, err, out)
		}
		prints++
		for _, tb := range tables {
			for _, e := range tb.Entries {
				hits += e.Hitcount
				bytes += e.Values[1].Value
			}
			dropped += tb.Totals.Dropped
			if tb.Totals.Dropped > 0 {
				if len(tb.Totals.DroppedValues) != 2 || tb.Totals.DroppedValues[0].Value != tb.Totals.Dropped || tb.Totals.DroppedValues[1].Name != "count" {
					t.Fatalf("print %d: dropped %d, dropped_values %+v", prints, tb.Totals.Dropped, tb.Totals.DroppedValues)
				}
				bytes += tb.Totals.DroppedValues[1].Value
			}
		}
	}
	t.Logf("%d prints, %d writes dropped", prints, dropped)
	if hits+dropped != rounds*n || bytes != rounds*n*(n+1)/2 {
		t.Errorf("hits %d + dropped %d, bytes (the dropped too) %d; want %d writes of %d bytes", hits, dropped, bytes, rounds*n, rounds*n*(n+1)/2)
	}
}
