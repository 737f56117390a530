package cmd

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// stdinName is the file name that means standard input.
const stdinName = "-"

// openFile opens a trace.dat file, or an interrupted recording (its
// metadata and per-CPU spools) up to its last complete page, with its
// catalog; "-" reads one from d.In, a pipe or a file. report, list -i and
// hist -i use it. An interrupted recording gets a one-line note on d.Err
// that says how to recover it.
func openFile(d *Deps, p string) (*tracedat.File, catalog.Catalog, error) {
	if p == stdinName {
		return catalog.ReadFile(d.In, p)
	}
	f, c, err := catalog.OpenFile(p)
	if err == nil && f.Interrupted {
		q := shellWord(p)
		fmt.Fprintf(d.Err, "gtrace: note: %s is an interrupted recording, read from %s.cpuN up to the last whole page; 'gtrace recover %s OUT' writes a complete trace.dat that trace-cmd reads\n", q, q, q)
	}
	return f, c, err
}

// warnDamage prints, one a line, what reading f skipped because the file
// is damaged (unparsable event formats, damaged pages).
func warnDamage(d *Deps, p string, f *tracedat.File) {
	for _, w := range f.Warnings() {
		fmt.Fprintf(d.Err, "gtrace: warning: %s: %s\n", shellWord(p), w)
	}
}

// warnSkipped prints, after the warnings, one line that says how many
// damaged pages the output (what: "the hist") leaves records out of.
func warnSkipped(d *Deps, p, what string, f *tracedat.File) {
	switch n := f.SkippedPages(); n {
	case 0:
	case 1:
		fmt.Fprintf(d.Err, "gtrace: warning: %s: %s leaves out the records of 1 damaged page\n", shellWord(p), what)
	default:
		fmt.Fprintf(d.Err, "gtrace: warning: %s: %s leaves out the records of %d damaged pages\n", shellWord(p), what, n)
	}
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellWord quotes s for a shell command line when it needs it.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
