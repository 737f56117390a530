package buildtest

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository root, relative to this package.
const root = "../.."

// readmeBuild returns the build command of the README's quick start: the
// indented code line that runs "go build", up to its "&&".
func readmeBuild(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inQuickStart := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inQuickStart = strings.HasPrefix(line, "## Quick start")
			continue
		}
		if inQuickStart && strings.HasPrefix(line, "    ") && strings.Contains(line, "go build") {
			cmd, _, _ := strings.Cut(strings.TrimSpace(line), "&&")
			return strings.TrimSpace(cmd)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatal(`README.md: no "go build" code line under "## Quick start"`)
	return ""
}

// splitBuild splits "VAR=value ... go build ARGS" into the environment
// assignments and the command's words.
func splitBuild(line string) (env, args []string) {
	words := strings.Fields(line)
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		env = append(env, words[0])
		words = words[1:]
	}
	return env, words
}

func TestSplitBuild(t *testing.T) {
	env, args := splitBuild("CGO_ENABLED=0 GOFLAGS=-x go build -o gtrace -ldflags=-s=1 .")
	if strings.Join(env, "|") != "CGO_ENABLED=0|GOFLAGS=-x" || strings.Join(args, "|") != "go|build|-o|gtrace|-ldflags=-s=1|." {
		t.Errorf("splitBuild() = %q, %q", env, args)
	}
}

// TestReadmeBuildIsStatic builds gtrace with the README's command, in a
// clean environment (none of the caller's CGO_ENABLED: .ci/run sets it,
// a reader's shell does not) with the binary written to a temporary
// directory, and checks that the ELF file asks for no dynamic loader: no
// PT_INTERP or PT_DYNAMIC program header and no .dynamic section. Without
// CGO_ENABLED=0, pflag's use of net links against libc wherever a C
// compiler is installed.
func TestReadmeBuildIsStatic(t *testing.T) {
	line := readmeBuild(t)
	env, args := splitBuild(line)
	if len(args) < 2 || args[0] != "go" || args[1] != "build" {
		t.Fatalf("README build command %q: want [VAR=value ...] go build ...", line)
	}
	bin := filepath.Join(t.TempDir(), "gtrace")
	out := false
	for i := 2; i < len(args); i++ {
		if args[i] == "-o" && i+1 < len(args) {
			args[i+1] = bin
			out = true
		}
	}
	if !out {
		t.Fatalf("README build command %q has no -o", line)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CGO_ENABLED=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, b)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: the binary has a %v program header: it is dynamically linked", line, p.Type)
		}
	}
	if f.Section(".dynamic") != nil {
		t.Errorf("%s: the binary has a .dynamic section: it is dynamically linked", line)
	}
}
