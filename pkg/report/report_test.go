package report

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

var update = flag.Bool("update", false, "regenerate the golden files with trace-cmd report")

// sampleDat is the sample trace.dat of the reference, which package
// tracedat keeps.
const sampleDat = "../tracedat/testdata/sched_switch.dat"

func openDat(tb testing.TB, path string) *tracedat.File {
	tb.Helper()
	f, err := tracedat.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// traceCmd runs trace-cmd report with args on a file, for -update.
func traceCmd(tb testing.TB, dat string, args ...string) []byte {
	tb.Helper()
	cmd := exec.Command("trace-cmd", append(append([]string{"report"}, args...), "-i", dat)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("trace-cmd report %s -i %s: %v\n%s", strings.Join(args, " "), dat, err, stderr.Bytes())
	}
	return out
}

// checkGolden compares got with the golden file, which -update rewrites
// with want() (trace-cmd's output), or with got for outputs trace-cmd
// does not have (review the diff).
func checkGolden(t *testing.T, golden string, got []byte, want func() []byte) {
	t.Helper()
	if *update {
		w := got
		if want != nil {
			w = want()
		}
		if err := os.WriteFile(golden, w, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, w) {
		t.Errorf("output differs from %s:\n%s", golden, testutil.FirstDiff(string(got), string(w)))
	}
}

func text(tb testing.TB, f *tracedat.File, o Options) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := Text(context.Background(), &b, f, o); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// TestSample checks the reference sample: trace-cmd report, report -R.
func TestSample(t *testing.T) {
	f := openDat(t, sampleDat)
	for _, tt := range []struct {
		golden string
		o      Options
		args   []string
	}{
		{"sched_switch.report.txt", Options{}, nil},
		{"sched_switch.report-R.txt", Options{Raw: true}, []string{"-R"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			checkGolden(t, filepath.Join("testdata", "sample", tt.golden), text(t, f, tt.o), nil)
		})
	}
}

// TestCaptured compares files captured on a 6.18 kernel with what
// trace-cmd report printed for them: testdata/captured/X.dat against
// X.report.txt, X.report-R.txt and, where present, X.report-t.txt.
func TestCaptured(t *testing.T) {
	dats, _ := filepath.Glob(filepath.Join("testdata", "captured", "*.dat"))
	if len(dats) == 0 {
		t.Fatal("no captured files")
	}
	for _, dat := range dats {
		base := strings.TrimSuffix(dat, ".dat")
		f := openDat(t, dat)
		for _, tt := range []struct {
			suffix string
			o      Options
			args   []string
		}{
			{".report.txt", Options{}, nil},
			{".report-R.txt", Options{Raw: true}, []string{"-R"}},
			{".report-t.txt", Options{NsTimestamps: true}, []string{"-t"}},
		} {
			golden := base + tt.suffix
			if _, err := os.Stat(golden); err != nil {
				continue
			}
			t.Run(filepath.Base(golden), func(t *testing.T) {
				checkGolden(t, golden, text(t, f, tt.o), func() []byte { return traceCmd(t, dat, tt.args...) })
			})
		}
	}
}

// TestCPUs checks the CPU selection (trace-cmd report --cpu 1).
func TestCPUs(t *testing.T) {
	f := openDat(t, sampleDat)
	checkGolden(t, filepath.Join("testdata", "sample", "sched_switch.report-cpu1.txt"), text(t, f, Options{CPUs: []int{1}}),
		func() []byte { return traceCmd(t, sampleDat, "--cpu", "1") })
}
