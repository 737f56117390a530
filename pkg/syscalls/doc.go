// Package syscalls maps Linux system call numbers to names and back for every
// architecture that golang.org/x/sys/unix knows, by GOARCH name. Names are
// the ones the kernel's hist triggers print for a .syscall key: "sys_"
// followed by the name of the syscall's entry point, such as sys_read or, for
// fstat on x86-64, sys_newfstat.
//
// The tables are generated from x/sys and need nothing but the standard
// library at run time; regenerate them with go generate after updating
// x/sys.
package syscalls

//go:generate go run ./internal/gen -o zsyscalls.go
