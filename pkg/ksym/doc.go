// Package ksym resolves kernel addresses to symbols from the text of
// /proc/kallsyms, and formats them as the kernel's %ps and %pS do, which is
// how hist triggers print .sym and .sym-offset keys and stack traces.
//
// It parses and formats; it does not read the kernel. Callers get the text
// from tracefs.FS.Kallsyms (through package catalog) or from a trace.dat
// file. Load and KernelFuncRange, which still read /proc/kallsyms
// themselves, remain for the callers that have not moved yet.
package ksym
