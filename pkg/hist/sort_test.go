package hist

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

// order returns the entries' first keys, numbers or strings, in order.
func order(t *Table) []string {
	var s []string
	for _, e := range t.Entries {
		if t.Plan.Keys[0].Kind == KeyString {
			s = append(s, e.Keys[0].Str)
		} else {
			s = append(s, fmt.Sprint(int64(e.Keys[0].Num)))
		}
	}
	return s
}

func TestSort(t *testing.T) {
	vals := []parse.HistField{fld("bytes", parse.ModNone)}
	tests := []struct {
		name    string
		keys    []Key
		vals    []parse.HistField
		sort    []parse.SortKey
		entries []Entry
		want    []string
	}{
		{
			name: "default hitcount ascending, ties by key",
			keys: []Key{numKey("k", parse.ModNone)},
			entries: []Entry{
				entry(3, "", keys(num(1))), entry(1, "", keys(num(9))), entry(2, "", keys(num(2))), entry(1, "", keys(num(4))),
			},
			want: []string{"4", "9", "2", "1"},
		},
		{
			name: "hitcount descending, ties ascending by key",
			keys: []Key{numKey("k", parse.ModNone)},
			sort: []parse.SortKey{desc("hitcount")},
			entries: []Entry{
				entry(1, "", keys(num(9))), entry(3, "", keys(num(1))), entry(1, "", keys(num(4))),
			},
			want: []string{"1", "4", "9"},
		},
		{
			name: "signed key compares signed",
			keys: []Key{sgnKey("ret", parse.ModNone)},
			sort: []parse.SortKey{asc("ret")},
			entries: []Entry{
				entry(1, "", keys(num(5))), entry(1, "", keys(neg(-2))), entry(1, "", keys(num(0))), entry(1, "", keys(neg(-100))),
			},
			want: []string{"-100", "-2", "0", "5"},
		},
		{
			name: "unsigned key compares unsigned",
			keys: []Key{numKey("k", parse.ModNone)},
			sort: []parse.SortKey{asc("k")},
			entries: []Entry{
				entry(1, "", keys(neg(-1))), entry(1, "", keys(num(0))), entry(1, "", keys(num(1<<63))),
			},
			want: []string{"0", "-9223372036854775808", "-1"},
		},
		{
			name: "signed syscall key compares signed",
			keys: []Key{sgnKey("id", parse.ModSyscall)},
			sort: []parse.SortKey{desc("id")},
			entries: []Entry{
				entry(1, "", keys(neg(-1))), entry(1, "", keys(num(3))), entry(1, "", keys(num(0))),
			},
			want: []string{"3", "0", "-1"},
		},
		{
			name: "log2 of a signed field sorts by bucket",
			keys: []Key{sgnKey("lat", parse.ModLog2)},
			sort: []parse.SortKey{asc("lat")},
			entries: []Entry{
				entry(1, "", keys(num(64))), entry(1, "", keys(num(3))), entry(1, "", keys(num(0))),
			},
			want: []string{"0", "3", "64"},
		},
		{
			name: "execname sorts by pid, not by name",
			keys: []Key{sgnKey("common_pid", parse.ModExecname)},
			sort: []parse.SortKey{asc("common_pid")},
			entries: []Entry{
				entry(1, "aaa", keys(num(30))), entry(1, "zzz", keys(num(10))), entry(1, "mmm", keys(num(20))),
			},
			want: []string{"10", "20", "30"},
		},
		{
			name: "strings bytewise",
			keys: []Key{strKey("comm")},
			sort: []parse.SortKey{asc("comm")},
			entries: []Entry{
				entry(1, "", keys(str("b"))), entry(1, "", keys(str("B"))), entry(1, "", keys(str("\u00e9"))), entry(1, "", keys(str("ab"))), entry(1, "", keys(str("a"))),
			},
			want: []string{"B", "a", "ab", "b", "\u00e9"},
		},
		{
			name: "value descending",
			keys: []Key{numKey("k", parse.ModNone)},
			vals: vals,
			sort: []parse.SortKey{desc("bytes")},
			entries: []Entry{
				entry(9, "", keys(num(1)), 10), entry(1, "", keys(num(2)), 30), entry(5, "", keys(num(3)), 20),
			},
			want: []string{"2", "3", "1"},
		},
		{
			name: "second key re-sorts runs equal on the first",
			keys: []Key{numKey("k", parse.ModNone)},
			vals: vals,
			sort: []parse.SortKey{asc("bytes"), desc("hitcount")},
			entries: []Entry{
				entry(1, "", keys(num(1)), 10), entry(3, "", keys(num(2)), 10), entry(2, "", keys(num(3)), 5), entry(2, "", keys(num(4)), 10),
			},
			want: []string{"3", "2", "4", "1"},
		},
		{
			name: "a sort name matching a value and a key picks the value",
			keys: []Key{numKey("bytes", parse.ModNone)},
			vals: vals,
			sort: []parse.SortKey{asc("bytes")},
			entries: []Entry{
				entry(1, "", keys(num(1)), 30), entry(1, "", keys(num(2)), 10), entry(1, "", keys(num(3)), 20),
			},
			want: []string{"2", "3", "1"},
		},
		{
			name: "unknown sort name is ignored",
			keys: []Key{numKey("k", parse.ModNone)},
			sort: []parse.SortKey{asc("nope")},
			entries: []Entry{
				entry(1, "", keys(num(3))), entry(5, "", keys(num(1))), entry(2, "", keys(num(2))),
			},
			want: []string{"1", "2", "3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := &Table{Plan: plan("a:b", tt.keys, tt.vals, tt.sort...), Entries: tt.entries}
			tbl.Sort()
			if got := order(tbl); !slices.Equal(got, tt.want) {
				t.Errorf("Sort() order = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSortTieBreak checks that ties come out in full-key order whatever
// the input order: the output is the same on every read.
func TestSortTieBreak(t *testing.T) {
	p := plan("a:b", []Key{strKey("comm"), sgnKey("pid", parse.ModNone)}, nil)
	var entries []Entry
	for _, c := range []string{"b", "a"} {
		for _, pid := range []int64{3, -1, 2} {
			entries = append(entries, entry(1, "", keys(str(c), neg(pid))))
		}
	}
	want := []string{"a/-1", "a/2", "a/3", "b/-1", "b/2", "b/3"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
		tbl := &Table{Plan: p, Entries: slices.Clone(entries)}
		tbl.Sort()
		var got []string
		for _, e := range tbl.Entries {
			got = append(got, fmt.Sprintf("%s/%d", e.Keys[0].Str, int64(e.Keys[1].Num)))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Sort() order = %q, want %q", got, want)
		}
	}
}

func TestSortAllocs(t *testing.T) {
	p := plan("a:b", []Key{numKey("k", parse.ModNone), strKey("s")}, []parse.HistField{fld("v", parse.ModNone)}, desc("v"), asc("s"))
	rng := rand.New(rand.NewPCG(3, 4))
	entries := make([]Entry, 10000)
	for i := range entries {
		entries[i] = entry(rng.Uint64N(10), "", keys(num(rng.Uint64()), str(fmt.Sprint(rng.IntN(50)))), rng.Uint64N(100))
	}
	tbl := &Table{Plan: p}
	allocs := testing.AllocsPerRun(5, func() {
		tbl.Entries = append(tbl.Entries[:0], entries...)
		tbl.Sort()
	})
	if allocs > 4 {
		t.Errorf("Sort() of %d entries: %v allocations, want a constant few", len(entries), allocs)
	}
}

func BenchmarkSort(b *testing.B) {
	p := plan("a:b", []Key{sgnKey("k", parse.ModNone)}, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	entries := make([]Entry, 1<<16)
	for i := range entries {
		entries[i] = entry(rng.Uint64N(1000), "", keys(num(rng.Uint64())))
	}
	tbl := &Table{Plan: p, Entries: make([]Entry, len(entries))}
	for b.Loop() {
		copy(tbl.Entries, entries)
		tbl.Sort()
	}
}
