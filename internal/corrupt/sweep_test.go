package corrupt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testtrace"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// Limits of one run of gtrace on a damaged file.
const (
	runTimeout = 10 * time.Second // generous: the machine may be loaded
	maxRSS     = 512 << 20        // bytes
)

// capturedFile is a trace-cmd 3.1.6 recording (v7, zstd) of sched
// events, with the formats of all the kernel's events.
const capturedFile = "../../pkg/report/testdata/captured/sched.dat"

// histEvent is the event hist -i counts in both files.
const histEvent = "sched:sched_switch"

// input is a clean file to damage and what gtrace prints for it.
type input struct {
	name   string
	data   []byte
	report []string // gtrace report's lines
	data0  []span   // where the CPU data is
}

type span struct{ off, size int64 }

// mutation is one damaged copy of an input.
type mutation struct {
	in   *input
	kind string // "cut" or "flip"
	off  int64
	data []byte
}

func (m *mutation) String() string {
	return fmt.Sprintf("%s %s at %#x", m.in.name, m.kind, m.off)
}

// TestCorruptionSweep damages the inputs at seeded random offsets and
// runs gtrace report and gtrace hist -i on each damaged file.
func TestCorruptionSweep(t *testing.T) {
	n := envInt(t, "GTRACE_SWEEP_MUTATIONS", 200)
	seed := envInt(t, "GTRACE_SWEEP_SEED", 1)
	dir := t.TempDir()
	bin := buildGtrace(t, dir)
	traceCmd, _ := exec.LookPath("trace-cmd")
	if traceCmd == "" {
		t.Log("trace-cmd is not installed: flips are not compared with it")
	}
	// Both files hold the records of the captured file and only the
	// formats they use, which keeps each run short.
	gt := gtraceRecording(t, dir)
	tc := capturedFile
	if traceCmd != "" {
		// trace-cmd writes the same records in its own layout.
		tc = filepath.Join(dir, "converted.dat")
		cmd := exec.Command(traceCmd, "convert", "--compression", "zstd", "-i", filepath.Join(dir, "written.dat"), "-o", tc)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("trace-cmd convert: %v\n%s", err, out)
		}
	}
	inputs := []*input{
		newInput(t, bin, dir, "trace-cmd.dat", readFile(t, tc)),
		newInput(t, bin, dir, "gtrace.dat", gt),
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x67747261))
	var muts []*mutation
	for i := range n {
		in := inputs[i%len(inputs)]
		muts = append(muts, mutate(rng, in, i/len(inputs)%2 == 0))
	}

	var (
		mu                 sync.Mutex
		compared, atLeast  int
		cuts, flips, tcBad int
		zstdShort          int
		worst              int64
	)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(2, runtime.NumCPU()) {
		wg.Go(func() {
			for i := range jobs {
				m := muts[i]
				path := filepath.Join(dir, fmt.Sprintf("m%05d.dat", i))
				if err := os.WriteFile(path, m.data, 0o600); err != nil {
					t.Error(err)
					continue
				}
				rep := runGtrace(t, m, bin, "report", path)
				hist := runGtrace(t, m, bin, "hist", "-i", path, "-e", histEvent, "-k", "prev_pid")
				var tc *result
				if m.kind == "flip" && traceCmd != "" {
					tc = run(traceCmd, "report", "-i", path)
				}
				os.Remove(path)
				mu.Lock()
				worst = max(worst, rep.rss, hist.rss)
				switch {
				case m.kind == "cut":
					cuts++
					checkCut(t, m, rep)
				case tc == nil:
					flips++
				case !tc.ok():
					flips++
					tcBad++
				default:
					flips++
					compared++
					g, c := eventLines(rep.stdout), eventLines(tc.stdout)
					switch {
					case g >= c:
						atLeast++
					case bytes.Contains(rep.stderr, []byte(": zstd: ")):
						// libzstd decodes some damaged frames that
						// the Go decoder refuses: a known shortfall,
						// counted in the log.
						zstdShort++
						keep(t, m)
					default:
						keep(t, m)
						t.Errorf("%v: gtrace report prints %d event lines, trace-cmd %d\ngtrace stderr: %s", m, g, c, clip(rep.stderr))
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := range muts {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("seed %d: %d mutations: %d truncations, %d flips; trace-cmd read %d flips (failed on %d): gtrace printed at least as many event lines on %d, fewer on %d where the Go zstd decoder refused a chunk that libzstd decoded; max RSS %d MB",
		seed, n, cuts, flips, compared, tcBad, atLeast, zstdShort, worst>>20)
}

// result is how one run ended.
type result struct {
	stdout, stderr []byte
	code           int // exit status, -1 if killed by a signal
	timedOut       bool
	rss            int64 // bytes
	err            error // could not run
}

// ok reports whether a run of trace-cmd can be compared with: it ended
// by itself, not by a crash.
func (r *result) ok() bool { return r.err == nil && !r.timedOut && r.code >= 0 }

// run runs a command with the timeout and measures it.
func run(name string, args ...string) *result {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	r := &result{stdout: out.Bytes(), stderr: errb.Bytes(), timedOut: ctx.Err() != nil}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		r.err = err
	}
	if st := cmd.ProcessState; st != nil {
		r.code = st.ExitCode()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			r.rss = ru.Maxrss << 10
		}
	}
	return r
}

// runGtrace runs gtrace on a damaged file and checks that it ended well:
// by itself, in time, without a panic, with exit status 0, 1 or 2, under
// the memory bound.
func runGtrace(t *testing.T, m *mutation, bin string, args ...string) *result {
	r := run(bin, args...)
	what := fmt.Sprintf("%v: gtrace %s", m, args[0])
	switch {
	case r.err != nil:
		t.Errorf("%s: %v", what, r.err)
	case r.timedOut:
		t.Errorf("%s: still running after %v", what, runTimeout)
	case bytes.Contains(r.stderr, []byte("panic:")) || bytes.Contains(r.stderr, []byte("goroutine ")):
		t.Errorf("%s: panic:\n%s", what, clip(r.stderr))
	case r.code < 0 || r.code > 2:
		t.Errorf("%s: exit status %d\n%s", what, r.code, clip(r.stderr))
	case r.rss > maxRSS:
		t.Errorf("%s: max RSS %d MB, want at most %d MB", what, r.rss>>20, maxRSS>>20)
	}
	return r
}

var cpuField = regexp.MustCompile(`\[(\d{3})\] |^CPU:(\d+) `)

// checkCut checks the report of a truncated file: its lines are lines of
// the whole file's report in the same order, and each CPU's lines are
// the first ones of that CPU (its pages up to the cut).
func checkCut(t *testing.T, m *mutation, r *result) {
	got := lines(r.stdout)
	want := m.in.report
	j := 0
	for _, l := range got {
		for j < len(want) && want[j] != l {
			j++
		}
		if j == len(want) {
			t.Errorf("%v: report line %q is not in the whole file's report (or out of order)", m, l)
			return
		}
		j++
	}
	perCPU := func(ls []string) map[string][]string {
		out := map[string][]string{}
		for _, l := range ls {
			if s := cpuField.FindStringSubmatch(l); s != nil {
				c, _ := strconv.Atoi(s[1] + s[2])
				k := strconv.Itoa(c)
				out[k] = append(out[k], l)
			}
		}
		return out
	}
	all := perCPU(want)
	for cpu, ls := range perCPU(got) {
		if w := all[cpu]; len(ls) > len(w) || !equal(ls, w[:len(ls)]) {
			t.Errorf("%v: the report's lines of cpu %s are not the first %d of the whole file's", m, cpu, len(ls))
		}
	}
}

// eventLines counts the lines of a report that print an event: not
// "cpus=N" and not the "[UNKNOWN EVENT]" that trace-cmd prints for a
// damaged record.
func eventLines(out []byte) int {
	n := 0
	for _, l := range lines(out) {
		if !strings.HasPrefix(l, "cpus=") && !strings.HasPrefix(l, "[UNKNOWN EVENT]") {
			n++
		}
	}
	return n
}

// lines splits output into whole lines.
func lines(out []byte) []string {
	s := string(out)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		return nil
	}
	return strings.Split(s, "\n")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// mutate returns a damaged copy of in: a truncation at a random offset,
// or one to four bytes flipped, half the time in the CPU data.
func mutate(rng *rand.Rand, in *input, cut bool) *mutation {
	size := int64(len(in.data))
	if cut {
		off := rng.Int64N(size)
		return &mutation{in: in, kind: "cut", off: off, data: in.data[:off]}
	}
	off := rng.Int64N(size)
	if len(in.data0) > 0 && rng.IntN(2) == 0 {
		s := in.data0[rng.IntN(len(in.data0))]
		off = s.off + rng.Int64N(max(s.size, 1))
	}
	data := bytes.Clone(in.data)
	for i := range int64(1 + rng.IntN(4)) {
		if off+i < size {
			data[off+i] ^= byte(1 + rng.IntN(255))
		}
	}
	return &mutation{in: in, kind: "flip", off: off, data: data}
}

// newInput writes data and reads it with gtrace report.
func newInput(t *testing.T, bin, dir, name string, data []byte) *input {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	in := &input{name: name, data: data}
	r := run(bin, "report", path)
	if r.err != nil || r.code != 0 || len(r.stderr) != 0 {
		t.Fatalf("gtrace report %s: exit %d, %v: %s", name, r.code, r.err, r.stderr)
	}
	in.report = lines(r.stdout)
	f, err := tracedat.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, b := range f.Buffers {
		for _, c := range b.CPUs {
			in.data0 = append(in.data0, span{c.Offset, c.Size})
		}
	}
	return in
}

// gtraceRecording rewrites the records of the captured file with
// gtrace's writer (an uncompressed version 7 file, as gtrace record
// writes by default), with the formats of the events recorded, into
// dir/written.dat and returns the file.
func gtraceRecording(t *testing.T, dir string) []byte {
	t.Helper()
	f, err := tracedat.Open(capturedFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	used := map[int]bool{}
	it := f.Records()
	for it.Next() {
		if d := it.Record().Data; len(d) >= 2 {
			used[int(binary.LittleEndian.Uint16(d))] = true
		}
	}
	m := testtrace.Meta(f, func(id int) bool { return used[id] })
	m.Version = "gtrace sweep"
	path := filepath.Join(dir, "written.dat")
	w, err := tracedat.Create(path, m, tracedat.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	it = f.Records()
	for it.Next() {
		r := it.Record()
		if err := w.CPU(r.CPU).Add(r.TS-uint64(f.TSOffset), r.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return readFile(t, path)
}

// buildGtrace builds the gtrace binary into dir.
func buildGtrace(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "gtrace")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/gtrace/gtrace")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		t.Fatalf("%s=%q: want a number", name, s)
	}
	return v
}

// keep copies a mutation that failed to the directory named by
// GTRACE_SWEEP_KEEP, if set.
func keep(t *testing.T, m *mutation) {
	dir := os.Getenv("GTRACE_SWEEP_KEEP")
	if dir == "" {
		return
	}
	name := fmt.Sprintf("%s.%s.%#x.dat", strings.TrimSuffix(m.in.name, ".dat"), m.kind, m.off)
	if err := os.WriteFile(filepath.Join(dir, name), m.data, 0o600); err != nil {
		t.Error(err)
	}
}

// clip shortens output for a failure message.
func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}
