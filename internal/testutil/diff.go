package testutil

import (
	"strconv"
	"strings"
)

// FirstDiff shows the first line where got differs from want, for test
// failures about long outputs.
func FirstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n  got  " + a + "\n  want " + b
		}
	}
	return "(no line differs)"
}
