package complete

import (
	"sort"
	"strings"

	"github.com/gtrace/gtrace/pkg/catalog"
)

// Events returns the event names of c that complete prefix: with no colon
// yet, the systems it begins, each as "SYS:" (more is to be typed: the
// caller adds no space); with a colon, the events "SYS:EVENT" it begins.
// An error of the catalog gives no candidates.
func Events(c catalog.Catalog, prefix string) (cands []string, more bool) {
	all, err := c.Events()
	if err != nil {
		return nil, false
	}
	if !strings.Contains(prefix, ":") {
		seen := map[string]bool{}
		for _, e := range all {
			if s := e.System + ":"; strings.HasPrefix(s, prefix) && !seen[s] {
				seen[s] = true
				cands = append(cands, s)
			}
		}
		return cands, true
	}
	for _, e := range all {
		if s := e.String(); strings.HasPrefix(s, prefix) {
			cands = append(cands, s)
		}
	}
	return cands, false
}

// maxFormats bounds the formats Fields reads for a pattern that names
// many events.
const maxFormats = 64

// Fields returns the field names of the events pattern names in c (at
// most the first maxFormats of them), each once, sorted: those of every
// event's format, and the pseudo-fields common_cpu and comm that filters
// and hist keys take. A pattern that names nothing gives none.
func Fields(c catalog.Catalog, pattern string) []string {
	evs, err := catalog.Match(c, pattern)
	if err != nil {
		return nil
	}
	seen := map[string]bool{"common_cpu": true, "comm": true}
	for i, e := range evs {
		if i == maxFormats {
			break
		}
		f, _, err := c.Format(e)
		if err != nil {
			continue
		}
		for _, fld := range f.Fields {
			seen[fld.Name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Kind is what a list of fields is for: it says which modifiers follow a
// dot.
type Kind int

const (
	Keys Kind = iota // -k: FIELD[.MODIFIER]
	Vals             // --vals: FIELD[.hex|.percent|.graph]
	Sort             // -s: NAME[.ascending|.descending]
)

// modifiers are the words after a field's dot, per kind (the kernel's
// hist modifiers that gtrace takes; see docs/hist.md).
var modifiers = map[Kind][]string{
	Keys: {"buckets=", "execname", "hex", "log2", "sym", "sym-offset", "syscall", "usecs"},
	Vals: {"graph", "hex", "percent"},
	Sort: {"ascending", "descending"},
}

// List returns the candidates for the comma-separated list of fields
// being typed, toComplete, whose last item is completed: a field name of
// fields, or after "FIELD." one of kind's modifiers. Sort lists also take
// hitcount. Each candidate is the whole word, the items before the last
// one included.
func List(fields []string, kind Kind, toComplete string) []string {
	head, item := "", toComplete
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		head, item = toComplete[:i+1], toComplete[i+1:]
	}
	var cands []string
	if name, mod, ok := strings.Cut(item, "."); ok {
		for _, m := range modifiers[kind] {
			if strings.HasPrefix(m, mod) {
				cands = append(cands, head+name+"."+m)
			}
		}
		return cands
	}
	if kind == Sort {
		fields = append([]string{"hitcount"}, fields...)
	}
	for _, f := range fields {
		if strings.HasPrefix(f, item) {
			cands = append(cands, head+f)
		}
	}
	return cands
}

// Filter returns the candidates for the filter being typed, toComplete,
// whose last word, a field name, is completed from fields. Each candidate
// is the whole filter.
func Filter(fields []string, toComplete string) []string {
	i := len(toComplete)
	for i > 0 && isIdent(toComplete[i-1]) {
		i--
	}
	head, word := toComplete[:i], toComplete[i:]
	var cands []string
	for _, f := range fields {
		if strings.HasPrefix(f, word) {
			cands = append(cands, head+f)
		}
	}
	return cands
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
