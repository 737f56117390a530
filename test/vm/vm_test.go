package vm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKernelOracle boots the kernels named by GTRACE_VM in QEMU ("1": all
// of them; or a comma-separated list of series or packages, like "6.12")
// and runs the cases named by GTRACE_VM_CASES (all by default) in each.
// It takes minutes: run it with -timeout 30m.
func TestKernelOracle(t *testing.T) {
	env := os.Getenv("GTRACE_VM")
	if env == "" || env == "0" {
		t.Skip("boots kernels in QEMU for minutes: set GTRACE_VM=1 (or GTRACE_VM=6.1,6.12) to run it")
	}
	kernels := []string{"6.1", "6.12"}
	if env != "1" {
		kernels = strings.Split(env, ",")
	}
	for _, k := range kernels {
		t.Run(k, func(t *testing.T) { oracle(t, k, os.Getenv("GTRACE_VM_CASES")) })
	}
}

func oracle(t *testing.T, kernel, cases string) {
	// Kept after the test, to read when a case fails.
	log := filepath.Join(os.TempDir(), "gtrace-vm-"+kernel+".log")
	args := []string{"run.sh", "-k", kernel, "-l", log}
	if cases != "" {
		args = append(args, "-c", cases)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("bash", args...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		t.Log(line)
	}
	if err != nil {
		t.Fatalf("run.sh %s: %v", strings.Join(args[1:], " "), err)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	con, err := ParseConsole(f)
	if err != nil {
		t.Fatalf("ParseConsole: %v", err)
	}
	if !con.Done {
		t.Errorf("the guest did not run every case")
	}
	ran := map[string]bool{}
	for _, c := range con.Cases {
		ran[c.Name] = true
		t.Run(c.Name, func(t *testing.T) { check(t, c) })
	}
	for _, name := range strings.Split(cases, ",") {
		if name != "" && !ran[name] {
			t.Errorf("case %s did not run (not in the file cases?)", name)
		}
	}
}

// check compares one case; a case named selftest-* must differ. A list
// case's outputs (refused writes and the trigger file) must be equal byte
// for byte; an effect case is compared as a record case. A plan
// case, and a case named nobtf-*, which ran with the kernel's BTF hidden,
// check gtrace's plan first.
// snapshotGlued is the kernel's snapshot details line, value and key
// glued together.
var snapshotGlued = regexp.MustCompile(`(triggering value \{[^}]*\}: +\d+)\ttriggered by`)

func check(t *testing.T, c *Case) {
	if c.Skip != "" {
		t.Skip(c.Skip)
	}
	if c.Partial {
		t.Fatalf("the log ends inside the case")
	}
	if noBTF := strings.HasPrefix(c.Name, "nobtf-"); noBTF || c.Kind == "plan" {
		t.Logf("gtrace's plan (BTF %v):\n%s", !noBTF, c.Plan.Stdout)
		if c.Plan.RC != 0 {
			t.Fatalf("gtrace --dry-run failed (status %d): %s", c.Plan.RC, c.Plan.Stderr)
		}
		if err := CheckPlan(c.Plan.Stdout, !noBTF); err != nil {
			t.Errorf("gtrace's plan: %v", err)
		}
	}
	if c.Kind == "record" && c.Plan.Stdout != "" {
		t.Logf("gtrace's plan:\n%s", c.Plan.Stdout)
		if err := CheckProbePlan(c.Name, c.Plan.Stdout); err != nil {
			t.Errorf("gtrace's plan: %v", err)
		}
		if strings.HasPrefix(c.Name, "fentry-funcevent-") && !strings.Contains(c.Kernel.Stderr, "built at kprobe ") {
			t.Errorf("the kprobe side (the kernel's BTF hidden) did not run on a kprobe: %s", c.Kernel.Stderr)
		}
	}
	if c.Kind == "plan" {
		t.Logf("%.1f s", c.End-c.Start)
		return
	}
	t.Logf("%.1f s (kernel %.1f s, gtrace %.1f s)", c.End-c.Start, c.Mid-c.Start, c.End-c.Mid)
	if c.Kernel.RC != 0 {
		t.Fatalf("the kernel's side failed (status %d): %s\n%s", c.Kernel.RC, c.Kernel.Stderr, c.Kernel.Stdout)
	}
	if c.Gtrace.RC != 0 {
		t.Fatalf("gtrace failed (status %d): %s", c.Gtrace.RC, c.Gtrace.Stderr)
	}
	if c.Kind == "sql" {
		if c.Kernel.RC != 0 || c.Kernel.Stderr != "" {
			t.Errorf("the kernel refused the commands of gtrace sql --dry-run (status %d):\n%s", c.Kernel.RC, c.Kernel.Stderr)
		}
		if c.Kernel.Stdout != c.Gtrace.Stdout {
			t.Errorf("the kernel's synthetic event or triggers differ from gtrace sql's: %s\n--- kernel:\n%s--- gtrace:\n%s",
				firstDiff(strings.Split(c.Gtrace.Stdout, "\n"), strings.Split(c.Kernel.Stdout, "\n")), c.Kernel.Stdout, c.Gtrace.Stdout)
		}
		return
	}
	if c.Kind == "kprobe" {
		if c.Kernel.RC != 0 {
			t.Errorf("the kernel refused a definition:\n%s", c.Kernel.Stderr)
		}
		if c.Kernel.Stdout != c.Gtrace.Stdout {
			t.Errorf("gtrace's kprobe_events listing and formats differ from the kernel's: %s\n--- kernel:\n%s--- gtrace:\n%s",
				firstDiff(strings.Split(c.Gtrace.Stdout, "\n"), strings.Split(c.Kernel.Stdout, "\n")), c.Kernel.Stdout, c.Gtrace.Stdout)
		}
		return
	}
	if c.Kind == "synth" {
		if c.Kernel.Stdout != c.Gtrace.Stdout {
			t.Errorf("gtrace's synthetic_events listing and formats differ from the kernel's: %s\n--- kernel:\n%s--- gtrace:\n%s",
				firstDiff(strings.Split(c.Gtrace.Stdout, "\n"), strings.Split(c.Kernel.Stdout, "\n")), c.Kernel.Stdout, c.Gtrace.Stdout)
		}
		return
	}
	if c.Kind == "list" {
		if c.Gtrace.Stdout != c.Kernel.Stdout {
			t.Errorf("gtrace trigger --list differs from the kernel's trigger file: %s\n--- kernel:\n%s--- gtrace:\n%s",
				firstDiff(strings.Split(c.Gtrace.Stdout, "\n"), strings.Split(c.Kernel.Stdout, "\n")), c.Kernel.Stdout, c.Gtrace.Stdout)
		}
		if c.Kernel.Stderr != "" {
			t.Logf("the kernel's refusals:\n%s", c.Kernel.Stderr)
		}
		return
	}
	if c.Kind == "record" || c.Kind == "effect" {
		if err := CompareRecord(c.Kernel.Stdout, c.Gtrace.Stdout); err != nil {
			t.Errorf("trace-cmd report of gtrace's recording differs from that of trace-cmd's: %v", err)
		}
		if c.Report.RC != 0 {
			t.Fatalf("gtrace report of trace-cmd's recording failed (status %d): %s", c.Report.RC, c.Report.Stderr)
		}
		if c.Report.Stdout != c.Kernel.Stdout {
			t.Errorf("gtrace report of trace-cmd's recording differs from trace-cmd report: %s",
				firstDiff(strings.Split(c.Report.Stdout, "\n"), strings.Split(c.Kernel.Stdout, "\n")))
		}
		return
	}
	if !strings.Contains(c.Kernel.Stdout, "\nTotals:\n") {
		t.Fatalf("the kernel printed no hist:\n%s", c.Kernel.Stdout)
	}
	kernel := c.Kernel.Stdout
	if c.Kind == "session" || c.Kind == "live" {
		// The kernel's snapshot block has no newline before "triggered
		// by" (grammar §12.13); gtrace prints one.
		kernel = snapshotGlued.ReplaceAllString(kernel, "$1\n\ttriggered by")
	}
	err := CompareHist(kernel, c.Gtrace.Stdout)
	if strings.HasPrefix(c.Name, "selftest-") {
		if err == nil {
			t.Fatalf("gtrace's output was made wrong on purpose, but CompareHist found no difference:\n%s", c.Gtrace.Stdout)
		}
		t.Logf("CompareHist found the wrong byte, as it must: %v", err)
		return
	}
	if err != nil {
		t.Errorf("gtrace's hist differs from the kernel's: %v\n--- kernel:\n%s--- gtrace:\n%s", err, kernel, c.Gtrace.Stdout)
	}
}
