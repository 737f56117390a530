package parse

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sqlFormats are the formats of testdata/sql, as a 6.18 kernel has them.
func sqlFormats(tb testing.TB) SQLEvents {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "sql", "*.format"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no testdata/sql/*.format: %v", err)
	}
	var fms []*Format
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		fm, err := ParseFormat(p, string(b))
		if err != nil {
			tb.Fatalf("ParseFormat(%s) = %v", p, err)
		}
		sys, _, _ := strings.Cut(filepath.Base(p), ".")
		fm.System = sys
		fms = append(fms, fm)
	}
	return func(name string) (*Format, error) {
		for _, fm := range fms {
			if fm.Name == name || fm.System+"."+fm.Name == name {
				return fm, nil
			}
		}
		return nil, errors.New("event not found")
	}
}

// sqlOptions parses a golden case's first line: sqlhist's options.
func sqlOptions(t *testing.T, line string) SQLOptions {
	t.Helper()
	o := SQLOptions{Salt: 1234}
	args := strings.Fields(line)
	for i := 0; i < len(args); i++ {
		arg := func() string {
			i++
			if i == len(args) {
				t.Fatalf("options %q: %s needs a value", line, args[i-1])
			}
			return args[i]
		}
		switch args[i] {
		case "-n":
			o.Name = arg()
		case "-m":
			o.OnMax = arg()
		case "-c":
			o.OnChange = arg()
		case "-S":
			o.Save = strings.Split(arg(), ",")
		case "-s":
			o.Snapshot = true
		case "-T":
			o.Trace = true
		default:
			t.Fatalf("options %q: unknown %s", line, args[i])
		}
	}
	return o
}

// TestSQLGolden compiles each testdata/sql/NAME.in (options on the first
// line, the statement on the second) and compares the commands with
// NAME.golden: what sqlhist prints for it (libtracefs 1.6.4 on a 6.18
// kernel, its process ID replaced by the salt 1234), in the kernel's
// onmatch().trace(NAME,...) form.
func TestSQLGolden(t *testing.T) {
	events := sqlFormats(t)
	goldenFiles(t, "sql", func(t *testing.T, input string) (string, string) {
		opts, stmt, _ := strings.Cut(strings.TrimSuffix(input, "\n"), "\n")
		st, err := ParseSQL(stmt)
		if err != nil {
			t.Fatalf("ParseSQL(%q) = %+v", stmt, err)
		}
		p, err := CompileSQL(st, events, sqlOptions(t, opts))
		if err != nil {
			t.Fatalf("CompileSQL(%q) = %+v", stmt, err)
		}
		// What the plan gives the kernel, the kernel's parsers take.
		if p.Synth != "" {
			if _, err := ParseSynth("synth", p.Synth); err != nil {
				t.Errorf("ParseSynth(%q) = %+v", p.Synth, err)
			}
		}
		for _, h := range p.Hists {
			if _, err := ParseHist("hist", h.Trigger); err != nil {
				t.Errorf("ParseHist(%q) = %+v", h.Trigger, err)
			}
		}
		return p.Commands("/sys/kernel/tracing"), fmt.Sprintf("CompileSQL(%q)", stmt)
	})
}
