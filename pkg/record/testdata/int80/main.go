// Command int80 is built by the record tests: a 64-bit process that makes
// 32-bit system calls through int 0x80, which the kernel takes with the
// i386 ABI's registers and numbers. It makes getppid (i386 number 64) with
// the arguments 1..6 as many times as its argument says.
package main

import (
	"os"
	"strconv"
)

// int80 makes system call nr through int 0x80 with six arguments.
func int80(nr, a1, a2, a3, a4, a5, a6 uintptr) uintptr

func main() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		os.Exit(2)
	}
	for range n {
		int80(64, 1, 2, 3, 4, 5, 6)
	}
}
