// Command getppid386 is built for GOARCH=386 by the record tests: a 32-bit
// process, whose system calls take the i386 ABI's registers. It makes
// getppid (i386 number 64) with the arguments 1..6 as many times as its
// argument says.
package main

import (
	"os"
	"strconv"
	"syscall"
)

func main() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		os.Exit(2)
	}
	for range n {
		syscall.RawSyscall6(64, 1, 2, 3, 4, 5, 6)
	}
}
