package parse

// Distance is the Levenshtein edit distance between a and b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Nearest returns the name closest to s by edit distance when it is close
// enough to be a likely typo, else "".
func Nearest(s string, names []string) string {
	best, bestD := "", len(s)/2+2
	for _, n := range names {
		if d := Distance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}
