package cmd

import (
	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// openTrace opens a trace.dat file, or an interrupted recording (its
// metadata and per-CPU spools) up to its last complete page. hist -i uses
// it; report and list open files with catalog.OpenFile.
func openTrace(p string) (*tracedat.File, error) {
	f, _, err := catalog.OpenFile(p)
	return f, err
}
