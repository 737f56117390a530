// Package parse reads the kernel's ftrace languages: tracefs format files,
// event filter expressions and hist trigger specifications. It is pure: no
// I/O and no BPF. Every error is a *Error that carries the source and the
// byte offsets of the offending token, so callers can print a caret.
package parse
