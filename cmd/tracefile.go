package cmd

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/status"
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

// progressEvery is how often the progress line is redrawn, and how long
// reading goes on before it is first shown.
const progressEvery = 250 * time.Millisecond

// showProgress draws, while f's records are read and d.Err is a
// terminal, how far the reading has come since the call:
// "reading FILE: 312 MB of 1.20 GB (26%)", what prefixing it when not
// empty. The returned stop clears it; call it before the command writes
// anything else. quiet (-q) shows nothing.
func showProgress(d *Deps, quiet bool, what, p string, f *tracedat.File) (stop func()) {
	if quiet {
		return func() {}
	}
	name := shellWord(p)
	if p == stdinName {
		name = "standard input"
	}
	base := f.Progress()
	return status.NewLine(status.Terminal(d.Err)).Every(progressEvery, func() string {
		now := f.Progress()
		return fmt.Sprintf("%sreading %s: %s", what, name, status.Fraction(now.Done-base.Done, now.Total-base.Total))
	})
}
