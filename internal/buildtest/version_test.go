package buildtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goreleaserLdflags returns the ldflags line of goreleaser.yaml.
func goreleaserLdflags(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "ldflags:" && i+1 < len(lines) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "- "); ok {
				return v
			}
		}
	}
	t.Fatal("goreleaser.yaml: no ldflags list")
	return ""
}

// TestReleaseVersion builds gtrace with goreleaser's ldflags, its
// templates filled in as goreleaser fills them, and checks that
// gtrace --version prints what they set. The linker ignores -X of a
// variable that does not exist, so a renamed variable shows here.
func TestReleaseVersion(t *testing.T) {
	ldflags := goreleaserLdflags(t)
	tmpl := regexp.MustCompile(`{{\s*\.(\w+)\s*}}`)
	values := map[string]string{
		"Version":    "1.2.3",
		"FullCommit": "0123456789abcdef0123456789abcdef01234567",
		"CommitDate": "2026-11-25T10:00:00Z",
	}
	ldflags = tmpl.ReplaceAllStringFunc(ldflags, func(m string) string {
		name := tmpl.FindStringSubmatch(m)[1]
		v, ok := values[name]
		if !ok {
			t.Fatalf("goreleaser.yaml ldflags: unknown template %s", m)
		}
		return v
	})
	bin := filepath.Join(t.TempDir(), "gtrace")
	build := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("gtrace --version: %v\n%s", err, out)
	}
	// "modified" may follow: goreleaser refuses a dirty tree, this test
	// builds whatever tree it runs in.
	want := regexp.MustCompile(`^gtrace version 1\.2\.3 \(commit 0123456789ab, 2026-11-25T10:00:00Z(, modified)?\)\n$`)
	if !want.Match(out) {
		t.Errorf("gtrace --version built with -ldflags %q = %q, want %v", ldflags, out, want)
	}
}
