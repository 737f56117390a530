package cmd

import (
	"fmt"
	"os"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// openTrace opens a trace.dat file, or an interrupted recording (its
// metadata and per-CPU spools) up to its last complete page. hist -i uses
// it; report and list -i use openFile.
func openTrace(p string) (*tracedat.File, error) {
	f, _, err := openFile(p)
	return f, err
}

// openFile opens a trace.dat file and its catalog, as catalog.OpenFile
// does, if it is a regular file: a trace.dat file is read at any offset,
// not as a stream, and opening a FIFO would wait for a writer.
func openFile(p string) (*tracedat.File, catalog.Catalog, error) {
	if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("open %s: not a regular file (%s): gtrace reads trace.dat files at any offset, not as a stream", p, fi.Mode().Type())
	}
	return catalog.OpenFile(p)
}
