package cmd

import (
	"strings"
	"testing"
)

// TestHistPercentDryRun checks the programs of --dry-run: a hist whose
// sum is .percent adds a dropped event's values to the dropped-sums map
// after its drop count; one without (a plain sum, .graph,
// hitcount.percent) has the program and maps of before, the same
// listing.
func TestHistPercentDryRun(t *testing.T) {
	listing := func(vals string) (plan, prog string) {
		t.Helper()
		d, out, errb := fakeDeps(t)
		if code := runDeps(d, "hist", "-e", "raw_syscalls:sys_enter", "-k", "id", "--vals", vals, "--dry-run"); code != 0 {
			t.Fatalf("--vals %s: exit %d: %s", vals, code, errb.String())
		}
		plan, prog, ok := strings.Cut(out.String(), "gtrace_hist (")
		if !ok {
			t.Fatalf("--vals %s: no listing in\n%s", vals, out.String())
		}
		return plan, prog
	}
	_, plain := listing("id")
	for _, vals := range []string{"id.graph", "hitcount.percent,id"} {
		plan, prog := listing(vals)
		if prog != plain || strings.Contains(plan, "dropped sums") {
			t.Errorf("--vals %s: the listing differs from --vals id's, or the plan names dropped sums:\n%s", vals, plan+prog)
		}
	}
	plan, prog := listing("id.percent")
	const sums = "  dropped sums: each value of a dropped event, for .percent\n"
	if !strings.Contains(plan, sums) || !strings.Contains(prog, "<dropsums>") || strings.Contains(plain, "<dropsums>") {
		t.Errorf("--vals id.percent: want %q in the plan and the dropsums map in the listing:\n%s", sums, plan+prog)
	}
}
