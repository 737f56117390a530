package tracefs

import (
	"sort"
	"strings"
)

// closest returns up to n event names nearest to pattern by edit distance,
// comparing against the full "sys:event" name or the bare event name,
// whichever the pattern looks like.
func closest(pattern string, all []Event, n int) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	qualified := strings.Contains(pattern, ":")
	for _, e := range all {
		target := e.Name
		if qualified {
			target = e.String()
		}
		d := Distance(pattern, target)
		if d <= max(2, len(pattern)/3) {
			cs = append(cs, cand{e.String(), d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

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
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
