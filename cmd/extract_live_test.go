package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// TestPrivilegedExtractKallsymsCopy checks how the tests run trace-cmd
// extract while /proc/kallsyms keeps changing size: with a copy mounted
// over it, trace-cmd puts the copy in the file (a symbol that only the
// copy has shows in trace-cmd dump), and /proc/kallsyms outside is left
// alone. It extracts an empty instance of its own, so as to leave the
// top ring buffer to the other tests.
func TestPrivilegedExtractKallsymsCopy(t *testing.T) {
	testutil.RequirePrivileged(t)
	traceCmdPath := requireTraceCmd(t)
	tfs, err := tracefs.Open()
	if err != nil {
		t.Fatal(err)
	}
	instance := fmt.Sprintf("gtrace_%08x", rand.Uint32())
	if err := os.Mkdir(tfs.Path("instances", instance), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(tfs.Path("instances", instance)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("remove instance %s: %v", instance, err)
		}
	})
	kallsyms, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	const fake = "gtrace_extract_test_symbol"
	kallsyms = append(kallsyms, "ffffffffc0de0000 t "+fake+"\n"...)
	file := filepath.Join(t.TempDir(), "trace.dat")
	testutil.TraceCmdWithKallsyms(t, []string{traceCmdPath, "extract", "-B", instance, "-k", "-o", file}, kallsyms)
	if dump := traceCmd(t, "dump", "--kallsyms", "-i", file); !strings.Contains(dump, fake) {
		t.Errorf("trace-cmd dump --kallsyms: no %s from the copy in:\n%.300s", fake, dump)
	}
	if now, err := os.ReadFile("/proc/kallsyms"); err != nil || strings.Contains(string(now), fake) {
		t.Errorf("/proc/kallsyms after the extract: %v, copy still mounted: %v", err, strings.Contains(string(now), fake))
	}
}
