package tracedat

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wrCmdlines returns the comms of the events' pids.
func wrCmdlines(evs []wrEvent) map[int]string {
	m := map[int]string{}
	for _, e := range evs {
		m[e.pid] = e.comm
	}
	return m
}

// TestWriterFileModes checks that the trace file and the spool files are
// created with mode 0600, whatever the umask and an older file's mode.
func TestWriterFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	m := wrMeta(t, 2)
	for _, v := range wrVariants {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "trace.dat")
			for _, p := range []string{path, path + ".cpu1"} {
				if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w, err := Create(path, m, v.opts)
			if err != nil {
				t.Fatalf("Create() = %v", err)
			}
			defer w.Abort()
			if err := w.CPU(1).Add(1, wrSwitch("a", 1, "b", 2)); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, path + ".cpu0", path + ".cpu1"} {
				wrCheckMode(t, p)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			wrCheckMode(t, path)
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("files left after Close: %v", entries)
			}
		})
	}
}

func wrCheckMode(t testing.TB, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != 0o600 {
		t.Errorf("%s has mode %v, want -rw-------", filepath.Base(path), st.Mode())
	}
}

// TestWriterCreateErrors checks the options and metadata Create refuses;
// it leaves no file behind.
func TestWriterCreateErrors(t *testing.T) {
	good := wrMeta(t, 2)
	tests := []struct {
		name string
		edit func(*Meta, *WriteOptions)
		want string
	}{
		{"version", func(_ *Meta, o *WriteOptions) { o.Version = 5 }, "file version 5"},
		{"compression", func(_ *Meta, o *WriteOptions) { o.Compression = "zlib" }, `compression "zlib"`},
		{"v6 zstd", func(_ *Meta, o *WriteOptions) { o.Version, o.Compression = 6, "zstd" }, "needs file version 7"},
		{"page size", func(m *Meta, _ *WriteOptions) { m.PageSize = 4000 }, "page size 4000"},
		{"cpus", func(m *Meta, _ *WriteOptions) { m.CPUs = 0 }, "cpu count 0"},
		{"header page", func(m *Meta, _ *WriteOptions) { m.HeaderPage = "" }, "header_page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			m, o := good, WriteOptions{}
			tt.edit(&m, &o)
			w, err := Create(filepath.Join(dir, "trace.dat"), m, o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Create() = %v, %v; want an error containing %q", w, err, tt.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("files left: %v", entries)
			}
		})
	}
	if _, err := Create(filepath.Join(t.TempDir(), "missing", "trace.dat"), good, WriteOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Create in a missing directory = %v, want ErrNotExist", err)
	}
}

// TestWriterAbort checks that Abort removes everything while recording,
// and nothing after Close.
func TestWriterAbort(t *testing.T) {
	m := wrMeta(t, 2)
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.dat")
	w, err := Create(path, m, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wrAdd(t, w, wrEvents(2, 500, 4))
	w.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left after Abort: %v", entries)
	}

	w, err = Create(path, m, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Errorf("second Close() = nil, want an error")
	}
	w.Abort()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("Abort after Close removed the file: %v", err)
	}
}

