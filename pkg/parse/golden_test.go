package parse

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is -update: rewrite the golden files under testdata/ instead of
// comparing with them (go test ./pkg/parse -update).
var update = flag.Bool("update", false, "rewrite the golden files")

// goldenFiles runs run on the text of each testdata/DIR/NAME.in, in a
// subtest NAME, and compares what it returns with NAME.golden (checkGolden);
// what names the call for the error.
func goldenFiles(t *testing.T, dir string, run func(t *testing.T, input string) (got, what string)) {
	ins, err := filepath.Glob(filepath.Join("testdata", dir, "*.in"))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no testdata/%s/*.in: %v", dir, err)
	}
	for _, in := range ins {
		t.Run(strings.TrimSuffix(filepath.Base(in), ".in"), func(t *testing.T) {
			b, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got, what := run(t, string(b))
			checkGolden(t, in, got, what)
		})
	}
}

// seedFiles adds to f's corpus the inputs of each testdata/DIR/NAME.in:
// what seeds returns for its text.
func seedFiles(f *testing.F, dir string, seeds func(text string) []string) {
	ins, err := filepath.Glob(filepath.Join("testdata", dir, "*.in"))
	if err != nil || len(ins) == 0 {
		f.Fatalf("no testdata/%s/*.in: %v", dir, err)
	}
	for _, in := range ins {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range seeds(string(b)) {
			f.Add(s)
		}
	}
}

// checkGolden compares got with the golden file of the test input in
// (NAME.in: NAME.golden), or rewrites it with -update; what names the
// call for the error.
func checkGolden(t *testing.T, in, got, what string) {
	t.Helper()
	golden := strings.TrimSuffix(in, ".in") + ".golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s =\n%s\nwant\n%s", what, got, want)
	}
}

// fieldWant is what a field of a derived format must be.
type fieldWant struct {
	name      string
	off, size int
	signed    bool
	class     FieldClass
}

// checkFields checks the fields of f named in want.
func checkFields(t *testing.T, f *Format, want []fieldWant) {
	t.Helper()
	for _, w := range want {
		fld := f.Field(w.name)
		if fld == nil || fld.Offset != w.off || fld.Size != w.size || fld.Signed != w.signed || fld.Class != w.class {
			t.Errorf("Field(%q) = %+v, want offset %d size %d signed %v class %v", w.name, fld, w.off, w.size, w.signed, w.class)
		}
	}
}
