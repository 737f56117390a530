package testutil

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Running reports whether process pid still runs (exists and is no
// zombie) after waiting up to wait for it to end.
func Running(pid int, wait time.Duration) bool {
	for deadline := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		s := string(b)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] == "Z" {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
	}
}
