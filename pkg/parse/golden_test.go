package parse

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// update is -update: rewrite the golden files under testdata/ instead of
// comparing with them (go test ./pkg/parse -update).
var update = flag.Bool("update", false, "rewrite the golden files")

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
