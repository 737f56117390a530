package ksym

import (
	"fmt"
	"os"
	"sync"
)

// This file is the package's only I/O: Load and KernelFuncRange read the
// running kernel's /proc/kallsyms. They stay until their callers (hist's
// LocalResolver and Build, record's plan) get the kernel's symbols
// through package catalog, which reads them with tracefs.FS.Kallsyms and
// parses them with Parse; then this file goes.

// Load reads and parses /proc/kallsyms. New code reads the text with
// tracefs.FS.Kallsyms (or catalog.Catalog.Kallsyms) and calls Parse.
func Load() (*Table, error) {
	const path = "/proc/kallsyms"
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load kernel symbols: %w", err)
	}
	t, err := ParseText(string(b))
	if err != nil {
		return nil, fmt.Errorf("load kernel symbols from %s: %w", path, err)
	}
	return t, nil
}

// loadOnce reads /proc/kallsyms on first use.
var loadOnce = sync.OnceValues(Load)

// KernelFuncRange is FuncRange over the running kernel's /proc/kallsyms,
// read on first use. New code uses TextFuncRange over the text of
// catalog.Catalog.Kallsyms.
func KernelFuncRange(name string, addr uint64) (lo, hi uint64, err error) {
	t, err := loadOnce()
	if err != nil {
		return 0, 0, err
	}
	return t.FuncRange(name, addr)
}
