package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// exactLatency is a wakeup_latency record of a recording and the raw
// records it comes from: the switch before it on its CPU and the last
// waking of the task switched to before that.
type exactLatency struct {
	lat         uint64 // the synthetic event's lat (µs)
	wake, sched uint64 // the raw records' timestamps (ns)
	fromSleep   bool   // the waking came during one of the task's nanosleeps
}

// exactLatencies returns the wakeup_latency records of task pid in file,
// each with the raw records it comes from, and whether the recording
// lost events.
func exactLatencies(t *testing.T, file string, pid int64) ([]exactLatency, bool) {
	t.Helper()
	f, err := tracedat.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byID := map[int]*parse.Format{}
	for _, e := range f.Events {
		byID[e.Format.ID] = e.Format
	}
	num := func(fm *parse.Format, data []byte, name string) int64 {
		fld := fm.Field(name)
		if fld == nil {
			t.Fatalf("%s has no field %s", fm.Name, name)
		}
		return int64(fld.Value(data))
	}
	var out []exactLatency
	lost := false
	waking := map[int64]uint64{} // pid -> ts of its last sched_waking
	switched := map[int]uint64{} // CPU -> ts of its last switch to the task
	var enter uint64             // ts of the task's nanosleep in progress; 0: none
	var sleeps [][2]uint64       // the task's nanosleeps, enter and exit
	it := f.Records()
	for it.Next() {
		r := it.Record()
		lost = lost || r.Missed != 0
		if len(r.Data) < 8 {
			continue
		}
		fm := byID[int(uint16(r.Data[0])|uint16(r.Data[1])<<8)]
		if fm == nil {
			continue
		}
		ts := uint64(int64(r.TS) - f.TSOffset)
		switch fm.Name {
		case "sys_enter", "sys_exit":
			if num(fm, r.Data, "common_pid") != pid {
				continue
			}
			if fm.Name == "sys_enter" {
				enter = ts
			} else if enter != 0 {
				sleeps, enter = append(sleeps, [2]uint64{enter, ts}), 0
			}
		case "sched_waking":
			waking[num(fm, r.Data, "pid")] = ts
		case "sched_switch":
			delete(switched, r.CPU)
			if num(fm, r.Data, "next_pid") == pid {
				switched[r.CPU] = ts
			}
		case "wakeup_latency":
			if num(fm, r.Data, "pid") != pid {
				continue
			}
			sched, ok := switched[r.CPU]
			if !ok {
				t.Fatalf("a wakeup_latency record of task %d on CPU %d follows no switch to it", pid, r.CPU)
			}
			out = append(out, exactLatency{lat: uint64(num(fm, r.Data, "lat")), wake: waking[pid], sched: sched})
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		for _, s := range sleeps {
			out[i].fromSleep = out[i].fromSleep || s[0] < out[i].wake && out[i].wake < s[1]
		}
	}
	return out, lost
}

// TestPrivilegedRecordSynthExact records the wakeup-latency session of
// issue 19 with its raw events (gtrace record --synth ... -e
// synthetic:wakeup_latency) while a helper sleeps K times: the session's
// programs take the recording's own read of the clock for each event, so
// every wakeup_latency record of the helper is usecs(its switch's
// timestamp) - usecs(its waking's), both as the records of the same file
// have them, to the microsecond, and K of them are the wakeups of its
// sleeps.
func TestPrivilegedRecordSynthExact(t *testing.T) {
	testutil.RequirePrivileged(t)
	const k, ms = 5, 20
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	t.Setenv(pidFileEnv, pidFile)
	file := filepath.Join(dir, "wakeup.dat")
	args := []string{"record", "-q", "-o", file, "--synth", "wakeup_latency u64 lat; pid_t pid; int prio",
		"-e", "sched:sched_waking", "-R", "hist:keys=pid:ts0=common_timestamp.usecs",
		"-e", "sched:sched_switch", "-R", "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio)",
		"-e", "synthetic:wakeup_latency",
		"-e", "raw_syscalls:sys_enter", "-f", "id == 35", "-e", "raw_syscalls:sys_exit", "-f", "id == 35"}
	args = append(args, workload(t, fmt.Sprintf("sleeps %d %d", k, ms))...)
	for try := 1; ; try++ {
		_, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("gtrace record: exit %d\n%s", code, errOut)
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.ParseInt(string(b), 10, 64)
		lats, lost := exactLatencies(t, file, pid)
		sleeps := 0
		for _, l := range lats {
			if l.fromSleep {
				sleeps++
			}
		}
		if lost || sleeps != k {
			// A loaded machine's recording of every CPU's scheduler
			// events may lose some, or a wakeup of the helper may be
			// one that gtrace took part in (not recorded, not seen by
			// the session): record again.
			if try == 10 {
				t.Fatalf("no recording in 10 has the %d wakeups of the helper's sleeps (last: %d, lost %v)", k, sleeps, lost)
			}
			t.Logf("recording %d: %d wakeups from the %d sleeps, lost %v", try, sleeps, k, lost)
			continue
		}
		for _, l := range lats {
			want := usecs(l.sched) - usecs(l.wake)
			t.Logf("the helper (pid %d): lat %d µs, usecs(%d) - usecs(%d) = %d, from a sleep %v", pid, l.lat, l.sched, l.wake, want, l.fromSleep)
			if l.lat != want {
				t.Errorf("a wakeup_latency record of the helper has lat %d µs, its raw records %d µs (switch at %d ns, waking at %d ns)", l.lat, want, l.sched, l.wake)
			}
		}
		return
	}
}
