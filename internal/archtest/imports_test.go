package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/gtrace/gtrace/"

// allowed lists, per package, the project packages and outside modules it
// may import (style.md's arrows). Packages not listed may import only the
// standard library.
var allowed = map[string][]string{
	"cmd":          {"pkg/hist", "pkg/record", "pkg/stream", "pkg/report", "pkg/catalog", "pkg/complete", "pkg/live", "pkg/status", "pkg/parse", "pkg/tracefs", "pkg/eval", "pkg/ksym", "pkg/tracedat", "github.com/spf13/cobra", "github.com/spf13/pflag"},
	"pkg/hist":     {"pkg/probe", "pkg/bpfgen", "pkg/attach", "pkg/parse", "pkg/eval", "pkg/tracefs", "pkg/tracedat", "pkg/tracingmap", "pkg/syscalls", "pkg/ksym", "pkg/usym", "github.com/olekukonko/tablewriter"},
	"pkg/record":   {"pkg/probe", "pkg/bpfgen", "pkg/hist", "pkg/attach", "pkg/parse", "pkg/tracefs", "pkg/tracedat", "pkg/launch", "pkg/ksym", "pkg/syscalls", "golang.org/x/sys/unix"},
	"pkg/stream":   {"pkg/record", "pkg/report", "pkg/parse", "pkg/bpfgen", "pkg/tracefs", "golang.org/x/sys/unix"},
	"pkg/report":   {"pkg/catalog", "pkg/tracedat", "pkg/parse", "pkg/eval", "pkg/syscalls", "pkg/ksym", "github.com/olekukonko/tablewriter"},
	"pkg/catalog":  {"pkg/parse", "pkg/tracefs", "pkg/tracedat", "pkg/ksym", "pkg/attach"},
	"pkg/complete": {"pkg/catalog"},
	"pkg/live":     {"pkg/launch", "pkg/status"},
	"pkg/status":   {"golang.org/x/term"},
	"pkg/probe":    {"pkg/bpfgen", "pkg/attach", "pkg/launch", "pkg/tracefs", "pkg/parse", "github.com/cilium/ebpf", "golang.org/x/sys/unix"},
	"pkg/bpfgen":   {"pkg/parse", "pkg/attach", "github.com/cilium/ebpf"},
	"pkg/tracefs":  {"pkg/parse", "golang.org/x/sys/unix"},
	"pkg/tracedat": {"pkg/parse", "github.com/klauspost/compress"},
	"pkg/eval":     {"pkg/parse"},
	"pkg/launch":   {},
	"pkg/attach":   {},
	"pkg/parse":    {},
	"pkg/syscalls": {},
	"pkg/ksym":     {},
	"pkg/usym":     {},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func TestImportArrows(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"cmd", module+"pkg/...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, module)
		rules, ok := allowed[rel]
		if !ok {
			if strings.Contains(rel, "/internal/") {
				continue
			}
			rules = nil
		}
		for _, imp := range p.Imports {
			if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				continue // standard library
			}
			if !permitted(imp, rules) {
				t.Errorf("%s imports %s, which style.md does not allow", rel, imp)
			}
		}
	}
}

func permitted(imp string, rules []string) bool {
	for _, r := range rules {
		if strings.HasPrefix(r, "pkg/") || r == "pkg/" {
			if strings.HasPrefix(imp, module+r) {
				return true
			}
			continue
		}
		if strings.HasPrefix(imp, r) {
			return true
		}
	}
	return false
}