// TestOpenSpooledWhileRecording reads a recording that is still running:
// OpenSpooled sees the pages written so far; once closed, the file is no
// longer an interrupted recording.
func TestOpenSpooledWhileRecording(t *testing.T) {
	evs := wrEvents(2, 2000, 5)
	m := wrMeta(t, 2)
	path := filepath.Join(t.TempDir(), "trace.dat")
	w, err := Create(path, m, WriteOptions{Compression: "zstd"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	wrAdd(t, w, evs)
	for cpu := range 2 {
		if err := w.CPU(cpu).Flush(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := OpenSpooled(path)
	if err != nil {
		t.Fatalf("OpenSpooled() = %v", err)
	}
	wrCheckRecords(t, wrReadAll(t, f), wrMerged(evs))
	if f.CPUCount != 2 || f.Clock != "local" || f.Cmdlines[4242] != "early" || len(f.Events) != 3 {
		t.Errorf("metadata: cpus %d clock %q cmdlines %v, %d events", f.CPUCount, f.Clock, f.Cmdlines, len(f.Events))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSpooled(path); !errors.Is(err, ErrNotSpooled) {
		t.Errorf("OpenSpooled(closed file) = %v, want ErrNotSpooled", err)
	}
	if err := Recover(path); !errors.Is(err, ErrNotSpooled) {
		t.Errorf("Recover(closed file) = %v, want ErrNotSpooled", err)
	}
	for _, p := range []string{filepath.Join("testdata", "sched_switch.dat"), filepath.Join("testdata", "writer", "header_page")} {
		if _, err := OpenSpooled(p); !errors.Is(err, ErrNotSpooled) {
			t.Errorf("OpenSpooled(%s) = %v, want ErrNotSpooled", p, err)
		}
	}
}

// wrKillEnv names the recording the helper process makes before it is
// killed: "path variant".
const wrKillEnv = "GTRACE_TRACEDAT_KILLED_RECORDING"

// TestWriterKilledHelper is the process TestWriterKilled kills: it
// records, writes some pages to disk, says how many records of CPU 1 are
// on disk and waits for SIGKILL.
func TestWriterKilledHelper(t *testing.T) {
	arg := os.Getenv(wrKillEnv)
	if arg == "" {
		t.Skip("helper process of TestWriterKilled")
	}
	path, variant, _ := strings.Cut(arg, " ")
	var opts WriteOptions
	for _, v := range wrVariants {
		if v.name == variant {
			opts = v.opts
		}
	}
	evs := wrEvents(2, 800, 3)
	m := wrMeta(t, 2)
	m.Cmdlines = wrCmdlines(evs)
	w, err := Create(path, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	// CPU 0 writes all its pages, CPU 1 only the finished ones: the
	// records of its open page are lost with the process. A record is on
	// page Pages() right after its Add.
	var pages []int
	for _, e := range evs {
		pw := w.CPU(e.cpu)
		if e.lost != 0 {
			pw.Lost(e.lost)
		}
		if err := pw.Add(e.ts, e.payload); err != nil {
			t.Fatal(err)
		}
		if e.cpu == 1 {
			pages = append(pages, pw.Pages())
		}
	}
	n1 := 0
	for _, p := range pages {
		if p < w.CPU(1).Pages() {
			n1++
		}
	}
	if err := w.CPU(0).Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.CPU(1).FlushPages(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ready %d\n", n1)
	time.Sleep(time.Minute)
}

// TestWriterKilled kills a recording process with SIGKILL and reads
// what it left: OpenSpooled reports every record of the pages on disk,
// Recover turns them into a complete file that the reader and trace-cmd
// read, also when a page was torn and a Close was cut short.
func TestWriterKilled(t *testing.T) {
	evs := wrEvents(2, 800, 3)
	for _, v := range wrVariants {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "trace.dat")
			n1 := wrRunKilled(t, path, v.name)

			var want []wrEvent
			seen1 := 0
			for _, e := range evs {
				if e.cpu == 1 {
					if seen1++; seen1 > n1 {
						continue
					}
				}
				want = append(want, e)
			}
			if n1 == 0 || n1 == len(evs)/2 {
				t.Fatalf("cpu 1 has %d of %d records on disk: the test wants some lost", n1, len(evs)/2)
			}
			want = wrMerged(want)

			// A write torn by the kill, and a Close that was killed
			// after appending part of its tail.
			wrAppend(t, path+".cpu1", make([]byte, 1000))
			wrAppend(t, path, []byte("partial tail"))

			f, err := OpenSpooled(path)
			if err != nil {
				t.Fatalf("OpenSpooled() = %v", err)
			}
			if !f.Interrupted {
				t.Error("OpenSpooled().Interrupted = false, want true")
			}
			wrCheckRecords(t, wrReadAll(t, f), want)

			wrCheckRecoverTo(t, path, want)

			if err := Recover(path); err != nil {
				t.Fatalf("Recover() = %v", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("files left after Recover: %v", entries)
			}
			wrCheckMode(t, path)
			f, err = Open(path)
			if err != nil {
				t.Fatalf("Open(recovered) = %v", err)
			}
			defer f.Close()
			wrCheckRecords(t, wrReadAll(t, f), want)
			t.Run("trace-cmd", func(t *testing.T) {
				bin := wrRequireTraceCmd(t)
				wrTraceCmd(t, bin, "dump", "-v", "-i", path)
				wrCheckReport(t, wrTraceCmd(t, bin, "report", "-t", "-i", path), true, 2, want)
			})
		})
	}
}

// wrCheckRecoverTo recovers path into a new file with RecoverTo: path
// and its spool files stay as they were, the new file reads as want, with
// the reader and with trace-cmd, and an existing file is not replaced.
func wrCheckRecoverTo(t *testing.T, path string, want []wrEvent) {
	t.Helper()
	before := wrSnapshot(t, path)
	out := filepath.Join(t.TempDir(), "recovered.dat")
	if err := RecoverTo(path, out); err != nil {
		t.Fatalf("RecoverTo() = %v", err)
	}
	if after := wrSnapshot(t, path); !maps.Equal(before, after) {
		t.Errorf("RecoverTo changed the recording: files %v, then %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
	wrCheckMode(t, out)
	f, err := Open(out)
	if err != nil {
		t.Fatalf("Open(RecoverTo's file) = %v", err)
	}
	defer f.Close()
	if f.Interrupted {
		t.Error("the recovered file reads as interrupted")
	}
	wrCheckRecords(t, wrReadAll(t, f), want)
	t.Run("trace-cmd RecoverTo", func(t *testing.T) {
		bin := wrRequireTraceCmd(t)
		wrCheckReport(t, wrTraceCmd(t, bin, "report", "-t", "-i", out), true, 2, want)
	})
	err = RecoverTo(path, out)
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("RecoverTo(existing file) = %v, want ErrExist", err)
	}
	if err := RecoverTo(filepath.Join(t.TempDir(), "missing.dat"), out+"2"); !errors.Is(err, fs.ErrNotExist) || strings.Count(err.Error(), "missing.dat") != 1 {
		t.Errorf("RecoverTo(missing) = %v, want ErrNotExist naming the file once", err)
	}
	if err := RecoverTo(out, out+"3"); !errors.Is(err, ErrNotSpooled) {
		t.Errorf("RecoverTo(complete file) = %v, want ErrNotSpooled", err)
	}
	if _, err := os.Stat(out + "3"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RecoverTo(complete file) left a file: %v", err)
	}
}

// wrSnapshot returns the contents of path and its spool files.
func wrSnapshot(t *testing.T, path string) map[string]string {
	t.Helper()
	m := map[string]string{}
	names, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		m[n] = string(b)
	}
	return m
}

// wrRunKilled runs TestWriterKilledHelper recording into path, kills it
// with SIGKILL once it is ready and returns how many records of CPU 1 it
// wrote to disk.
func wrRunKilled(t *testing.T, path, variant string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriterKilledHelper$", "-test.v", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), wrKillEnv+"="+path+" "+variant)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var n1 int
		if _, err := fmt.Sscanf(sc.Text(), "ready %d", &n1); err == nil {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return n1
		}
	}
	t.Fatalf("helper process ended without getting ready: %v", sc.Err())
	return 0
}

func wrAppend(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}
