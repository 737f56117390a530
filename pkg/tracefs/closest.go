package tracefs

import (
	"sort"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
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
		d := parse.Distance(pattern, target)
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
