// Command int80 is built by the record tests: a 64-bit process that makes
// 32-bit system calls through int 0x80, which the kernel takes with the
// i386 ABI's registers and numbers. It makes getppid (i386 number 64) with
// the arguments 1..6 as many times as its argument says.
//
// A kernel without 32-bit system calls (CONFIG_IA32_EMULATION off, or
// ia32_emulation=0 on its command line) answers int 0x80 with a general
// protection fault: the command then exits with status 3 (noIA32) and says
// so, instead of dying with the Go runtime's status 2.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
)

// noIA32 is the exit status when int 0x80 faults.
const noIA32 = 3

// int80 makes system call nr through int 0x80 with six arguments.
func int80(nr, a1, a2, a3, a4, a5, a6 uintptr) uintptr

func main() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		os.Exit(2)
	}
	// The fault becomes a panic that the deferred function recovers.
	debug.SetPanicOnFault(true)
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "int80: int 0x80 faulted (%v): the kernel runs no 32-bit system calls\n", r)
			os.Exit(noIA32)
		}
	}()
	for range n {
		int80(64, 1, 2, 3, 4, 5, 6)
	}
}
