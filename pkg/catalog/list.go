package catalog

import (
	"fmt"
	"path"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// CheckPattern returns a *parse.Error, named name, if a part of the
// trace-cmd style pattern is not a valid shell glob (an unclosed '[', a
// range with no end, a '\' at the end): the caret is under the glob from
// where it goes wrong.
func CheckPattern(name, pattern string) error {
	start := 0
	for _, part := range strings.SplitAfter(pattern, ":") {
		glob := strings.TrimSuffix(part, ":")
		if _, err := path.Match(glob, ""); err != nil {
			// The shortest bad prefix ends at the token that is wrong.
			end := len(glob)
			for k := 1; k <= len(glob); k++ {
				if _, err := path.Match(glob[:k], ""); err != nil {
					end = k
					break
				}
			}
			off := strings.LastIndexAny(glob[:end], "[\\")
			if off < 0 {
				off = end - 1
			}
			return parse.Errorf(name, pattern, start+off, start+len(glob), "bad glob %q", glob).
				WithHint("a pattern is SYS:EVENT, each part a shell glob: *, ? and [abc] or [a-z]")
		}
		start += len(part)
	}
	return nil
}

// NoMatchError says which patterns matched no event of a catalog. It
// does not wrap ErrNoEvent: listing nothing is not bad input.
type NoMatchError struct {
	Where    string   // the catalog's Where
	Patterns []string // the patterns, each with its nearest event names
	Nearest  [][]string
}

func (e *NoMatchError) Error() string {
	var b strings.Builder
	b.WriteString("no event")
	if e.Where != "" && e.Where != "tracefs" {
		b.WriteString(" of " + e.Where)
	}
	b.WriteString(" matches ")
	for i, p := range e.Patterns {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", p)
		if len(e.Nearest[i]) > 0 {
			fmt.Fprintf(&b, " (did you mean %s?)", strings.Join(quoteAll(e.Nearest[i]), ", "))
		}
	}
	return b.String()
}

// MatchAll returns the events that any of the patterns names (see
// Match), in the catalog's order, each once. A pattern that is not a
// valid glob is a *parse.Error named name. If some patterns match
// nothing, MatchAll returns the events of the others and a
// *NoMatchError.
func MatchAll(c Catalog, name string, patterns []string) ([]Event, error) {
	for _, p := range patterns {
		if err := CheckPattern(name, p); err != nil {
			return nil, err
		}
	}
	all, err := c.Events()
	if err != nil {
		return nil, err
	}
	seen := map[Event]bool{}
	var none *NoMatchError
	for _, p := range patterns {
		evs := match(all, p)
		if len(evs) == 0 {
			if none == nil {
				none = &NoMatchError{Where: c.Where()}
			}
			none.Patterns = append(none.Patterns, p)
			none.Nearest = append(none.Nearest, closest(p, all, 3))
		}
		for _, e := range evs {
			seen[e] = true
		}
	}
	var out []Event
	for _, e := range all {
		if seen[e] {
			out = append(out, e)
		}
	}
	if none != nil {
		return out, none
	}
	return out, nil
}
