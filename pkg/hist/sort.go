package hist

import (
	"cmp"
	"slices"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// sortField is one resolved sort= key: the hitcount, a value or a key.
type sortField struct {
	key  int // index in Plan.Keys, or -1
	val  int // index in Entry.Vals, or -1; both -1 means the hitcount
	desc bool
}

// Sort orders the entries as the kernel does before printing them: by the
// spec's sort keys (hitcount ascending when there are none), the second
// key ordering runs that are equal on the first. The hitcount and values
// compare as u64, but for the sums of signed fields and expressions, which
// compare signed as they print (the kernel compares every sum as u64);
// keys by their type: signed fields and expressions signed, strings
// bytewise, .log2 and .buckets keys by bucket, .execname, .syscall and .sym
// keys by the number. Where the kernel leaves ties in no particular order,
// Sort breaks them by the full key tuple (ascending), so the output is the
// same on every read. A sort key that names neither hitcount, a value nor
// a key is ignored.
func (t *Table) Sort() {
	p := t.Plan
	fields := p.sortFields()
	// Sort pointers, not the 72-byte entries, then lay the entries out
	// in that order.
	ptrs := make([]*Entry, len(t.Entries))
	for i := range t.Entries {
		ptrs[i] = &t.Entries[i]
	}
	slices.SortFunc(ptrs, func(a, b *Entry) int { return p.compareEntries(fields, a, b) })
	sorted := make([]Entry, len(ptrs))
	for i, e := range ptrs {
		sorted[i] = *e
	}
	copy(t.Entries, sorted)
}

// compareEntries orders a and b by fields, then by the full key tuple.
func (p *Plan) compareEntries(fields []sortField, a, b *Entry) int {
	for _, f := range fields {
		var c int
		switch {
		case f.key >= 0:
			c = compareKey(&p.Keys[f.key], &a.Keys[f.key], &b.Keys[f.key])
		case f.val >= 0 && p.Vals[f.val].Signed:
			c = cmp.Compare(int64(a.Vals[f.val]), int64(b.Vals[f.val]))
		case f.val >= 0:
			c = cmp.Compare(a.Vals[f.val], b.Vals[f.val])
		default:
			c = cmp.Compare(a.Hitcount, b.Hitcount)
		}
		if c != 0 {
			if f.desc {
				return -c
			}
			return c
		}
	}
	for i := range p.Keys {
		if c := compareKey(&p.Keys[i], &a.Keys[i], &b.Keys[i]); c != 0 {
			return c
		}
	}
	return 0
}

// sortFields resolves Spec.Sort the way the kernel does: "hitcount" first,
// then the values, then the keys, each matched by its bare field name.
func (p *Plan) sortFields() []sortField {
	var sorts []parse.SortKey
	if p.Spec != nil {
		sorts = p.Spec.Sort
	}
	if len(sorts) == 0 {
		return []sortField{{key: -1, val: -1}}
	}
	fields := make([]sortField, 0, len(sorts))
	for _, s := range sorts {
		f := sortField{key: -1, val: -1, desc: s.Descending}
		if s.Name != "hitcount" {
			f.val = slices.IndexFunc(p.Vals, func(v Val) bool { return v.Spec.Name == s.Name })
			if f.val < 0 {
				f.key = slices.IndexFunc(p.Keys, func(k Key) bool { return k.Spec.Name == s.Name })
				if f.key < 0 {
					continue
				}
			}
		}
		fields = append(fields, f)
	}
	return fields
}

// compareKey compares two values of key k as the kernel's tracing_map
// compare functions do.
func compareKey(k *Key, x, y *KeyValue) int {
	switch {
	case k.Kind == KeyString:
		return strings.Compare(x.Str, y.Str)
	case k.Kind == KeyStack:
		return x.Stack.compare(y.Stack)
	case signedKey(k):
		return cmp.Compare(int64(x.Num), int64(y.Num))
	}
	return cmp.Compare(x.Num, y.Num)
}
