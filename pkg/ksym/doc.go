// Package ksym resolves kernel addresses to symbols from the text of
// /proc/kallsyms, and formats them as the kernel's %ps and %pS do, which is
// how hist triggers print .sym and .sym-offset keys and stack traces.
//
// It reads /proc/kallsyms but nothing else of the kernel; Parse works on any
// saved copy, such as the one a trace.dat file carries.
package ksym
